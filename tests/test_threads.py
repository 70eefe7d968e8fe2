"""The pool of daemon threads that work waiting on other machines runs on: standard futures, results and errors
handed back, the work not started cancelled at shutdown, and no thread the interpreter joins at exit."""

from __future__ import annotations

import threading
from concurrent.futures import as_completed

import pytest

from evalcore.runtime.threads import DaemonPool


def test_a_daemon_pool_hands_back_results_and_errors_on_standard_futures() -> None:
    with DaemonPool(2, "pool-results") as pool:
        futures = {pool.submit(int, text): text for text in ("1", "x", "3")}
        done = {futures[future]: future for future in as_completed(futures, timeout=30)}
    assert (done["1"].result(), done["3"].result()) == (1, 3)
    with pytest.raises(ValueError, match="invalid literal"):
        done["x"].result()


def test_a_daemon_pool_cancels_what_it_did_not_start_and_its_threads_are_daemons() -> None:
    gate = threading.Event()
    pool = DaemonPool(1, "pool-stuck")
    stuck = pool.submit(gate.wait, 30)  # a call that holds the one thread
    waiting = [pool.submit(len, "abc") for _ in range(3)]
    threads = [thread for thread in threading.enumerate() if thread.name.startswith("pool-stuck")]
    pool.shutdown(wait=False, cancel_futures=True)
    assert [future.cancelled() for future in waiting] == [True] * 3
    assert [thread.daemon for thread in threads] == [True]  # the process's exit does not wait for it
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(len, "")
    gate.set()
    assert stuck.result(30) is True
    threads[0].join(30)
    assert not threads[0].is_alive()  # it ended once its call returned
