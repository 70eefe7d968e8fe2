"""The `api_keys` table (one row per key: its tenant, role, capability, the hash of its secret and the secret's
first characters) and `dashboard_sessions` (a signed-in browser's session: the hash of its token, its key, when it
expires or was signed out)."""

from __future__ import annotations

import time
from typing import Any

from evalcore.store import Connection, Row, Store


def insert_key(conn: Connection, row: tuple[Any, ...]) -> None:
    """A new active key: (id, tenant, role, capability, key_hash, prefix, created_at)."""
    conn.execute("INSERT INTO api_keys (id, tenant, role, capability, key_hash, prefix, created_at, revoked_at)"
                 " VALUES (?, ?, ?, ?, ?, ?, ?, NULL)", row)


def active_key_by_hash(store: Store, key_hash: str) -> Row | None:
    """The active key whose secret has this hash, or None."""
    rows = store.read("SELECT * FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL", (key_hash,))
    return rows[0] if rows else None


def active_key(store: Store, key_id: str) -> Row | None:
    """The key with this id while it is active, or None."""
    rows = store.read("SELECT * FROM api_keys WHERE id = ? AND revoked_at IS NULL", (key_id,))
    return rows[0] if rows else None


def key_row(store: Store, key_id: str) -> Row | None:
    """The key with this id, revoked or not, or None."""
    rows = store.read("SELECT * FROM api_keys WHERE id = ?", (key_id,))
    return rows[0] if rows else None


def any_key(store: Store) -> bool:
    """Whether any key exists (even revoked)."""
    return bool(store.read("SELECT 1 FROM api_keys LIMIT 1"))


def key_rows(store: Store, tenant: str | None = None) -> list[Row]:
    """Every key (or one tenant's), oldest first."""
    if tenant is None:
        return store.read("SELECT * FROM api_keys ORDER BY created_at, id")
    return store.read("SELECT * FROM api_keys WHERE tenant = ? ORDER BY created_at, id", (tenant,))


def revoke(conn: Connection, key_id: str) -> None:
    """Revoke a key now (one revoked already keeps its time)."""
    conn.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (time.time(), key_id))


def insert_session(conn: Connection, row: tuple[Any, ...]) -> None:
    """A new dashboard session: (token_hash, key_id, created_at, expires_at)."""
    conn.execute("INSERT INTO dashboard_sessions (token_hash, key_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                 row)


def session_key(store: Store, token_hash: str, now: float) -> str | None:
    """The key id of the session whose token has this hash, while it is neither signed out nor expired, or None."""
    rows = store.read("SELECT key_id FROM dashboard_sessions WHERE token_hash = ? AND ended_at IS NULL AND "
                      "expires_at > ?", (token_hash, now))
    return str(rows[0]["key_id"]) if rows else None


def end_session(conn: Connection, token_hash: str, now: float) -> None:
    """Sign out the session whose token has this hash (one signed out already keeps its time)."""
    conn.execute("UPDATE dashboard_sessions SET ended_at = ? WHERE token_hash = ? AND ended_at IS NULL",
                 (now, token_hash))
