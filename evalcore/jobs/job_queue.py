"""Long work that is not a campaign (the pairwise judge over two campaigns, and any later kind) as a stored job.

A face submits a job (`submit`: a kind, its parameters, the tenant) and answers at once; a process that serves jobs
(`JobWorkers`: `serve`, `worker`, the dashboard) claims it in one atomic update under the caps per process and per
tenant, and runs its kind's function on a thread of its own. The function reports progress, stores each piece of
work as it is done (`JobContext.keep`: a resumed job skips what was stored) and stops when the job is cancelled.
The owner's heartbeat is a lease, as for campaigns: a job whose heartbeat is older than the lease goes back to the
queue, whoever its owner, and the next claim resumes it. A kind is a `JobKind` registered by the layer that knows
the work (`register`); a worker claims only the kinds registered in its process.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evalcore.access.principals import Action, Principal, scope
from evalcore.errors import EvalError
from evalcore.formats.shapes import Key, doc
from evalcore.runtime.memory import give_back
from evalcore.store import (
    HEARTBEAT_S,
    Conflict,
    Connection,
    NotFound,
    Row,
    Store,
    StoreUnavailable,
    dumps,
    job_rows,
    lease_s,
    new_owner_token,
)

log = logging.getLogger("evalcore.jobs.job_queue")

DEFAULT_PER_SERVER = 2
DEFAULT_PER_TENANT = 2
POLL_S = 1.0
# How long a closing process waits for its jobs to stop at their next step before handing back those still busy (in
# a slow model call that cannot be interrupted) as they are: a SIGTERM ends the process in seconds, not after a call.
CLOSE_GRACE_S = 5.0


class JobStatus(StrEnum):
    """Where a job is: waiting for a worker, running, or ended (how)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def active(self) -> bool:
        """Queued or running."""
        return self in (JobStatus.QUEUED, JobStatus.RUNNING)


class JobCancelled(Exception):
    """Raised by JobContext.check once the job was cancelled (or given up by this process)."""


@dataclass(frozen=True)
class Job:
    """A long piece of work run by a worker: its kind, parameters, progress and, once it ended, its result."""

    id: str = field(metadata=doc("the job's id"))
    tenant: str = field(metadata=doc("the tenant it belongs to"))
    kind: str = field(metadata=doc("what it does (pairwise: the pairwise judge over two campaigns)"))
    status: JobStatus = field(metadata=doc("queued, running, succeeded, failed or cancelled"))
    params: dict[str, Any] = field(metadata=doc("what it was asked to do"))
    done: int = field(metadata=doc("pieces of work done (questions, for the pairwise judge)"))
    total: int | None = field(metadata=doc("pieces of work in all, once known"))
    created_at: float = field(metadata=doc("when it was submitted"))
    started_at: float | None = field(metadata=doc("when a worker last started it"))
    ended_at: float | None = field(metadata=doc("when it ended"))
    error: str | None = field(metadata=doc("why it failed"))
    result: dict[str, Any] | None = field(metadata=doc("what it produced, once it succeeded"))

    JSON_EXTRA = (Key("progress", float | None, "done / total, once the total is known"),)

    @property
    def active(self) -> bool:
        """Queued or running."""
        return self.status.active

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"id": self.id, "tenant": self.tenant, "kind": self.kind, "status": self.status.value,
                "params": self.params, "done": self.done, "total": self.total, "created_at": self.created_at,
                "started_at": self.started_at, "ended_at": self.ended_at, "error": self.error, "result": self.result,
                "progress": self.done / self.total if self.total else None}

    @classmethod
    def from_row(cls, row: Row) -> Job:
        """From a row of the jobs table."""
        return cls(row["id"], row["tenant"], row["kind"], JobStatus(row["status"]), json.loads(row["params"]),
                   int(row["done"]), row["total"], row["created_at"], row["started_at"], row["ended_at"],
                   row["error"], None if row["result"] is None else json.loads(row["result"]))


