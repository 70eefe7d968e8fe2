"""A worker process that a process serving pages starts and supervises, so campaigns never run where pages are built.

The dashboard queues campaigns in the store; its `evalcore worker` child claims and runs them, and the store
carries everything back (progress, cancel requests, results). The child is started again when it dies; a campaign
it was running then has a dead owner, goes back to the queue (store.mark_orphans) and is resumed by the new child.
The child exits when its parent does (it watches the parent's process id).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from evalcore.errors import EvalError

log = logging.getLogger("evalcore.campaigns")

CHECK_S = 1.0
# A child that ends within STEADY_S of its start failed at once (a broken store, a bad setting): it is started again
# after a wait that doubles each time (BACKOFF_S[0] up to BACKOFF_S[1]), not every second; one that ran longer
# resets the wait.
STEADY_S = 30.0
BACKOFF_S = (1.0, 300.0)
# Numerical libraries' thread pools in the worker: one thread each. With a pool as wide as the machine, an index
# build takes every core the pages need (a separate process frees them from the build's interpreter lock, not from
# its CPU use), and a pool's threads spin while one of them waits for a CPU.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}
MODES = ("process", "threads")
PRIORITIES = ("background", "normal")
# The folder holding the evalcore package, which the child imports.
PACKAGE_HOME = str(Path(__file__).resolve().parents[2])


def dashboard_mode() -> str:
    """Where the dashboard's campaigns run (EVALCORE_DASHBOARD_WORKER): `process`, a supervised worker process (the
    default), or `threads` of the dashboard's own process (as before workers existed)."""
    mode = os.environ.get("EVALCORE_DASHBOARD_WORKER", "process").strip() or "process"
    if mode not in MODES:
        raise EvalError("unknown place to run the dashboard's campaigns", where="EVALCORE_DASHBOARD_WORKER",
                        found=mode, expected=" or ".join(MODES))
    return mode


def worker_priority() -> str:
    """How the dashboard's worker process is scheduled (EVALCORE_DASHBOARD_WORKER_PRIORITY): `background`, only on
    the CPU time the pages leave (the default), or `normal`, as any other process: on a host where the pages are not
    what comes first (a busy machine running tests or other campaigns beside the dashboard), a background worker may
    wait for a free core for as long as the host stays busy."""
    priority = os.environ.get("EVALCORE_DASHBOARD_WORKER_PRIORITY", "background").strip() or "background"
    if priority not in PRIORITIES:
        raise EvalError("unknown priority for the dashboard's worker process",
                        where="EVALCORE_DASHBOARD_WORKER_PRIORITY", found=priority, expected=" or ".join(PRIORITIES))
    return priority


def worker_environment(location: str) -> dict[str, str]:
    """The child's environment: this one, with the store at `location`, one thread per numerical library, and this
    package importable from any working directory (a dashboard started elsewhere than its folder, not installed)."""
    paths = [PACKAGE_HOME, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, **ONE_THREAD, "EVALCORE_DB": location, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


class WorkerProcess:
    """`python -m evalcore worker` on the store at `location`, started again whenever it ends while supervised."""

    def __init__(self, location: str, slots: int | None = None, tenant_cap: int | None = None) -> None:
        self.location = location
        # The store by the environment, not the command line, where any user could read a URL's password.
        self.args = [sys.executable, "-m", "evalcore", "worker", "--exit-with", str(os.getpid())]
        self.args += ["--background"] if worker_priority() == "background" else []
        self.args += ["--max-campaigns", str(slots)] if slots else []
        self.args += ["--max-per-tenant", str(tenant_cap)] if tenant_cap else []
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.wait_s = BACKOFF_S[0]  # before the next start of a child that failed at once
        self._started = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._supervise, name="evalcore-worker-supervisor", daemon=True)

    def start(self) -> None:
        """Start the child and watch it."""
        self._spawn()
        self._thread.start()

    def wake(self) -> None:
        """Nothing to do: the child looks at the queue every second."""

    def stop(self) -> None:
        """Stop supervising and end the child (its campaigns go back to the queue)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _spawn(self) -> None:
        self.process = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, env=worker_environment(self.location))
        self.starts += 1
        self._started = time.monotonic()

    def _supervise(self) -> None:
        while not self._stop.wait(CHECK_S):
            if self.process is not None and self.process.poll() is not None:
                self._restart(self.process.returncode)

    def _restart(self, code: int | None) -> None:
        """Start the child again: at once after a long run, else after a wait that doubles each time."""
        if time.monotonic() - self._started >= STEADY_S:
            self.wait_s = BACKOFF_S[0]
            log.warning("the campaign worker ended (exit code %s): starting it again", code)
        else:
            log.warning("the campaign worker ended at once (exit code %s): starting it again in %.0f s", code,
                        self.wait_s)
            if self._stop.wait(self.wait_s):
                return
            self.wait_s = min(2 * self.wait_s, BACKOFF_S[1])
        self._spawn()
