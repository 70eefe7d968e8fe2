"""Memory given back to the system once a large piece of work ended (a campaign, a job).

CPython frees a campaign's objects when it ends, but glibc's malloc keeps the freed pages in its arenas (one per
thread that allocated, up to eight per core) for later allocations: a campaign of 82 questions whose replies were
199,000 characters each at concurrency 8 left the server 4.8 times its idle size, though every object was freed.
`malloc_trim(0)` returns the free pages of every arena (glibc 2.8 and later); it costs milliseconds, once per
campaign. Elsewhere (musl, macOS, Windows) there is nothing to call, and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys

from evalcore.lazy import once


@once
def _trim() -> object | None:
    """glibc's malloc_trim, or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back() -> bool:
    """Collect what only the cycle collector frees, then hand malloc's free pages back to the system; whether any
    were."""
    gc.collect()
    trim = _trim()
    return bool(trim(0)) if callable(trim) else False


def rss_bytes() -> int:
    """This process's resident memory now (Linux: /proc/self/statm), 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")
