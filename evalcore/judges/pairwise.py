"""The pairwise judge: two answers to one question, each with the passages it was built from, and which is better.

Asked twice, the second time with the answers swapped; a verdict that changes with the order is a tie
(`settle`), and how often that happens is the judge's position bias. The prompt is a versioned file
(`templates/pairwise.txt`) whose hash, with the model, is in the judge's signature.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalError
from evalcore.formats.shapes import Key, doc
from evalcore.judges.parsing import THINKING, first_key, json_objects
from evalcore.judges.prompts import (
    PROMPT_DIR,
    REASON_CHARS,
    JudgePrompt,
    Passage,
    context_chars,
    format_context,
    format_references,
    meta_lines,
    sections,
    text_hash,
)
from evalcore.runtime.lazy import once

if TYPE_CHECKING:
    from evalcore.judges.running import JudgeSettings
    from evalcore.models import Message

# What asks the judge (its settings, the chat models with the HTTP stack) is imported by the functions that ask: a
# kept comparison's verdicts are read (evalcore.compare.preference) without loading it.

PAIRWISE_PARSER = 1  # a change to what `read_winner` accepts is a new version
WINNERS = ("1", "2", "tie")  # positions as the judge sees them, whatever the order
WINNER_KEYS = ("winner", "better", "verdict", "label")
RETRY = ('Your reply could not be read. Reply again with only the JSON object, '
         'for example {"winner": "tie", "reason": "One sentence."}')


@dataclass(frozen=True)
class Side:
    """One campaign's answer to the question, with the passages it was built from (whole, with titles)."""

    answer: str
    context: tuple[Passage, ...] = ()


@dataclass(frozen=True)
class Asking:
    """One asking in one order: the winner in the comparison's terms (None: unreadable), the reason, the cost."""

    winner: str | None = field(metadata=doc("A, B or tie; null when the reply could not be read (after one retry)"))
    reason: str = field(metadata=doc())
    prompt_tokens: int = field(default=0, metadata=doc())
    completion_tokens: int = field(default=0, metadata=doc())
    error: str | None = field(default=None, metadata=doc("the model call's error, if it failed"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"winner": self.winner, "reason": self.reason, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "error": self.error}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Asking:
        """From to_dict's shape."""
        return cls(data.get("winner"), data.get("reason", ""), int(data.get("prompt_tokens") or 0),
                   int(data.get("completion_tokens") or 0), data.get("error"))


@dataclass(frozen=True)
class PairVerdict:
    """The pairwise judge on one question: A first, then B first, and what the two say together.

    `winner` is "A", "B", "tie", or "unknown" when either asking was unreadable; `flipped` when the two
    orderings disagreed (then the winner is a tie).
    """

    qid: int = field(metadata=doc())
    question: str = field(metadata=doc())
    winner: str = field(metadata=doc("A, B, tie (also when the two orders disagree: flipped), or unknown"))
    flipped: bool = field(metadata=doc("the verdict changed when the answers were swapped: counted as a tie"))
    a_first: Asking = field(metadata=doc("asked with A's answer shown first"))
    b_first: Asking = field(metadata=doc("asked with B's answer shown first"))
    context_cut: str | None = field(default=None, metadata=doc("how the passages were cut to fit the judge model's "
                                                               "window; null: seen whole"))

    JSON_EXTRA = (Key("reason", str, "the first order's reason, and the second's when they disagree"),)

    @property
    def reason(self) -> str:
        """The reason to show: the first ordering's, and the second's when they disagree."""
        if self.flipped:
            return f"A first: {self.a_first.reason} / B first: {self.b_first.reason}"
        return self.a_first.reason if self.a_first.winner is not None else self.b_first.reason

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"qid": self.qid, "question": self.question, "winner": self.winner, "flipped": self.flipped,
                "reason": self.reason, "a_first": self.a_first.to_dict(), "b_first": self.b_first.to_dict(),
                "context_cut": self.context_cut}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairVerdict:
        """From to_dict's shape."""
        return cls(int(data["qid"]), data.get("question", ""), data["winner"], bool(data["flipped"]),
                   Asking.from_dict(data["a_first"]), Asking.from_dict(data["b_first"]), data.get("context_cut"))


@once
def pairwise_prompt() -> JudgePrompt:
    """The pairwise judge's prompt file."""
    text = (PROMPT_DIR / "pairwise.txt").read_text(encoding="utf-8").replace("\r\n", "\n")
    meta = meta_lines(text)
    system, user = sections(text)
    return JudgePrompt(name="pairwise", version=meta["version"], output=meta["output"],
                       requires=tuple(k.strip() for k in meta["requires"].split(",")), system=system, user=user,
                       hash=text_hash(text), labels=WINNERS)


def pairwise_signature(model: str) -> str:
    """What a pairwise verdict depends on: the prompt's version and hash, the reply parser's version, the model."""
    prompt = pairwise_prompt()
    return f"pairwise|prompt:v{prompt.version}|hash:{prompt.hash}|parser:v{PAIRWISE_PARSER}|model:{model}"


