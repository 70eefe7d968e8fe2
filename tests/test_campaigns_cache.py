"""Real targets against a loopback OpenAI-compatible server: the call cache and the judges."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.campaigns import CampaignManager, campaign_aggregates, campaign_results, get_campaign
from evalcore.campaigns.launching import LaunchRequest
from evalcore.targets import TargetConfig
from evalcore.testing.openai_server import FakeOpenAIServer

JUDGE_REPLY = '{"score": 4, "reason": "Close to the expected answer."}'


@pytest.fixture
def manager(tmp_path: Path):
    """A manager on a fresh database."""
    result = CampaignManager(tmp_path / "cache.db")
    yield result
    result.close()


def chat_requests(server: FakeOpenAIServer) -> int:
    """How many chat completions the server answered."""
    return sum(path.endswith("/chat/completions") for path, _, _ in server.requests)


def openai_config(server: FakeOpenAIServer, dataset: Path) -> TargetConfig:
    """Our pipeline with BM25 and an OpenAI-compatible generator on the loopback server."""
    return TargetConfig.of(retriever="bm25", generator="openai", base_url=server.base_url, model="fake-model",
                           api_key_env="", knowledge_base=str(dataset), retries=0)


def test_second_identical_campaign_is_served_by_the_cache(manager: CampaignManager, tiny_dataset: Path) -> None:
    with FakeOpenAIServer(default="Refunds are accepted within 30 days.") as server:
        config = openai_config(server, tiny_dataset)
        first = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, concurrency=2))
        assert manager.wait(first, timeout=30).status == "succeeded"
        calls = chat_requests(server)
        assert calls == 3
        assert get_campaign(manager.store, first).cache_hits == 0

        second = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, concurrency=2))
        done = manager.wait(second, timeout=30)
        assert done.status == "succeeded"
        assert done.cache_hits == 3
        assert chat_requests(server) == calls
        assert campaign_aggregates(manager.store, second) == campaign_aggregates(manager.store, first)
        # Cached replies keep their token counts, so cost stays comparable between campaigns.
        assert [r.outcome.prompt_tokens for r in campaign_results(manager.store, second)] == [11, 11, 11]

        third = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, cache=False))
        assert manager.wait(third, timeout=30).cache_hits == 0
        assert chat_requests(server) == calls + 3


def test_judges_are_stored_as_measures_with_details(manager: CampaignManager, tiny_dataset: Path) -> None:
    from evalcore.suites import Case, create_suite

    suite = create_suite(manager.store, tenant="default", name="judged", target_id="default", cases=[
        Case("What is the refund window?", "Refunds are accepted within 30 days.", ("Terms of Sale",)),
        Case("Where is the thermostat manual?"),
    ])
    with FakeOpenAIServer(default=JUDGE_REPLY) as server:
        campaign_id = manager.launch(LaunchRequest(suite_id=suite.id, config=openai_config(server, tiny_dataset),
                                     use_judge=True, judges=("relevance",)))
        done = manager.wait(campaign_id, timeout=30)
    assert done.status == "succeeded"
    assert done.judges == ("score", "relevance")
    assert done.use_judge
    with_expected, without = campaign_results(manager.store, campaign_id)
    assert with_expected.outcome.measures["judge.score"] == 4.0
    assert with_expected.outcome.measures["judge.relevance"] == 4.0
    assert with_expected.outcome.judges["score"].reason == "Close to the expected answer."
    assert with_expected.outcome.signatures["judge.score"].startswith("judge.score|prompt:v1|hash:")
    assert "|parser:v3|model:openai:fake-model@" in with_expected.outcome.signatures["judge.score"]
    assert "judge.score" not in without.outcome.measures
    assert "judge.relevance" in without.outcome.measures


def test_judges_asked_several_times_record_their_spread(manager: CampaignManager, tiny_dataset: Path) -> None:
    from evalcore.suites import Case, create_suite

    suite = create_suite(manager.store, tenant="default", name="sampled", target_id="default",
                         cases=[Case("What is the refund window?", "Refunds are accepted within 30 days.")])
    samples = iter(['{"score": 3, "reason": "a"}', '{"score": 5, "reason": "b"}', '{"score": 4, "reason": "c"}'])

    def reply(path: str, body: object) -> str:
        return next(samples) if "Independent judgement" in str(body) else "Refunds are accepted within 30 days."

    with FakeOpenAIServer(reply) as server:
        campaign_id = manager.launch(LaunchRequest(suite_id=suite.id, config=openai_config(server, tiny_dataset),
                                     use_judge=True, judge_samples=3, cache=False))
        done = manager.wait(campaign_id, timeout=30)
    assert done.options.judge_samples == 3
    (row,) = campaign_results(manager.store, campaign_id)
    verdict = row.outcome.judges["score"]
    assert sorted(verdict.samples) == [3.0, 4.0, 5.0]
    assert row.outcome.measures["judge.score"] == 4.0
    assert verdict.spread.max - verdict.spread.min == 2.0
