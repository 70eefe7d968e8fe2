"""The `campaign_figures` table: figures computed from an ended campaign's results and kept (JSON text), one per
campaign and kind, under the results version they were computed from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from evalcore.store import Connection, Row, Store


def figure_rows(store: Store, kind: str, campaign_ids: Sequence[str]) -> list[Row]:
    """The kept figures of this kind of these campaigns: campaign_id, version, data."""
    return store.read(f"SELECT campaign_id, version, data FROM campaign_figures WHERE kind = ? AND campaign_id IN "
                      f"({', '.join('?' * len(campaign_ids))})", (kind, *campaign_ids))


def put_figures(conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Keep figures, each (campaign_id, kind, version, data, created_at), replacing the campaign's of that kind."""
    conn.executemany(
        "INSERT INTO campaign_figures (campaign_id, kind, version, data, created_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (campaign_id, kind) DO UPDATE SET version = excluded.version, data = excluded.data, "
        "created_at = excluded.created_at", rows)


def delete_figures(conn: Connection, campaign_id: str) -> None:
    """Forget every figure kept for a campaign (its results changed)."""
    conn.execute("DELETE FROM campaign_figures WHERE campaign_id = ?", (campaign_id,))
