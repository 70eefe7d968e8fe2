"""The `campaigns` table: one row per campaign (its configuration and options as JSON text, its status, owner,
heartbeat, counters and the progress of its current stage). A campaign's columns are named by the caller (the
record's fields); the statuses come from `CampaignStatus`."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from typing import Any

from evalcore.store import QUEUED, Connection, Row, Store
from evalcore.store.campaign_statuses import ACTIVE, OWNED, CampaignStatus, sql_list

# The progress of a stage before the questions (indexing the corpus...), written by its runner in this order.
STAGE_COLUMNS = "stage = ?, stage_done = ?, stage_total = ?, pace_rate = ?, pace_at = ?, pace_done = ?"

CLAIM = (
    f"UPDATE campaigns SET status = '{CampaignStatus.PENDING.value}', owner_token = ?, owner_host = ?, "
    "owner_pid = ?, heartbeat = ?, "
    "error = NULL, ended_at = NULL, "
    "finished = (SELECT count(*) FROM results r WHERE r.campaign_id = campaigns.id), "
    "failed = (SELECT count(r.error) FROM results r WHERE r.campaign_id = campaigns.id) "
    "WHERE id = (SELECT q.id FROM campaigns q WHERE q.status = ? AND "
    f"(SELECT count(*) FROM campaigns o WHERE o.tenant = q.tenant AND o.status IN {sql_list(OWNED)}) < ? "
    "ORDER BY q.created_at, q.id LIMIT 1{lock}) AND status = ? RETURNING id"
)


# Reading campaigns

def campaign_row(store: Store, columns: str, campaign_id: str) -> Row | None:
    """These columns of one campaign, or None."""
    rows = store.read(f"SELECT {columns} FROM campaigns WHERE id = ?", (campaign_id,))
    return rows[0] if rows else None


def campaign_rows(store: Store, columns: str, tenant: str | None = None, suite_id: str | None = None) -> list[Row]:
    """These columns of every campaign (of one tenant and/or suite when given), newest first."""
    clauses, params = [], []
    if tenant is not None:
        clauses.append("tenant = ?")
        params.append(tenant)
    if suite_id is not None:
        clauses.append("suite_id = ?")
        params.append(suite_id)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    return store.read(f"SELECT {columns} FROM campaigns {where} ORDER BY created_at DESC, id", params)


def campaign_rows_by_id(conn: Connection, columns: str, campaign_ids: Sequence[str]) -> list[Row]:
    """These columns of the campaigns with these ids (in a write: as they are now)."""
    marks = ", ".join("?" * len(campaign_ids))
    return list(conn.execute(f"SELECT {columns} FROM campaigns WHERE id IN ({marks})",
                             tuple(campaign_ids)).fetchall())


def owner_of(store: Store, campaign_id: str) -> Row | None:
    """A campaign's owner_host and owner_pid, or None without the campaign."""
    rows = store.read("SELECT owner_host, owner_pid FROM campaigns WHERE id = ?", (campaign_id,))
    return rows[0] if rows else None


def rerun_of(store: Store, campaign_id: str) -> str:
    """Which of its questions a campaign's session asks: `missing` or `failed` (as `question_rows` takes it)."""
    return str(store.read("SELECT rerun FROM campaigns WHERE id = ?", (campaign_id,))[0]["rerun"])


def readers_of(store: Store, campaign_id: str) -> list[str]:
    """The ids of the campaigns that read their answers from this one, oldest first."""
    return [row["id"] for row in store.read("SELECT id FROM campaigns WHERE answers_from = ? ORDER BY created_at",
                                            (campaign_id,))]


def queued_before(store: Store, campaign_id: str) -> int:
    """How many queued campaigns were created before this one."""
    rows = store.read("SELECT count(*) AS n FROM campaigns WHERE status = ? AND created_at < "
                      "(SELECT created_at FROM campaigns WHERE id = ?)", (QUEUED, campaign_id))
    return int(rows[0]["n"])


# Launching, changing and deleting

def active_on_suite(conn: Connection, suite_id: str, besides: str) -> str | None:
    """The id of an active campaign on this suite other than `besides`, or None."""
    row = conn.execute(f"SELECT id FROM campaigns WHERE suite_id = ? AND id != ? AND status IN {sql_list(ACTIVE)}",
                       (suite_id, besides)).fetchone()
    return None if row is None else str(row["id"])


def campaign_exists(conn: Connection, campaign_id: str) -> bool:
    """Whether a campaign has this id."""
    return conn.execute("SELECT 1 FROM campaigns WHERE id = ?", (campaign_id,)).fetchone() is not None


