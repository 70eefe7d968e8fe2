"""Memory given back to the system once a large piece of work ended (a campaign, a job).

CPython frees a campaign's objects when it ends, but glibc's malloc keeps the freed pages in its arenas (one per
thread that allocated, up to eight per core) for later allocations: a campaign of 82 questions whose replies were
199,000 characters each at concurrency 8 left the server 4.8 times its idle size, though every object was freed.
`malloc_trim(0)` returns the free pages of every arena (glibc 2.8 and later); it costs milliseconds, once per
campaign. Fewer arenas keep less memory between trims: a process that runs campaigns limits them to ARENAS
(`mallopt(M_ARENA_MAX)`, for the threads started after it). CPython allocates under its interpreter lock, so more
arenas buy its threads little speed (bench/memory.py: 1.00x RSS after a campaign against 1.04x to 1.12x with the
trim alone and 1.02x to 1.19x with neither). Elsewhere (musl, macOS, Windows) there is nothing to call, and nothing
is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from evalcore.runtime.lazy import once

ARENAS = 2
M_ARENA_MAX = -8  # glibc's mallopt parameter


@once
def _libc() -> ctypes.CDLL | None:
    """glibc, or None (another C library or system)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most `arenas` malloc arenas for the threads started from now on; whether it was set."""
    libc = _libc()
    return bool(libc.mallopt(M_ARENA_MAX, arenas)) if libc is not None else False


def give_back() -> bool:
    """Collect what only the cycle collector frees, then hand malloc's free pages back to the system; whether any
    were."""
    gc.collect()
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


def rss_bytes() -> int:
    """This process's resident memory now (Linux: /proc/self/statm), 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


# While a campaign runs, the cycle collector's youngest generation is collected after this many allocations (more
# than freed) instead of CPython's 700. A question allocates thousands of short-lived tuples, lists and dicts, nearly
# all freed by their reference counts: collected every 700, the same live ones (a question's tokens, hits, scores)
# were walked again and again, 7% of a bm25 + extractive campaign's CPU (0.9 s over 2,000 questions, against 0.25 s
# at this threshold). The cyclic garbage it leaves a little longer is a few thousand objects at most.
CAMPAIGN_YOUNG = 20_000


class _CampaignCollection:
    """The youngest generation's threshold raised while campaigns run: the first to start raises it, the last to end
    puts back what it was (several campaigns of a server overlap: one cannot restore it under another)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved: tuple[int, int, int] | None = None

    def enter(self) -> None:
        with self._lock:
            self._running += 1
            if self._running == 1:
                thresholds = gc.get_threshold()
                if thresholds[0] < CAMPAIGN_YOUNG:
                    self._saved = thresholds
                    gc.set_threshold(CAMPAIGN_YOUNG, *thresholds[1:])

    def exit(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0 and self._saved is not None:
                if gc.get_threshold()[0] == CAMPAIGN_YOUNG:  # unless someone else changed it meanwhile
                    gc.set_threshold(*self._saved)
                self._saved = None


_CAMPAIGNS = _CampaignCollection()


@contextmanager
def campaign_collection() -> Iterator[None]:
    """Collect cyclic garbage less often while the campaign runs (`CAMPAIGN_YOUNG`)."""
    _CAMPAIGNS.enter()
    try:
        yield
    finally:
        _CAMPAIGNS.exit()


class CollectorPause:
    """The cycle collector paused while reads run, in a process of many threads (a server).

    The collector is one switch for the whole process, so each read cannot save and restore it on its own: two
    overlapping reads would turn it back on under the other, and a thread's saved "off" could outlive the pause.
    Reads are counted instead: the first to start pauses the collector, the last to end resumes it (only if it was
    on: a collector someone else turned off stays off). Other threads' cyclic garbage waits while the collector is
    paused, so a pause ends after MAX_PAUSE_S even when reads keep overlapping: the collector then runs until no
    read is left, and the next read starts a new pause.
    """

    MAX_PAUSE_S = 10.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readers = 0
        self._paused = False  # whether this pause turned the collector off (and must turn it on)
        self._since = 0.0

    def enter(self) -> None:
        with self._lock:
            self._readers += 1
            if self._readers == 1 and gc.isenabled():
                gc.disable()
                self._paused, self._since = True, time.monotonic()
            else:
                self._end_if_long()

    def exit(self) -> None:
        with self._lock:
            self._readers -= 1
            if self._readers == 0:
                self._end()
            else:
                self._end_if_long()

    def _end_if_long(self) -> None:
        if self._paused and time.monotonic() - self._since > self.MAX_PAUSE_S:
            self._end()

    def _end(self) -> None:
        if self._paused:
            gc.enable()
            self._paused = False


_PAUSE = CollectorPause()


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause the cycle collector while building many objects that hold no cycles (records, tuples, dicts: a
    campaign's results read back, a dataset loaded).

    At 10,000 questions a read builds about a million objects; the collector would walk them again and again for
    nothing: with a heap of a million objects besides (a server's), a read took 2.2 s of CPU paused against 2.6 s with
    the collector running (bench/read_gc.py, medians of 12 reads). Safe with many threads reading at once
    (`CollectorPause`).
    """
    _PAUSE.enter()
    try:
        yield
    finally:
        _PAUSE.exit()
