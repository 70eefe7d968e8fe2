"""Production traces in the store: the `traces` table (one row per whole trace, numbered in arrival order across
tenants), `trace_spans` (spans waiting for their trace's root span) and `trace_settings` (a tenant's retention and
redaction patterns)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from evalcore.store import Connection, Row, Store

NUMBERS_AT_ONCE = 500  # trace numbers a query names at a time


def trace_settings_row(store: Store, tenant: str) -> Row | None:
    """The tenant's settings row, or None when it set nothing."""
    rows = store.read("SELECT * FROM trace_settings WHERE tenant = ?", (tenant,))
    return rows[0] if rows else None


def put_trace_settings(conn: Connection, row: tuple[Any, ...]) -> None:
    """Keep a tenant's settings, (tenant, retention_days, default_patterns, patterns, updated_at), replacing them."""
    conn.execute(
        "INSERT INTO trace_settings (tenant, retention_days, default_patterns, patterns, updated_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant) DO UPDATE SET retention_days = excluded.retention_days, "
        "default_patterns = excluded.default_patterns, patterns = excluded.patterns, "
        "updated_at = excluded.updated_at", row)


def tenants_with_retention(store: Store, tenant: str | None = None) -> list[str]:
    """The tenants (or the one given, when it has one) whose traces are kept for a limited time."""
    return [row["tenant"] for row in store.read(
        "SELECT tenant FROM trace_settings WHERE retention_days IS NOT NULL"
        + ("" if tenant is None else " AND tenant = ?"), () if tenant is None else (tenant,))]


def waiting_spans(conn: Connection, tenant: str, trace_id: str) -> list[str]:
    """The JSON text of the spans of a trace kept waiting for its root span."""
    return [row[0] for row in conn.execute("SELECT data FROM trace_spans WHERE tenant = ? AND trace_id = ?",
                                           (tenant, trace_id)).fetchall()]


def delete_waiting_spans(conn: Connection, tenant: str, trace_id: str) -> None:
    """Drop the spans kept for a trace (it is stored whole now)."""
    conn.execute("DELETE FROM trace_spans WHERE tenant = ? AND trace_id = ?", (tenant, trace_id))


def put_waiting_spans(conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Keep spans waiting for their root, each (tenant, trace_id, span_id, data, received_at); a span already kept
    stays as it was."""
    conn.executemany("INSERT INTO trace_spans (tenant, trace_id, span_id, data, received_at) "
                     "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", rows)


def drop_spans_before(conn: Connection, received_before: float) -> None:
    """Drop every tenant's spans that have waited since before this time."""
    conn.execute("DELETE FROM trace_spans WHERE received_at < ?", (received_before,))


def next_trace_number(conn: Connection) -> int:
    """The number the next stored trace takes."""
    return int(conn.execute("SELECT COALESCE(MAX(number), 0) FROM traces").fetchone()[0]) + 1


def has_trace(conn: Connection, tenant: str, trace_id: str) -> bool:
    """Whether the tenant already has a trace under this id."""
    return conn.execute("SELECT 1 FROM traces WHERE tenant = ? AND trace_id = ?", (tenant, trace_id)).fetchone() \
        is not None


def insert_traces(conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Store traces, each (number, tenant, trace_id, span_id, started_at, ended_at, question, answer, documents,
    model, prompt_tokens, completion_tokens, metadata, source, received_at)."""
    conn.executemany("INSERT INTO traces (number, tenant, trace_id, span_id, started_at, ended_at, question, answer, "
                     "documents, model, prompt_tokens, completion_tokens, metadata, source, received_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def delete_traces_before(conn: Connection, tenant: str, cutoff: float) -> int:
    """Delete the tenant's traces that started before cutoff, and its spans waiting since before it; how many
    traces."""
    count = conn.execute("DELETE FROM traces WHERE tenant = ? AND started_at < ?", (tenant, cutoff)).rowcount
    conn.execute("DELETE FROM trace_spans WHERE tenant = ? AND received_at < ?", (tenant, cutoff))
    return count


def trace_rows(store: Store, tenant: str | None, since: float | None, until: float | None,
               search: str) -> list[Row]:
    """The traces (of one tenant when given) started in [since, until) whose question holds `search`
    (case-insensitive; each bound left out when None, the words when empty), newest first."""
    clauses: list[str] = ["1 = 1"]
    params: list[Any] = []
    if tenant is not None:
        clauses.append("tenant = ?")
        params.append(tenant)
    if since is not None:
        clauses.append("started_at >= ?")
        params.append(since)
    if until is not None:
        clauses.append("started_at < ?")
        params.append(until)
    if search:
        clauses.append("LOWER(question) LIKE ?")
        params.append(f"%{search.lower()}%")
    return store.read(f"SELECT * FROM traces WHERE {' AND '.join(clauses)} ORDER BY started_at DESC, number DESC",
                      params)


def trace_row(store: Store, number: int) -> Row | None:
    """One trace's row by its number, or None."""
    rows = store.read("SELECT * FROM traces WHERE number = ?", (number,))
    return rows[0] if rows else None


def trace_rows_by_number(store: Store, numbers: Sequence[int]) -> list[Row]:
    """The rows of the traces with these numbers still stored."""
    found: list[Row] = []
    for start in range(0, len(numbers), NUMBERS_AT_ONCE):
        chunk = list(numbers[start:start + NUMBERS_AT_ONCE])
        marks = ", ".join("?" for _ in chunk)
        found += store.read(f"SELECT * FROM traces WHERE number IN ({marks})", chunk)
    return found


def campaign_trace_rows(store: Store, campaign_id: str) -> list[Row]:
    """The rows of the traces a traces campaign asked about (its questions' qids are trace numbers)."""
    return store.read("SELECT t.* FROM traces t JOIN campaign_questions q ON q.qid = t.number "
                      "WHERE q.campaign_id = ?", (campaign_id,))
