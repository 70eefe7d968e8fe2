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
