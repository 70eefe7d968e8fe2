"""The `campaign_questions` table: a campaign's question snapshot, one row per question (its position, qid, text,
expected answer and references as JSON text, its place in a conversation)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalcore.store import Connection, Row, Store


def insert_questions(conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Write question rows, each (campaign_id, position, qid, question, expected_answer, refs,
    relevant, expected_sources, answerable, checks, conversation, turn) (an iterable: read one at a time)."""
    conn.executemany(
        "INSERT INTO campaign_questions (campaign_id, position, qid, question, expected_answer, refs, relevant, "
        "expected_sources, answerable, checks, conversation, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


# Which of a campaign's questions a read returns: all, those without a result, those whose result is an error.
_WHICH = {
    "all": "1 = 1",
    "missing": "NOT EXISTS (SELECT 1 FROM results r WHERE r.campaign_id = q.campaign_id AND r.position = "
               "q.position)",
    "failed": "EXISTS (SELECT 1 FROM results r WHERE r.campaign_id = q.campaign_id AND r.position = q.position "
              "AND r.error IS NOT NULL)",
}


def question_rows(store: Store, campaign_id: str, only: str = "all") -> list[Row]:
    """A campaign's question rows by position: `all`, `missing` (no result) or `failed` (a result with an error)."""
    return store.read(f"SELECT * FROM campaign_questions q WHERE q.campaign_id = ? AND {_WHICH[only]} "
                      "ORDER BY q.position", (campaign_id,))


def has_question(store: Store, campaign_id: str, qid: int) -> bool:
    """Whether the campaign asked the question with this qid."""
    return bool(store.read("SELECT 1 FROM campaign_questions WHERE campaign_id = ? AND qid = ?", (campaign_id, qid)))


def question_texts(store: Store, campaign_id: str) -> dict[int, str]:
    """Each of a campaign's qids with its question's text."""
    return {row["qid"]: row["question"] for row in store.read(
        "SELECT qid, question FROM campaign_questions WHERE campaign_id = ?", (campaign_id,))}


def question_ids(store: Store, campaign_id: str) -> set[int]:
    """The qids a campaign asked."""
    return {row["qid"] for row in store.read("SELECT qid FROM campaign_questions WHERE campaign_id = ?",
                                             (campaign_id,))}


def set_answerable(conn: Connection, campaign_id: str, position: int, answerable: int | None) -> None:
    """A question's answerability (1, 0, or None when unknown)."""
    conn.execute("UPDATE campaign_questions SET answerable = ? WHERE campaign_id = ? AND position = ?",
                 (answerable, campaign_id, position))
