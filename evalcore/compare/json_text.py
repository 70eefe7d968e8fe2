"""A comparison's JSON as text, written without decoding the judges' verdicts it keeps as JSON text.

`Comparison.to_dict()` decodes each question's verdicts (kept as the text they were stored as) so that
`json.dumps` can write them again: at 10,000 judged questions that is most of the time of printing a
comparison. Here each question's other fields are written by the C encoder and its verdict texts are
put in as they are; the result parses to exactly `to_dict()`. `lines` writes one question, one
measure, one line (what `compare --json` prints: the C encoder cannot indent).
"""

from __future__ import annotations

import json
from typing import Any

from evalcore.compare.deltas import Comparison, QuestionDiff


def encode(value: Any) -> str:
    """One value in compact JSON, non-ASCII as it is (the C encoder); NaN and infinities refused, as JSON has none."""
    return json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)


def question_text(question: QuestionDiff) -> str:
    """A question's JSON object, its verdicts spliced in as their text (the last two keys of its to_dict)."""
    data = question.to_dict(kept=True)
    texts = [(side, data.pop(side)) for side in ("judges_a", "judges_b") if side in data]
    head = encode(data)
    if not texts:
        return head
    return head[:-1] + "".join(f", {encode(side)}: {text}" for side, text in texts) + "}"


def comparison_text(comparison: Comparison, extra: dict[str, Any] | None = None, *, lines: bool = False) -> str:
    """The comparison's JSON object (to_dict's, with `extra`'s keys after its own) as text."""
    questions = [question_text(q) for q in comparison.questions]
    data = comparison.to_dict(questions=QUESTIONS) | (extra or {})
    parts = []
    for key, value in data.items():
        if value is QUESTIONS:
            items = questions
        elif lines and isinstance(value, list):
            items = [encode(item) for item in value]
        else:
            parts.append(f"{encode(key)}: {encode(value)}")
            continue
        if lines:
            body = "[\n" + ",\n".join(f"    {text}" for text in items) + "\n  ]" if items else "[]"
        else:
            body = "[" + ", ".join(items) + "]"
        parts.append(f"{encode(key)}: {body}")
    return "{\n  " + ",\n  ".join(parts) + "\n}" if lines else "{" + ", ".join(parts) + "}"


QUESTIONS: Any = object()   # stands for the questions' list in to_dict's order of keys
