"""Jobs: long work other than campaigns, queued in the store and run by workers under caps per process and per
tenant; visible, cancellable, resumed after their worker stopped (only the pieces not kept yet), freed when their
lease runs out. The pairwise judge is one: its request answers at once, and health and reads answer while its judge
model is slow."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalcore.jobs.job_queue import (
    JobContext,
    JobKind,
    JobStatus,
    JobWorkers,
    cancel_job,
    get_job,
    list_jobs,
    register,
    requeue_lapsed,
    submit,
)
from evalcore.store import Conflict, NotFound, Store, open_store


class Pieces:
    """A kind of job that does `params["n"]` pieces, each waiting for `gate` (when given), and records who ran
    which piece."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gate = threading.Event()
        self.gate.set()
        self.hold_from = 0  # pieces from this position on wait for the gate
        self.ran: list[tuple[str, int]] = []
        self.running = Counter[str]()  # jobs running now, per tenant
        self.most = Counter[str]()
        self._lock = threading.Lock()
        register(JobKind(name, self.run))

    def run(self, context: JobContext) -> dict[str, Any]:
        tenant = context.job.tenant
        with self._lock:
            self.running[tenant] += 1
            self.most[tenant] = max(self.most[tenant], self.running[tenant])
        try:
            n, kept = context.job.params["n"], context.kept()
            for position in range(n):
                if position in kept:
                    continue
                while position >= self.hold_from and not self.gate.wait(0.02):
                    context.check()
                with self._lock:
                    self.ran.append((context.job.id, position))
                context.keep(position, position * 10, n)
                context.check()
            return {"sum": sum(context.kept().values())}
        finally:
            with self._lock:
                self.running[tenant] -= 1


@pytest.fixture
def store(db: str) -> Iterator[Store]:
    with open_store(db) as opened:
        yield opened


