"""A fault drill on loopback: two `serve` processes and one `worker` on a throwaway PostgreSQL, a chat model that is
sometimes slow, and each of them killed or restarted while campaigns and a pairwise job run (bench/faults.py prints
what it measures; tests/test_faults.py runs a short one and checks it).

What it counts: every question of every campaign stored exactly once (lost: no row; duplicated: a row written more
than once), the campaigns each killed process held and how many of them another process finished, campaigns and the
pairwise job still active at the end (stuck), health probes of the servers that were up answered within a second
(during a flood of pairwise requests against a slow judge too), and the resident memory of the server that was never
killed before the campaigns and after them.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.access.api_keys import create_key
from evalcore.language.text import counted
from evalcore.store import open_store
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import save_target
from evalcore.testing.openai_server import FakeOpenAIServer, Reply
from evalcore.testing.postgres_server import PostgresServer, running_postgres

REPO = Path(__file__).resolve().parents[2]
ACTIVE = ("queued", "pending", "running")
HOLD_WAIT_S = 60.0  # at most this long for serve A to run a campaign before it is killed


@dataclass
class Drill:
    """How big the drill is and how long a lease lasts (seconds without a heartbeat before a worker takes over)."""

    campaigns: int = 10
    questions: int = 20
    lease_s: float = 6.0
    delay_s: float = 0.3  # every reply of the model
    slow_share: float = 0.2  # of the model's replies, each 1-3 s later still
    flood: int = 60  # pairwise requests sent at once against a slow judge
    flood_hold_s: float = 3.0  # health probed this long after the flood, while its jobs wait on the slow judge
    deadline_s: float = 300.0
    settle_s: float = 2.0  # before each reading of the servers' memory (0: the memory is not what is looked at)


@dataclass
class Takeover:
    """The campaigns a killed process ran when it was killed, and how many of them another process finished with
    every question stored once."""

    pid: int
    held: list[str] = field(default_factory=list)
    finished_elsewhere: int = 0


@dataclass
class Outcome:
    """What the drill measured."""

    expected: int = 0
    lost: int = 0
    duplicated: int = 0
    stuck: list[str] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    pairwise: str = ""
    probes: int = 0
    probes_within_1s: int = 0
    slowest_probe_s: float = 0.0
    flood_answers: dict[int, int] = field(default_factory=dict)
    flood_probes: int = 0  # health probes from the flood's start to the end of its hold
    flood_probes_within_1s: int = 0
    flood_jobs_waiting: int = 0  # the flood's jobs running at the end of the hold, no question judged yet
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0
    recoveries: dict[str, float] = field(default_factory=dict)  # seconds until the work went on after each fault
    takeovers: dict[str, Takeover] = field(default_factory=dict)  # by the process killed: "worker", "serve A"
    log: list[str] = field(default_factory=list)


def rss_mb(pid: int) -> float:
    """A process's resident memory (MB), 0 once it ended."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((text for text in status.splitlines() if text.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1]) / 1024


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def dataset(folder: Path, n: int) -> Path:
    """n questions over two passages, each retrieving a passage (so each asks the model)."""
    tables = {
        "queries": {"id": list(range(1, n + 1)), "text": [f"Refunds within how many days, case {i}?"
                                                           for i in range(1, n + 1)]},
        "corpus": {"id": [10, 11], "text": ["Refunds within 30 days.", "Thermostats and café breaks."]},
        "answers": {"id": list(range(101, 101 + n)), "text": ["30 days."] * n},
        "qrels": {"qid": list(range(1, n + 1)), "pid": [10] * n},
        "qas": {"qid": list(range(1, n + 1)), "aid": list(range(101, 101 + n))},
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, columns in tables.items():
        pq.write_table(pa.table(columns), folder / f"{name}.parquet")
    return folder


class Fleet:
    """The processes of the drill: `serve` A and B, one `worker`; each can be killed and started again."""

    def __init__(self, url: str, datasets: Path, lease_s: float, logs: Path) -> None:
        self.url, self.datasets, self.logs = url, datasets, logs
        self.env = {**os.environ, "EVALCORE_LEASE_S": f"{lease_s:g}", "EVALCORE_MAX_JOBS_PER_TENANT": "4"}
        self.ports = {"A": free_port(), "B": free_port()}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def base(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    def start(self, name: str, wait: bool = True) -> None:
        """Start a process (and wait until a server answers, unless told not to: `ready` then waits)."""
        if name == "worker":
            args = ["worker", "--db", self.url, "--max-campaigns", "2", "--max-per-tenant", "20"]
        else:
            args = ["serve", "--db", self.url, "--port", str(self.ports[name]), "--datasets", str(self.datasets),
                    "--max-campaigns", "2", "--max-per-tenant", "20"]
        with open(self.logs / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen([sys.executable, "-m", "evalcore", *args], cwd=REPO,
                                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env)
        if name != "worker" and wait:
            self.ready(name)

    def ready(self, name: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.processes[name].poll() is not None:
                raise RuntimeError(f"serve {name} ended (see {self.logs / (name + '.log')})")
            try:
                if httpx.get(f"{self.base(name)}/api/v1/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"serve {name} did not answer within {timeout:g} s")

    def kill(self, name: str) -> None:
        """SIGKILL, and reap it (a zombie would look alive to the others)."""
        process = self.processes[name]
        os.kill(process.pid, signal.SIGKILL)
        process.wait()

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class Prober:
    """Asks each server that is up for its health every 0.2 s, with a 1 s limit; counts the answers in time."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.down: set[str] = set()  # servers killed on purpose: not probed
        self.probes = self.in_time = 0
        self.slowest = 0.0
        self.misses: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with httpx.Client(timeout=1.0) as client:
            while not self._stop.wait(0.2):
                for name in ("A", "B"):
                    if name in self.down:
                        continue
                    start = time.monotonic()
                    try:
                        ok = client.get(f"{self.fleet.base(name)}/api/v1/health").status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    took = time.monotonic() - start
                    if name in self.down:  # killed meanwhile
                        continue
                    self.probes += 1
                    self.slowest = max(self.slowest, took)
                    if ok and took <= 1.0:
                        self.in_time += 1
                    else:
                        self.misses.append(f"{name} at {time.strftime('%H:%M:%S')}: {took:.2f} s, ok={ok}")


def sometimes_slow(share: float, base: float, seed: int = 7) -> Callable[[str, Any], str | Reply]:
    """The model's replies: after `base` seconds, or (a `share` of them) 1 to 3 seconds more."""
    draw = random.Random(seed)
    lock = threading.Lock()

    def reply(path: str, body: Any) -> str | Reply:
        with lock:
            slow, delay = draw.random() < share, draw.uniform(1.0, 3.0)
        text = "Refunds within 30 days."
        if "winner" in str(body):  # the pairwise judge's prompt asks for a winner
            text = '{"winner": "tie", "reason": "Both say 30 days."}'
        return Reply.slow(base + delay if slow else base, text)

    return reply


def wait_until(condition: Callable[[], bool], timeout: float, step: float = 0.2) -> float:
    """Seconds until the condition held (inf when it did not within timeout)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(step)
    return float("inf")


def run_drill(drill: Drill, work: Path, say: Callable[[str], None] = print) -> Outcome:
    """Run the drill in `work` (a temporary folder): its outcome."""
    outcome = Outcome(expected=drill.campaigns * drill.questions)
    root = work / "datasets"
    dataset(root / "drill", drill.questions)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with running_postgres() as pg, FakeOpenAIServer(sometimes_slow(drill.slow_share, drill.delay_s)) as model, \
            FakeOpenAIServer(default=Reply.slow(20.0, '{"winner": "tie", "reason": "slow"}')) as slow_judge:
        with open_store(pg.url) as store:
            config = TargetConfig.of(retriever="bm25", generator="openai", model="fake", base_url=model.base_url,
                                     api_key_env="", timeout=10, judge_model="judge", judge_base_url=model.base_url,
                                     judge_api_key_env="")
            target_id = save_target(store, config, tenant="acme", name="drill")
            _, secret = create_key(store, tenant="acme", role="admin", capability="full-access")
        fleet = Fleet(pg.url, root, drill.lease_s, logs)
        headers = {"Authorization": f"Bearer {secret}"}
        prober = Prober(fleet)
        try:
            for name in ("A", "B", "worker"):  # started together: each spends its first seconds importing
                fleet.start(name, wait=False)
            for name in ("A", "B"):
                fleet.ready(name)
            time.sleep(drill.settle_s)
            outcome.rss_before_mb = rss_mb(fleet.processes["B"].pid)
            prober.start()
            ids = _launch(fleet, headers, target_id, drill.campaigns)
            _faults(fleet, pg, prober, outcome, say, store_url=pg.url, ids=ids, lease_s=drill.lease_s)
            say(f"questions stored when the faults were over: {_progress(pg.url, ids)} of {outcome.expected}")
            _await_end(pg.url, ids, drill.deadline_s)
            _pairwise(fleet, prober, headers, ids, slow_judge.base_url, drill, outcome, say)
            time.sleep(drill.settle_s)
            outcome.rss_after_mb = rss_mb(fleet.processes["B"].pid)
        finally:
            prober.stop()
            fleet.stop_all()
        _count(pg.url, ids, drill, outcome)
        outcome.probes, outcome.probes_within_1s, outcome.slowest_probe_s = prober.probes, prober.in_time, \
            prober.slowest
        outcome.log += prober.misses[:20]
    return outcome


def _launch(fleet: Fleet, headers: dict[str, str], target_id: str, campaigns: int) -> list[str]:
    ids = []
    for n in range(campaigns):
        reply = httpx.post(f"{fleet.base('AB'[n % 2])}/api/v1/evaluation", headers=headers, timeout=30,
                           json={"dataset_id": "drill", "knowledge_base_id": target_id, "concurrency": 1})
        if reply.status_code != 200:
            raise RuntimeError(f"launch answered {reply.status_code}: {reply.text[:300]}")
        ids.append(reply.json()["data"]["task"]["id"])
    return ids


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one query on a connection of its own (not a store: opening one would requeue lapsed campaigns
    itself); none while the database cannot be reached.

    The drill's few counting queries are therefore the one place outside evalcore/store/ that writes SQL (the
    project's test of where SQL lives names this module)."""
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            return list(conn.execute(sql).fetchall())
    except psycopg.Error:
        return []


def _progress(url: str, ids: list[str]) -> int:
    """Questions stored so far over the drill's campaigns (0 while the store cannot be read)."""
    rows = _query(url, "SELECT count(*) FROM results")
    return int(rows[0][0]) if rows else 0


def _owned(url: str, pid: int) -> list[str]:
    """The campaigns a process has claimed and not ended (ids)."""
    return [row[0] for row in _query(url, f"SELECT id FROM campaigns WHERE owner_pid = {pid} AND status IN "
                                          "('pending', 'running')")]


def _kill_holding(fleet: Fleet, prober: Prober, name: str, url: str, wait_s: float) -> Takeover:
    """SIGKILL a process once it holds a campaign (waiting at most wait_s, 0: at once): the campaigns it held.

    They are read before the kill: after it, a survivor may already have put them back in the queue or claimed them
    (each looks for lost owners every second), and they would go uncounted. One the process ended itself between
    the reading and the kill is left out."""
    takeover = Takeover(fleet.processes[name].pid)

    def holding() -> bool:
        takeover.held = _owned(url, takeover.pid)
        return bool(takeover.held)

    if not holding():
        wait_until(holding, wait_s, 0.1)
    if name in fleet.ports:
        prober.down.add(name)
    fleet.kill(name)
    ended = {key for key, owner, status in _query(url, "SELECT id, owner_pid, status FROM campaigns")
             if owner == takeover.pid and status not in ACTIVE}
    takeover.held = [key for key in takeover.held if key not in ended]
    return takeover


def _faults(fleet: Fleet, pg: PostgresServer, prober: Prober, outcome: Outcome, say: Callable[[str], None], *,
            store_url: str, ids: list[str], lease_s: float) -> None:
    """Each process killed (and started again) and the database restarted while the campaigns run; how long until
    the killed process's campaigns ran again elsewhere, and until questions were stored again after the restart."""
    def resumed(what: str, takeover: Takeover) -> None:
        def moved() -> bool:
            rows = _query(store_url, "SELECT id, owner_pid, status FROM campaigns")
            return bool(rows) and all(owner != takeover.pid or status not in ACTIVE for key, owner, status in rows
                                      if key in takeover.held)

        seconds = wait_until(moved, 120, 0.1)
        its = f"its {counted(len(takeover.held), 'campaign')} running again elsewhere"
        outcome.recoveries[f"{what}: {its}"] = seconds
        say(f"{what}: {its} after {seconds:.1f} s")

    wait_until(lambda: _progress(store_url, ids) >= 4, 120)
    # The worker runs only what the servers have no room for: killed at once, whether it holds a campaign or not.
    outcome.takeovers["worker"] = _kill_holding(fleet, prober, "worker", store_url, 0.0)
    say("worker killed (SIGKILL)")
    fleet.start("worker")
    resumed("worker SIGKILL", outcome.takeovers["worker"])
    outcome.takeovers["serve A"] = _kill_holding(fleet, prober, "A", store_url, HOLD_WAIT_S)
    say("serve A killed (SIGKILL)")
    resumed(f"serve A SIGKILL (lease {lease_s:g} s)", outcome.takeovers["serve A"])
    fleet.start("A")
    prober.down.discard("A")
    prober.down.update({"A", "B"})  # the database restarting: health answers 503 by design
    before = _progress(store_url, ids)
    start = time.monotonic()
    pg.restart()
    say(f"PostgreSQL restarted (pg_ctl restart -m immediate) with {before} of {outcome.expected} questions stored")
    prober.down.clear()
    seconds = wait_until(lambda: _progress(store_url, ids) > before or before >= outcome.expected, 120, 0.1)
    outcome.recoveries["PostgreSQL restart: questions stored again (restart included)"] = \
        time.monotonic() - start if seconds != float("inf") else seconds
    say(f"PostgreSQL restart: questions stored again after {time.monotonic() - start:.1f} s (restart included)")


def _await_end(url: str, ids: list[str], deadline_s: float) -> None:
    def ended() -> bool:
        rows = _query(url, "SELECT status FROM campaigns")
        return len(rows) == len(ids) and all(row[0] not in ACTIVE for row in rows)

    wait_until(ended, deadline_s, 0.5)


def _pairwise(fleet: Fleet, prober: Prober, headers: dict[str, str], ids: list[str], slow_judge: str, drill: Drill,
              outcome: Outcome, say: Callable[[str], None]) -> None:
    """A pairwise job (its server killed while it runs, resumed elsewhere), then a flood of pairwise requests
    against a judge that takes 20 s a reply, while health is probed."""
    query = {"a": ids[0], "b": ids[1]}
    started = httpx.post(f"{fleet.base('A')}/api/v1/compare/pairwise", params=query, headers=headers, timeout=30)
    if started.status_code != 202:
        outcome.pairwise = f"not started: {started.status_code} {started.text[:200]}"
        return
    job_id = started.json()["data"]["job"]["id"]
    time.sleep(0.5)
    prober.down.add("A")
    fleet.kill("A")
    say("serve A killed while the pairwise job runs")
    fleet.start("A")
    prober.down.discard("A")

    def job_status() -> str:
        reply = httpx.get(f"{fleet.base('B')}/api/v1/jobs/{job_id}", headers=headers, timeout=5)
        if reply.status_code != 200:
            return "unreadable"
        job = reply.json()["data"]["job"]
        return str(job["status"]) if not job.get("error") else f"{job['status']}: {job['error']}"

    seconds = wait_until(lambda: job_status() not in ACTIVE, drill.deadline_s, 0.5)
    outcome.pairwise = job_status()
    outcome.recoveries["pairwise job after its server's SIGKILL"] = seconds
    say(f"pairwise job {outcome.pairwise} after {seconds:.1f} s")
    _flood(fleet, prober, headers, ids, slow_judge, drill, outcome, say)


def _flood(fleet: Fleet, prober: Prober, headers: dict[str, str], ids: list[str], slow_judge: str, drill: Drill,
           outcome: Outcome, say: Callable[[str], None]) -> None:
    """Pairwise requests sent at once against a judge that takes 20 s a reply, then health probed while the jobs
    they started wait on it; those jobs cancelled after."""
    body = {"judge": {"model": "slow", "base_url": slow_judge, "api_key_env": ""}}

    def one(n: int) -> int:
        pair = {"a": ids[n % len(ids)], "b": ids[(n + 1) % len(ids)]}
        try:
            return httpx.post(f"{fleet.base('AB'[n % 2])}/api/v1/compare/pairwise", params=pair, json=body,
                              headers=headers, timeout=30).status_code
        except httpx.HTTPError:
            return 0

    answers: list[int] = []
    threads = [threading.Thread(target=lambda n=n: answers.append(one(n))) for n in range(drill.flood)]
    probes, in_time = prober.probes, prober.in_time
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    time.sleep(drill.flood_hold_s)  # health probed while the slow judge holds the job threads
    outcome.flood_probes, outcome.flood_probes_within_1s = prober.probes - probes, prober.in_time - in_time
    jobs = httpx.get(f"{fleet.base('B')}/api/v1/jobs", headers=headers, timeout=10).json()["data"]["jobs"]
    # Running with no question judged: their threads held by the judge all along (the earlier job has ended).
    outcome.flood_jobs_waiting = sum(job["status"] == "running" and job["done"] == 0 for job in jobs)
    for status in answers:
        outcome.flood_answers[status] = outcome.flood_answers.get(status, 0) + 1
    say(f"{drill.flood} pairwise requests against a 20 s judge answered: {outcome.flood_answers}; "
        f"{outcome.flood_probes_within_1s} of {outcome.flood_probes} health probes within 1 s while "
        f"{counted(outcome.flood_jobs_waiting, 'job')} waited on the judge")
    for job in jobs:
        if job["status"] in ACTIVE:
            httpx.post(f"{fleet.base('B')}/api/v1/jobs/{job['id']}/cancel", headers=headers, timeout=10)


def _count(url: str, ids: list[str], drill: Drill, outcome: Outcome) -> None:
    rows = _query(url, "SELECT campaign_id, position, attempts FROM results")
    campaigns = _query(url, "SELECT id, status, owner_pid FROM campaigns")
    statuses = {campaign_id: status for campaign_id, status, _ in campaigns}
    owners = {campaign_id: owner for campaign_id, _, owner in campaigns}
    stored = {(campaign_id, position) for campaign_id, position, _ in rows}
    wanted = {(campaign_id, position) for campaign_id in ids for position in range(drill.questions)}
    outcome.lost = len(wanted - stored)
    outcome.duplicated = sum(attempts > 1 for _, _, attempts in rows)
    outcome.stuck = [campaign_id for campaign_id, status in statuses.items() if status in ACTIVE]
    if outcome.pairwise in ACTIVE:
        outcome.stuck.append("pairwise job")
    for status in statuses.values():
        outcome.statuses[status] = outcome.statuses.get(status, 0) + 1
    tries: dict[str, list[int]] = {}
    for campaign_id, _, attempts in rows:
        tries.setdefault(campaign_id, []).append(attempts)
    for takeover in outcome.takeovers.values():
        takeover.finished_elsewhere = sum(statuses.get(key) == "succeeded" and owners.get(key) != takeover.pid
                                          and tries.get(key) == [1] * drill.questions for key in takeover.held)
