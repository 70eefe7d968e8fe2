"""The package's C inner loops: built with the package where it can, else by this machine's C compiler on first use.

A source (`metrics/trec_scan.c`, `metrics/trec_label.c`, `metrics/overlaps.c`, `compare/resample.c`,
`targets/extract.c`, `targets/bm25.c`: each beside the module that calls it) is a plain C library loaded with
ctypes. Installing the package builds each one beside its source (setup.py), named by the source's digest
(`prebuilt_name`), so a library built from another version of the source is never loaded. A checkout that was not
installed, or an install that had no compiler, builds it on first use into a cache folder of the user's own
(`$EVALCORE_COMPILED_CACHE`, else `$XDG_CACHE_HOME/evalcore`, else `~/.cache/evalcore`), named by a digest of the
source, the compiler's `--version` output, the flags and the machine, so an edited source or another compiler builds
its own. Compiling takes a fraction of a second; two processes compiling at once each write a file of their own and
rename it into place.

A library in the cache runs inside every process that loads it, so it is trusted only where no other user could
have replaced it: the cache folder must be this user's and writable by no one else, every folder above it this
user's or root's and writable by others only with the sticky bit (as /tmp), and the file itself this user's,
writable by no one else. A cached file that fails those checks or fails to load is removed and built again;
builds of the same source that no process loaded for `STALE_DAYS` are removed when another one is built.

Every caller keeps a numpy path giving the same values: with no compiler, a compiler error, an unsafe cache
folder, a big-endian machine, or `EVALCORE_COMPILED=0`, `load` returns None (logging why once) and the numpy
path runs.
"""

from __future__ import annotations

import contextlib
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
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# No -ffast-math: the number parsing relies on IEEE rounding of each operation.
FLAGS = ("-O2", "-shared", "-fPIC", "-std=c11")
COMPILE_SECONDS = 120
STALE_DAYS = 7
LIBRARY_SUFFIX = ".dll" if os.name == "nt" else ".so"

_loaded: dict[str, ctypes.CDLL | None] = {}
_versions: dict[tuple[str, int, int], str | None] = {}
_lock = threading.Lock()


def enabled() -> bool:
    """Whether compiled loops may be used (`EVALCORE_COMPILED=0` switches them off)."""
    return os.environ.get("EVALCORE_COMPILED", "1").strip() != "0" and sys.byteorder == "little"


Signatures = dict[str, tuple[Any, list[Any]]]  # a library's functions: name -> (return type, argument types)


def load(source: Path, signatures: Signatures | None = None) -> ctypes.CDLL | None:
    """The library of this C source: the one installed with the package, else one built here (once), else None;
    the functions named in `signatures` declared with their return and argument types (once: whoever loads it first,
    a later caller's signatures are declared then)."""
    if not enabled():
        return None
    with _lock:
        if source.name not in _loaded:
            _loaded[source.name] = _prebuilt(source) or _build(source)
        library = _loaded[source.name]
        if library is not None:
            for name, (returns, arguments) in (signatures or {}).items():
                function = getattr(library, name)
                if function.argtypes is None:
                    function.restype, function.argtypes = returns, arguments
        return library


def loader(source: Path, signatures: Callable[[], Signatures]) -> Callable[[], ctypes.CDLL | None]:
    """`load` of this source and signatures for a caller that asks for it question after question: the library is
    loaded and declared the first time, each later call only checks that compiled loops are still enabled (`load`
    reads its path and takes a lock each time: several microseconds)."""
    loaded: list[ctypes.CDLL | None] = []

    def library() -> ctypes.CDLL | None:
        if not enabled():
            return None
        if not loaded:
            loaded.append(load(source, signatures()))
        return loaded[0]

    return library


def prebuilt_name(source: Path) -> str:
    """The file name of the library the package's build makes beside this source (setup.py names it so too):
    a dot in it, so that no import machinery takes it for a Python module."""
    return f"{source.stem}.{hashlib.sha256(source.read_bytes()).hexdigest()[:16]}{LIBRARY_SUFFIX}"


