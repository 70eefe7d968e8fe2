"""Traces in the store, per tenant: imported from files, received over OTLP/HTTP, listed, filtered, sampled for a
campaign, and deleted when older than the tenant's retention. Redaction happens here, before anything is written."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcore.access.principals import Action, Principal, scope
from evalcore.errors import EvalError
from evalcore.formats.shapes import doc
from evalcore.store import Connection, NotFound, Store, dumps, trace_rows
from evalcore.telemetry.lines import parse_lines
from evalcore.telemetry.otlp import Span, SpanProblem, assemble, group, parse_requests, root_of
from evalcore.telemetry.redaction import Redactor, check_patterns
from evalcore.telemetry.trace_records import Rejected, Trace, TraceDocument, TraceImport

DAY_S = 86_400.0
MAX_FILE_BYTES = 512 * 1024 * 1024
# Spans that wait for their trace's root span are dropped after this long (a trace whose root never comes).
WAITING_S = DAY_S


@dataclass(frozen=True)
class TraceSettings:
    """A tenant's care for its users' data: how long traces are kept and what is redacted before they are stored."""

    tenant: str = field(metadata=doc("the tenant"))
    retention_days: float | None = field(metadata=doc("traces older than this many days are deleted (null: kept)"))
    default_patterns: bool = field(metadata=doc("e-mail addresses, phone numbers and card numbers are redacted"))
    patterns: tuple[tuple[str, str], ...] = field(metadata=doc("the operator's patterns: name and regular expression"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `traces settings --json` and the API."""
        return {"tenant": self.tenant, "retention_days": self.retention_days,
                "default_patterns": self.default_patterns, "patterns": [list(p) for p in self.patterns]}

    @property
    def redactor(self) -> Redactor:
        """What the tenant's traces go through before they are stored."""
        return Redactor(self.default_patterns, self.patterns)


def trace_settings(store: Store, tenant: str) -> TraceSettings:
    """The tenant's settings (nothing set: kept forever, the default patterns)."""
    row = trace_rows.trace_settings_row(store, tenant)
    if row is None:
        return TraceSettings(tenant, None, True, ())
    return TraceSettings(tenant, row["retention_days"], bool(row["default_patterns"]),
                         tuple((name, text) for name, text in json.loads(row["patterns"])))


UNCHANGED: Any = object()


def set_trace_settings(store: Store, tenant: str, *, retention_days: float | None = UNCHANGED,
                       default_patterns: bool | None = None,
                       patterns: Sequence[tuple[str, str]] | None = None) -> TraceSettings:
    """Change what is given (the operator's: the CLI, no principal); EvalError for a retention or a pattern that
    cannot be used."""
    current = trace_settings(store, tenant)
    if retention_days is not UNCHANGED and retention_days is not None and not retention_days > 0:
        raise EvalError("the retention must be a positive number of days", where="retention_days",
                        found=str(retention_days), fix="leave it out (or 'none') to keep traces")
    settings = TraceSettings(
        tenant, current.retention_days if retention_days is UNCHANGED else retention_days,
        current.default_patterns if default_patterns is None else default_patterns,
        current.patterns if patterns is None else check_patterns(patterns))
    row = (tenant, settings.retention_days, int(settings.default_patterns), dumps([list(p) for p in settings.patterns]),
           time.time())
    store.write(lambda conn: trace_rows.put_trace_settings(conn, row))
    return settings


def redacted(trace: Trace, redactor: Redactor) -> tuple[Trace, int]:
    """The trace with its texts redacted (question, answer, documents, metadata texts), and how many changed."""
    changed = 0

    def clean(text: str) -> str:
        nonlocal changed
        out, hit = redactor.redact(text)
        changed += hit
        return out

    documents = tuple(TraceDocument(d.id, clean(d.text), d.score) for d in trace.documents)
    metadata = {key: clean(value) if isinstance(value, str) else value for key, value in trace.metadata.items()}
    answer = None if trace.answer is None else clean(trace.answer)
    question = clean(trace.question)
    return Trace(trace.trace_id, trace.span_id, trace.started_at, trace.ended_at, question, answer, documents,
                 trace.model, trace.prompt_tokens, trace.completion_tokens, metadata, trace.source), changed


def importing_tenant(principal: Principal | None, tenant: str) -> str:
    """The tenant traces go to: the principal's own (which must be allowed to send), else the one given."""
    if principal is None:
        return tenant
    principal.require(Action.SEND_TRACES)
    return principal.tenant


