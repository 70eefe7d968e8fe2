"""The store is a dependency that can fail: a write that cannot reach it is tried again with back-off, an owner
that cannot write its heartbeat gives its campaign up, a campaign whose lease ran out is taken back even while its
owner's process lives, cancel ends such a campaign, and a PostgreSQL restart loses and repeats no question."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcore.campaigns import CampaignManager, get_campaign
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.runner import StoreLost, write_patiently
from evalcore.store import Store, StoreUnavailable, mark_orphans, new_owner_token, open_store
from evalcore.targets import TargetConfig
from evalcore.testing.openai_server import FakeOpenAIServer
from tests.test_campaigns import many_questions
from tests.test_campaigns_queue import stored_once, watch


class Outage:
    """Makes a store's writes and reads fail as an unreachable database does, while `down` is set."""

    def __init__(self, store: Store) -> None:
        self.down = threading.Event()
        self.refused = 0
        write, read = store.write, store.read

        def guarded(call: Callable[..., Any]) -> Callable[..., Any]:
            def run(*args: Any, **kwargs: Any) -> Any:
                if self.down.is_set():
                    self.refused += 1
                    raise StoreUnavailable("the database cannot be reached: connection refused", where="test")
                return call(*args, **kwargs)
            return run

        store.write = guarded(write)  # type: ignore[method-assign]
        store.read = guarded(read)  # type: ignore[method-assign]


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[CampaignManager]:
    made = CampaignManager(tmp_path / "faults.db")
    yield made
    made.close()


def test_a_write_is_tried_again_until_the_store_answers(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        outage = Outage(store)
        outage.down.set()
        threading.Timer(0.3, outage.down.clear).start()
        assert write_patiently(store, lambda conn: conn.execute("SELECT 7").fetchone()[0], time.monotonic() + 30) == 7
        assert outage.refused >= 2
        outage.down.set()
        with pytest.raises(StoreLost):
            write_patiently(store, lambda conn: 1, time.monotonic() + 0.2)


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default="Refunds within 30 days.", delay=0.05) as server:
        yield server


def config_for(model: FakeOpenAIServer, data: Path) -> TargetConfig:
    return TargetConfig.of(knowledge_base=str(data), retriever="bm25", generator="openai", model="fake",
                           base_url=model.base_url, api_key_env="")


def test_a_worker_campaign_whose_store_went_away_is_given_up_and_resumed_once_it_is_back(
        manager: CampaignManager, model: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evalcore.store.STALE_S", 1.5)   # the lease: another worker may take it 1.5 s after
    monkeypatch.setattr("evalcore.campaigns.runner.HEARTBEAT_S", 0.1)
    data = many_questions(tmp_path / "forty", 40)
    manager.serve_queue(slots=1, tenant_cap=1)
    campaign_id = manager.launch(LaunchRequest(dataset=str(data), config=config_for(model, data), concurrency=2))
    while get_campaign(manager.store, campaign_id).finished < 4:
        time.sleep(0.02)
    outage = Outage(manager.store)
    outage.down.set()
    deadline = time.monotonic() + 10
    while manager.running() and time.monotonic() < deadline:  # the runner gives the campaign up, within the lease
        time.sleep(0.05)
    assert manager.running() == 0
    outage.down.clear()
    watch(manager, [campaign_id], timeout=60)
    assert get_campaign(manager.store, campaign_id).status.value == "succeeded"
    assert stored_once(manager, campaign_id)


def insert_owned(store: Store, campaign_id: str, *, heartbeat: float, queued: bool) -> None:
    """A running campaign owned by this very process (alive), its heartbeat as given."""
    store.write(lambda conn: conn.execute(
        "INSERT INTO campaigns (id, tenant, kind, source, status, total, created_at, heartbeat, owner_host, "
        "owner_pid, owner_token, queued_at, config) VALUES (?, 'default', 'dataset', 'default', 'running', 3, ?, ?, "
        "?, ?, ?, ?, '{}')",
        (campaign_id, heartbeat, heartbeat, socket.gethostname(), os.getpid(), new_owner_token(),
         heartbeat if queued else None)))


def test_a_worker_campaign_whose_lease_ran_out_goes_back_to_the_queue_though_its_owner_lives(db: str) -> None:
    now = time.time()
    with open_store(db) as store:
        insert_owned(store, "silent", heartbeat=now - 120, queued=True)
        insert_owned(store, "beating", heartbeat=now, queued=True)
        insert_owned(store, "paused-here", heartbeat=now - 120, queued=False)  # its own process checks it
        assert store.write(mark_orphans) == 1
        status = {row["id"]: row["status"] for row in store.read("SELECT id, status FROM campaigns")}
    assert status == {"silent": "queued", "beating": "running", "paused-here": "running"}


def test_cancel_ends_a_campaign_whose_owner_stopped_beating(db: str, tmp_path: Path) -> None:
    manager = CampaignManager(db)
    try:
        insert_owned(manager.store, "silent", heartbeat=time.time() - 120, queued=False)
        manager.cancel("silent")
        assert get_campaign(manager.store, "silent").status.value == "cancelled"
    finally:
        manager.close()


@pytest.fixture
def own_postgres() -> Iterator[Any]:
    """A PostgreSQL server of this test alone, which it stops and restarts."""
    from evalcore.testing.postgres_server import postgres_bin, running_postgres

    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    with running_postgres() as server:
        yield server


def test_a_postgresql_restart_mid_campaign_loses_and_repeats_no_question(
        own_postgres: Any, model: FakeOpenAIServer, tmp_path: Path) -> None:
    data = many_questions(tmp_path / "forty", 40)
    manager = CampaignManager(own_postgres.url)
    try:
        manager.serve_queue(slots=2, tenant_cap=2)
        ids = [manager.launch(LaunchRequest(dataset=str(data), config=config_for(model, data), concurrency=2))
               for _ in range(2)]
        while sum(get_campaign(manager.store, i).finished for i in ids) < 6:
            time.sleep(0.02)
        own_postgres.restart()  # as `pg_ctl restart -m immediate`: every connection cut, a crash recovery
        watch(manager, ids, timeout=90)
        assert [get_campaign(manager.store, i).status.value for i in ids] == ["succeeded", "succeeded"]
        assert all(stored_once(manager, i) for i in ids)
    finally:
        manager.close()


def test_the_api_answers_503_with_retry_after_while_the_store_is_down(own_postgres: Any) -> None:
    import httpx

    from evalcore.access.api_keys import create_key
    from evalcore.api.app import create_app
    from tests.test_api import serve

    app = create_app(own_postgres.url)
    _, secret = create_key(app.state.store, tenant="acme", role="admin")
    headers = {"Authorization": f"Bearer {secret}"}
    with serve(app) as url:
        assert httpx.get(f"{url}/api/v1/campaigns", headers=headers, timeout=30).status_code == 200
        own_postgres.stop()
        try:
            for path in ("/api/v1/campaigns", "/api/v1/health"):
                reply = httpx.get(f"{url}{path}", headers=headers, timeout=30)
                assert reply.status_code == 503, reply.text
                assert reply.headers["retry-after"] == "5"
                assert reply.json() == {"success": False, "error": {
                    "code": "unavailable", "message": "the database cannot be reached for now; try again shortly"}}
        finally:
            own_postgres.start()
        assert httpx.get(f"{url}/api/v1/campaigns", headers=headers, timeout=30).status_code == 200
    app.state.manager.close()
