"""Writing one planned question and checking it: the writer model's question and reference answer, the critic
(answerable from its passages, standalone), the word overlap of a paraphrase, and the second check that labels
other passages. A reply that cannot be read is asked once more, then the question is reported as failed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalcore.datasets import Passage
from evalcore.judges.parsing import THINKING, json_objects
from evalcore.language.text import tokens
from evalcore.models import ChatModel, Message
from evalcore.testsets.planning import Planned
from evalcore.testsets.question_prompts import RETRY, critic_messages, related_messages, writer_messages
from evalcore.testsets.testset_records import Candidate, Kind

PARAPHRASE_OVERLAP = 0.5  # a paraphrase sharing more of its words with its passage is rejected
RELATED_CANDIDATES = 3  # other passages the second check reads, the baseline retriever's first
Neighbours = Callable[[str, frozenset[int]], list[Passage]]  # (question, left out) -> other passages to check


class Unreadable(Exception):
    """A reply without the JSON asked for, twice."""


@dataclass
class Asker:
    """One model asked for JSON, once more on an unreadable reply, counting tokens."""

    model: ChatModel
    temperature: float
    max_tokens: int
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def ask(self, messages: list[Message], keys: tuple[str, ...]) -> dict[str, Any]:
        """The first JSON object of the reply holding every key, asked in that shape where the backend can
        (ModelError when the model fails)."""
        shown = ""
        for _attempt in range(2):
            reply = self.model.chat(messages, temperature=self.temperature, max_tokens=self.max_tokens,
                                    schema=reply_schema(keys))
            self.prompt_tokens += reply.prompt_tokens
            self.completion_tokens += reply.completion_tokens
            found = next((obj for obj in json_objects(THINKING.sub("", reply.text))
                          if all(key in obj for key in keys)), None)
            if found is not None:
                return found
            shown = " ".join(reply.text.split())[:200]
            messages = [*messages, {"role": "assistant", "content": reply.text}, {"role": "user", "content": RETRY}]
        raise Unreadable(f"unreadable reply after one retry: {shown!r}")


_SHAPES: dict[str, dict[str, Any]] = {
    "question": {"type": "string"}, "answer": {"type": "string"}, "answerable": {"type": "boolean"},
    "standalone": {"type": "boolean"}, "reason": {"type": "string", "maxLength": 300},
    "relevant": {"type": "array", "items": {"type": "integer"}},
}


def reply_schema(keys: tuple[str, ...]) -> dict[str, Any]:
    """The JSON schema of a reply holding these keys (the critic's reason too): what structured output asks for,
    and the grammar the offline model is held to."""
    wanted = (*keys, "reason") if "answerable" in keys else keys
    return {"type": "object", "additionalProperties": False, "required": list(wanted),
            "properties": {key: _SHAPES[key] for key in wanted}}


def overlap(question: str, passages: Sequence[str]) -> float:
    """The share of the question's words found in its passages."""
    asked = set(tokens(question))
    given = {word for text in passages for word in tokens(text)}
    return len(asked & given) / len(asked) if asked else 1.0


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if isinstance(value, (str, int, float)) and not isinstance(value, bool) \
        else ""


def _critic(asker: Asker, kind: Kind, question: str, texts: list[str]) -> tuple[list[str], str]:
    """The critic's rejections of one question (empty: kept) and its sentence."""
    verdict = asker.ask(critic_messages(question, texts), ("answerable", "standalone"))
    reason = _text(verdict.get("reason"))
    answerable, standalone = verdict["answerable"] is True, verdict["standalone"] is True
    rejections = []
    if kind != Kind.UNANSWERABLE and not answerable:
        rejections.append(f"not answerable from its passages: {reason or 'the critic said so'}")
    if kind == Kind.UNANSWERABLE and answerable:
        rejections.append(f"answerable from its passage, though meant to be unanswerable: {reason or 'the critic'}")
    if not standalone:
        rejections.append(f"not standalone: {reason or 'it leans on the passage'}")
    return rejections, reason


def _related(asker: Asker, question: str, others: list[Passage]) -> tuple[int, ...]:
    """The passages among `others` that the second check finds relevant."""
    if not others:
        return ()
    reply = asker.ask(related_messages(question, [p.text for p in others]), ("relevant",))
    numbers = reply["relevant"] if isinstance(reply["relevant"], list) else []
    return tuple(sorted({others[n - 1].pid for n in numbers if isinstance(n, int) and 1 <= n <= len(others)}))


def write_question(asker: Asker, planned: Planned, passages: Mapping[int, Passage],
                   neighbours: Neighbours) -> Candidate:
    """One planned question written and checked; a model that fails or replies unreadably gives a candidate that
    carries the error (ModelError is raised only by a broken call, for the caller to count)."""
    texts = [passages[pid].text for pid in planned.sources]
    base = Candidate(planned.qid, planned.position, planned.kind, planned.language, planned.sources, "", "")
    keys = ("question",) if planned.kind == Kind.UNANSWERABLE else ("question", "answer")
    question = answer = ""
    try:
        written = asker.ask(writer_messages(planned.kind, planned.language, texts), keys)
        question, answer = _text(written["question"]), _text(written.get("answer", ""))
        if not question or (planned.kind != Kind.UNANSWERABLE and not answer):
            raise Unreadable(f"the writer's reply has an empty question or answer: {written}")
        rejections, reason = _critic(asker, planned.kind, question, texts)
        shared = overlap(question, texts)
        if planned.kind == Kind.PARAPHRASE and shared > PARAPHRASE_OVERLAP:
            rejections.append(f"shares {shared:.0%} of its words with its passage (a paraphrase: at most "
                              f"{PARAPHRASE_OVERLAP:.0%})")
        related = () if planned.kind == Kind.UNANSWERABLE else _related(
            asker, question, neighbours(question, frozenset(planned.sources))[:RELATED_CANDIDATES])
    except Unreadable as error:
        return replace(base, question=question, answer=answer, error=str(error), prompt_tokens=asker.prompt_tokens,
                       completion_tokens=asker.completion_tokens)
    return Candidate(planned.qid, planned.position, planned.kind, planned.language, planned.sources, question,
                     "" if planned.kind == Kind.UNANSWERABLE else answer, related, tuple(rejections), reason, None,
                     asker.prompt_tokens, asker.completion_tokens)

