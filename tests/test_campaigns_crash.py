"""Crash safety: SIGKILL a process in the middle of a campaign, reopen, resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalcore.campaigns import Conflict, campaign_results, get_campaign, get_manager
from evalcore.store import Store
from tests.test_campaigns import FakeTarget, many_questions

REPO = Path(__file__).resolve().parent.parent
CHILD = """
import sys
from evalcore.campaigns import get_manager
from evalcore.campaigns.launching import LaunchRequest
from tests.test_campaigns import FakeTarget
manager = get_manager(sys.argv[1])
campaign_id = manager.launch(LaunchRequest(dataset=sys.argv[2], target=FakeTarget(delay=0.05), concurrency=2))
print(campaign_id, flush=True)
manager.wait(campaign_id)
"""


def wait_for(predicate, timeout: float = 60.0) -> None:
    """Poll until predicate() is true (the deadline only guards against a hung test)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.02)


def test_sigkill_mid_campaign_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    data = many_questions(tmp_path / "forty", 40)
    db = tmp_path / "crash.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(data)], cwd=REPO, stdout=subprocess.PIPE,
                             text=True)
    try:
        campaign_id = child.stdout.readline().strip()
        with Store(db) as watcher:
            wait_for(lambda: get_campaign(watcher, campaign_id).finished >= 8)
            assert get_campaign(watcher, campaign_id).status == "running"  # alive owner: not an orphan
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()

    with Store(db) as reopened:
        crashed = get_campaign(reopened, campaign_id)
        saved = {r.question.position: (r.outcome.answer, r.outcome.latency_s)
                 for r in campaign_results(reopened, campaign_id)}
    assert crashed.status == "interrupted"
    assert "stopped" in crashed.error
    assert crashed.finished == len(saved)
    assert 8 <= len(saved) < 40

    manager = get_manager(db)
    try:
        target = FakeTarget()
        manager.resume(campaign_id, target=target)
        done = manager.wait(campaign_id, timeout=30)
        results = campaign_results(manager.store, campaign_id)
    finally:
        manager.close()
    assert done.status == "succeeded"
    assert done.finished == 40
    assert sorted(target.asked) == sorted(qid for qid in range(1, 41) if qid - 1 not in saved)
    assert [r.question.qid for r in results] == list(range(1, 41))  # each question exactly once
    assert all((r.outcome.answer, r.outcome.latency_s) == saved[r.question.position]
               for r in results if r.question.position in saved)
    assert {r.attempts for r in results} == {1}


PAUSED_CHILD = """
import sys
from evalcore.campaigns import get_manager
from evalcore.campaigns.launching import LaunchRequest
from tests.test_campaigns import FakeTarget
from evalcore.campaigns.launching import LaunchRequest
manager = get_manager(sys.argv[1])
target = FakeTarget(delay=0.15)
campaign_id = manager.launch(LaunchRequest(dataset=sys.argv[2], target=target, concurrency=4))
print(campaign_id, flush=True)
manager.wait(campaign_id)
print(" ".join(map(str, target.asked)), flush=True)
"""


FOLLOWING_CHILD = """
import sys
from evalcore.campaigns import get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli.run import follow
from tests.test_campaigns import FakeTarget
manager = get_manager(sys.argv[1])
campaign_id = manager.launch(LaunchRequest(dataset=sys.argv[2], target=FakeTarget(delay=0.15), concurrency=4))
print(campaign_id, flush=True)
sys.exit(follow(manager, campaign_id, as_json=False))  # what `python -m evalcore run` does once launched
"""


def paused(tmp_path: Path, monkeypatch, script: str = PAUSED_CHILD) -> tuple[subprocess.Popen[str], str, Path]:
    """A child process running a campaign, stopped (SIGSTOP) until its heartbeat is stale by age."""
    stale_s = 0.5
    monkeypatch.setattr("evalcore.store.STALE_S", stale_s)
    data = many_questions(tmp_path / "forty", 40)
    db = tmp_path / "paused.db"
    child = subprocess.Popen([sys.executable, "-c", script, str(db), str(data)], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    campaign_id = child.stdout.readline().strip()
    with Store(db) as watcher:
        wait_for(lambda: get_campaign(watcher, campaign_id).finished >= 4)
    os.kill(child.pid, signal.SIGSTOP)
    with Store(db) as watcher:  # its last heartbeat, written before the stop
        beat = get_campaign(watcher, campaign_id).heartbeat
    assert beat is not None
    time.sleep(max(0.0, beat + 2 * stale_s - time.time()))  # two leases without a heartbeat: stale by age
    return child, campaign_id, db


def test_a_paused_campaign_is_not_taken_over_and_no_question_is_asked_twice(tmp_path: Path, monkeypatch) -> None:
    child, campaign_id, db = paused(tmp_path, monkeypatch)
    manager = get_manager(db)
    try:
        assert get_campaign(manager.store, campaign_id).status == "running"  # its owner is alive, only paused
        with pytest.raises(Conflict, match="still running") as refused:
            manager.resume(campaign_id, target=FakeTarget())
        assert f"process {child.pid}" in refused.value.line()
        assert "--force" in refused.value.fix
    finally:
        os.kill(child.pid, signal.SIGCONT)
        asked = child.communicate(timeout=120)[0].split()
    results = campaign_results(manager.store, campaign_id)
    manager.close()
    assert sorted(map(int, asked)) == list(range(1, 41))  # each question asked once, by its owner
    assert get_campaign(Store(db), campaign_id).status == "succeeded"
    assert len(results) == 40
    assert {r.attempts for r in results} == {1}


def test_a_forced_takeover_stops_the_old_owner_before_it_writes(tmp_path: Path, monkeypatch) -> None:
    child, campaign_id, db = paused(tmp_path, monkeypatch)
    manager = get_manager(db)
    try:
        target = FakeTarget()
        manager.resume(campaign_id, target=target, force=True)
        done = manager.wait(campaign_id, timeout=60)
    finally:
        os.kill(child.pid, signal.SIGCONT)
        child.communicate(timeout=120)
    results = campaign_results(manager.store, campaign_id)
    after = get_campaign(manager.store, campaign_id)
    manager.close()
    assert done.status == "succeeded"
    assert after.status == "succeeded"
    assert after.finished == 40
    # Woken up, the old owner found another token on the campaign: it wrote nothing more.
    assert len(results) == 40
    assert {r.attempts for r in results} == {1}
    assert child.returncode == 0


def test_the_command_that_lost_its_campaign_says_so_and_exits_non_zero(tmp_path: Path, monkeypatch) -> None:
    child, campaign_id, db = paused(tmp_path, monkeypatch, FOLLOWING_CHILD)
    manager = get_manager(db)
    try:
        manager.resume(campaign_id, target=FakeTarget(), force=True)
        done = manager.wait(campaign_id, timeout=60)
    finally:
        os.kill(child.pid, signal.SIGCONT)
        out, err = child.communicate(timeout=120)
    manager.close()
    assert done.status == "succeeded"
    assert child.returncode == 6, (out, err)
    assert f"this process lost campaign {campaign_id}: another process took it over" in err
    assert "succeeded" not in out.split(campaign_id, 1)[-1]  # not the new owner's report as its own
