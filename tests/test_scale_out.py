"""Several servers on one PostgreSQL store: two API servers and a worker share the campaigns; a process killed with
SIGKILL loses its campaign, which another process resumes, every question's result stored exactly once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from evalcore.access.api_keys import create_key
from evalcore.store import Store, open_store
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import save_target
from evalcore.testing.openai_server import FakeOpenAIServer
from tests.conftest import write_dataset

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = 8


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "evalcore", *args], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def ready(url: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server ended"
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer")


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.terminate()
    for process in started:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.mark.long
def test_two_api_servers_and_a_worker_share_campaigns_and_survive_a_sigkill(
        postgres_server: str, tmp_path: Path, processes: list[subprocess.Popen[bytes]]) -> None:
    from evalcore.testing.postgres_server import new_database

    url = new_database(postgres_server)
    root = tmp_path / "datasets"
    write_dataset(root / "eight", {
        "queries": {"id": list(range(1, QUESTIONS + 1)),
                    "text": [f"Refunds within how many days, case {i}?" for i in range(1, QUESTIONS + 1)]},
        "corpus": {"id": [10, 11], "text": ["Refunds within 30 days.", "Thermostats and café breaks."]},
        "answers": {"id": list(range(101, 101 + QUESTIONS)), "text": ["30 days."] * QUESTIONS},
        "qrels": {"qid": list(range(1, QUESTIONS + 1)), "pid": [10] * QUESTIONS},
        "qas": {"qid": list(range(1, QUESTIONS + 1)), "aid": list(range(101, 101 + QUESTIONS))},
    })
    with FakeOpenAIServer(default="Refunds within 30 days.", delay=0.3) as model, open_store(url) as store:
        config = TargetConfig.of(retriever="bm25", generator="openai", model="fake", base_url=model.base_url,
                                 api_key_env="")
        target_id = save_target(store, config, tenant="acme", name="slow")
        _, secret = create_key(store, tenant="acme", role="admin", capability="full-access")
        servers = []
        for _ in range(2):
            port = free_port()
            processes.append(start("serve", "--db", url, "--port", str(port), "--datasets", str(root),
                                   "--max-campaigns", "2", "--max-per-tenant", "10"))
            servers.append(f"http://127.0.0.1:{port}")
        processes.append(start("worker", "--db", url, "--max-campaigns", "2", "--max-per-tenant", "10"))
        for server, process in zip(servers, processes, strict=False):
            ready(server, process)
        headers = {"Authorization": f"Bearer {secret}"}
        ids = []
        for n in range(10):
            reply = httpx.post(f"{servers[n % 2]}/api/v1/evaluation", headers=headers, timeout=30,
                               json={"dataset_id": "eight", "knowledge_base_id": target_id, "concurrency": 1})
            assert reply.status_code == 200, reply.text
            ids.append(reply.json()["data"]["task"]["id"])
        victim, taken = running_owner(store, processes)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()  # reaped: a zombie would still look alive to the others
        await_all_ended(store, ids)
        rows = store.read("SELECT campaign_id, position, attempts FROM results")
        statuses = {row["id"]: row["status"] for row in store.read("SELECT id, status FROM campaigns")}
        owners = {row["id"]: row["owner_pid"] for row in store.read("SELECT id, owner_pid FROM campaigns")}
    assert statuses == dict.fromkeys(ids, "succeeded")
    assert sorted((row["campaign_id"], row["position"]) for row in rows) == sorted(
        (campaign_id, position) for campaign_id in ids for position in range(QUESTIONS))
    assert {row["attempts"] for row in rows} == {1}
    assert owners[taken] != victim.pid  # resumed by another process
    assert len(set(owners.values()) - {victim.pid}) >= 2  # the campaigns were run by several processes


def running_owner(store: Store, processes: list[subprocess.Popen[bytes]]) -> tuple[subprocess.Popen[bytes], str]:
    """The process running a campaign that has stored a few results, and that campaign (waits for one)."""
    by_pid = {process.pid: process for process in processes}
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        rows = store.read("SELECT id, owner_pid FROM campaigns WHERE status = 'running' AND finished >= 2")
        owned = [(by_pid[row["owner_pid"]], row["id"]) for row in rows if row["owner_pid"] in by_pid]
        if owned:
            return owned[0]
        time.sleep(0.1)
    raise AssertionError("no campaign started running")


def await_all_ended(store: Store, ids: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = store.read("SELECT id, status, owner_pid, finished, heartbeat, error FROM campaigns")
        if len(rows) == len(ids) and all(row["status"] not in ("queued", "pending", "running") for row in rows):
            return
        time.sleep(0.2)
    raise AssertionError(f"campaigns still active: {[tuple(row) for row in rows]}")
