"""The `jobs` table (one row per stored job: its kind, parameters and result as JSON text, status, owner, heartbeat
and progress) and `job_items` (the pieces of work a job kept, by position, as JSON text)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from evalcore.store import Connection, Row, Store


def item_rows(store: Store, job_id: str) -> list[Row]:
    """The pieces a job kept: position, value."""
    return store.read("SELECT position, value FROM job_items WHERE job_id = ?", (job_id,))


def owner_token(conn: Connection, job_id: str) -> Row | None:
    """A job's owner_token as it is in this write, or None without the job."""
    row: Row | None = conn.execute("SELECT owner_token FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return row


def keep_item(conn: Connection, job_id: str, position: int, value: str, total: int) -> int:
    """Keep one piece (a piece kept already stays) and the progress it makes; how many pieces are kept."""
    conn.execute("INSERT INTO job_items (job_id, position, value) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                 (job_id, position, value))
    done = int(conn.execute("SELECT count(*) AS n FROM job_items WHERE job_id = ?", (job_id,)).fetchone()["n"])
    conn.execute("UPDATE jobs SET done = ?, total = ?, heartbeat = ? WHERE id = ?", (done, total, time.time(), job_id))
    return done


def active_same(conn: Connection, tenant: str, kind: str, params: str) -> str | None:
    """The id of the tenant's queued or running job of this kind and these parameters, or None."""
    row = conn.execute("SELECT id FROM jobs WHERE tenant = ? AND kind = ? AND params = ? AND status IN "
                       "('queued', 'running')", (tenant, kind, params)).fetchone()
    return None if row is None else str(row["id"])


def insert_job(conn: Connection, job_id: str, tenant: str, kind: str, params: str, total: int | None) -> None:
    """Queue a job, created now."""
    conn.execute("INSERT INTO jobs (id, tenant, kind, status, params, done, total, created_at) "
                 "VALUES (?, ?, ?, 'queued', ?, 0, ?, ?)", (job_id, tenant, kind, params, total, time.time()))


def job_row(store: Store, job_id: str) -> Row | None:
    """One job's row, or None."""
    rows = store.read("SELECT * FROM jobs WHERE id = ?", (job_id,))
    return rows[0] if rows else None


def job_rows(store: Store, tenant: str | None, kind: str | None, limit: int) -> list[Row]:
    """The newest jobs first (of one tenant, of one kind when given), at most `limit`."""
    where, params = ["1 = 1"], []
    if tenant is not None:
        where.append("tenant = ?")
        params.append(tenant)
    if kind is not None:
        where.append("kind = ?")
        params.append(kind)
    return store.read(f"SELECT * FROM jobs WHERE {' AND '.join(where)} ORDER BY created_at DESC, id LIMIT ?",
                      (*params, limit))


def status_row(conn: Connection, job_id: str) -> Any:
    """A job's status and heartbeat as they are in this write."""
    return conn.execute("SELECT status, heartbeat FROM jobs WHERE id = ?", (job_id,)).fetchone()


def cancel_now(conn: Connection, job_id: str, now: float) -> None:
    """Cancel a job no worker runs: ended now, without an owner."""
    conn.execute("UPDATE jobs SET status = 'cancelled', ended_at = ?, owner_token = NULL WHERE id = ?", (now, job_id))


def request_cancel(conn: Connection, job_id: str) -> None:
    """Ask the worker running a job to cancel it."""
    conn.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (job_id,))


def requeue_before(conn: Connection, heartbeat_before: float) -> int:
    """Every running job whose heartbeat is older than this goes back to the queue (how many)."""
    return int(conn.execute("UPDATE jobs SET status = 'queued', owner_token = NULL WHERE status = 'running' AND "
                            "heartbeat < ?", (heartbeat_before,)).rowcount)


def claim_queued(store: Store, token: str, tenant_cap: int, kinds: Sequence[str]) -> Row | None:
    """Take the oldest queued job of these kinds whose tenant runs fewer than tenant_cap jobs for this owner token,
    in one write; its row, or None."""
    marks = ", ".join("?" * len(kinds))
    sql = ("UPDATE jobs SET status = 'running', owner_token = ?, heartbeat = ?, started_at = ?, cancel_requested = 0 "
           f"WHERE id = (SELECT q.id FROM jobs q WHERE q.status = 'queued' AND q.kind IN ({marks}) AND "
           "(SELECT count(*) FROM jobs o WHERE o.tenant = q.tenant AND o.status = 'running') < ? "
           f"ORDER BY q.created_at, q.id LIMIT 1{store.dialect.skip_locked}) AND status = 'queued' RETURNING *")

    def take(conn: Connection) -> Row | None:
        now = time.time()
        row: Row | None = conn.execute(sql, (token, now, now, *kinds, tenant_cap)).fetchone()
        return row

    return store.write(take)


def take_queued(conn: Connection, job_id: str, token: str) -> list[Row]:
    """Take this job for this owner token when it is queued: its row (none when it is not queued)."""
    return list(conn.execute(
        "UPDATE jobs SET status = 'running', owner_token = ?, heartbeat = ?, started_at = ? WHERE id = ? AND "
        "status = 'queued' RETURNING *", (token, time.time(), time.time(), job_id)).fetchall())


def end_job(conn: Connection, job_id: str, token: str, status: str, error: str | None, result: str | None,
            ended_at: float | None) -> None:
    """How a job ended (its owner let go), while this owner token holds it."""
    conn.execute("UPDATE jobs SET status = ?, error = ?, result = ?, ended_at = ?, owner_token = NULL "
                 "WHERE id = ? AND owner_token = ?", (status, error, result, ended_at, job_id, token))


def beat(conn: Connection, job_id: str, token: str) -> list[Row]:
    """A heartbeat while this owner token holds the job: its cancel_requested (no row: it is no longer held)."""
    return list(conn.execute("UPDATE jobs SET heartbeat = ? WHERE id = ? AND owner_token = ? RETURNING "
                             "cancel_requested", (time.time(), job_id, token)).fetchall())
