"""Crash safety: SIGKILL a process in the middle of a campaign, reopen, resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from evalcore.campaigns import campaign_results, get_campaign, get_manager
from evalcore.store import Store
from tests.test_campaigns import FakeTarget, many_questions

REPO = Path(__file__).resolve().parent.parent
CHILD = """
import sys
from evalcore.campaigns import get_manager
from tests.test_campaigns import FakeTarget
manager = get_manager(sys.argv[1])
campaign_id = manager.launch(dataset=sys.argv[2], target=FakeTarget(delay=0.05), concurrency=2)
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
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(data)], cwd=REPO, stdout=subprocess.PIPE, text=True)
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
        saved = {r.question.position: (r.outcome.answer, r.outcome.latency_s) for r in campaign_results(reopened, campaign_id)}
    assert crashed.status == "interrupted" and "stopped" in crashed.error
    assert crashed.finished == len(saved) and 8 <= len(saved) < 40

    manager = get_manager(db)
    try:
        target = FakeTarget()
        manager.resume(campaign_id, target=target)
        done = manager.wait(campaign_id, timeout=30)
        results = campaign_results(manager.store, campaign_id)
    finally:
        manager.close()
    assert done.status == "succeeded" and done.finished == 40
    assert sorted(target.asked) == sorted(qid for qid in range(1, 41) if qid - 1 not in saved)
    assert [r.question.qid for r in results] == list(range(1, 41))  # each question exactly once
    assert all((r.outcome.answer, r.outcome.latency_s) == saved[r.question.position] for r in results if r.question.position in saved)
    assert {r.attempts for r in results} == {1}
