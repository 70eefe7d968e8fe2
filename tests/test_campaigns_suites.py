"""Suites: CRUD with limits, suite campaigns, one running campaign per suite, snapshots, cascades."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from evalcore.campaigns import (
    CampaignManager,
    Conflict,
    NotFound,
    Source,
    campaign_results,
    get_campaign,
    list_campaigns,
)
from evalcore.campaigns.launching import LaunchRequest
from evalcore.errors import EvalError
from evalcore.suites import (
    Case,
    create_suite,
    delete_suite,
    get_suite,
    list_suites,
    replace_suite,
)
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import get_target, list_targets, save_target
from tests.test_campaigns import FakeTarget

CASES = [
    Case("What is the refund window?", "Refunds are accepted within 30 days.", ("terms of sale",)),
    {"question": "Quel est le délai ?", "expected_answer": "14 jours", "expected_sources": "cgv|manuel"},
    Case("Where is the thermostat?"),
]


@pytest.fixture
def manager(tmp_path: Path):
    """A manager on a fresh database (not the process singleton: tests open a second one)."""
    result = CampaignManager(tmp_path / "suites.db")
    yield result
    result.close()


def suite_target(tiny_dataset: Path, delay: float = 0.0) -> FakeTarget:
    """A fake target whose knowledge base is the tiny dataset."""
    target = FakeTarget(delay=delay)
    target.config = TargetConfig.of(knowledge_base=str(tiny_dataset))
    return target


def test_suite_crud_and_limits(manager: CampaignManager) -> None:
    store = manager.store
    suite = create_suite(store, tenant="acme", name=" Refunds ", target_id="default", cases=CASES)
    assert suite.name == "Refunds"
    assert suite.cases[1].expected_sources == ("cgv", "manuel")
    assert get_suite(store, suite.id) == suite
    with pytest.raises(NotFound):
        get_suite(store, suite.id, tenant="other")
    assert [s.id for s in list_suites(store, tenant="acme")] == [suite.id]
    assert list_suites(store, "other") == []
    replaced = replace_suite(store, suite.id, name="Refunds v2", target_id="default", cases=CASES[:1])
    assert get_suite(store, suite.id).cases == replaced.cases == (CASES[0],)
    with pytest.raises(EvalError, match="at most 100 cases"):
        create_suite(store, tenant="acme", name="big", target_id="default", cases=[Case(f"q{i}") for i in range(101)])
    with pytest.raises(EvalError, match="at most 10 expected sources") as error:
        create_suite(store, tenant="acme", name="src", target_id="default",
                     cases=[Case("q", None, tuple("abcdefghijk"))])
    assert error.value.where == "case 1"
    with pytest.raises(EvalError, match="question is required") as error:
        create_suite(store, tenant="acme", name="empty", target_id="default", cases=[Case("ok"), Case("  ")])
    assert error.value.where == "case 2"
    delete_suite(store, suite.id)
    with pytest.raises(NotFound):
        get_suite(store, suite.id)


def test_saved_targets_round_trip(manager: CampaignManager) -> None:
    config = TargetConfig.of(retriever="bm25", embedding_top_k=7)
    target_id = save_target(manager.store, config, tenant="acme", name="bm25 top 7")
    assert get_target(manager.store, target_id) == config
    assert [t.id for t in list_targets(manager.store)] == [target_id]
    assert list_targets(manager.store)[0].config["embedding_top_k"] == 7
    with pytest.raises(NotFound):
        get_target(manager.store, target_id, tenant="other")


def test_suite_campaign_snapshot_survives_edits_and_measures_apply(manager: CampaignManager,
                                                                   tiny_dataset: Path) -> None:
    suite = create_suite(manager.store, tenant="default", name="s", target_id="default", cases=CASES)
    campaign_id = manager.launch(LaunchRequest(suite_id=suite.id, target=suite_target(tiny_dataset)))
    assert campaign_id.startswith("run_default_")
    assert manager.wait(campaign_id, timeout=20).status == "succeeded"
    replace_suite(manager.store, suite.id, name="s", target_id="default", cases=[Case("Something else entirely?")])
    results = campaign_results(manager.store, campaign_id)
    assert [r.question.text for r in results] == [c.question if isinstance(c, Case) else c["question"] for c in CASES]
    first, second, third = results
    assert first.outcome.measures["sources_found"] == 1.0
    assert first.outcome.measures["coverage"] == 1.0
    assert second.outcome.measures["sources_found"] == 0.0
    assert "coverage" not in third.outcome.measures
    assert "sources_found" not in third.outcome.measures
    assert Source(10, "Terms of Sale (EU)") in first.outcome.sources
    assert get_campaign(manager.store, campaign_id).suite_id == suite.id


def test_concurrent_launches_on_one_suite_exactly_one_wins(manager: CampaignManager, tiny_dataset: Path,
                                                           tmp_path: Path) -> None:
    suite = create_suite(manager.store, tenant="default", name="s", target_id="default", cases=CASES)
    other = CampaignManager(tmp_path / "suites.db")  # a second writer, as another process would have
    barrier, outcomes = threading.Barrier(4), []

    def launch(owner: CampaignManager) -> None:
        barrier.wait()
        try:
            outcomes.append(("ok",
                             owner.launch(LaunchRequest(suite_id=suite.id,
                                                        target=suite_target(tiny_dataset, delay=0.5)))))
        except Conflict as conflict:
            outcomes.append(("conflict", conflict.running_id))

    threads = [threading.Thread(target=launch, args=(owner,)) for owner in (manager, other, manager, other)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [value for kind, value in outcomes if kind == "ok"]
        assert len(winners) == 1
        assert [value for kind, value in outcomes if kind == "conflict"] == winners * 3
        for owner in (manager, other):
            owner.wait(winners[0], timeout=20)
        second = manager.launch(LaunchRequest(suite_id=suite.id, target=suite_target(tiny_dataset)))
        assert manager.wait(second, timeout=20).status == "succeeded"
    finally:
        other.close()


def test_a_suite_campaign_gives_each_question_4_minutes_at_most(manager: CampaignManager, tiny_dataset: Path) -> None:
    suite = create_suite(manager.store, tenant="default", name="timed", target_id="default", cases=CASES)
    with pytest.raises(EvalError) as caught:
        manager.launch(LaunchRequest(suite_id=suite.id, target=suite_target(tiny_dataset), time_limit=241))
    assert (caught.value.where, caught.value.expected) == ("time_limit", "at most 240 s")
    at_most = manager.launch(LaunchRequest(suite_id=suite.id, target=suite_target(tiny_dataset), time_limit=240))
    assert get_campaign(manager.store, at_most).options.time_limit == 240
    manager.wait(at_most, timeout=20)
    longer = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=suite_target(tiny_dataset), time_limit=900))
    assert get_campaign(manager.store, longer).options.time_limit == 900  # datasets keep their wider range
    manager.wait(longer, timeout=20)


def test_deleting_a_suite_deletes_its_campaigns(manager: CampaignManager, tiny_dataset: Path) -> None:
    suite = create_suite(manager.store, tenant="default", name="s", target_id="default", cases=CASES)
    campaign_id = manager.launch(LaunchRequest(suite_id=suite.id, target=suite_target(tiny_dataset)))
    manager.wait(campaign_id, timeout=20)
    running = manager.launch(LaunchRequest(suite_id=suite.id, target=suite_target(tiny_dataset, delay=0.5)))
    delete_suite(manager.store, suite.id)
    assert list_campaigns(manager.store) == []
    with pytest.raises(NotFound):
        manager.wait(running, timeout=20)
    assert manager.store.read("SELECT count(*) AS n FROM results")[0]["n"] == 0


def test_suite_campaign_with_unknown_agent_fails_fast(manager: CampaignManager) -> None:
    suite = create_suite(manager.store, tenant="default", name="s", target_id="target_nope", cases=CASES)
    with pytest.raises(NotFound, match="target_nope"):
        manager.launch(LaunchRequest(suite_id=suite.id))
