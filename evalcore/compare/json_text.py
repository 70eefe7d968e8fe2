"""A comparison's JSON as text, written without decoding the judges' verdicts it keeps as JSON text.

`Comparison.to_dict()` decodes each question's verdicts (kept as the text they were stored as) so that
`json.dumps` can write them again: at 10,000 judged questions that is most of the time of printing a
comparison. Here each question's other fields are written by the C encoder and its verdict texts are
put in as they are; the result parses to exactly `to_dict()`. `lines` writes one question, one
measure, one line (what `compare --json` prints: the C encoder cannot indent).
"""

from __future__ import annotations

from typing import Any

from evalcore.compare.deltas import Comparison, KeptQuestions, QuestionDiff, encode, line_text, question_line

__all__ = ["comparison_text", "encode", "question_text"]


def question_text(question: QuestionDiff) -> str:
    """A question's JSON object, its verdicts spliced in as their text (the last two keys of its to_dict)."""
    return line_text(question_line(question))


def comparison_text(comparison: Comparison, extra: dict[str, Any] | None = None, *, lines: bool = False) -> str:
    """The comparison's JSON object (to_dict's, with `extra`'s keys after its own) as text.

    A kept comparison's questions (KeptQuestions) are written from their lines, none decoded."""
    kept = comparison.questions
    questions = kept.texts() if isinstance(kept, KeptQuestions) else [question_text(q) for q in kept]
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
