"""The `targets` table: saved target configurations, one row each (the configuration as its JSON text)."""

from __future__ import annotations

from evalcore.store import Connection, Row, Store


def insert_target(conn: Connection, target_id: str, tenant: str | None, name: str, config: str, config_hash: str,
                  created_at: float) -> None:
    """Keep one saved configuration."""
    conn.execute("INSERT INTO targets (id, tenant, name, config, config_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                 (target_id, tenant, name, config, config_hash, created_at))


def target_row(store: Store, target_id: str) -> Row | None:
    """A saved configuration's tenant and config, or None."""
    rows = store.read("SELECT tenant, config FROM targets WHERE id = ?", (target_id,))
    return rows[0] if rows else None


def target_rows(store: Store, tenant: str | None) -> list[Row]:
    """Every saved configuration (of one tenant when given), newest first."""
    sql = ("SELECT * FROM targets" + (" WHERE tenant = ?" if tenant is not None else "")
           + " ORDER BY created_at DESC, id")
    return store.read(sql, (tenant,) if tenant is not None else ())
