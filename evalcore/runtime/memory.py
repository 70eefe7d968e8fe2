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
