"""Production traces as the store keeps them: what a user asked, what the assistant retrieved and answered, with
what model and tokens, when, and the metadata (release, user segment, ...) they are filtered and compared by."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalcore.formats.shapes import doc
from evalcore.language.text import counted

MetadataValue = str | int | float | bool


@dataclass(frozen=True)
class TraceDocument:
    """One document the assistant retrieved for a trace, in its rank order."""

    id: str = field(metadata=doc("the document's id as the assistant named it ('' when it named none)"))
    text: str = field(metadata=doc("the document's text"))
    score: float | None = field(metadata=doc("the retriever's score (null when it gave none)"))

    def to_dict(self) -> dict[str, Any]:
        """The stored and exported JSON."""
        return {"id": self.id, "text": self.text, "score": self.score}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceDocument:
        """Read back what to_dict wrote."""
        score = data.get("score")
        return cls(str(data.get("id") or ""), str(data.get("text") or ""),
                   None if score is None else float(score))


@dataclass(frozen=True)
class Trace:
    """One production answer: a question, the documents retrieved for it, the answer, the model, tokens and time."""

    trace_id: str = field(metadata=doc("the trace's id (32 hex digits for OpenTelemetry traces)"))
    span_id: str = field(metadata=doc("the id of the span that holds the question and the answer ('' for JSONL)"))
    started_at: float = field(metadata=doc("when the question was asked (Unix seconds, UTC)"))
    ended_at: float | None = field(metadata=doc("when the answer was given (Unix seconds; null when unknown)"))
    question: str = field(metadata=doc("what the user asked"))
    answer: str | None = field(metadata=doc("what the assistant answered (null when it gave none)"))
    documents: tuple[TraceDocument, ...] = field(metadata=doc("the retrieved documents, best first"))
    model: str = field(metadata=doc("the model that wrote the answer ('' when unknown)"))
    prompt_tokens: int = field(metadata=doc("tokens sent to the model"))
    completion_tokens: int = field(metadata=doc("tokens the model wrote"))
    metadata: dict[str, MetadataValue] = field(metadata=doc("release, user segment and other labels to filter and "
                                                            "compare by"))
    source: str = field(metadata=doc("where it came from: a file name, or 'otlp' for the receiver"))
    number: int = field(default=0, metadata=doc("the store's number for it (a traces campaign's question id)"))

    @property
    def latency_s(self) -> float | None:
        """Seconds from question to answer, when both times are known."""
        return None if self.ended_at is None else max(0.0, self.ended_at - self.started_at)

    def to_dict(self) -> dict[str, Any]:
        """The exported JSON."""
        return {"trace_id": self.trace_id, "span_id": self.span_id, "started_at": self.started_at,
                "ended_at": self.ended_at, "question": self.question, "answer": self.answer,
                "documents": [d.to_dict() for d in self.documents], "model": self.model,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "metadata": dict(self.metadata), "source": self.source, "number": self.number}

    @classmethod
    def from_row(cls, row: Any) -> Trace:
        """A stored row read back."""
        return cls(row["trace_id"], row["span_id"], row["started_at"], row["ended_at"], row["question"],
                   row["answer"], tuple(TraceDocument.from_dict(d) for d in json.loads(row["documents"])),
                   row["model"], row["prompt_tokens"], row["completion_tokens"], json.loads(row["metadata"]),
                   row["source"], row["number"])


@dataclass(frozen=True)
class Rejected:
    """A span, a trace or a line that was not stored, where it was and why."""

    position: str = field(metadata=doc("where it is: `line 3`, `resourceSpans[0].scopeSpans[1].spans[4]`"))
    trace_id: str = field(metadata=doc("the trace it belongs to ('' when unknown)"))
    reason: str = field(metadata=doc("why it was skipped"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON of import reports."""
        return {"position": self.position, "trace_id": self.trace_id, "reason": self.reason}

    def line(self) -> str:
        """One readable line."""
        owner = f" (trace {self.trace_id})" if self.trace_id else ""
        return f"{self.position}{owner}: {self.reason}"


@dataclass(frozen=True)
class TraceImport:
    """What an import or a receiver's request did: traces stored, duplicates, what was skipped and why."""

    source: str = field(metadata=doc("the file read, or 'otlp'"))
    stored: int = field(metadata=doc("traces stored"))
    duplicates: int = field(metadata=doc("traces already stored under their id (left as they were)"))
    spans: int = field(metadata=doc("spans read (0 for JSONL)"))
    waiting: int = field(metadata=doc("spans kept until their trace's root span arrives"))
    redacted: int = field(metadata=doc("texts in which a redaction pattern replaced something"))
    expired: int = field(metadata=doc("traces older than the tenant's retention, not stored"))
    rejected: tuple[Rejected, ...] = field(metadata=doc("spans, traces or lines skipped, with where and why"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON of the CLI's --json and the API."""
        return {"source": self.source, "stored": self.stored, "duplicates": self.duplicates, "spans": self.spans,
                "waiting": self.waiting, "redacted": self.redacted, "expired": self.expired,
                "rejected": [r.to_dict() for r in self.rejected]}

    def lines(self) -> list[str]:
        """The report as a person reads it."""
        head = f"{counted(self.stored, 'trace')} stored from {self.source}"
        notes = [what for count, what in (
            (self.duplicates, f"{self.duplicates} already stored"),
            (self.waiting, f"{counted(self.waiting, 'span')} waiting for their root span"),
            (self.redacted, f"{counted(self.redacted, 'text')} redacted"),
            (self.expired, f"{self.expired} older than the retention, not stored"),
            (len(self.rejected), f"{len(self.rejected)} skipped")) if count]
        return [head + (f" ({', '.join(notes)})" if notes else "")] + [f"  skipped {r.line()}" for r in self.rejected]
