"""The dashboard's worker child is started again when it ends; one that fails at once waits longer each time."""

from __future__ import annotations

import sys
import time

import pytest

from evalcore.campaigns import supervisor
from evalcore.campaigns.supervisor import WorkerProcess


def test_a_worker_child_that_fails_at_once_is_started_again_after_a_doubling_wait(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor, "CHECK_S", 0.02)
    monkeypatch.setattr(supervisor, "BACKOFF_S", (0.2, 1.6))
    worker = WorkerProcess(str(tmp_path / "evalcore.db"))
    worker.args = [sys.executable, "-c", "raise SystemExit(3)"]  # a child that fails as soon as it starts
    worker.start()
    try:
        time.sleep(2.0)  # every 0.02 s without a back-off: tens of starts; with it, 0.2 + 0.4 + 0.8 s of waits
    finally:
        worker.stop()
    assert 2 <= worker.starts <= 6, worker.starts
    assert worker.wait_s >= 0.8
