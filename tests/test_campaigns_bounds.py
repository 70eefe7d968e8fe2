"""What a campaign holds, and for how long: a question past its time limit ends its thread and closes its
connection at once, however slowly the peer trickles its reply; a campaign that ended, however it ended,
keeps no runner and no connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.targets import TargetConfig
from evalcore.testing.agent import LoopbackAgent


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[CampaignManager]:
    result = CampaignManager(tmp_path / "campaigns.db")
    yield result
    result.close()


def agent(url: str) -> TargetConfig:
    return TargetConfig.of(kind="http_agent", agent_url=url, timeout=60, retries=0)


def question_threads() -> int:
    return sum(thread.name.startswith("question-") for thread in threading.enumerate())


def settles(condition: Callable[[], bool], seconds: float = 10) -> bool:
    """Whether the condition holds within `seconds` (polled)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_a_question_past_its_time_limit_ends_its_thread_and_closes_its_connection(manager: CampaignManager) -> None:
    before = question_threads()
    # 80 s per reply, one byte at a time. The limit of 2 s leaves each question time to reach the agent even when
    # other tests load both cores (at 0.5 s, one in a loaded CI run timed out before its request was read). The six
    # questions at once: one limit's wait, not three.
    with LoopbackAgent(answer="x" * 4000, trickle=0.02) as trickling:
        campaign = manager.wait(manager.launch(LaunchRequest(dataset="default", config=agent(trickling.url), limit=6,
                                                             concurrency=6,
                                               time_limit=2, max_failed_share=1, cache=False)), timeout=60)
        assert campaign.failed == 6
        assert settles(lambda: trickling.open == 0 and question_threads() == before), (trickling.open,
                                                                                        question_threads())
        assert trickling.requests == 6


def test_questions_share_their_threads_and_the_threads_end_with_the_campaign(manager: CampaignManager,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # A thread done with its question takes the next one (it counts as free before its outcome is seen), so a
    # campaign of 30 questions at concurrency 3 answers them on 3 threads; they end when the campaign does.
    from evalcore.campaigns import executors

    answering, ask = set(), executors.answer_question
    monkeypatch.setattr(executors, "answer_question",
                        lambda *args: answering.add(threading.current_thread()) or ask(*args))
    before = question_threads()
    with LoopbackAgent() as answering_agent:
        request = LaunchRequest(dataset="default", config=agent(answering_agent.url), limit=30, concurrency=3,
                                cache=False)
        campaign = manager.wait(manager.launch(request), timeout=60)
    assert campaign.status == "succeeded"
    assert campaign.finished == 30
    assert 1 <= len(answering) <= 3, len(answering)
    assert settles(lambda: question_threads() == before), question_threads()


@pytest.mark.parametrize("how", ["succeeded", "cancelled"])
def test_a_campaign_that_ended_keeps_no_runner_and_no_connection(manager: CampaignManager, how: str) -> None:
    with LoopbackAgent() as answering:
        campaign_id = manager.launch(LaunchRequest(dataset="default", config=agent(answering.url), limit=20,
                                     concurrency=4, cache=False))
        if how == "cancelled":
            assert settles(lambda: answering.requests > 0)
            manager.cancel(campaign_id)
        assert manager.wait(campaign_id, timeout=60).status == how
        assert settles(lambda: answering.open == 0 and not manager._runners), (answering.open, manager._runners)
