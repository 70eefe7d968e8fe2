"""Campaign lifecycle: background runs, failure isolation, time limits, cancel, resume, retry."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from evalcore.campaigns import (
    CampaignManager,
    Conflict,
    NotFound,
    campaign_aggregates,
    campaign_results,
    campaign_summary,
    get_campaign,
    get_manager,
    list_campaigns,
)
from evalcore.campaigns.launching import LaunchRequest
from evalcore.errors import EvalError
from evalcore.store import open_store
from evalcore.targets import Retrieved, TargetAnswer, TargetConfig
from tests.conftest import write_dataset


class FakeTarget:
    """A Target whose behaviour per question is scripted by the test."""

    def __init__(self, *, delay: float = 0.0, fail: Callable[[int], bool] = lambda qid: False,
                 hang: Callable[[int], bool] = lambda qid: False, broken: bool = False) -> None:
        self.config = TargetConfig()
        self.delay, self.fail, self.hang, self.broken = delay, fail, hang, broken
        self.release = threading.Event()
        self.asked: list[int] = []
        self.threads: set[str] = set()
        self.prepared = 0

    def check(self) -> None:
        if self.broken:
            raise EvalError("model unreachable", where="fake target")

    def prepare(self, passages: Sequence, progress: Callable[[int, int], None] | None = None) -> None:
        self.prepared = len(passages)

    def answer(self, question: str, qid: int | None = None) -> TargetAnswer:
        self.asked.append(qid)
        self.threads.add(threading.current_thread().name)
        if self.hang(qid):
            self.release.wait(30)
        time.sleep(self.delay)
        if self.fail(qid):
            raise RuntimeError(f"scripted failure on {qid}")
        retrieved = [Retrieved(10, "Terms of Sale (EU)", "Refunds within 30 days.", 2.0, {"bm25": 2.0}),
                     Retrieved(None, "", "unmapped chunk", 1.0, {}),
                     Retrieved(12, "CGV France", "Le délai est de 14 jours.", 0.5, {"bm25": 0.5})]
        return TargetAnswer("Refunds are accepted within 30 days.", retrieved, prompt_tokens=5, completion_tokens=3)

    def chat_model(self) -> None:
        return None


def many_questions(folder: Path, n: int) -> Path:
    """A valid dataset with n labeled, answered questions over five passages."""
    return write_dataset(folder, {
        "queries": {"id": list(range(1, n + 1)),
                    "text": [f"Question number {i} about refunds?" for i in range(1, n + 1)]},
        "corpus": {"id": [10, 11, 12, 13, 14], "text": [f"Passage {i} on refunds within {i} days." for i in range(5)]},
        "answers": {"id": list(range(101, 101 + n)), "text": ["Refunds within 30 days."] * n},
        "qrels": {"qid": list(range(1, n + 1)), "pid": [10 + i % 3 for i in range(n)]},
        "qas": {"qid": list(range(1, n + 1)), "aid": list(range(101, 101 + n))},
    })


@pytest.fixture
def manager(db: str):
    """A manager on a fresh database, on each backend."""
    result = get_manager(db)
    yield result
    result.close()


def test_launch_returns_at_once_and_runs_in_background(manager: CampaignManager, tiny_dataset: Path) -> None:
    target = FakeTarget(delay=0.2)
    campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=target, concurrency=1))
    first = get_campaign(manager.store, campaign_id)
    assert first.status in ("pending", "running")
    assert first.finished == 0
    assert campaign_id.startswith("evaluation_default_")
    assert campaign_id.endswith("_tiny")
    done = manager.wait(campaign_id, timeout=20)
    assert done.status == "succeeded"
    assert (done.finished, done.total, done.failed) == (3, 3, 0)
    assert done.started_at
    assert done.ended_at >= done.started_at
    assert done.progress().finished == 3
    assert done.progress().eta_s == 0.0
    assert threading.main_thread().name not in target.threads
    assert target.prepared == 5  # the whole corpus, distractor included


def test_launch_validates_before_accepting(manager: CampaignManager, tiny_dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="unreachable"):
        manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=FakeTarget(broken=True)))
    with pytest.raises(EvalError):
        manager.launch(LaunchRequest(dataset=str(tmp_path / "missing"), target=FakeTarget()))
    with pytest.raises(EvalError, match="either a dataset or a suite"):
        manager.launch(LaunchRequest(target=FakeTarget()))
    with pytest.raises(EvalError, match="unknown judge"):
        manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=FakeTarget(), judges=("vibes",)))
    assert list_campaigns(manager.store) == []


def test_one_failing_question_in_five_is_isolated(manager: CampaignManager, tmp_path: Path) -> None:
    data = many_questions(tmp_path / "ten", 10)
    campaign_id = manager.launch(LaunchRequest(dataset=str(data), target=FakeTarget(fail=lambda qid: qid % 5 == 0),
                                               concurrency=3))
    done = manager.wait(campaign_id, timeout=20)
    assert done.status == "succeeded_with_failures"
    assert done.status_text == "succeeded with 2 failed"
    assert (done.finished, done.failed) == (10, 2)
    results = campaign_results(manager.store, campaign_id)
    errors = {r.question.qid: r.outcome.error for r in results if r.outcome.error}
    assert errors == {5: "RuntimeError: scripted failure on 5", 10: "RuntimeError: scripted failure on 10"}
    assert all(r.outcome.measures for r in results if not r.outcome.error)
    summary = campaign_summary(manager.store, campaign_id)
    assert (summary.answered, summary.failed) == (8, 2)
    assert summary.tokens.to_dict() == {"prompt": 40, "completion": 24, "total": 64}


def test_too_many_failures_fail_the_campaign(manager: CampaignManager, tmp_path: Path) -> None:
    data = many_questions(tmp_path / "ten", 10)
    campaign_id = manager.launch(LaunchRequest(dataset=str(data), target=FakeTarget(fail=lambda qid: qid > 2),
                                 concurrency=1, max_failed_share=0.3))
    done = manager.wait(campaign_id, timeout=20)
    assert done.status == "failed"
    assert "questions had failed (more than 30%)" in done.error
    assert done.failed == 4
    assert done.finished == 6  # dispatching stopped at the 4th failure


def test_hung_question_times_out_and_campaign_goes_on(manager: CampaignManager, tmp_path: Path) -> None:
    data = many_questions(tmp_path / "six", 6)
    target = FakeTarget(hang=lambda qid: qid == 2)
    try:
        campaign_id = manager.launch(LaunchRequest(dataset=str(data), target=target, concurrency=2, time_limit=1.5))
        done = manager.wait(campaign_id, timeout=20)
        assert done.status == "succeeded_with_failures"
        errors = {r.question.qid: r.outcome.error for r in campaign_results(manager.store, campaign_id)
                  if r.outcome.error}
        assert errors == {2: "timed out after 1.5 s"}
        assert done.finished == 6
    finally:
        target.release.set()


def test_cancel_then_resume_runs_only_missing_questions(manager: CampaignManager, tmp_path: Path) -> None:
    data = many_questions(tmp_path / "twenty", 20)
    target = FakeTarget(delay=0.05)
    campaign_id = manager.launch(LaunchRequest(dataset=str(data), target=target, concurrency=1))
    while get_campaign(manager.store, campaign_id).finished < 3:
        time.sleep(0.02)
    running = get_campaign(manager.store, campaign_id)
    assert running.status == "running"
    assert running.progress().rate_per_s > 0
    assert running.progress().eta_s > 0
    manager.cancel(campaign_id)
    cancelled = manager.wait(campaign_id, timeout=20)
    assert cancelled.status == "cancelled"
    assert cancelled.finished < 20
    with pytest.raises(Conflict):
        manager.cancel(campaign_id)
    before = {r.question.qid for r in campaign_results(manager.store, campaign_id)}
    again = FakeTarget()
    manager.resume(campaign_id, target=again)
    assert manager.wait(campaign_id, timeout=20).status == "succeeded"
    assert sorted(again.asked) == sorted(set(range(1, 21)) - before)
    results = campaign_results(manager.store, campaign_id)
    assert [r.question.qid for r in results] == list(range(1, 21))
    assert {r.attempts for r in results} == {1}
    with pytest.raises(EvalError, match="nothing to run"):
        manager.resume(campaign_id, target=FakeTarget())


def test_retry_failed_reruns_only_errors(manager: CampaignManager, tmp_path: Path) -> None:
    data = many_questions(tmp_path / "ten", 10)
    campaign_id = manager.launch(LaunchRequest(dataset=str(data), target=FakeTarget(fail=lambda qid: qid in (3, 7))))
    manager.wait(campaign_id, timeout=20)
    fixed = FakeTarget()
    manager.retry_failed(campaign_id, target=fixed)
    done = manager.wait(campaign_id, timeout=20)
    assert sorted(fixed.asked) == [3, 7]
    assert (done.status, done.failed, done.finished) == ("succeeded", 0, 10)
    attempts = {r.question.qid: r.attempts for r in campaign_results(manager.store, campaign_id)}
    assert attempts == {qid: (2 if qid in (3, 7) else 1) for qid in range(1, 11)}


def test_aggregates_are_the_mean_of_stored_rows(manager: CampaignManager, tmp_path: Path) -> None:
    data = many_questions(tmp_path / "ten", 10)
    campaign_id = manager.launch(LaunchRequest(dataset=str(data), target=FakeTarget(fail=lambda qid: qid == 4)))
    manager.wait(campaign_id, timeout=20)
    results = campaign_results(manager.store, campaign_id)
    aggregates = campaign_aggregates(manager.store, campaign_id)
    names = {name for r in results for name in r.outcome.measures}
    assert {"precision", "ndcg@10", "bleu4", "rougel"} <= names == set(aggregates)
    for name in names:
        values = [r.outcome.measures[name] for r in results if name in r.outcome.measures]
        assert aggregates[name].count == len(values) == 9
        assert aggregates[name].mean == pytest.approx(sum(values) / len(values))
    first = results[0]
    assert first.outcome.retrieved[1].pid is None  # a miss kept at its rank
    assert first.outcome.signatures["bleu4"].startswith("bleu4|")
    assert first.question.relevant == {10 + 0 % 3: 1}
    assert first.question.references == ("Refunds within 30 days.",)


def test_delete_and_tenant_isolation(manager: CampaignManager, tiny_dataset: Path) -> None:
    campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=FakeTarget(), tenant="acme"))
    manager.wait(campaign_id, timeout=20)
    assert campaign_id.startswith("evaluation_acme_")
    with pytest.raises(NotFound):
        get_campaign(manager.store, campaign_id, tenant="other")
    assert [c.id for c in list_campaigns(manager.store, tenant="acme")] == [campaign_id]
    assert list_campaigns(manager.store, tenant="other") == []
    manager.delete(campaign_id)
    with pytest.raises(NotFound):
        get_campaign(manager.store, campaign_id)
    assert manager.store.read("SELECT count(*) AS n FROM results")[0]["n"] == 0


def test_heartbeat_runs_while_questions_hang_and_picks_up_a_cancel_from_elsewhere(
    manager: CampaignManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("evalcore.campaigns.runner.HEARTBEAT_S", 0.05)
    target = FakeTarget(hang=lambda qid: True)
    try:
        campaign_id = manager.launch(LaunchRequest(dataset=str(many_questions(tmp_path / "five", 5)), target=target,
                                                   concurrency=1))

        def await_beats(count: int) -> None:
            beats = [get_campaign(manager.store, campaign_id).heartbeat]
            while len(beats) <= count:
                beat = get_campaign(manager.store, campaign_id).heartbeat
                if beat > beats[-1]:
                    beats.append(beat)
                time.sleep(0.01)

        await_beats(3)
        assert get_campaign(manager.store, campaign_id).finished == 0
        # Another process asks for the cancel through the database only.
        with open_store(manager.store.location) as elsewhere:
            elsewhere.write(lambda conn: conn.execute("UPDATE campaigns SET cancel_requested = 1 WHERE id = ?",
                                                      (campaign_id,)))
        await_beats(2)  # each beat writes, then reads the flag: two beats later it has been seen
        target.release.set()
        done = manager.wait(campaign_id, timeout=20)
        assert done.status == "cancelled"
        assert done.finished == 1  # the question in flight finished
    finally:
        target.release.set()


def test_broken_setup_fails_the_campaign_with_its_reason(manager: CampaignManager, tiny_dataset: Path) -> None:
    class BrokenIndex(FakeTarget):
        def prepare(self, passages: Sequence, progress: Callable[[int, int], None] | None = None) -> None:
            raise OSError("disk full while indexing")

    campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=BrokenIndex()))
    done = manager.wait(campaign_id, timeout=20)
    assert (done.status, done.error) == ("failed", "setup failed: OSError: disk full while indexing")
    assert done.finished == 0
    assert done.ended_at is not None


def test_results_file_campaign_collapses_duplicate_passages_and_skips_missing_answers(
        manager: CampaignManager, tiny_dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text('{"qid": 1, "ranked_ids": ["14", "14", "x", "10", "10"], "answer": "30 days."}\n'
                   '{"qid": 2, "ranked_ids": [12]}\n{"qid": 99, "ranked_ids": [10], "answer": "extra"}\n',
                   encoding="utf-8")
    config = TargetConfig.of(kind="results_file", results_path=str(run))
    campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config))
    assert manager.wait(campaign_id, timeout=30).status == "succeeded_with_failures"  # q3 has no row in the file
    first, second, third = campaign_results(manager.store, campaign_id)
    assert [hit.pid for hit in first.outcome.retrieved] == [14, 14, None, 10, 10]  # chunks as the target ranked them
    # Each passage counts once, at its first rank; the unknown id stays a miss at its rank.
    assert (first.outcome.measures["precision"], first.outcome.measures["mrr"]) == (pytest.approx(1 / 3),
                                                                                    pytest.approx(1 / 3))
    assert second.outcome.answer is None
    assert "bleu1" not in second.outcome.measures
    assert second.outcome.measures["recall"] == 1.0
    assert third.outcome.error.endswith("add a row with this qid to the results file")


def test_default_concurrency_follows_where_the_work_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.campaigns import concurrency

    monkeypatch.setattr(concurrency.os, "cpu_count", lambda: 16)
    monkeypatch.delenv("EVALCORE_REMOTE_CONCURRENCY", raising=False)
    assert concurrency.default_concurrency(TargetConfig()) == 15
    assert concurrency.default_concurrency(TargetConfig.of(generator="openai", model="m")) == 8
    # The in-process model answers one call at a time: more in flight would only queue for it.
    assert concurrency.default_concurrency(TargetConfig.of(generator="local")) == 1
    assert concurrency.default_concurrency(TargetConfig.of(reranker="llm", generator="openai", model="m")) == 1


def test_cancel_during_setup_asks_no_question(manager: CampaignManager, tiny_dataset: Path) -> None:
    class SlowIndex(FakeTarget):
        def prepare(self, passages: Sequence, progress: Callable[[int, int], None] | None = None) -> None:
            self.release.wait(10)  # an index being built when Ctrl-C comes

    target = SlowIndex()
    campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=target, concurrency=2))
    manager.cancel(campaign_id)
    target.release.set()
    assert manager.wait(campaign_id, timeout=20).status == "cancelled"
    assert target.asked == []


def test_index_build_shows_its_progress_and_stops_on_cancel(
    manager: CampaignManager, tiny_dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("evalcore.campaigns.runner.HEARTBEAT_S", 0.05)

    class EndlessIndex(FakeTarget):
        def prepare(self, passages: Sequence, progress: Callable[[int, int], None] | None = None) -> None:
            assert progress is not None
            for done in range(1, 100_000):  # only the cancel ends this build
                progress(done, 100_000)
                time.sleep(0.01)

    target = EndlessIndex()
    campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=target, concurrency=2))
    deadline = time.monotonic() + 20
    while not (get_campaign(manager.store, campaign_id).progress().stage or "").startswith("indexing the corpus"):
        assert time.monotonic() < deadline, get_campaign(manager.store, campaign_id)
        time.sleep(0.02)
    manager.cancel(campaign_id)
    done = manager.wait(campaign_id, timeout=20)
    assert done.status == "cancelled"
    assert target.asked == []
    assert done.progress().stage is None  # an ended campaign shows no stage
