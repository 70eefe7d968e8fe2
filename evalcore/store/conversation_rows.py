"""A campaign's conversations: the turns of its `campaign_questions` with their `results`, and the
`conversation_verdicts` table (the conversation judges' verdicts as JSON text, one per conversation and judge)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalcore.store import Connection, Row, Store
from evalcore.store.result_table import with_answers


def answered_turns(store: Store, campaign_id: str) -> list[dict[str, Any]]:
    """The turns already answered without an error: conversation, turn, answer."""
    return with_answers(store, store.read(
        "SELECT q.conversation, q.turn, r.answer, r.packed AS shared_packed FROM results r JOIN campaign_questions q "
        "ON q.campaign_id = r.campaign_id AND q.position = r.position "
        "WHERE r.campaign_id = ? AND q.conversation IS NOT NULL AND r.error IS NULL", (campaign_id,)))


def exchange_rows(store: Store, campaign_id: str) -> list[dict[str, Any]]:
    """Every turn in conversation and turn order, answered or not: conversation, turn, question, expected_answer,
    refs, answer (None without a result)."""
    return with_answers(store, store.read(
        "SELECT q.conversation, q.turn, q.question, q.expected_answer, q.refs, r.answer, r.packed AS shared_packed "
        "FROM campaign_questions q LEFT JOIN results r ON r.campaign_id = q.campaign_id AND r.position = "
        "q.position WHERE q.campaign_id = ? AND q.conversation IS NOT NULL ORDER BY q.conversation, "
        "q.turn, q.position", (campaign_id,)))


def turn_result_rows(store: Store, campaign_id: str) -> list[Row]:
    """The results of the turns by position: conversation, turn, qid, question, diagnosis, error, measures, position,
    packed (a packed row's measures are there)."""
    return store.read("SELECT q.conversation, q.turn, q.qid, q.question, r.diagnosis, r.error, r.measures, r.position, "
                      "r.packed "
                      "FROM results "
                      "r JOIN campaign_questions q ON q.campaign_id = r.campaign_id AND q.position = r.position "
                      "WHERE r.campaign_id = ? AND q.conversation IS NOT NULL ORDER BY r.position", (campaign_id,))


def put_conversation_verdicts(conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Keep verdicts, each (campaign_id, conversation, judge, verdict, judged_at), replacing the previous one."""
    conn.executemany(
        "INSERT INTO conversation_verdicts (campaign_id, conversation, judge, verdict, judged_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (campaign_id, conversation, judge) DO UPDATE SET "
        "verdict = excluded.verdict, judged_at = excluded.judged_at", rows)


def conversation_verdict_rows(store: Store, campaign_id: str) -> list[Row]:
    """A campaign's kept verdicts by conversation then judge: conversation, judge, verdict."""
    return store.read("SELECT conversation, judge, verdict FROM conversation_verdicts WHERE campaign_id = ? "
                      "ORDER BY conversation, judge", (campaign_id,))