def import_file(store: Store, path: Path, *, tenant: str = "default", principal: Principal | None = None,
                now: float | None = None) -> TraceImport:
    """Import a trace file: OTLP JSON (`.json`, one request or one per line) or plain JSONL (`.jsonl`)."""
    tenant = importing_tenant(principal, tenant)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise EvalError("the file is too large to import at once", where=str(path),
                            expected=f"at most {MAX_FILE_BYTES // 2**20} MB", fix="split it")
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise EvalError("no such file", where=str(path)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise EvalError(f"cannot read the file ({error})", where=str(path), expected="UTF-8 text") from None
    return import_text(store, text, source=path.name, tenant=tenant, otlp=path.suffix.lower() != ".jsonl",
                       now=now)


def import_text(store: Store, text: str, *, source: str, tenant: str = "default", otlp: bool = True,
                principal: Principal | None = None, now: float | None = None) -> TraceImport:
    """Import OTLP JSON or JSONL text; every span or line that cannot be read is reported and skipped."""
    tenant = importing_tenant(principal, tenant)
    if not otlp:
        traces, rejected = parse_lines(text, source)
        return save_traces(store, tenant, traces, rejected, source=source, now=now)
    spans, rejected = parse_requests(text, source)
    return save_spans(store, tenant, spans, rejected, source=source, now=now)


def receive(store: Store, data: Any, *, principal: Principal | None = None, tenant: str = "default",
            now: float | None = None) -> TraceImport:
    """One OTLP/HTTP JSON request's spans (already parsed JSON), for the receiver."""
    from evalcore.telemetry.otlp import parse_request

    tenant = importing_tenant(principal, tenant)
    spans, rejected = parse_request(data)
    return save_spans(store, tenant, spans, rejected, source="otlp", now=now)


def save_spans(store: Store, tenant: str, spans: list[Span], rejected: list[Rejected], *, source: str,
               now: float | None = None) -> TraceImport:
    """Group spans into traces with the spans already waiting for them; a trace with a span that could not be read is
    skipped whole; a trace whose root has not come keeps its spans waiting."""
    bad_traces = {r.trace_id for r in rejected if r.trace_id}
    rejected = list(rejected)
    groups = group(spans)
    for trace_id in bad_traces & set(groups):
        rejected.append(Rejected(groups[trace_id][0].position, trace_id,
                                 f"skipped whole: {sum(1 for r in rejected if r.trace_id == trace_id)} of its spans "
                                 "could not be read"))
        del groups[trace_id]
    settings = trace_settings(store, tenant)
    moment = time.time() if now is None else now

    def write(conn: Connection) -> TraceImport:
        traces: list[Trace] = []
        waiting: list[Span] = []
        problems = list(rejected)
        for trace_id, members in groups.items():
            kept = [Span.from_dict(json.loads(data)) for data in trace_rows.waiting_spans(conn, tenant, trace_id)]
            members = list({span.span_id: span for span in [*kept, *members]}.values())
            if root_of(members) is None:
                waiting += [span for span in members if span.span_id not in {k.span_id for k in kept}]
                continue
            try:
                traces.append(assemble(members, source))
            except SpanProblem as error:
                problems.append(Rejected(members[0].position, trace_id, str(error)))
            if kept:
                trace_rows.delete_waiting_spans(conn, tenant, trace_id)
        trace_rows.put_waiting_spans(conn, [(tenant, s.trace_id, s.span_id, dumps(s.to_dict()), moment)
                                            for s in waiting])
        report = insert_traces(conn, tenant, traces, problems, settings, source, moment)
        return TraceImport(report.source, report.stored, report.duplicates, len(spans), len(waiting),
                           report.redacted, report.expired, report.rejected)

    return store.write(write)


def save_traces(store: Store, tenant: str, traces: list[Trace], rejected: list[Rejected], *, source: str,
                now: float | None = None) -> TraceImport:
    """Store whole traces (from JSONL) in one transaction, after redaction."""
    settings = trace_settings(store, tenant)
    moment = time.time() if now is None else now
    return store.write(lambda conn: insert_traces(conn, tenant, traces, rejected, settings, source, moment))


def insert_traces(conn: Connection, tenant: str, traces: Iterable[Trace], rejected: list[Rejected],
                  settings: TraceSettings, source: str, now: float) -> TraceImport:
    """Redact and insert (a trace already stored under its id is left as it was; one older than the retention is not
    stored); the retention is applied to the tenant's stored traces too."""
    redactor = settings.redactor
    cutoff = None if settings.retention_days is None else now - settings.retention_days * DAY_S
    if cutoff is not None:
        delete_before(conn, tenant, cutoff)
    first = trace_rows.next_trace_number(conn)
    rows: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    changed = expired = duplicates = 0
    for trace in traces:
        if cutoff is not None and trace.started_at < cutoff:
            expired += 1
            continue
        if trace.trace_id in seen or trace_rows.has_trace(conn, tenant, trace.trace_id):
            duplicates += 1
            continue
        seen.add(trace.trace_id)
        clean, count = redacted(trace, redactor)
        changed += count
        rows.append((first + len(rows), tenant, clean.trace_id, clean.span_id, clean.started_at, clean.ended_at,
                     clean.question, clean.answer, dumps([d.to_dict() for d in clean.documents]), clean.model,
                     clean.prompt_tokens, clean.completion_tokens, dumps(clean.metadata), clean.source, now))
    trace_rows.insert_traces(conn, rows)
    return TraceImport(source, len(rows), duplicates, 0, 0, changed, expired, tuple(rejected))


def delete_before(conn: Connection, tenant: str, cutoff: float) -> int:
    """Delete the tenant's traces that started before cutoff, and spans waiting since before it; how many traces."""
    return trace_rows.delete_traces_before(conn, tenant, cutoff)


def apply_retention(store: Store, *, tenant: str | None = None, now: float | None = None) -> dict[str, int]:
    """Delete every tenant's (or one tenant's) traces older than its retention; traces deleted per tenant. Spans
    waiting a day for their root span are dropped too."""
    moment = time.time() if now is None else now
    settings = [trace_settings(store, name) for name in trace_rows.tenants_with_retention(store, tenant)]

    def prune(conn: Connection) -> dict[str, int]:
        deleted = {s.tenant: delete_before(conn, s.tenant, moment - (s.retention_days or 0) * DAY_S) for s in settings}
        trace_rows.drop_spans_before(conn, moment - WAITING_S)
        return deleted

    return store.write(prune)


@dataclass(frozen=True)
class TraceFilter:
    """Which traces: a time window, metadata values, words of the question."""

    since: float | None = None  # started at or after (Unix seconds)
    until: float | None = None  # started before
    metadata: tuple[tuple[str, str], ...] = ()  # key = value, all of them
    search: str = ""  # words of the question (case-insensitive)

    def keeps(self, trace: Trace) -> bool:
        """Whether the trace's metadata has every value asked for (compared as text)."""
        return all(str(trace.metadata.get(key, "")) == value for key, value in self.metadata)


def parse_filters(specs: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """KEY=VALUE pairs (the --where option, the API's `where` parameter)."""
    pairs = []
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise EvalError("expected KEY=VALUE", where="metadata filter", found=spec[:80])
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


def list_traces(store: Store, selection: TraceFilter | None = None, *, principal: Principal | None = None,
                tenant: str | None = None, limit: int | None = None, offset: int = 0) -> list[Trace]:
    """The traces a principal may read (its tenant's), newest first, filtered."""
    selection = selection or TraceFilter()
    rows = trace_rows.trace_rows(store, scope(principal, tenant, Action.READ), selection.since, selection.until,
                                 selection.search)
    traces = [trace for row in rows if selection.keeps(trace := Trace.from_row(row))]
    return traces[offset:offset + limit] if limit is not None else traces[offset:]


def get_trace(store: Store, number: int, *, principal: Principal | None = None, tenant: str | None = None) -> Trace:
    """One trace by its number; NotFound for another tenant's, as for a missing one."""
    limited = scope(principal, tenant, Action.READ)
    row = trace_rows.trace_row(store, number)
    if row is None or (limited is not None and row["tenant"] != limited):
        raise NotFound(f"no trace {number}", where="trace", fix="see `python -m evalcore traces list`")
    return Trace.from_row(row)


def traces_by_number(store: Store, numbers: Sequence[int]) -> dict[int, Trace]:
    """Stored traces by number (those deleted since are absent)."""
    return {row["number"]: Trace.from_row(row) for row in trace_rows.trace_rows_by_number(store, numbers)}


def metadata_values(traces: Iterable[Trace]) -> dict[str, list[str]]:
    """Each metadata key and its values (as text, sorted), for filters."""
    values: dict[str, set[str]] = {}
    for trace in traces:
        for key, value in trace.metadata.items():
            values.setdefault(key, set()).add(str(value))
    return {key: sorted(found) for key, found in sorted(values.items())}


def as_mapping(trace: Trace) -> Mapping[str, Any]:
    """A row of the traces table view (the notebook's DataFrame, the page's table)."""
    return {"number": trace.number, "trace_id": trace.trace_id, "started_at": trace.started_at,
            "question": trace.question, "answer": trace.answer, "documents": len(trace.documents),
            "model": trace.model, "prompt_tokens": trace.prompt_tokens, "completion_tokens": trace.completion_tokens,
            "latency_s": trace.latency_s, **{f"metadata.{k}": v for k, v in trace.metadata.items()}}
