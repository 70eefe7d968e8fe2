"""The `results` table: one row per answered question of a campaign (its answer, error, failure stage, measures,
verdicts and signatures as JSON text, tokens and cost), written and read back row by row."""

from __future__ import annotations

from evalcore.store import Connection, Row, Store


def signatures_of(conn: Connection, campaign_id: str, position: int) -> str:
    """A stored result's signatures (JSON text) as they are in this write."""
    return str(conn.execute("SELECT signatures FROM results WHERE campaign_id = ? AND position = ?",
                            (campaign_id, position)).fetchone()["signatures"])


def set_measures(conn: Connection, campaign_id: str, position: int, measures: str, signatures: str) -> None:
    """A stored result's new measures and signatures (JSON text)."""
    conn.execute("UPDATE results SET measures = ?, signatures = ? WHERE campaign_id = ? AND position = ?",
                 (measures, signatures, campaign_id, position))


ALL_ROWS = 2**63 - 1  # LIMIT for no limit on both backends (SQLite's -1 is an error on PostgreSQL)

# What a comparison reads of a question and its result; a re-judge's shared columns come from the judged campaign's
# row (`s`) at the same position.
_OWN = ("position", "qid", "measures", "judges", "error", "diagnosis", "cost", "currency")
_SHARED = ("answer", "retrieved", "context", "sources", "queries")
_QUESTION = ("question", "relevant", "expected_sources", "conversation", "turn")
COMPARED_COLUMNS = (*_QUESTION, *_OWN, *_SHARED)  # the columns of `compared_rows`, in order
_JOIN = "FROM results r JOIN campaign_questions q ON q.campaign_id = r.campaign_id AND q.position = r.position"
# A row stored before costs were kept has no cost: nothing when it spent no token (as Outcome.cost says).
_COST = ("CASE WHEN r.usage IS NULL AND r.prompt_tokens + r.completion_tokens + r.judge_prompt_tokens "
         "+ r.judge_completion_tokens = 0 THEN 0 ELSE r.cost END")


def _compared_select(shared: bool) -> str:
    columns = ([f"q.{name}" for name in _QUESTION] + [_COST if name == "cost" else f"r.{name}" for name in _OWN]
               + [f"{'s' if shared else 'r'}.{name}" for name in _SHARED])
    join = " JOIN results s ON s.campaign_id = ? AND s.position = r.position" if shared else ""
    return f"SELECT {', '.join(columns)} {_JOIN}{join} WHERE r.campaign_id = ? ORDER BY r.position LIMIT ?"


def compared_rows(store: Store, campaign_id: str, holder: str) -> list[Row]:
    """A campaign's finished questions by position, `COMPARED_COLUMNS` of each; the answers and what they were
    given (the shared columns) read from campaign `holder`'s row at the same position (a re-judge's judged
    campaign; the campaign itself otherwise)."""
    shared = holder != campaign_id
    return store.read(_compared_select(shared), (*((holder,) if shared else ()), campaign_id, ALL_ROWS))