def cache_folder() -> Path:
    """Where libraries built at run time are kept."""
    configured = os.environ.get("EVALCORE_COMPILED_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalcore"


def toolchain() -> tuple[str, str] | None:
    """This machine's C compiler ($CC, cc, gcc or clang) and its `--version` output, or None if none answers."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None
    version = _version(compiler)
    return None if version is None else (compiler, version)


def _version(compiler: str) -> str | None:
    """The compiler's `--version` output (asked once per process and compiler file), or None if it fails."""
    try:
        info = os.stat(shutil.which(compiler) or compiler)
    except OSError:
        return None
    key = (compiler, info.st_mtime_ns, info.st_size)
    if key not in _versions:
        try:
            done = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=COMPILE_SECONDS,
                                  check=False)
            _versions[key] = done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None
        except (OSError, subprocess.SubprocessError):
            _versions[key] = None
    return _versions[key]


def _prebuilt(source: Path) -> ctypes.CDLL | None:
    library = source.with_name(prebuilt_name(source))
    if not library.is_file():
        return None
    try:
        return ctypes.CDLL(str(library))
    except OSError as error:
        log.warning("the installed %s does not load (%s): it is built again", library.name, error)
        return None


def _build(source: Path) -> ctypes.CDLL | None:
    name = source.stem
    found = toolchain()
    if found is None:
        log.warning("no working C compiler (cc, gcc, clang or $CC answering --version): %s runs its numpy path", name)
        return None
    compiler, version = found
    digest = hashlib.sha256(b"\0".join([source.read_bytes(), version.encode(), " ".join(FLAGS).encode(),
                                        sys.platform.encode(), platform.machine().encode()])).hexdigest()
    try:
        folder = cache_folder().resolve()
        problem = _unsafe_folder(folder)
        if problem:
            log.warning("%s: %s runs its numpy path", problem, name)
            return None
        target = folder / f"{name}-{digest[:20]}{LIBRARY_SUFFIX}"
        library = _open_cached(target)
        if library is None:
            _compile(compiler, source, target)
            _remove_stale(folder, name)
            library = ctypes.CDLL(str(target))
        with contextlib.suppress(OSError):  # the time it was last loaded, which tells stale builds
            os.utime(target)
        return library
    except (OSError, subprocess.SubprocessError) as error:
        log.warning("could not build %s (%s): it runs its numpy path", source, error)
        return None


def _unsafe_folder(folder: Path) -> str | None:
    """Why another user could replace a library kept in this (resolved) folder, or None; the folder is made
    (private) when missing. Renaming an entry takes write access to the folder holding it: no folder on the way
    may let another user do that, nor belong to one."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not hasattr(os, "getuid"):
        return None
    if not _private(folder.stat()):
        return f"{folder} is not this user's alone to write"
    for above in folder.parents:
        info = above.stat()
        if info.st_uid not in (0, os.getuid()):
            return f"{above}, above {folder}, belongs to another user"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return f"{above}, above {folder}, is writable by others"
    return None


def _private(info: os.stat_result) -> bool:
    """Whether a file or folder is this user's and writable by no one else."""
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _open_cached(target: Path) -> ctypes.CDLL | None:
    """The cached library, or None (after removing it) when it is missing, not safe to load, or does not load."""
    try:
        info = target.lstat()
    except FileNotFoundError:
        return None
    problem = None
    if not stat.S_ISREG(info.st_mode) or hasattr(os, "getuid") and not _private(info):
        problem = "not a file of this user's alone"
    else:
        try:
            return ctypes.CDLL(str(target))
        except OSError as error:
            problem = str(error)
    log.warning("the cached %s is built again (%s)", target, problem)
    target.unlink(missing_ok=True)
    return None


def _compile(compiler: str, source: Path, target: Path) -> None:
    handle, partial = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=LIBRARY_SUFFIX, dir=target.parent)
    os.close(handle)
    try:
        done = subprocess.run([compiler, *FLAGS, "-o", partial, str(source)], capture_output=True, text=True,
                              timeout=COMPILE_SECONDS, check=False)
        if done.returncode:
            raise OSError(f"{compiler} exited with {done.returncode}: {done.stderr.strip()[-500:]}")
        os.chmod(partial, 0o700)  # whatever the umask: the loader refuses a library others could write
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def _remove_stale(folder: Path, name: str) -> None:
    """Remove this source's builds (and partial files) that no process loaded for STALE_DAYS: an edited source,
    an upgraded compiler or another machine type left them."""
    oldest = time.time() - STALE_DAYS * 86_400
    for path in [*folder.glob(f"{name}-*{LIBRARY_SUFFIX}"), *folder.glob(f".{name}-*{LIBRARY_SUFFIX}")]:
        try:
            if path.lstat().st_mtime < oldest:
                path.unlink()
        except FileNotFoundError:  # another process removed it first
            pass