def wait_until(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def test_a_job_runs_to_its_result_and_is_visible_only_to_its_tenant(store: Store) -> None:
    kind = Pieces("count-visible")
    job_id = submit(store, kind.name, {"n": 4}, tenant="acme")
    assert get_job(store, job_id, tenant="acme").status == JobStatus.QUEUED
    workers = JobWorkers(store, slots=1, tenant_cap=1, poll_s=0.05)
    workers.start()
    try:
        wait_until(lambda: not get_job(store, job_id).active)
    finally:
        workers.close()
    job = get_job(store, job_id, tenant="acme")
    assert (job.status, job.done, job.total, job.result) == (JobStatus.SUCCEEDED, 4, 4, {"sum": 60})
    assert job.to_dict()["progress"] == 1.0
    with pytest.raises(NotFound):
        get_job(store, job_id, tenant="globex")
    assert [found.id for found in list_jobs(store, tenant="globex")] == []


def test_workers_keep_the_caps_per_process_and_per_tenant(store: Store) -> None:
    kind = Pieces("count-capped")
    kind.gate.clear()
    ids = [submit(store, kind.name, {"n": 1}, tenant=tenant) for tenant in ("acme", "acme", "acme", "globex")]
    workers = JobWorkers(store, slots=2, tenant_cap=1, poll_s=0.05)
    workers.start()
    try:
        wait_until(lambda: workers.running() == 2)
        time.sleep(0.3)  # rounds of claiming: still one of acme's, and globex's
        statuses = [get_job(store, i).status for i in ids]
        assert statuses.count(JobStatus.RUNNING) == 2
        assert statuses[3] == JobStatus.RUNNING
        kind.gate.set()
        wait_until(lambda: all(not get_job(store, i).active for i in ids))
    finally:
        workers.close()
    assert kind.most["acme"] == 1


def test_two_claimers_at_once_keep_one_tenant_under_its_cap(store: Store) -> None:
    kind = Pieces("count-two-claimers")
    ids = [submit(store, kind.name, {"n": 2}, tenant="acme") for _ in range(6)]
    claimers = [JobWorkers(store, slots=3, tenant_cap=1, poll_s=0.01) for _ in range(2)]
    for claimer in claimers:
        claimer.start()
    try:
        wait_until(lambda: all(not get_job(store, i).active for i in ids))
    finally:
        for claimer in claimers:
            claimer.close()
    assert kind.most["acme"] == 1
    assert all(get_job(store, i).status == JobStatus.SUCCEEDED for i in ids)


def test_a_queued_job_is_cancelled_at_once_and_a_running_one_at_its_next_piece(store: Store) -> None:
    kind = Pieces("count-cancelled")
    kind.gate.clear()
    running, waiting = (submit(store, kind.name, {"n": 3}, tenant="acme") for _ in range(2))
    assert cancel_job(store, waiting).status == JobStatus.CANCELLED
    workers = JobWorkers(store, slots=1, tenant_cap=1, poll_s=0.05)
    workers.start()
    try:
        wait_until(lambda: get_job(store, running).status == JobStatus.RUNNING)
        cancel_job(store, running)
        wait_until(lambda: not get_job(store, running).active)
    finally:
        workers.close()
    assert get_job(store, running).status == JobStatus.CANCELLED
    assert get_job(store, waiting).status == JobStatus.CANCELLED
    with pytest.raises(Conflict):
        cancel_job(store, waiting)


def test_a_job_whose_worker_stopped_is_resumed_elsewhere_asking_only_the_rest(store: Store) -> None:
    kind = Pieces("count-resumed")
    job_id = submit(store, kind.name, {"n": 6}, tenant="acme")
    kind.gate.clear()
    kind.hold_from = 2  # two pieces, then it waits: the process stops meanwhile
    first = JobWorkers(store, slots=1, tenant_cap=1, poll_s=0.05)
    first.start()
    wait_until(lambda: get_job(store, job_id).done == 2)
    first.close()
    assert get_job(store, job_id).status == JobStatus.QUEUED
    done = get_job(store, job_id).done
    kind.gate.set()
    second = JobWorkers(store, slots=1, tenant_cap=1, poll_s=0.05)
    second.start()
    try:
        wait_until(lambda: not get_job(store, job_id).active)
    finally:
        second.close()
    assert get_job(store, job_id).result == {"sum": 150}
    assert sorted(position for _, position in kind.ran) == list(range(6))
    assert done == 2  # none asked twice


def test_a_closing_worker_hands_back_a_job_stuck_in_a_call_and_another_finishes_it(store: Store) -> None:
    kind = Pieces("count-stuck")
    job_id = submit(store, kind.name, {"n": 3}, tenant="acme")
    call_returns = threading.Event()  # a model call that ignores the stop: the piece's own wait, not the gate's

    def stuck(context: JobContext) -> dict[str, Any]:
        if not context.kept():
            context.keep(0, 0, 3)
            call_returns.wait(60)
        return kind.run(context)

    register(JobKind("count-stuck", stuck))
    first = JobWorkers(store, slots=1, tenant_cap=1, poll_s=0.05)
    first.start()
    wait_until(lambda: get_job(store, job_id).done == 1)
    started = time.monotonic()
    first.close(grace_s=0.3)
    closing_s = time.monotonic() - started
    job = get_job(store, job_id)
    assert job.status == JobStatus.QUEUED
    assert closing_s < 10  # not the call's 60 s
    second = JobWorkers(store, slots=1, tenant_cap=1, poll_s=0.05)
    second.start()
    try:
        wait_until(lambda: not get_job(store, job_id).active)
        assert get_job(store, job_id).result == {"sum": 30}
        assert sorted(position for _, position in kind.ran) == [1, 2]  # the piece kept before is not asked again
    finally:
        call_returns.set()  # the first thread's call returns: what it finishes is not written
        second.close()


def test_a_running_job_whose_lease_ran_out_goes_back_to_the_queue(store: Store) -> None:
    job_id = submit(store, "count-lapsed", {"n": 1}, tenant="acme")
    store.write(lambda conn: conn.execute("UPDATE jobs SET status = 'running', owner_token = 'gone', heartbeat = ? "
                                          "WHERE id = ?", (time.time() - 600, job_id)))
    assert store.write(requeue_lapsed) == 1
    assert get_job(store, job_id).status == JobStatus.QUEUED


@pytest.mark.long
def test_the_pairwise_request_answers_at_once_and_health_and_reads_answer_while_its_judge_is_slow(
        api: Any, tmp_path: Path) -> None:
    from evalcore.testing.openai_server import FakeOpenAIServer, Reply
    from tests.test_pairwise import finished_pair

    ids = finished_pair(api.app.state.manager, tmp_path)
    slow = Reply.slow(1.0, '{"winner": "tie", "reason": "slow"}')
    with FakeOpenAIServer([slow] * 40, default=slow) as judge:
        body = {"judge": {"model": "judge-mini", "base_url": judge.base_url, "api_key_env": ""}}
        asked = api.call("POST", "/api/v1/compare/pairwise", params={"a": ids[0], "b": ids[1]}, json=body,
                         key="full")
        assert asked.status_code == 202, asked.text
        job_id = asked.json()["data"]["job"]["id"]
        wait_until(lambda: len(judge.requests) >= 1)
        assert httpx.get(f"{api.url}/api/v1/health", timeout=30).status_code == 200
        assert api.call("GET", "/api/v1/campaigns", key="other").status_code == 200
        listed = api.call("GET", "/api/v1/jobs", params={"kind": "pairwise"}).json()["data"]["jobs"]
        assert [job["id"] for job in listed] == [job_id]
        assert listed[0]["status"] == "running"
        assert api.call("POST", f"/api/v1/jobs/{job_id}/cancel", key="viewer").status_code == 403
        assert api.call("POST", f"/api/v1/jobs/{job_id}/cancel").status_code == 202
        wait_until(lambda: api.call("GET", f"/api/v1/jobs/{job_id}").json()["data"]["job"]["status"] == "cancelled")


def test_a_stopped_worker_process_exits_though_its_job_waits_for_a_slow_judge_and_another_finishes_it(
        db: str, tmp_path: Path) -> None:
    import signal
    import subprocess

    from evalcore.campaigns import CampaignManager
    from evalcore.campaigns.supervisor import WorkerProcess, worker_environment
    from evalcore.compare.pairwise_job import PAIRWISE, start_pairwise
    from evalcore.testing.openai_server import FakeOpenAIServer, Reply
    from tests.test_pairwise import QUESTIONS, finished_pair

    slow = threading.Event()  # the judge answers the third question and on after a minute, until the worker stopped
    slow.set()
    asked = Counter[int]()

    def judge(path: str, body: Any) -> str | Reply:
        qid = next(i for i, q in enumerate(QUESTIONS, 1) if q in body["messages"][1]["content"])
        asked[qid] += 1
        reply = '{"winner": "tie", "reason": "judged"}'
        return Reply.slow(60.0, reply) if qid >= 3 and slow.is_set() else reply

    manager = CampaignManager(db)
    try:
        ids = finished_pair(manager, tmp_path)
        with FakeOpenAIServer(judge) as server:
            job_id = start_pairwise(manager.store, *ids, judge={"judge_model": "judge-mini", "judge_api_key_env": "",
                                                               "judge_base_url": server.base_url})
            worker = subprocess.Popen(WorkerProcess(db).args, stdin=subprocess.DEVNULL, env=worker_environment(db))
            try:
                # Two questions kept; the third's reply is a minute away.
                wait_until(lambda: get_job(manager.store, job_id).done == 2 and asked[3] >= 1)
                kept_before = dict(asked)
                worker.send_signal(signal.SIGTERM)
                worker.wait(15)  # a bound on its exit: the call's minute otherwise (the job handed back after 5 s)
            finally:
                worker.kill()
            assert worker.returncode == 0
            assert get_job(manager.store, job_id).status == JobStatus.QUEUED
            slow.clear()
            manager.serve_jobs(PAIRWISE)
            wait_until(lambda: not get_job(manager.store, job_id).active)
            job = get_job(manager.store, job_id)
            assert job.status == JobStatus.SUCCEEDED, job.error
            assert (asked[1], asked[2]) == (kept_before[1], kept_before[2])  # kept pieces not asked again
            assert asked[5] >= 1
    finally:
        manager.close()
