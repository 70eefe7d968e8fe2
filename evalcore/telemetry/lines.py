"""Traces as plain JSONL, one answer a line: `{"time", "question", "answer", "contexts", "metadata"}`.

`time` is an ISO 8601 date and time (UTC when it names no zone) or Unix seconds; `contexts` a list of texts or of
`{"id", "text", "score"}` objects, best first; `metadata` an object of texts, numbers or booleans. `trace_id`, `model`,
`prompt_tokens` and `completion_tokens` may be given; without a `trace_id`, one is made from the line's time, question
and answer, so importing the same file twice stores each answer once. A line that cannot be read is reported with its
number and skipped; the other lines are stored.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any

from evalcore.telemetry.otlp import plain
from evalcore.telemetry.trace_records import Rejected, Trace, TraceDocument

FIELDS = ("time", "question", "answer", "contexts", "metadata", "trace_id", "model", "prompt_tokens",
          "completion_tokens", "ended_at")


class LineProblem(ValueError):
    """Why one line cannot be read."""


def parse_lines(text: str, source: str) -> tuple[list[Trace], list[Rejected]]:
    """The traces of a JSONL text, and the lines skipped."""
    traces: list[Trace] = []
    rejected: list[Rejected] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            traces.append(read_line(line, source))
        except LineProblem as error:
            rejected.append(Rejected(f"line {number}", "", str(error)))
    return traces, rejected


def read_line(line: str, source: str) -> Trace:
    """One line as a trace; LineProblem naming the field."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise LineProblem(f"not valid JSON ({error.msg}, column {error.colno})") from None
    if not isinstance(row, dict):
        raise LineProblem("expected a JSON object")
    unknown = sorted(set(row) - set(FIELDS))
    if unknown:
        raise LineProblem(f"unknown field {unknown[0]!r} (the fields are {', '.join(FIELDS)})")
    question, answer = row.get("question"), row.get("answer")
    if not isinstance(question, str) or not question.strip():
        raise LineProblem("question must be non-empty text")
    if answer is not None and not isinstance(answer, str):
        raise LineProblem(f"answer must be text or null, found {str(answer)[:40]!r}")
    started = when(row.get("time"), "time")
    if started is None:
        raise LineProblem("time is required (ISO 8601, or Unix seconds)")
    ended = when(row.get("ended_at"), "ended_at")
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise LineProblem("metadata must be an object")
    model = row.get("model") or ""
    if not isinstance(model, str):
        raise LineProblem("model must be text")
    trace_id = row.get("trace_id") or made_id(started, question, answer)
    if not isinstance(trace_id, str) or len(trace_id) > 128:
        raise LineProblem("trace_id must be text of at most 128 characters")
    return Trace(trace_id, "", started, ended, question, answer, contexts(row.get("contexts")), model,
                 tokens(row, "prompt_tokens"), tokens(row, "completion_tokens"),
                 {str(key): plain(value) for key, value in metadata.items() if value is not None}, source)


def made_id(started: float, question: str, answer: str | None) -> str:
    """A trace id made from what the line says (32 hex digits, like an OpenTelemetry trace id)."""
    return hashlib.sha256(json.dumps([started, question, answer]).encode("utf-8")).hexdigest()[:32]


def when(value: Any, name: str) -> float | None:
    """Unix seconds from an ISO 8601 text (UTC when it names no zone) or a number; None when absent."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise LineProblem(f"{name} is not an ISO 8601 date and time, found {value[:40]!r}") from None
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    raise LineProblem(f"{name} must be an ISO 8601 text or Unix seconds, found {str(value)[:40]!r}")


def contexts(value: Any) -> tuple[TraceDocument, ...]:
    """The contexts as documents, in their order."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise LineProblem("contexts must be a list of texts or of {id, text, score} objects")
    documents = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            documents.append(TraceDocument("", item, None))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise LineProblem(f"contexts[{i}] must be a text or an object with a text")
        score = item.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise LineProblem(f"contexts[{i}].score must be a number")
        documents.append(TraceDocument(str(item.get("id") or ""), item["text"],
                                       None if score is None else float(score)))
    return tuple(documents)


def tokens(row: dict[str, Any], name: str) -> int:
    """A token count (0 when absent)."""
    value = row.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LineProblem(f"{name} must be a whole number")
    return value
