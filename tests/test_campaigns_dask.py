"""Campaigns on a Dask cluster (a LocalCluster of 2 worker processes on loopback): the same rows as on
this machine, the same lifecycle (failures, time limits, cancel), a worker killed mid-campaign, and a
scheduler that cannot be reached refused before anything is stored."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalcore.campaigns import CampaignManager, campaign_results, get_campaign, list_campaigns
from evalcore.campaigns.answering import Asked
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.records import Outcome, Question
from evalcore.campaigns.result_rows import ResultWriter
from evalcore.datasets import load_dataset
from evalcore.errors import EvalError
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer, Reply

distributed = pytest.importorskip("distributed")

BM25 = TargetConfig.of(retriever="bm25", chunking="none")
QUESTIONS = [question.text for question in load_dataset("default").questions]


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two worker processes of one thread, on loopback, with their own index folder (no disk shared with ours)."""
    before = os.environ.get("EVALCORE_INDEX_DIR")
    os.environ["EVALCORE_INDEX_DIR"] = str(tmp_path_factory.mktemp("worker-index"))  # inherited by the workers
    try:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                           host="127.0.0.1")
    finally:
        os.environ.pop("EVALCORE_INDEX_DIR") if before is None else os.environ.update(EVALCORE_INDEX_DIR=before)
    with cluster:
        yield cluster.scheduler_address


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[CampaignManager]:
    """A manager on a fresh database."""
    result = CampaignManager(tmp_path / "campaigns.db")
    yield result
    result.close()


def rows(manager: CampaignManager, campaign_id: str) -> list[tuple[Any, ...]]:
    """What must not depend on where the questions were answered (times aside)."""
    return [(r.question.position, r.outcome.answer, r.outcome.retrieved, r.outcome.context, r.outcome.sources,
             r.outcome.measures, r.outcome.signatures, r.outcome.results, r.outcome.error, r.outcome.notes,
             r.outcome.prompt_tokens, r.outcome.completion_tokens, r.attempts)
            for r in campaign_results(manager.store, campaign_id)]


def both(manager: CampaignManager, scheduler: str, config: TargetConfig, **options: Any) -> list[list[tuple[Any, ...]]]:
    """The rows of the same campaign run here, then on the cluster."""
    out = []
    for each in (config, config.run_on("dask", scheduler)):
        campaign = manager.wait(manager.launch(LaunchRequest(dataset="default", config=each, cache=False, **options)),
                                timeout=60)
        assert campaign.config["executor"] == each.execution.executor
        out.append(rows(manager, campaign.id))
    return out


def test_the_cluster_stores_the_same_rows_as_this_machine(manager: CampaignManager, scheduler: str) -> None:
    here, there = both(manager, scheduler, BM25, limit=30)
    assert len(there) == 30
    assert all(row[2] for row in there)  # every question answered, passages ranked
    assert there == here
    local, dask = list_campaigns(manager.store)[::-1]
    assert dask.status == local.status == "succeeded"
    assert dask.name == local.name
    assert dask.options.concurrency == 2 * 2 * 16  # full batches, two per worker thread


def llm_config(server: FakeOpenAIServer) -> TargetConfig:
    return TargetConfig.of(retriever="bm25", chunking="none", generator="openai", model="fake",
                           base_url=server.base_url, api_key_env="", retries=0)


def asked(body: Any) -> str:
    return body["messages"][-1]["content"] if body and "messages" in body else ""


def test_failures_and_time_limits_are_the_same_as_on_this_machine(manager: CampaignManager, scheduler: str) -> None:
    def script(path: str, body: Any) -> Reply:
        if QUESTIONS[1] in asked(body):
            return Reply.error(400, "scripted refusal")
        return Reply.slow(3.0) if QUESTIONS[2] in asked(body) else Reply("Within 30 days.")

    with FakeOpenAIServer(script) as server:
        here, there = both(manager, scheduler, llm_config(server), limit=6, time_limit=1.0)
    assert there == here
    errors = {row[0]: row[8] for row in there if row[8]}
    assert errors[2] == "timed out after 1 s"
    assert "scripted refusal" in errors[1]
    assert len(errors) == 2
    assert {c.status for c in list_campaigns(manager.store)} == {"succeeded_with_failures"}