def reply_schema() -> dict[str, Any]:
    """The JSON schema of a pairwise reply: the better answer's position (or tie) and a short reason."""
    return {"type": "object", "additionalProperties": False, "required": ["winner", "reason"],
            "properties": {"winner": {"type": "string", "enum": list(WINNERS)},
                           "reason": {"type": "string", "maxLength": REASON_CHARS}}}


def read_winner(text: str) -> tuple[str, str] | None:
    """The position ("1", "2", "tie") and reason of a JSON reply (fenced or not, or a Python dict); None otherwise.

    Prose is never read: "1" or "2" in a sentence may be anything, and a guessed winner would bias the result.
    """
    for obj in json_objects(THINKING.sub("", text)):
        value = first_key(obj, WINNER_KEYS)
        if value is None:
            continue
        word = " ".join(str(value).strip().lower().split()).removeprefix("answer ")
        if word not in WINNERS:
            return None
        reason = first_key(obj, ("reason", "explanation", "rationale"))
        return word, str(reason).strip() if reason is not None else "(the judge gave no reason)"
    return None


def pair_messages(prompt: JudgePrompt, question: str, references: Sequence[str], first: Side, second: Side,
                  keep: int | None = None) -> list[Message]:
    """System + user messages with the two answers in this order (each context cut to `keep` characters if given)."""
    given = [r for r in references if r.strip()]
    values = {"question": question, "expected": format_references(given) if given else "(none given)",
              "context_1": format_context(first.context, keep), "answer_1": first.answer,
              "context_2": format_context(second.context, keep), "answer_2": second.answer}
    user = re.sub(r"\{(question|expected|context_1|answer_1|context_2|answer_2)\}", lambda m: values[m.group(1)],
                  prompt.user)
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": user}]


def ask_once(settings: JudgeSettings, messages: list[Message], order: tuple[str, str]) -> tuple[Asking, bool]:
    """Ask in one order, once more on an unreadable reply; the winner mapped back to A/B; whether it overflowed."""
    from evalcore.models import ContextOverflow

    tokens = [0, 0]
    shown = ""
    for _attempt in range(2):
        try:
            reply = settings.model.chat(messages, temperature=settings.temperature, max_tokens=settings.max_tokens,
                                        schema=reply_schema())
        except (EvalError, OSError, ValueError, RuntimeError) as error:  # ValueError/RuntimeError: llama.cpp's
            return (Asking(None, f"judge call failed: {error}", tokens[0], tokens[1], str(error)),
                    isinstance(error, ContextOverflow))
        tokens = [tokens[0] + reply.prompt_tokens, tokens[1] + reply.completion_tokens]
        reading = read_winner(reply.text)
        if reading is not None:
            position, reason = reading
            winner = "tie" if position == "tie" else order[int(position) - 1]
            return Asking(winner, reason, tokens[0], tokens[1]), False
        shown = " ".join(reply.text.split())[:200]
        messages = [*messages, {"role": "assistant", "content": reply.text}, {"role": "user", "content": RETRY}]
    return Asking(None, f"unreadable judge reply after one retry: {shown!r}", tokens[0], tokens[1]), False


def ask_order(settings: JudgeSettings, question: str, references: Sequence[str], sides: Mapping[str, Side],
              order: tuple[str, str]) -> tuple[Asking, int | None]:
    """One ordering on the whole contexts, both halved each time the model says they are over its window."""
    from evalcore.judges.running import MIN_KEEP

    prompt = pairwise_prompt()
    total = max(context_chars(side.context) for side in sides.values())
    keep: int | None = None
    while True:
        messages = pair_messages(prompt, question, references, sides[order[0]], sides[order[1]], keep)
        asking, overflow = ask_once(settings, messages, order)
        if not overflow or (keep is not None and keep < MIN_KEEP):
            return asking, keep
        keep = (total if keep is None else keep) // 2


def settle(a_first: Asking, b_first: Asking) -> tuple[str, bool]:
    """The verdict of the two orderings: the same winner is kept; a change with the order is a tie (flipped);
    an unreadable ordering makes the verdict unknown (never guessed)."""
    if a_first.winner is None or b_first.winner is None:
        return "unknown", False
    if a_first.winner != b_first.winner:
        return "tie", True
    return a_first.winner, False


def judge_pair(settings: JudgeSettings, *, qid: int, question: str, references: Sequence[str], a: Side,
               b: Side) -> PairVerdict:
    """Ask the pairwise judge with A's answer first, then with B's first, and settle the two."""
    from evalcore.judges.running import cut_note

    sides = {"A": a, "B": b}
    a_first, keep_a = ask_order(settings, question, references, sides, ("A", "B"))
    b_first, keep_b = ask_order(settings, question, references, sides, ("B", "A"))
    winner, flipped = settle(a_first, b_first)
    total = max(context_chars(a.context), context_chars(b.context))
    kept = [k for k in (keep_a, keep_b) if k is not None]
    return PairVerdict(qid, question, winner, flipped, a_first, b_first,
                       cut_note(min(kept), total) if kept else None)
