"""Moving a store: every row of every table from one store to an empty one (SQLite to PostgreSQL, or back),
verified by the row count and a checksum of each table read back from both sides."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from evalcore.errors import EvalError
from evalcore.store import Connection, Row, Store

# Parents before children (foreign keys), each with the key that orders its rows the same on both backends.
TABLES: tuple[tuple[str, str], ...] = (
    ("targets", "id"), ("suites", "id"), ("cases", "suite_id, position"), ("campaigns", "id"),
    ("campaign_questions", "campaign_id, position"), ("results", "campaign_id, position"),
    ("passage_dictionaries", "id"), ("passage_texts", "id"), ("campaign_signatures", "campaign_id, name"),
    ("comparisons", "a_id, b_id, seed, resamples"), ("call_cache", "key"), ("api_keys", "id"),
    ("dashboard_sessions", "token_hash"), ("labels", "campaign_id, qid, judge"),
    ("pairwise", "a_id, b_id, signature"), ("campaign_figures", "campaign_id, kind"), ("jobs", "id"),
    ("job_items", "job_id, position"),
    ("traces", "number"), ("trace_spans", "tenant, trace_id, span_id"), ("trace_settings", "tenant"),
    ("conversation_verdicts", "campaign_id, conversation, judge"),
)
BATCH = 2000


@dataclass(frozen=True)
class TableCopy:
    """One table copied: its rows and the checksum of its rows, as read back from the source and the destination."""

    table: str
    rows: int
    copied_rows: int
    checksum: str
    copied_checksum: str

    @property
    def same(self) -> bool:
        """Whether the destination holds exactly the source's rows."""
        return (self.rows, self.checksum) == (self.copied_rows, self.copied_checksum)


def _value_bytes(value: Any) -> bytes:
    """One value in a form both backends give alike (a float as its 8 bytes, text as UTF-8)."""
    if value is None:
        return b"N"
    if isinstance(value, bool | int):
        return b"I" + str(int(value)).encode()
    if isinstance(value, float):
        return b"F" + struct.pack("<d", value)
    if isinstance(value, bytes | bytearray | memoryview):
        return b"B" + bytes(value)
    return b"T" + str(value).encode("utf-8")


def batches(store: Store, table: str, order: str) -> Iterator[list[Row]]:
    """The table's rows in key order, a batch at a time."""
    offset = 0
    while rows := store.read(f"SELECT * FROM {table} ORDER BY {order} LIMIT ? OFFSET ?", (BATCH, offset)):
        yield rows
        offset += len(rows)


def fingerprint(store: Store, table: str, order: str) -> tuple[int, str]:
    """(row count, SHA-256 of every row's values in key order, columns by name)."""
    digest, count = hashlib.sha256(), 0
    for rows in batches(store, table, order):
        for row in rows:
            for name in sorted(row.keys()):
                digest.update(name.encode() + b"=" + _value_bytes(row[name]) + b"\x1f")
            digest.update(b"\x1e")
        count += len(rows)
    return count, digest.hexdigest()


def _insert(table: str, rows: list[Row]) -> tuple[str, list[tuple[Any, ...]]]:
    names = rows[0].keys()
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    return sql, [tuple(row[name] for name in names) for row in rows]


def _refuse_filled(destination: Store) -> None:
    filled = [table for table, _ in TABLES if destination.read(f"SELECT 1 FROM {table} LIMIT 1")]
    if filled:
        raise EvalError("the destination store is not empty", where=destination.location,
                        found=f"rows in {', '.join(filled)}", fix="copy into a new database (or a new file)")


def copy_store(source: Store, destination: Store) -> list[TableCopy]:
    """Copy every table of source into the empty destination, then compare each table's count and checksum."""
    _refuse_filled(destination)
    for table, order in TABLES:
        for rows in batches(source, table, order):
            sql, values = _insert(table, rows)

            def put(conn: Connection, sql: str = sql, values: list[tuple[Any, ...]] = values) -> None:
                conn.executemany(sql, values)

            destination.write(put)
    return [verify(source, destination, table, order) for table, order in TABLES]


def verify(source: Store, destination: Store, table: str, order: str) -> TableCopy:
    """One table's count and checksum on both sides."""
    (rows, checksum), (copied_rows, copied_checksum) = (fingerprint(source, table, order),
                                                         fingerprint(destination, table, order))
    return TableCopy(table, rows, copied_rows, checksum, copied_checksum)
