"""The `results` table: one row per answered question of a campaign (its answer, error, failure stage, measures,
verdicts and signatures as JSON text, tokens and cost), written and read back row by row."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from evalcore.store import Connection, Row, Store, read_dictionaries
from evalcore.store.packing import ANSWER, MEASURES, answer_parts, inflate, pack_row, sections


def signatures_of(conn: Connection, campaign_id: str, position: int) -> str:
    """A stored result's signatures (JSON text) as they are in this write."""
    return str(conn.execute("SELECT signatures FROM results WHERE campaign_id = ? AND position = ?",
                            (campaign_id, position)).fetchone()["signatures"])


def set_measures(conn: Connection, campaign_id: str, position: int, measures: str, signatures: str) -> None:
    """A stored result's new measures and signatures (JSON text); a packed row's own measures dropped."""
    row = conn.execute("SELECT packed FROM results WHERE campaign_id = ? AND position = ?",
                       (campaign_id, position)).fetchone()
    packed = None if row is None or row["packed"] is None else pack_row(
        (tag, data) for tag, data in sections(row["packed"]).items() if tag != MEASURES)
    conn.execute("UPDATE results SET measures = ?, signatures = ?, packed = ? WHERE campaign_id = ? AND position = ?",
                 (measures, signatures, packed, campaign_id, position))


ALL_ROWS = 2**63 - 1  # LIMIT for no limit on both backends (SQLite's -1 is an error on PostgreSQL)

# What a comparison reads of a question and its result; a re-judge's shared columns come from the judged campaign's
# row (`s`) at the same position.
_OWN = ("position", "qid", "measures", "judges", "error", "diagnosis", "cost", "currency")
_SHARED = ("answer", "retrieved", "context", "sources", "queries")
# A row's packed value (evalcore.store.packing) holds its own measures and marks, and the answer and ranked list a
# re-judge reads from the judged campaign's row (`shared_packed`: that row's packed value, or the row's own).
_QUESTION = ("question", "relevant", "expected_sources", "conversation", "turn")
COMPARED_COLUMNS = (*_QUESTION, *_OWN, *_SHARED, "packed", "shared_packed")  # the columns of `compared_rows`, in order
_JOIN = "FROM results r JOIN campaign_questions q ON q.campaign_id = r.campaign_id AND q.position = r.position"
# A row stored before costs were kept has no cost: nothing when it spent no token (as Outcome.cost says).
_COST = ("CASE WHEN r.usage IS NULL AND r.prompt_tokens + r.completion_tokens + r.judge_prompt_tokens "
         "+ r.judge_completion_tokens = 0 THEN 0 ELSE r.cost END")


def _compared_select(shared: bool) -> str:
    columns = ([f"q.{name}" for name in _QUESTION] + [_COST if name == "cost" else f"r.{name}" for name in _OWN]
               + [f"{'s' if shared else 'r'}.{name}" for name in _SHARED]
               + ["r.packed", f"{'s' if shared else 'r'}.packed AS shared_packed"])
    join = " JOIN results s ON s.campaign_id = ? AND s.position = r.position" if shared else ""
    return f"SELECT {', '.join(columns)} {_JOIN}{join} WHERE r.campaign_id = ? ORDER BY r.position LIMIT ?"


def compared_rows(store: Store, campaign_id: str, holder: str) -> list[Row]:
    """A campaign's finished questions by position, `COMPARED_COLUMNS` of each; the answers and what they were
    given (the shared columns) read from campaign `holder`'s row at the same position (a re-judge's judged
    campaign; the campaign itself otherwise)."""
    shared = holder != campaign_id
    return store.read(_compared_select(shared), (*((holder,) if shared else ()), campaign_id, ALL_ROWS))


def signature_rows(store: Store, campaign_id: str) -> list[Row]:
    """The signatures shared by a campaign's questions (`campaign_signatures`): name, signature."""
    return store.read("SELECT name, signature FROM campaign_signatures WHERE campaign_id = ?", (campaign_id,))


def put_signatures(conn: Connection, rows: Iterable[tuple[str, str, str]]) -> None:
    """Keep shared signatures, each (campaign_id, name, signature); one kept already stays."""
    conn.executemany("INSERT INTO campaign_signatures (campaign_id, name, signature) VALUES (?, ?, ?) "
                     "ON CONFLICT DO NOTHING", rows)


def counts_at(conn: Connection, campaign_id: str, positions: Sequence[int]) -> tuple[int, int]:
    """How many of these positions have a result, and how many of those an error, as they are in this write."""
    marks = ",".join("?" * len(positions))
    row = conn.execute(f"SELECT count(*), count(error) FROM results WHERE campaign_id = ? AND position IN ({marks})",
                       (campaign_id, *positions)).fetchone()
    return int(row[0]), int(row[1])


