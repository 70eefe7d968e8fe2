"""What a generated test set is made of: the kinds of question, one candidate question with its checks, the
settings it was asked with, and a person's review decision."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evalcore.errors import EvalError
from evalcore.formats.shapes import Key, doc


class Kind(StrEnum):
    """The kinds of generated question."""

    FACT = "fact"  # one fact stated in one passage
    TWO_PASSAGES = "two-passages"  # needs a fact from each of two passages (both labelled relevant)
    PARAPHRASE = "paraphrase"  # one passage's fact, worded with few of its words
    UNANSWERABLE = "unanswerable"  # on a passage's topic, but the corpus does not say: declining is right

    @classmethod
    def parse(cls, names: Sequence[str]) -> tuple[Kind, ...]:
        """Kinds by name, in the order given, once each (EvalError naming an unknown one)."""
        known = {kind.value: kind for kind in cls}
        unknown = [name for name in names if name not in known]
        if unknown or not names:
            raise EvalError("not a kind of generated question", where="kinds", found=", ".join(unknown) or "none",
                            expected=", ".join(known))
        return tuple(dict.fromkeys(known[name] for name in names))


LANGUAGES = {"en": "English", "fr": "French", "zh": "Chinese (simplified characters)"}
SOURCE_LABEL = 2  # the passages a question was written from
RELATED_LABEL = 1  # other passages the second check found relevant


class Decision(StrEnum):
    """A person's review of one generated question."""

    ACCEPT = "accept"
    EDIT = "edit"  # accepted with its question or answer rewritten
    REJECT = "reject"


@dataclass(frozen=True)
class Review:
    """A person's decision on one generated question (an edit carries the new texts)."""

    qid: int = field(metadata=doc("the question's stable id"))
    decision: Decision = field(metadata=doc("accept, edit (accepted, rewritten) or reject"))
    author: str = field(metadata=doc("who reviewed"))
    at: float = field(metadata=doc("when"))
    question: str | None = field(default=None, metadata=doc("the edited question (edit only)"))
    answer: str | None = field(default=None, metadata=doc("the edited reference answer (edit only)"))
    note: str = field(default="", metadata=doc("why, in the reviewer's words"))

    @property
    def accepted(self) -> bool:
        """Accepted, as it was or edited."""
        return self.decision != Decision.REJECT

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"qid": self.qid, "decision": self.decision.value, "author": self.author, "at": self.at,
                "question": self.question, "answer": self.answer, "note": self.note}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Review:
        """From to_dict's shape."""
        return cls(int(data["qid"]), Decision(data["decision"]), str(data.get("author") or ""), float(data["at"]),
                   data.get("question"), data.get("answer"), str(data.get("note") or ""))


@dataclass(frozen=True)
class Candidate:
    """One generated question with everything its checks found: kept when `rejections` is empty."""

    qid: int = field(metadata=doc("stable id: the same settings give the same ids"))
    position: int = field(metadata=doc("its place in the generation plan"))
    kind: Kind = field(metadata=doc("fact, two-passages, paraphrase or unanswerable"))
    language: str = field(metadata=doc("en, fr or zh"))
    sources: tuple[int, ...] = field(metadata=doc("the passages it was written from (label 2)"))
    question: str = field(metadata=doc("the question ('' when generation failed)"))
    answer: str = field(metadata=doc("its reference answer, grounded in its passages ('' for an unanswerable one)"))
    related: tuple[int, ...] = field(default=(), metadata=doc("other passages the second check found relevant "
                                                              "(label 1)"))
    rejections: tuple[str, ...] = field(default=(), metadata=doc("why the critic (or a check) rejected it; empty: "
                                                                 "accepted"))
    critic_reason: str = field(default="", metadata=doc("the critic's own sentence"))
    error: str | None = field(default=None, metadata=doc("why it could not be generated or checked"))
    prompt_tokens: int = field(default=0, metadata=doc("tokens sent for it (generation and checks)"))
    completion_tokens: int = field(default=0, metadata=doc("tokens received for it"))

    JSON_EXTRA = (Key("accepted", bool, "kept by the critic and the checks"),)

    @property
    def accepted(self) -> bool:
        """Kept by the critic and the checks."""
        return not self.rejections and self.error is None and bool(self.question)

    @property
    def answerable(self) -> bool:
        """Whether the corpus answers it (every kind but unanswerable)."""
        return self.kind != Kind.UNANSWERABLE

    def labels(self) -> dict[int, int]:
        """Its graded relevance labels: its sources high, the passages the second check found, lower."""
        if not self.answerable:
            return {}
        return {**{pid: RELATED_LABEL for pid in self.related}, **{pid: SOURCE_LABEL for pid in self.sources}}

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"qid": self.qid, "position": self.position, "kind": self.kind.value, "language": self.language,
                "sources": list(self.sources), "question": self.question, "answer": self.answer,
                "related": list(self.related), "rejections": list(self.rejections),
                "critic_reason": self.critic_reason, "error": self.error, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "accepted": self.accepted}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Candidate:
        """From to_dict's shape."""
        return cls(int(data["qid"]), int(data["position"]), Kind(data["kind"]), str(data["language"]),
                   tuple(int(p) for p in data["sources"]), str(data.get("question") or ""),
                   str(data.get("answer") or ""), tuple(int(p) for p in data.get("related") or ()),
                   tuple(data.get("rejections") or ()), str(data.get("critic_reason") or ""), data.get("error"),
                   int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))
