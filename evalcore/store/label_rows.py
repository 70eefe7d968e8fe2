"""The `labels` table: people's labels of a campaign's questions, one per question and judge (a new one replaces)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalcore.store import Connection, Row, Store


def put_labels(conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Keep labels, each (campaign_id, qid, judge, label, note, author, labelled_at), replacing the question and
    judge's previous one."""
    conn.executemany("INSERT OR REPLACE INTO labels (campaign_id, qid, judge, label, note, author, labelled_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def delete_label(conn: Connection, campaign_id: str, qid: int, judge: str) -> None:
    """Take one label back (nothing happens when there is none)."""
    conn.execute("DELETE FROM labels WHERE campaign_id = ? AND qid = ? AND judge = ?", (campaign_id, qid, judge))


def label_rows(store: Store, campaign_id: str) -> list[Row]:
    """Every label of a campaign, by question then judge."""
    return store.read("SELECT * FROM labels WHERE campaign_id = ? ORDER BY qid, judge", (campaign_id,))