def put_results(conn: Connection, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> None:
    """Insert results, each the values of `columns` (campaign_id, position, qid, then the rest); a question's result
    stored already is replaced and its attempts counted."""
    conn.executemany(
        f"INSERT INTO results ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        "ON CONFLICT (campaign_id, position) DO UPDATE SET "
        + ", ".join(f"{name} = excluded.{name}" for name in columns[3:]) + ", attempts = results.attempts + 1", rows)


# A result row as read back: its question's columns, then the result's.
_QUESTION_READ = ("q.question, q.expected_answer, q.refs, q.relevant, q.expected_sources, q.answerable, q.checks, "
                  "q.conversation, q.turn")
_ORDER = "WHERE r.campaign_id = ?{positions} ORDER BY r.position LIMIT ? OFFSET ?"


def results_with_questions(store: Store, campaign_id: str, holder: str, columns: Sequence[str],
                           shared: Sequence[str], positions: Sequence[int] | None, limit: int | None,
                           offset: int) -> list[Row]:
    """A campaign's results in question order, each with its question's columns (of the questions at `positions`
    only, when given; `limit` from `offset`). Read from campaign `holder`'s row at the same position (a re-judge's
    judged campaign; the campaign itself otherwise): the `shared` columns of `columns` (the rest, and attempts, are
    the campaign's own)."""
    at = "" if positions is None else f" AND r.position IN ({', '.join('?' * len(positions))})"
    if holder == campaign_id:
        sql = (f"SELECT {_QUESTION_READ}, r.*, r.packed AS shared_packed FROM results r JOIN campaign_questions q ON "
               "q.campaign_id = "
               f"r.campaign_id AND q.position = r.position {_ORDER}")
    else:
        sql = (f"SELECT {_QUESTION_READ}, "
               + ", ".join(f"s.{name} AS {name}" if name in shared else f"r.{name}"
                           for name in (*columns, "attempts")) + ", s.packed AS shared_packed"
               + " FROM results r JOIN campaign_questions q ON q.campaign_id = r.campaign_id AND q.position = "
               f"r.position JOIN results s ON s.campaign_id = ? AND s.position = r.position {_ORDER}")
    return store.read(sql.format(positions=at), (*(() if holder == campaign_id else (holder,)), campaign_id,
                                                 *(positions or ()), ALL_ROWS if limit is None else limit, offset))


def line_rows(store: Store, campaign_id: str, holder: str) -> list[Row]:
    """What a list of the questions shows and filters on, without the rest of each result, in question order:
    position, qid, question, answer and shared_packed (campaign `holder`'s: a re-judge's is the judged campaign's;
    `answer_cells` reads them), error."""
    own = holder == campaign_id
    sql = ("SELECT r.position, r.qid, q.question, {answer} AS answer, {answer_packed} AS shared_packed, r.error "
           "FROM results r "
           "JOIN campaign_questions q ON q.campaign_id = r.campaign_id AND q.position = r.position {shared}"
           "WHERE r.campaign_id = ? ORDER BY r.position").format(
        answer="r.answer" if own else "s.answer", answer_packed="r.packed" if own else "s.packed",
        shared="" if own else "JOIN results s ON s.campaign_id = ? AND s.position = r.position ")
    return store.read(sql, (campaign_id,) if own else (holder, campaign_id))


def answer_cells(store: Store, answers: Sequence[str | None], packed: Sequence[bytes | None]) -> list[str | None]:
    """Each row's answer: its `answer` column, or the one its packed value holds (`shared_packed`)."""
    return packed_answers(store, answers, [None if value is None else sections(value).get(ANSWER) for value in packed])


def packed_answers(store: Store, answers: Sequence[str | None], parts: Sequence[bytes | None]) -> list[str | None]:
    """Each row's answer: its `answer` column, or its packed answer section when it has one."""
    if not any(part is not None for part in parts):
        return list(answers)
    split = [None if part is None else answer_parts(part) for part in parts]
    dictionaries = read_dictionaries(store, {number for number, _ in filter(None, split)})
    return [answer if part is None else inflate(part[1], dictionaries[part[0]])
            for answer, part in zip(answers, split, strict=True)]


def with_answers(store: Store, rows: list[Row]) -> list[dict[str, Any]]:
    """Rows (with `answer` and `shared_packed` columns) as dicts, each answer read from its packed value when it is
    there."""
    answers = answer_cells(store, [row["answer"] for row in rows], [row["shared_packed"] for row in rows])
    out = []
    for row, answer in zip(rows, answers, strict=True):
        cells = dict(zip(row.keys(), cast(Iterable[Any], row), strict=True))
        cells["answer"] = answer
        out.append(cells)
    return out


def delete_results(conn: Connection, campaign_id: str) -> None:
    """Every stored result of a campaign removed."""
    conn.execute("DELETE FROM results WHERE campaign_id = ?", (campaign_id,))


def set_attempts(conn: Connection, campaign_id: str, attempts: Iterable[tuple[int, int]]) -> None:
    """The attempts of a campaign's results, each (position, attempts)."""
    conn.executemany("UPDATE results SET attempts = ? WHERE campaign_id = ? AND position = ?",
                     [(count, campaign_id, position) for position, count in attempts])
