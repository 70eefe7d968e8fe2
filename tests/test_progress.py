"""Honest progress: the index build reports its chunks as it goes, and the time left comes from the recent
rate of the current stage (tested with injected times), on every face."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from tqdm import tqdm

import ui
from evalcore.campaigns import CampaignManager, Progress, get_campaign, get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.pace import Window, duration_text, estimate, time_left
from evalcore.cli.run import BAR, show_progress
from evalcore.datasets import load_dataset
from evalcore.targets.knowledge import build_knowledge_base
from tests.test_campaigns import FakeTarget


@pytest.fixture
def manager(tmp_path: Path):
    """A manager on a fresh database."""
    result = get_manager(tmp_path / "campaigns.db")
    yield result
    result.close()


def test_the_window_rate_counts_the_last_half_minute_only() -> None:
    window = Window(seconds=30)
    assert window.restart(100.0, 0) == (None, 100.0, 0)
    assert window.sample(110.0, 10) == (1.0, 110.0, 10)  # 10 in 10 s since the stage began
    window.sample(130.0, 30)
    # Slower now: 30 s later only 6 more; the rate is over the half minute before, not since the start.
    rate, at, done = window.sample(160.0, 36)
    assert (rate, at, done) == (pytest.approx(6 / 30), 160.0, 36)  # base: the newest sample >= 30 s old (130)
    rate, _, _ = window.sample(200.0, 40)
    assert rate == pytest.approx(4 / 40)  # base 160: 130 fell out of the window
    assert window.restart(210.0, 0)[0] is None  # a new stage forgets the old one


def test_time_left_comes_from_the_rate_of_the_current_stage_not_since_the_start() -> None:
    # The case people saw: a 30 s index build, then 80 questions at 10 per second. 4 s into the questions,
    # 40 are done. The average since the campaign started (40 in 34 s) said 34 s left; 4 s were left.
    window = Window()
    window.restart(1030.0, 0)  # the questions start once the index is built (started at 1000)
    rate, at, done = window.sample(1034.0, 40)
    assert time_left(done, 80, rate, at, now=1034.0) == pytest.approx(4.0)
    assert (80 - 40) / (40 / 34) == pytest.approx(34.0)  # what the whole-campaign average said
    # Between two samples the time left counts down, it never grows while work goes on at that pace.
    assert time_left(done, 80, rate, at, now=1035.5) == pytest.approx(2.5)
    # Late (the predicted finish has passed): unknown, rather than "0 s left" while work remains.
    assert time_left(done, 80, rate, at, now=1040.0) is None
    assert time_left(80, 80, rate, at, now=1040.0) == 0.0
    assert time_left(0, 80, None, 1030.0, now=1031.0) is None  # nothing done yet: no rate
    assert time_left(40, 80, 0.0, 1030.0, now=1031.0) is None  # stalled for the whole window
    # Before the stage's first rate is sampled, the rate since its start (the sample is the start).
    assert estimate(20, 80, None, 1030.0, 0, now=1032.0) == (10.0, 6.0)
    assert estimate(0, 80, None, 1030.0, 0, now=1032.0) == (None, None)
    assert estimate(40, 80, 10.0, 1034.0, 40, now=1035.0) == (10.0, 3.0)


def test_campaign_progress_shows_the_stage_or_the_questions_with_their_time_left(manager: CampaignManager,
                                                                                 tiny_dataset: Path) -> None:
    campaign = manager.wait(manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=FakeTarget())), timeout=30)
    running = replace(campaign, status=campaign.status.RUNNING, ended_at=None, finished=1, total=81,
                      stage="embedding the corpus with use", stage_done=128, stage_total=640,
                      pace_rate=32.0, pace_at=1000.0, pace_done=128)
    indexing = running.progress(now=1001.0)
    assert (indexing.stage, indexing.stage_done, indexing.stage_total) == ("embedding the corpus with use", 128, 640)
    assert indexing.eta_s == pytest.approx(512 / 32 - 1)
    assert indexing.share == pytest.approx(0.2)
    asking = replace(running, stage=None, stage_done=None, stage_total=None, finished=41, pace_rate=10.0,
                     pace_at=1000.0, pace_done=40).progress(now=1002.0)
    assert asking.stage is None
    assert asking.rate_per_s == 10.0
    assert asking.eta_s == pytest.approx(41 / 10 - 2)
    assert asking.share == pytest.approx(41 / 81)
    ended = campaign.progress(now=1e12)
    assert ended.stage is None
    assert ended.eta_s == 0.0
    assert ended.share == 1.0
    assert indexing.to_dict()["stage_done"] == 128
    assert indexing.to_dict()["stage_total"] == 640


def test_the_index_build_reports_each_step_with_its_chunks(tmp_path: Path) -> None:
    passages = load_dataset("dataset/samples").passages[:40]
    steps: list[tuple[int, int, str]] = []
    build_knowledge_base(passages, chunk_size=None, models=("use",), cache_dir=tmp_path,
                         progress=lambda done, total, step="": steps.append((done, total, step)))
    names = list(dict.fromkeys(step for _, _, step in steps))
    assert names == ["loading the index", "indexing the words of the corpus", "loading the embedding model use",
                     "embedding the corpus with use"]
    embedding = [(done, total) for done, total, step in steps if step.startswith("embedding")]
    assert embedding[0] == (0, 40)
    assert embedding[-1] == (40, 40)  # at 0 as soon as the model is loaded
    assert [done for done, _ in embedding] == sorted(done for done, _ in embedding)


class SteppedIndex(FakeTarget):
    """A target whose index build reports two steps, then waits for the test before its last chunks."""

    def __init__(self) -> None:
        super().__init__()
        self.halfway = threading.Event()
        self.go_on = threading.Event()

    def prepare(self, passages: Sequence, progress: Callable[..., None] | None = None) -> None:
        assert progress is not None
        progress(300, 300, "indexing the words of the corpus")
        for done in range(0, 301, 50):
            progress(done, 300, "embedding the corpus with use")
            time.sleep(0.02)
            if done == 150:
                self.halfway.set()
                self.go_on.wait(20)


def test_a_running_index_build_stores_its_latest_chunks(manager: CampaignManager, tiny_dataset: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evalcore.campaigns.runner.HEARTBEAT_S", 0.05)
    target = SteppedIndex()
    campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=target))
    assert target.halfway.wait(20)
    # The reports of 50, 100 and 150 came within half a second: the heartbeat stores the latest.
    deadline = time.monotonic() + 20
    while (progress := get_campaign(manager.store, campaign_id).progress()).stage_done != 150:
        assert time.monotonic() < deadline, progress
        time.sleep(0.02)
    shown = api_progress(manager, campaign_id)
    text = ui.progress_text(get_campaign(manager.store, campaign_id))
    target.go_on.set()
    assert progress.stage == "embedding the corpus with use"
    assert progress.stage_total == 300
    assert (shown["stage"], shown["stage_done"], shown["stage_total"]) == ("embedding the corpus with use", 150, 300)
    assert "preparing the knowledge base: embedding the corpus with use 150/300 chunks" in text
    assert 150 <= (progress.stage_done or 0) <= 300
    assert 0 < progress.share < 1
    assert manager.wait(campaign_id, timeout=30).status == "succeeded"
    ended = get_campaign(manager.store, campaign_id)
    assert ended.stage is None
    assert ended.stage_done is None
    assert ended.progress().stage is None


def api_progress(manager: CampaignManager, campaign_id: str) -> dict:
    """A campaign's progress as the API answers it."""
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    _, secret = create_key(manager.store, tenant="default", role="viewer")
    client = TestClient(create_app(manager.store.path))
    answer = client.get(f"/api/v1/campaigns/{campaign_id}", headers={"Authorization": f"Bearer {secret}"})
    return dict(answer.json()["data"]["campaign"]["progress"])


def test_the_cli_bar_counts_chunks_then_questions_with_the_campaigns_time_left() -> None:
    out = io.StringIO()
    with tqdm(total=82, initial=0, unit="questions", file=out, disable=False, bar_format=BAR, mininterval=0) as bar:
        show_progress(bar, Progress(0, 82, None, 12.0, "embedding the corpus with use", 128, 640), failed=0)
        assert (bar.total, bar.n, bar.unit) == (640, 128, "chunks")
        assert "preparing the knowledge base: embedding the corpus with use" in out.getvalue()
        assert "128/640 chunks" in out.getvalue()
        assert "12 s left" in out.getvalue()
        show_progress(bar, Progress(41, 82, 10.0, 4.1, None), failed=2)
        assert (bar.total, bar.n, bar.unit) == (82, 41, "questions")
        assert "41/82 questions" in out.getvalue()
        assert "2 failed, 10.0 q/s, 4 s left" in out.getvalue()


def test_durations_read_as_people_say_them() -> None:
    assert [duration_text(s) for s in (None, 0.085, 4.4, 91, 3725)] == ["—", "85 ms", "4 s", "1 min 31 s", "1 h 2 min"]
