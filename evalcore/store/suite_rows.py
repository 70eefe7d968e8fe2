"""The `suites` table (one row per suite: its tenant, name and saved target) and `cases` (a suite's questions by
position, their expected sources and checks as JSON text, their place in a conversation)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from evalcore.store import Connection, Row, Store

NAMES_AT_ONCE = 500  # conversation names a query names at a time (SQLite's limit on a statement's parameters)


def insert_suite(conn: Connection, suite_id: str, tenant: str, name: str, target_id: str, now: float) -> None:
    """A new suite, created and changed now."""
    conn.execute("INSERT INTO suites (id, tenant, name, target_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                 (suite_id, tenant, name, target_id, now, now))


def update_suite(conn: Connection, suite_id: str, name: str, target_id: str, now: float) -> None:
    """A suite's new name and target, changed now."""
    conn.execute("UPDATE suites SET name = ?, target_id = ?, updated_at = ? WHERE id = ?",
                 (name, target_id, now, suite_id))


def delete_suite(conn: Connection, suite_id: str) -> None:
    """Delete a suite (its cases and campaigns go with it)."""
    conn.execute("DELETE FROM suites WHERE id = ?", (suite_id,))


def insert_cases(conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Cases, each (suite_id, position, question, expected_answer, expected_sources, checks, conversation, turn)."""
    conn.executemany("INSERT INTO cases (suite_id, position, question, expected_answer, expected_sources, checks, "
                     "conversation, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def delete_cases(conn: Connection, suite_id: str) -> None:
    """Delete a suite's cases."""
    conn.execute("DELETE FROM cases WHERE suite_id = ?", (suite_id,))


def tenant_suite_names(conn: Connection, tenant: str, other_than: str = "") -> list[Row]:
    """The id, name and created_at of the tenant's suites (`other_than` left out), newest first."""
    return list(conn.execute("SELECT id, name, created_at FROM suites WHERE tenant = ? AND id != ? "
                             "ORDER BY created_at DESC, id", (tenant, other_than)).fetchall())


def conversation_holders(conn: Connection, tenant: str, other_than: str, names: Sequence[str]) -> list[Row]:
    """Which of the tenant's suites (`other_than` left out) hold these conversations: conversation, id, name, the
    oldest suite first."""
    found: list[Row] = []
    for start in range(0, len(names), NAMES_AT_ONCE):
        chunk = names[start:start + NAMES_AT_ONCE]
        found += conn.execute(
            "SELECT DISTINCT c.conversation, s.id, s.name FROM cases c JOIN suites s ON s.id = c.suite_id "
            f"WHERE s.tenant = ? AND s.id != ? AND c.conversation IN ({', '.join('?' * len(chunk))}) "
            "ORDER BY s.created_at, s.id", (tenant, other_than, *chunk)).fetchall()
    return found


def suite_row(store: Store, suite_id: str) -> Row | None:
    """One suite's row, or None."""
    rows = store.read("SELECT * FROM suites WHERE id = ?", (suite_id,))
    return rows[0] if rows else None


def suite_rows(store: Store, tenant: str | None = None) -> list[Row]:
    """Every suite's row (of one tenant when given), newest first."""
    if tenant is None:
        return store.read("SELECT * FROM suites ORDER BY created_at DESC, id")
    return store.read("SELECT * FROM suites WHERE tenant = ? ORDER BY created_at DESC, id", (tenant,))


def suite_names_rows(store: Store) -> list[Row]:
    """Every suite's id, tenant and name."""
    return store.read("SELECT id, tenant, name FROM suites")


def case_rows(store: Store, suite_id: str) -> list[Row]:
    """A suite's cases by position."""
    return store.read("SELECT * FROM cases WHERE suite_id = ? ORDER BY position", (suite_id,))