class JobContext:
    """What a kind's function is given: the job, the store, progress, the pieces kept so far, and cancellation."""

    def __init__(self, store: Store, job: Job, token: str, stop: threading.Event) -> None:
        self.store, self.job, self.token, self._stop = store, job, token, stop

    def check(self) -> None:
        """JobCancelled once the job was cancelled (or this process gave it up)."""
        if self._stop.is_set():
            raise JobCancelled(self.job.id)

    @property
    def stopping(self) -> bool:
        """Whether the job should stop (cancelled or given up)."""
        return self._stop.is_set()

    def kept(self) -> dict[int, Any]:
        """The pieces stored by this job so far (by position), from this run and any earlier one."""
        rows = job_rows.item_rows(self.store, self.job.id)
        return {int(row["position"]): json.loads(row["value"]) for row in rows}

    def keep(self, position: int, value: Any, total: int) -> int:
        """Store one piece (once: a piece stored already stays) and the progress; how many are done."""
        def write(conn: Connection) -> int:
            owner = job_rows.owner_token(conn, self.job.id)
            if owner is None or owner["owner_token"] != self.token:
                raise JobCancelled(self.job.id)  # deleted, cancelled or taken over elsewhere: write nothing
            return job_rows.keep_item(conn, self.job.id, position, dumps(value), total)

        return self.store.write(write)


@dataclass(frozen=True)
class JobKind:
    """A kind of job: its name, what starting it checks (at submit time, in the request), and what runs it."""

    name: str
    run: Callable[[JobContext], dict[str, Any]]  # the result, stored as JSON


_KINDS: dict[str, JobKind] = {}
_KINDS_LOCK = threading.Lock()


def register(kind: JobKind) -> None:
    """Make a kind of job known to this process (its workers claim it)."""
    with _KINDS_LOCK:
        _KINDS[kind.name] = kind


def kinds() -> tuple[str, ...]:
    """The kinds this process runs."""
    with _KINDS_LOCK:
        return tuple(sorted(_KINDS))


