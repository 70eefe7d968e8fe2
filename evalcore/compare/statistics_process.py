"""A large comparison's statistics in a process of their own, beside the questions' lines.

The bootstrap and the sign flips are numpy's work, which releases the GIL, but in many small calls: each call takes
the GIL back, and while another thread runs Python (a comparison writes its 10,000 questions' lines meanwhile) every
one of them waits for that thread's switch interval. Beside a thread running Python the bootstrap of 10,000 questions
took 58 s instead of 0.65; beside the lines, twice its time alone. A process has a GIL of its own: started when the
comparison starts, it imports what the statistics need while the campaigns are read, computes every measure's entry
from the paired values with the same code as in process (the same numbers to the last bit) and hands them back.

Used for comparisons of at least `FROM_QUESTIONS` questions (below, starting a process costs more than it saves);
anything that goes wrong with the process (it cannot start, it dies, it answers nothing) is computed in process
instead, and the comparison is the same.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("evalcore.compare")
# From how many questions a comparison hands its statistics to a process (both campaigns must have this many).
FROM_QUESTIONS = 4_000
TIMEOUT = 600   # seconds the process may take before the statistics are computed in process instead
SWITCH = "EVALCORE_STATISTICS_PROCESS"   # "0" keeps every comparison's statistics in process
ROOT = str(Path(__file__).resolve().parents[2])   # the directory holding the evalcore package
SERVE = "from evalcore.compare.statistics_process import serve; serve()"   # what the process runs
ONE_THREAD = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")   # the BLAS libraries' thread counts, read as they load


class Statistics:
    """A started process that computes a comparison's measure entries (`measure_entries`) once it is given them."""

    def __init__(self) -> None:
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [environment.get("PYTHONPATH")])])
        # Its products run on one thread (stats.one_thread): OpenBLAS's threads, started as numpy loads, would only
        # spin (0.1 s of CPU beside the campaigns' reads).
        environment.update(dict.fromkeys(ONE_THREAD, "1"))
        self._process = subprocess.Popen(   # this interpreter, this module
            [sys.executable, "-c", SERVE], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment)

    def entries(self, job: dict[str, Any]) -> Any | None:
        """The measure entries of `job` (measure_entries' arguments), or None when the process gave none."""
        process = self._process
        timer = threading.Timer(TIMEOUT, process.kill)   # a process that hangs is stopped, then done without
        timer.daemon = True
        timer.start()
        try:
            assert process.stdin is not None and process.stdout is not None
            # In one write and one read (communicate's 4 kB steps would each wait for Python's lock behind the lines).
            process.stdin.write(pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL))
            process.stdin.close()
            answer = process.stdout.read()
            if process.wait() or not answer:
                log.warning("the statistics' process ended (code %s), no answer: computed here", process.returncode)
                return None
            ok, value = pickle.loads(answer)   # our own child's answer
            if not ok:
                log.warning("the statistics' process failed (%s): computed here", value)
            return value if ok else None
        except Exception as error:  # noqa: BLE001 (whatever went wrong with the process, the parent computes them)
            log.warning("the statistics' process gave nothing back (%s): computed here", error)
            return None
        finally:
            timer.cancel()
            self.close()

    def close(self) -> None:
        """Stop the process if it is still running (a comparison that failed before asking it)."""
        process = self._process
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None and not stream.closed:
                stream.close()


def start(a_questions: int, b_questions: int) -> Statistics | None:
    """A process for a comparison of campaigns of this many finished questions, or None (small, switched off, or it
    could not start)."""
    if min(a_questions, b_questions) < FROM_QUESTIONS or os.environ.get(SWITCH, "1") == "0" or not sys.executable:
        return None
    try:
        return Statistics()
    except OSError:
        return None


def serve() -> None:
    """The process's side: import what the statistics need, read one job from standard input, answer it."""
    from evalcore.compare import power
    from evalcore.compare.measure_stats import measure_entries

    power.prepare()   # scipy.special, while the campaigns are read
    job = pickle.loads(sys.stdin.buffer.read())   # from the process that started this one
    from concurrent.futures import ThreadPoolExecutor

    try:
        with ThreadPoolExecutor(1, thread_name_prefix="comparison-statistics") as pool:
            answer: tuple[bool, Any] = (True, measure_entries(**job, pool=pool))
    except Exception as error:  # noqa: BLE001 (the parent computes it again in process)
        answer = (False, repr(error))
    sys.stdout.buffer.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