def insert_campaign(conn: Connection, row: dict[str, Any]) -> None:
    """Insert a campaign: column -> value."""
    conn.execute(f"INSERT INTO campaigns ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})", row)


def status_row(conn: Connection, campaign_id: str) -> Row | None:
    """A campaign's status and heartbeat as they are in this write, or None."""
    row: Row | None = conn.execute("SELECT status, heartbeat FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
    return row


def set_status(conn: Connection, campaign_id: str, status: str) -> None:
    """Change a campaign's status only."""
    conn.execute("UPDATE campaigns SET status = ? WHERE id = ?", (status, campaign_id))


def fail_setup(conn: Connection, campaign_id: str, token: str, reason: str, now: float) -> None:
    """Fail a campaign whose session could not start, while this owner token holds it."""
    conn.execute("UPDATE campaigns SET status = 'failed', error = ?, ended_at = ? WHERE id = ? AND owner_token = ?",
                 (reason, now, campaign_id, token))


def recount(conn: Connection, campaign_id: str) -> None:
    """A campaign's counters read from its stored results."""
    conn.execute("UPDATE campaigns SET finished = (SELECT count(*) FROM results WHERE campaign_id = ?), "
                 "failed = (SELECT count(error) FROM results WHERE campaign_id = ?) WHERE id = ?",
                 (campaign_id, campaign_id, campaign_id))


def reactivate(conn: Connection, campaign_id: str, status: str, queued_at: float | None, rerun: str,
               token: str | None, options: str, config: str) -> None:
    """Start a new session of a campaign (owned by `token`, or queued without one), its counters read from its
    stored results."""
    conn.execute(
        "UPDATE campaigns SET status = ?, error = NULL, ended_at = NULL, cancel_requested = 0, queued_at = ?, "
        "rerun = ?, owner_host = ?, owner_pid = ?, owner_token = ?, heartbeat = ?, options = ?, config = ?, "
        "finished = (SELECT count(*) FROM results WHERE campaign_id = ?), "
        "failed = (SELECT count(error) FROM results WHERE campaign_id = ?) WHERE id = ?",
        (status, queued_at, rerun, socket.gethostname(), os.getpid(), token, time.time(), options, config,
         campaign_id, campaign_id, campaign_id),
    )


def rename(conn: Connection, campaign_id: str, name: str) -> None:
    """Give a campaign another name."""
    conn.execute("UPDATE campaigns SET name = ? WHERE id = ?", (name, campaign_id))


def cancel_now(conn: Connection, campaign_id: str, now: float) -> None:
    """Cancel a campaign no runner holds: ended now, without an owner."""
    conn.execute("UPDATE campaigns SET status = ?, ended_at = ?, owner_token = NULL WHERE id = ?",
                 (CampaignStatus.CANCELLED.value, now, campaign_id))


def request_cancel(conn: Connection, campaign_id: str) -> None:
    """Ask the runner holding a campaign to cancel it."""
    conn.execute("UPDATE campaigns SET cancel_requested = 1 WHERE id = ?", (campaign_id,))


def delete_campaign(conn: Connection, campaign_id: str) -> None:
    """Delete a campaign (its questions, results and figures go with it)."""
    conn.execute("DELETE FROM campaigns WHERE id = ?", (campaign_id,))


# The queue

def claim_queued(store: Store, token: str, tenant_cap: int) -> str | None:
    """Take the oldest queued campaign whose tenant owns fewer than tenant_cap for this owner token, in one write;
    its id, or None."""
    sql = CLAIM.format(lock=store.dialect.skip_locked)

    def take(conn: Connection) -> str | None:
        row = conn.execute(sql, (token, socket.gethostname(), os.getpid(), time.time(), QUEUED, tenant_cap,
                                 QUEUED)).fetchone()
        return None if row is None else str(row["id"])

    return store.write(take)


# A runner's writes to the campaign it owns: each changes the row only while `token` holds it and says how many rows
# it changed (0: deleted, or taken over by another process).

def start_session(conn: Connection, campaign_id: str, token: str, now: float) -> int:
    """Running from now, its session's count starting at the stored one, no stage yet."""
    return int(conn.execute(
        "UPDATE campaigns SET status = ?, started_at = ?, heartbeat = ?, session_finished = finished, "
        "stage = NULL, stage_done = NULL, stage_total = NULL, pace_rate = NULL, pace_at = NULL, pace_done = NULL "
        "WHERE id = ? AND owner_token = ?", (CampaignStatus.RUNNING.value, now, now, campaign_id, token)).rowcount)


def set_stage(conn: Connection, campaign_id: str, token: str, stage: Sequence[Any]) -> int:
    """The current stage's progress, the values of `STAGE_COLUMNS` in order."""
    return int(conn.execute(f"UPDATE campaigns SET {STAGE_COLUMNS} WHERE id = ? AND owner_token = ?",
                            (*stage, campaign_id, token)).rowcount)


def start_questions(conn: Connection, campaign_id: str, token: str, now: float) -> int | None:
    """No stage any more, the questions' pace counted from now: the questions finished so far, or None."""
    row = conn.execute("UPDATE campaigns SET stage = NULL, stage_done = NULL, stage_total = NULL, "
                       "pace_rate = NULL, pace_at = ?, pace_done = finished WHERE id = ? AND owner_token = ? "
                       "RETURNING finished", (now, campaign_id, token)).fetchone()
    return None if row is None else int(row["finished"])


def beat_row(store: Store, campaign_id: str) -> Row | None:
    """What a heartbeat reads: cancel_requested and finished, or None without the campaign."""
    rows = store.read("SELECT cancel_requested, finished FROM campaigns WHERE id = ?", (campaign_id,))
    return rows[0] if rows else None


def beat(conn: Connection, campaign_id: str, token: str, now: float, cache_hits: int,
         stage: Sequence[Any] = ()) -> int:
    """A heartbeat with the cache hits so far, and the stage's progress when given (`STAGE_COLUMNS`' values)."""
    sets = f", {STAGE_COLUMNS}" if stage else ""
    return int(conn.execute(f"UPDATE campaigns SET heartbeat = ?, cache_hits = ?{sets} WHERE id = ? "
                            "AND owner_token = ?", (now, cache_hits, *stage, campaign_id, token)).rowcount)


def beat_with_pace(conn: Connection, campaign_id: str, token: str, now: float, cache_hits: int,
                   pace: Sequence[Any]) -> int:
    """A heartbeat with the cache hits so far and the questions' pace (rate, at, done)."""
    return int(conn.execute(
        "UPDATE campaigns SET heartbeat = ?, cache_hits = ?, pace_rate = ?, pace_at = ?, pace_done = ? "
        "WHERE id = ? AND owner_token = ?", (now, cache_hits, *pace, campaign_id, token)).rowcount)


def finish_session(conn: Connection, campaign_id: str, token: str, status: CampaignStatus, lost: int,
                   error: str | None, now: float, cache_hits: int) -> int:
    """How the session ended: `status` (ended now unless active; an active one left without its owner), or, `lost`
    (1) for a campaign no queue takes back, interrupted now."""
    return int(conn.execute(
        "UPDATE campaigns SET status = CASE WHEN ? = 1 AND queued_at IS NULL THEN 'interrupted' ELSE ? END, "
        "ended_at = CASE WHEN ? = 1 AND queued_at IS NULL THEN ? ELSE ? END, error = ?, heartbeat = ?, "
        "cache_hits = ?, owner_token = CASE WHEN ? = 1 THEN NULL ELSE owner_token END WHERE id = ? "
        "AND owner_token = ?",
        (lost, status.value, lost, now, None if status.active else now, error, now, cache_hits, status.active,
         campaign_id, token)).rowcount)


# What the writer of a campaign's results reads and moves in the same transaction.

def owner_token(conn: Connection, campaign_id: str) -> Row | None:
    """A campaign's owner_token as it is in this write, or None without the campaign."""
    row: Row | None = conn.execute("SELECT owner_token FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
    return row


def add_counts(conn: Connection, campaign_id: str, added: int, failed: int, now: float,
               cache_hits: int) -> tuple[int, int]:
    """Move a campaign's counters by what a write added (and heartbeat): (finished, failed) after it."""
    row = conn.execute(
        "UPDATE campaigns SET finished = finished + :added, failed = failed + :failed, heartbeat = :now, "
        "cache_hits = :hits WHERE id = :id RETURNING finished, failed",
        {"id": campaign_id, "added": added, "failed": failed, "now": now, "hits": cache_hits},
    ).fetchone()
    return int(row["finished"]), int(row["failed"])


def answers_from(store: Store, campaign_id: str) -> str | None:
    """The campaign whose answers this one judges again (None when its answers are its own, or without it)."""
    rows = store.read("SELECT answers_from FROM campaigns WHERE id = ?", (campaign_id,))
    return rows[0]["answers_from"] if rows else None
