"""A comparison's verdicts per conversation: its turns side by side (verdict, failure stage in A and in B) and
one verdict for the whole conversation.

A conversation is better when more of its turns are better in B than worse, worse the other way round, and the
same otherwise (no turn decided, or as many either way). Its turns are the questions paired by (conversation, turn).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalcore.formats.shapes import Key, doc


class Diff(Protocol):
    """What a conversation's verdict reads of a question's difference (evalcore.compare.deltas.QuestionDiff)."""

    @property
    def qid(self) -> int: ...
    @property
    def verdict(self) -> Any: ...
    @property
    def diagnosis_a(self) -> Any: ...
    @property
    def diagnosis_b(self) -> Any: ...


@dataclass(frozen=True)
class TurnDiff:
    """One turn of a conversation in both campaigns."""

    turn: int = field(metadata=doc())
    qid: int = field(metadata=doc())
    verdict: str = field(metadata=doc("better, worse, same, new, removed or unscored"))
    stage_a: str | None = field(metadata=doc("its failure stage in A"))
    stage_b: str | None = field(metadata=doc("its failure stage in B"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"turn": self.turn, "qid": self.qid, "verdict": self.verdict, "stage_a": self.stage_a,
                "stage_b": self.stage_b}


@dataclass(frozen=True)
class ConversationVerdict:
    """One conversation compared: its turns in order and its verdict."""

    conversation: str = field(metadata=doc())
    turns: tuple[TurnDiff, ...] = field(metadata=doc("in turn order"))
    verdict: str = field(metadata=doc("better, worse or same: more turns better than worse, or fewer, or neither"))

    JSON_EXTRA = (Key("better", int, "its turns better in B"), Key("worse", int, "its turns worse in B"))

    @property
    def better(self) -> int:
        """Turns better in B."""
        return sum(turn.verdict == "better" for turn in self.turns)

    @property
    def worse(self) -> int:
        """Turns worse in B."""
        return sum(turn.verdict == "worse" for turn in self.turns)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"conversation": self.conversation, "turns": [turn.to_dict() for turn in self.turns],
                "verdict": self.verdict, "better": self.better, "worse": self.worse}


def conversation_verdicts(questions: Sequence[Diff], turns: Mapping[int, tuple[str, int]]) -> list[ConversationVerdict]:
    """Each conversation's verdict, in order of first appearance (`turns`: question id -> its conversation and
    turn; questions asked alone are left out)."""
    grouped: dict[str, list[TurnDiff]] = {}
    for question in questions:
        place = turns.get(question.qid)
        if place is not None:
            grouped.setdefault(place[0], []).append(
                TurnDiff(place[1], question.qid, str(question.verdict), text(question.diagnosis_a),
                         text(question.diagnosis_b)))
    out = []
    for name, lines in grouped.items():
        ordered = tuple(sorted(lines, key=lambda line: line.turn))
        better = sum(line.verdict == "better" for line in ordered)
        worse = sum(line.verdict == "worse" for line in ordered)
        out.append(ConversationVerdict(name, ordered, "better" if better > worse else
                                       "worse" if worse > better else "same"))
    return out


def text(stage: Any) -> str | None:
    """A stage as its word (None stays None)."""
    return None if stage is None else str(stage)
