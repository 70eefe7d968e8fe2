"""A comparison's JSON as text, written without decoding the judges' verdicts it keeps as JSON text.

`Comparison.to_dict()` decodes each question's verdicts (kept as the text they were stored as) so that
`json.dumps` can write them again: at 10,000 judged questions that is most of the time of printing a
comparison. Here each question's other fields are written by the C encoder and its verdict texts are
put in as they are; the result parses to exactly `to_dict()`. `lines` writes one question, one
measure, one line (what `compare --json` prints: the C encoder cannot indent).
"""

from __future__ import annotations

from typing import Any

from evalcore.compare.deltas import LINE_END, Comparison, encode, kept_questions

__all__ = ["comparison_pieces", "comparison_text", "encode"]


def comparison_text(comparison: Comparison, extra: dict[str, Any] | None = None, *, lines: bool = False) -> str:
    """The comparison's JSON object (to_dict's, with `extra`'s keys after its own) as text."""
    return "".join(comparison_pieces(comparison, extra, lines=lines))


def comparison_pieces(comparison: Comparison, extra: dict[str, Any] | None = None, *,
                      lines: bool = False, head: dict[str, Any] | None = None) -> list[str]:
    """comparison_text's text in pieces, to be joined once (by the caller, with what it wraps around it).

    The questions are one piece: a kept comparison's text (KeptQuestions) as it is, none decoded, each question
    on a line; with `lines`, indented. `head`: every key but the questions as the caller shows them (the API's,
    through its response model), else to_dict's."""
    kept = kept_questions(comparison.questions)
    data = (comparison.to_dict(questions=QUESTIONS) if head is None else head | {"questions": QUESTIONS}) \
        | (extra or {})
    pieces = ["{\n  " if lines else "{"]
    between = ",\n  " if lines else ", "
    for number, (key, value) in enumerate(data.items()):
        pieces.append(f"{between if number else ''}{encode(key)}: ")
        if value is QUESTIONS:
            if not kept.text:
                pieces.append("[]")
            elif lines:
                pieces += ["[\n    ", kept.text.replace(LINE_END, ",\n    "), "\n  ]"]
            else:
                pieces += ["[", kept.text, "]"]
        elif lines and isinstance(value, list) and value:
            pieces.append("[\n" + ",\n".join(f"    {encode(item)}" for item in value) + "\n  ]")
        else:
            pieces.append(encode(value))
    pieces.append("\n}" if lines else "}")
    return pieces


QUESTIONS: Any = object()   # stands for the questions' list in to_dict's order of keys