def cap(name: str, text: str | None, default: int) -> int:
    """A cap (of campaigns or jobs) set in the environment variable `name` (a whole number of at least 1), else its
    default."""
    text = (text or "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise EvalError("a cap must be a whole number of at least 1", where=name, found=text)
    return int(text)


def submit(store: Store, kind: str, params: Mapping[str, Any], *, tenant: str, total: int | None = None,
           unique: bool = False) -> str:
    """Queue a job (its id); with `unique`, Conflict naming the active job of the same kind and parameters."""
    job_id = f"job-{secrets.token_hex(6)}"
    text = dumps(dict(params))

    def insert(conn: Connection) -> None:
        if unique:
            same = job_rows.active_same(conn, tenant, kind, text)
            if same is not None:
                raise Conflict(f"the same {kind} job is already under way: follow it", where=same, running_id=same)
        job_rows.insert_job(conn, job_id, tenant, kind, text, total)

    store.write(insert)
    return job_id


def get_job(store: Store, job_id: str, *, tenant: str | None = None, principal: Principal | None = None) -> Job:
    """A job (NotFound for another tenant's, as for a missing one)."""
    tenant = scope(principal, tenant)
    row = job_rows.job_row(store, job_id)
    if row is None or (tenant is not None and row["tenant"] != tenant):
        raise NotFound("no such job", where=job_id)
    return Job.from_row(row)


def list_jobs(store: Store, *, kind: str | None = None, tenant: str | None = None,
              principal: Principal | None = None, limit: int = 100) -> list[Job]:
    """The newest jobs first (of one kind when given), at most `limit`."""
    tenant = scope(principal, tenant)
    return [Job.from_row(row) for row in job_rows.job_rows(store, tenant, kind, limit)]


def cancel_job(store: Store, job_id: str, *, tenant: str | None = None, principal: Principal | None = None) -> Job:
    """Cancel a job: a queued one (or one whose owner went silent past its lease) at once, a running one at its
    next step; Conflict for one that ended."""
    get_job(store, job_id, tenant=scope(principal, tenant, Action.CHANGE))

    def request(conn: Connection) -> None:
        row = job_rows.status_row(conn, job_id)
        now = time.time()
        if row["status"] == JobStatus.QUEUED or (row["status"] == JobStatus.RUNNING
                                                 and (row["heartbeat"] or now) < now - lease_s()):
            job_rows.cancel_now(conn, job_id, now)
        elif row["status"] == JobStatus.RUNNING:
            job_rows.request_cancel(conn, job_id)
        else:
            raise Conflict(f"the job is {row['status']}: there is nothing to cancel", where=job_id)

    store.write(request)
    return get_job(store, job_id)


def requeue_lapsed(conn: Connection) -> int:
    """Every running job whose heartbeat is older than the lease goes back to the queue (how many)."""
    return job_rows.requeue_before(conn, time.time() - lease_s())


def claim(store: Store, token: str, tenant_cap: int, names: tuple[str, ...]) -> Job | None:
    """Claim the oldest queued job of these kinds whose tenant runs fewer than tenant_cap jobs, or None."""
    if not names:
        return None
    row = job_rows.claim_queued(store, token, tenant_cap, names)
    return None if row is None else Job.from_row(row)


class JobRun:
    """One claimed job on its own thread, with a heartbeat that also picks up a cancel."""

    def __init__(self, store: Store, job: Job, token: str, kind: JobKind) -> None:
        self.store, self.job, self.token, self.kind = store, job, token, kind
        self.stop = threading.Event()
        self.ended = threading.Event()
        self.released = False  # given up by this process (closing, or the store away): back to the queue
        self.handed_back = False  # put back in the queue while its thread was still busy: what it ends with is dropped
        self.thread = threading.Thread(target=self._run, name=f"job-{job.id}", daemon=True)
        self._beats = threading.Thread(target=self._beat_loop, name=f"job-heartbeat-{job.id}", daemon=True)

    def start(self) -> None:
        """Start the job and its heartbeat."""
        self.thread.start()
        self._beats.start()

    def run_here(self) -> None:
        """Run the job on the calling thread (its heartbeat on its own)."""
        self._beats.start()
        self._run()

    def release(self) -> None:
        """Stop, to be resumed by a worker (this process closes)."""
        self.released = True
        self.stop.set()

    def hand_back(self) -> None:
        """Put the job back in the queue now, while its thread is still busy (a call that cannot be interrupted):
        another worker resumes it from what it kept; whatever this thread finishes later is not written (the job is
        no longer held by its owner token). Its heartbeat stops."""
        self.handed_back = True
        self.ended.set()
        try:
            self.store.write(lambda conn: job_rows.end_job(conn, self.job.id, self.token, JobStatus.QUEUED.value,
                                                           None, None, None))
        except (StoreUnavailable, EvalError):
            log.warning("job %s not handed back: the store cannot be written (its lease runs out)", self.job.id)

    def _run(self) -> None:
        try:
            status, error, result = self._outcome()
            if self.released and status == JobStatus.CANCELLED:
                status = JobStatus.QUEUED
            if not self.handed_back:
                self._end(status, error, result)
        except StoreUnavailable:
            log.warning("job %s given up: the store cannot be reached (its lease runs out)", self.job.id)
        except Exception:
            log.exception("job %s", self.job.id)
        finally:
            self.ended.set()
            give_back()  # a job's pieces (the pairwise judge's replies) go back to the system

    def _outcome(self) -> tuple[JobStatus, str | None, dict[str, Any] | None]:
        context = JobContext(self.store, self.job, self.token, self.stop)
        try:
            return JobStatus.SUCCEEDED, None, self.kind.run(context)
        except JobCancelled:
            return JobStatus.CANCELLED, None, None
        except StoreUnavailable:
            raise
        except EvalError as error:
            return JobStatus.FAILED, error.line(), None
        except Exception as error:  # a broken job fails with its reason; the worker goes on
            log.exception("job %s", self.job.id)
            return JobStatus.FAILED, f"{type(error).__name__}: {error}", None

    def _end(self, status: JobStatus, error: str | None, result: dict[str, Any] | None) -> None:
        ended = None if status.active else time.time()
        text = None if result is None else dumps(result)
        self.store.write(lambda conn: job_rows.end_job(conn, self.job.id, self.token, status.value, error, text,
                                                       ended))

    def _beat_loop(self) -> None:
        """Heartbeat; a cancel asked anywhere stops the job; no heartbeat for part of the lease gives it up."""
        last = time.monotonic()
        while not self.ended.wait(HEARTBEAT_S):
            try:
                rows = self.store.write(lambda conn: job_rows.beat(conn, self.job.id, self.token))
                last = time.monotonic()
            except StoreUnavailable:
                if time.monotonic() - last >= 2 / 3 * lease_s():
                    self.stop.set()  # another worker may take it once the lease runs out
                    return
                continue
            if not rows or rows[0]["cancel_requested"]:
                self.stop.set()  # cancelled, or no longer this process's


class JobWorkers:
    """A thread of one process that claims queued jobs of the kinds registered here and runs them, at most `slots`
    at once (EVALCORE_MAX_JOBS, else 2) and `tenant_cap` of one tenant over every process
    (EVALCORE_MAX_JOBS_PER_TENANT, else 2)."""

    def __init__(self, store: Store, slots: int | None = None, tenant_cap: int | None = None,
                 poll_s: float = POLL_S) -> None:
        self.store = store
        self.slots = slots or cap("EVALCORE_MAX_JOBS", os.environ.get("EVALCORE_MAX_JOBS"), DEFAULT_PER_SERVER)
        self.tenant_cap = tenant_cap or cap("EVALCORE_MAX_JOBS_PER_TENANT",
                                            os.environ.get("EVALCORE_MAX_JOBS_PER_TENANT"), DEFAULT_PER_TENANT)
        self.poll_s = poll_s
        self.runs: dict[str, JobRun] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="evalcore-job-workers", daemon=True)

    def start(self) -> None:
        """Start claiming."""
        self._thread.start()

    def wake(self) -> None:
        """Look at the queue now."""
        self._wake.set()

    def running(self) -> int:
        """How many jobs run here now."""
        return sum(not run.ended.is_set() for run in list(self.runs.values()))

    def close(self, grace_s: float = CLOSE_GRACE_S) -> None:
        """Claim no more; the jobs running here go back to the queue (to be resumed): each stops at its next step,
        and one still busy after `grace_s` is handed back as it is (its daemon thread ends with the process)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        runs = list(self.runs.values())
        for run in runs:
            run.release()
        deadline = time.monotonic() + grace_s
        for run in runs:
            run.thread.join(max(0.0, deadline - time.monotonic()))
            if run.thread.is_alive():
                run.hand_back()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._round()
            except Exception:
                log.exception("claiming jobs")
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def _round(self) -> None:
        self.runs = {key: run for key, run in self.runs.items() if not run.ended.is_set()}
        self.store.write(requeue_lapsed)
        while not self._stop.is_set() and self.running() < self.slots:
            token = new_owner_token()
            job = claim(self.store, token, self.tenant_cap, kinds())
            if job is None:
                return
            with _KINDS_LOCK:
                kind = _KINDS[job.kind]
            run = JobRun(self.store, job, token, kind)
            self.runs[job.id] = run
            run.start()


def run_now(store: Store, job_id: str) -> Job:
    """Run a queued job on this thread (a command that waits for its result): the job as it ended."""
    token = new_owner_token()
    rows = store.write(lambda conn: job_rows.take_queued(conn, job_id, token))
    if not rows:
        raise Conflict("the job is not queued: another process runs it, or it ended", where=job_id)
    job = Job.from_row(rows[0])
    with _KINDS_LOCK:
        kind = _KINDS[job.kind]
    JobRun(store, job, token, kind).run_here()
    return get_job(store, job_id)