def held_server(released: threading.Event, first: int) -> FakeOpenAIServer:
    """Answers the first `first` questions at once, the others once `released` is set (the server takes one
    request at a time into its script, so the held one holds the rest)."""
    count = iter(range(10**6))

    def script(path: str, body: Any) -> Reply:
        if next(count) >= first:
            released.wait(30)
        return Reply("Within 30 days.")

    return FakeOpenAIServer(script)


def wait_until(predicate: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def test_cancel_stops_the_cluster_campaign(manager: CampaignManager, scheduler: str) -> None:
    released = threading.Event()
    with held_server(released, 6) as server:
        config = llm_config(server).run_on("dask", scheduler)
        campaign_id = manager.launch(LaunchRequest(dataset="default", config=config, limit=40, concurrency=4,
                                                   cache=False))
        try:
            wait_until(lambda: get_campaign(manager.store, campaign_id).finished == 6)
            manager.cancel(campaign_id)
            done = manager.wait(campaign_id, timeout=30)
        finally:
            released.set()
        assert done.status == "cancelled"
        assert done.finished == 6
        assert len({r.question.position for r in campaign_results(manager.store, campaign_id)}) == 6
        resumed = manager.wait(manager.resume(campaign_id, run_on=("local", None)), timeout=60)  # the rest, here
    assert resumed.status == "succeeded"
    assert resumed.finished == 40
    assert resumed.config["executor"] == "local"


def test_unreachable_scheduler_is_refused_before_anything_is_stored(manager: CampaignManager,
                                                                     tmp_path: Path, monkeypatch) -> None:
    import socket

    with socket.socket() as unused:  # a loopback port nothing listens on
        unused.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{unused.getsockname()[1]}"
    with pytest.raises(EvalError, match="cannot reach the Dask scheduler") as refused:
        manager.launch(LaunchRequest(dataset="default", config=BM25.run_on("dask", address)))
    assert address in refused.value.line()
    monkeypatch.delenv("EVALCORE_DASK_SCHEDULER", raising=False)
    with pytest.raises(EvalError, match="needs a scheduler address"):
        manager.launch(LaunchRequest(dataset="default", config=BM25.run_on("dask")))
    monkeypatch.setenv("EVALCORE_DASK_SCHEDULER", "localhost:8786")
    with pytest.raises(EvalError, match="EVALCORE_DASK_SCHEDULER.*tcp://HOST:PORT"):
        manager.launch(LaunchRequest(dataset="default", config=BM25.run_on("dask")))
    with pytest.raises(EvalError, match="scheduler: expected a Dask scheduler address"):
        BM25.run_on("dask", "8786")
    assert list_campaigns(manager.store) == []


def test_an_outcome_arriving_twice_is_written_once(manager: CampaignManager) -> None:
    campaign = manager.wait(manager.launch(LaunchRequest(dataset="default", config=BM25, limit=2, cache=False)),
                            timeout=60)
    writer = ResultWriter(manager.store, campaign.id)  # a new session, as a resume starts
    question = Question(0, 1, QUESTIONS[0])
    outcome = Outcome.failed("worker lost", None)
    for _ in range(2):
        batch = writer.rows([(question, outcome), (question, outcome)])
        if batch[0]:
            manager.store.write(lambda conn, batch=batch: writer.write(conn, *batch, {}))
    [first, _] = campaign_results(manager.store, campaign.id)
    assert first.attempts == 2
    assert first.outcome.error == "worker lost"  # written once more, not twice
    assert get_campaign(manager.store, campaign.id).failed == 1
    assert Asked.timed_out(2.5).error == "timed out after 2.5 s"


def test_a_worker_killed_mid_campaign_loses_and_repeats_nothing(manager: CampaignManager, scheduler: str) -> None:
    released = threading.Event()
    with held_server(released, 8) as server, distributed.Client(scheduler, set_as_default=False) as client:
        config = llm_config(server).run_on("dask", scheduler)
        campaign_id = manager.launch(LaunchRequest(dataset="default", config=config, limit=40, concurrency=8,
                                                   cache=False))
        # 8 questions answered in batches of 2 on 2 single-thread workers: at least 3 batches are back.
        wait_until(lambda: get_campaign(manager.store, campaign_id).finished >= 6)
        wait_until(lambda: len(client.processing()) == 2 and all(client.processing().values()))
        victim = min(client.processing())  # it holds a batch, waiting on the model
        os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
        wait_until(lambda: victim not in client.nthreads())
        released.set()
        done = manager.wait(campaign_id, timeout=60)
    assert done.status == "succeeded"
    assert (done.finished, done.failed) == (40, 0)
    results = campaign_results(manager.store, campaign_id)
    assert [r.question.position for r in results] == list(range(40))
    assert {r.attempts for r in results} == {1}


def test_the_api_runs_on_the_cluster_a_full_access_key_names(scheduler: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_api import error_of, make_api, serve

    monkeypatch.setenv("EVALCORE_DASK_SCHEDULERS", f"cluster={scheduler}, down=tcp://127.0.0.1:9")
    app, keys, targets = make_api(tmp_path)
    body = {"dataset_id": "tiny", "knowledge_base_id": targets["fast"], "executor": "dask", "scheduler": "cluster"}
    with serve(app) as url:
        def post(key: str, **changes: Any) -> httpx.Response:
            return httpx.post(f"{url}/api/v1/evaluation", json={**body, **changes}, timeout=30,
                              headers={"Authorization": f"Bearer {keys[key]}"})

        assert "full-access" in error_of(post("admin"), 403)["message"]
        refused = error_of(post("full", scheduler="down"), 422)
        assert "cannot reach the Dask scheduler" in refused["message"]
        task_id = post("full").json()["data"]["task"]["id"]
        campaign = app.state.manager.wait(task_id, timeout=60)
    assert campaign.status == "succeeded"
    assert campaign.finished == 3
    assert (campaign.config["executor"], campaign.config["scheduler"]) == ("dask", "cluster")
    assert [c.id for c in list_campaigns(app.state.store)] == [task_id]


def test_the_run_page_offers_only_the_operators_schedulers(scheduler: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.campaigns import get_manager
    from tests.test_dashboard import assert_clean, page_test

    monkeypatch.delenv("EVALCORE_DASK_SCHEDULER", raising=False)
    monkeypatch.delenv("EVALCORE_DASK_SCHEDULERS", raising=False)
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/run.py")  # none set: no cluster, and no field to type an address in
    assert at.selectbox(key="cfg-quick-executor").options == ["this machine"]
    assert not [w for w in [*at.text_input, *at.selectbox] if w.key == "cfg-quick-scheduler"]
    monkeypatch.setenv("EVALCORE_DASK_SCHEDULERS", f"cluster={scheduler}, down=tcp://127.0.0.1:9")
    at = page_test(db, monkeypatch, "pages/run.py")
    assert at.selectbox(key="cfg-quick-scheduler").options == ["cluster", "down"]
    at.selectbox(key="cfg-quick-executor").set_value("dask")
    at.number_input(key="limit").set_value(5)
    at.button(key="FormSubmitter:launch-Launch").click().run()
    assert_clean(at)
    [campaign_id] = at.session_state["launched"]
    campaign = get_manager(db).wait(campaign_id, timeout=60)
    assert campaign.status == "succeeded"
    assert campaign.finished == 5
    assert (campaign.config["executor"], campaign.config["scheduler"]) == ("dask", "cluster")


def test_a_cluster_without_evalcore_is_told_how_to_install_it() -> None:
    from evalcore.campaigns.cluster import worker_problem

    missing = worker_problem(Exception("ModuleNotFoundError(\"No module named 'evalcore'\")"), "the setup failed")
    assert "cannot import evalcore" in missing.line()
    assert "pip install -e ." in missing.line()
    other = worker_problem(RuntimeError("out of memory"), "the setup failed", "tcp://10.0.0.2:4000")
    assert other.line() == "tcp://10.0.0.2:4000: the setup failed: RuntimeError: out of memory"
