"""The package's C inner loops, built from their sources by this machine's C compiler on first use.

A source (`metrics/trec_scan.c`, `metrics/trec_label.c`, `compare/resample.c`: each beside the module that
calls it)
is compiled once into a shared library kept in a cache folder of the user's own
(`$EVALCORE_COMPILED_CACHE`, else `$XDG_CACHE_HOME/evalcore`, else `~/.cache/evalcore`), named
by a digest of the source, the compiler and the platform, so an edited source or another
interpreter builds its own. Compiling takes a fraction of a second; two processes compiling at
once each write a file of their own and rename it into place.

Every caller keeps a numpy path giving the same values: with no compiler, a compiler error, a
cache folder that others could write to, a big-endian machine, or `EVALCORE_COMPILED=0`, `load`
returns None (logging why once) and the numpy path runs.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

# No -ffast-math: the number parsing relies on IEEE rounding of each operation.
FLAGS = ("-O2", "-shared", "-fPIC", "-std=c11")
COMPILE_SECONDS = 120

_loaded: dict[str, ctypes.CDLL | None] = {}
_lock = threading.Lock()


def enabled() -> bool:
    """Whether compiled loops may be used (`EVALCORE_COMPILED=0` switches them off)."""
    return os.environ.get("EVALCORE_COMPILED", "1").strip() != "0" and sys.byteorder == "little"


def load(source: Path) -> ctypes.CDLL | None:
    """The library built from this C source (compiled on the first call on this machine), or None."""
    if not enabled():
        return None
    with _lock:
        if source.name not in _loaded:
            _loaded[source.name] = _build(source)
        return _loaded[source.name]


def cache_folder() -> Path:
    configured = os.environ.get("EVALCORE_COMPILED_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalcore"


def _compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def _private(folder: Path) -> bool:
    """Whether the folder is this user's and only theirs to write (a library loaded from it runs as this process)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.stat()
    owned = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return owned and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _build(source: Path) -> ctypes.CDLL | None:
    name = source.stem
    compiler = _compiler()
    if compiler is None:
        log.warning("no C compiler found (cc, gcc, clang or $CC): %s runs its numpy path", name)
        return None
    digest = hashlib.sha256(b"\0".join([source.read_bytes(), compiler.encode(), " ".join(FLAGS).encode(),
                                        platform.platform().encode(), platform.machine().encode()])).hexdigest()
    folder = cache_folder()
    target = folder / f"{name}-{digest[:20]}.so"
    try:
        if not _private(folder):
            log.warning("%s is writable by others: %s runs its numpy path", folder, name)
            return None
        if not target.exists():
            _compile(compiler, source, target)
        return ctypes.CDLL(str(target))
    except (OSError, subprocess.SubprocessError) as error:
        log.warning("could not build %s (%s): it runs its numpy path", source, error)
        return None


def _compile(compiler: str, source: Path, target: Path) -> None:
    handle, partial = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".so", dir=target.parent)
    os.close(handle)
    try:
        done = subprocess.run([compiler, *FLAGS, "-o", partial, str(source)], capture_output=True, text=True,
                              timeout=COMPILE_SECONDS, check=False)
        if done.returncode:
            raise OSError(f"{compiler} exited with {done.returncode}: {done.stderr.strip()[-500:]}")
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
