"""While campaigns run, the cycle collector's youngest generation is collected less often, and put back after."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcore.campaigns import get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.runtime.memory import CAMPAIGN_YOUNG, campaign_collection
from evalcore.targets import TargetAnswer
from tests.test_campaigns import FakeTarget


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """CPython's thresholds during the test, whatever they were before it; put back after."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_overlapping_campaigns_raise_the_threshold_and_the_last_puts_it_back(
        thresholds: tuple[int, int, int]) -> None:
    first, second = campaign_collection(), campaign_collection()
    first.__enter__()
    assert gc.get_threshold() == (CAMPAIGN_YOUNG, 10, 10)
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == CAMPAIGN_YOUNG  # the second still runs
    second.__exit__(None, None, None)
    assert gc.get_threshold() == thresholds


def test_a_threshold_set_by_someone_else_meanwhile_is_left_alone(thresholds: tuple[int, int, int]) -> None:
    with campaign_collection():
        gc.set_threshold(50_000, 10, 10)
    assert gc.get_threshold() == (50_000, 10, 10)


def test_a_higher_threshold_is_not_lowered(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(100_000, 5, 5)
    with campaign_collection():
        assert gc.get_threshold() == (100_000, 5, 5)
    assert gc.get_threshold() == (100_000, 5, 5)


class _Recording(FakeTarget):
    """Records the youngest generation's threshold while it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int] = []
        self.lock = threading.Lock()

    def answer(self, question: str, qid: int | None = None) -> TargetAnswer:
        with self.lock:
            self.seen.append(gc.get_threshold()[0])
        return super().answer(question, qid)


def test_a_campaign_answers_under_the_raised_threshold_and_puts_it_back(
        thresholds: tuple[int, int, int], db: str, tiny_dataset: Path) -> None:
    manager = get_manager(db)
    try:
        target = _Recording()
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=target, concurrency=1))
        assert manager.wait(campaign_id, timeout=20).status == "succeeded"
        runner_ended = [thread for thread in threading.enumerate() if thread.name == f"campaign-{campaign_id}"]
        for thread in runner_ended:
            thread.join(10)
    finally:
        manager.close()
    assert target.seen == [CAMPAIGN_YOUNG] * 3
    assert gc.get_threshold() == thresholds
