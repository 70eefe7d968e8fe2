"""The loader of the C loops (evalcore/runtime/compiled.py): a library installed beside its source, else one built once
into a private cache and reused; a cached file that is unsafe or does not load built again; folders others could write
refused; stale builds removed; builds keyed on the compiler's version; and the numpy path, with the same values,
wherever no library can be had."""

from __future__ import annotations

import ctypes
import logging
import os
import random
import shutil
import stat
import time
from pathlib import Path

import pytest

from evalcore.metrics import trec_scan
from evalcore.runtime import compiled
from tests.test_trec_scan_compiled import RUN, _assert_same, _write_run

SOURCE = Path(trec_scan.__file__).with_suffix(".c")
INSTALLED, COMPILE = compiled._prebuilt, compiled._compile
DAY = 86_400


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The loader as in a new process of a checkout: nothing loaded, no installed library, this machine's C compiler
    (whatever $CC says: these tests are about the cache) and the cache in a folder of this test's."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler on this machine: nothing is ever built into the cache here")
    folder = tmp_path / "cache"
    monkeypatch.setenv("CC", compiler)
    monkeypatch.setenv("EVALCORE_COMPILED_CACHE", str(folder))
    monkeypatch.setattr(compiled, "_loaded", {})
    monkeypatch.setattr(compiled, "_prebuilt", lambda source: None)
    return folder


def _built(folder: Path) -> list[Path]:
    return sorted(folder.glob("trec_scan-*.so"))


def _new_process(monkeypatch: pytest.MonkeyPatch, *, compile_again: bool) -> None:
    """Forget what this process loaded; unless asked, compiling fails the test."""
    def refuse(*args: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(compiled, "_loaded", {})
    monkeypatch.setattr(compiled, "_compile", COMPILE if compile_again else refuse)


def test_the_library_is_built_once_into_a_private_folder_and_reused(cache: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert compiled.load(SOURCE) is not None
    built = _built(cache)
    assert len(built) == 1
    assert not list(cache.glob(".*"))  # no partial file left behind
    assert stat.S_IMODE(cache.stat().st_mode) & 0o077 == 0
    assert stat.S_IMODE(built[0].stat().st_mode) & 0o022 == 0
    _new_process(monkeypatch, compile_again=False)
    assert compiled.load(SOURCE) is not None
    assert _built(cache) == built


def test_a_cached_file_that_does_not_load_is_built_again(cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    assert compiled.load(SOURCE) is not None
    # The same file damaged, in a cache this process never loaded from (the loader of a process that loaded a
    # path hands it back without reading the file again).
    other = cache.with_name("other")
    other.mkdir(mode=0o700)
    built = other / _built(cache)[0].name
    built.write_bytes(b"not a shared library")
    monkeypatch.setenv("EVALCORE_COMPILED_CACHE", str(other))
    _new_process(monkeypatch, compile_again=True)
    with caplog.at_level(logging.WARNING, logger=compiled.__name__):
        assert compiled.load(SOURCE) is not None
    assert "built again" in caplog.text
    assert _built(other) == [built]
    assert built.read_bytes().startswith(b"\x7fELF")
    _new_process(monkeypatch, compile_again=False)  # and the next process loads it as it is
    assert compiled.load(SOURCE) is not None


UNSAFE_FILES = ["writable by its group", "writable by anyone", "a link to another file"]
if os.getuid() == 0:
    UNSAFE_FILES.append("another user's")


@pytest.mark.parametrize("case", UNSAFE_FILES)
def test_a_cached_file_others_could_have_written_is_never_loaded_but_built_again(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        case: str) -> None:
    assert compiled.load(SOURCE) is not None
    [built] = _built(cache)
    if case == "writable by its group":
        built.chmod(0o770)
    elif case == "writable by anyone":
        built.chmod(0o707)
    elif case == "a link to another file":
        elsewhere = tmp_path / "elsewhere.so"
        built.rename(elsewhere)
        built.symlink_to(elsewhere)
    else:
        os.chown(built, 1, 1)
    loaded = []
    monkeypatch.setattr(compiled.ctypes, "CDLL", lambda path: loaded.append(path) or path)
    _new_process(monkeypatch, compile_again=True)
    with caplog.at_level(logging.WARNING, logger=compiled.__name__):
        assert compiled.load(SOURCE) == str(built)
    assert "not a file of this user's alone" in caplog.text
    assert loaded == [str(built)]  # loaded once: the new build, never the file found
    assert not built.is_symlink()
    assert built.stat().st_uid == os.getuid()
    assert stat.S_IMODE(built.stat().st_mode) & 0o022 == 0


FOLDERS_ABOVE = {"writable by others": 0o777, "writable by its group": 0o775}


@pytest.mark.parametrize("case", sorted(FOLDERS_ABOVE))
def test_a_private_cache_inside_a_folder_others_can_write_is_refused(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        case: str) -> None:
    # Whoever can write the folder above can rename the private one away and put their own library in its place.
    shared = tmp_path / "shared"
    private = shared / "mine" / "cache"
    private.mkdir(parents=True, mode=0o700)
    shared.chmod(FOLDERS_ABOVE[case])
    monkeypatch.setenv("EVALCORE_COMPILED_CACHE", str(private))
    with caplog.at_level(logging.WARNING, logger=compiled.__name__):
        assert compiled.load(SOURCE) is None
    assert f"{shared}, above {private}, is writable by others" in caplog.text
    assert "numpy path" in caplog.text
    assert list(tmp_path.rglob("*.so")) == []


def test_a_folder_above_that_is_sticky_like_tmp_is_accepted(cache: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # In a sticky folder only an entry's owner (or root) may rename it: /tmp holds private folders safely.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("EVALCORE_COMPILED_CACHE", str(shared / "cache"))
    assert compiled.load(SOURCE) is not None
    assert stat.S_IMODE((shared / "cache").stat().st_mode) == 0o700


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user takes root")
def test_a_cache_inside_another_users_folder_is_refused(cache: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 1, 1)
    monkeypatch.setenv("EVALCORE_COMPILED_CACHE", str(theirs / "cache"))
    (theirs / "cache").mkdir(mode=0o700)
    with caplog.at_level(logging.WARNING, logger=compiled.__name__):
        assert compiled.load(SOURCE) is None
    assert f"{theirs}, above {theirs / 'cache'}, belongs to another user" in caplog.text


def test_builds_no_process_loaded_for_a_week_are_removed_when_another_is_built(cache: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cache.mkdir(mode=0o700)
    old = time.time() - (compiled.STALE_DAYS + 1) * DAY
    recent = time.time() - DAY
    files = {"trec_scan-00000000000000000000.so": old, ".trec_scan-00000000000000000000-abc.so": old,
             "trec_scan-11111111111111111111.so": recent, "trec_label-22222222222222222222.so": old}
    for name, when in files.items():
        (cache / name).write_bytes(b"an older build")
        os.utime(cache / name, (when, when))
    assert compiled.load(SOURCE) is not None
    [current] = set(_built(cache)) - {cache / "trec_scan-11111111111111111111.so"}
    kept = sorted(path.name for path in cache.iterdir())
    # The other source's old build waits for that source's next build; a build loaded yesterday stays.
    assert kept == sorted([current.name, "trec_label-22222222222222222222.so", "trec_scan-11111111111111111111.so"])
    # Each load tells the build is in use: one loaded now is not stale a week after it was built.
    os.utime(current, (old, old))
    _new_process(monkeypatch, compile_again=False)
    assert compiled.load(SOURCE) is not None
    assert current.stat().st_mtime > recent


def _compiler_script(folder: Path, version: str, compile: str = "") -> Path:
    """A compiler that answers `--version` with this text and otherwise does `compile` (by default: is this
    machine's)."""
    script = folder / "cc"
    folder.mkdir()
    compile = compile or f'exec {os.environ["CC"]} "$@"'
    script.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "{version}"; exit 0; fi\n{compile}\n')
    script.chmod(0o755)
    return script


def test_a_library_its_compiler_left_writable_by_others_is_made_private(cache: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A linker that creates its output anew under a permissive umask: the next process must not refuse the build.
    leave_open = (f'{os.environ["CC"]} "$@" || exit 1\n'
                  'previous=""; for word in "$@"; do [ "$previous" = -o ] && chmod 777 "$word"; previous="$word"; done')
    monkeypatch.setenv("CC", str(_compiler_script(tmp_path / "bin", "cc 12.2.0", leave_open)))
    assert compiled.load(SOURCE) is not None
    assert [stat.S_IMODE(path.stat().st_mode) & 0o022 for path in _built(cache)] == [0]
    _new_process(monkeypatch, compile_again=False)
    assert compiled.load(SOURCE) is not None


def test_the_build_is_keyed_on_the_compilers_version_not_its_path_nor_the_kernel(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", str(_compiler_script(tmp_path / "one", "cc 12.2.0")))
    assert compiled.load(SOURCE) is not None
    built = _built(cache)
    # The same compiler found elsewhere, on a machine whose kernel was upgraded: the same build.
    monkeypatch.setenv("CC", str(_compiler_script(tmp_path / "two", "cc 12.2.0")))
    monkeypatch.setattr(compiled.platform, "platform", lambda *args: "Linux-9.9.9-upgraded")
    _new_process(monkeypatch, compile_again=False)
    assert compiled.load(SOURCE) is not None
    assert _built(cache) == built
    # An upgraded compiler builds its own.
    monkeypatch.setenv("CC", str(_compiler_script(tmp_path / "three", "cc 13.1.0")))
    _new_process(monkeypatch, compile_again=True)
    assert compiled.load(SOURCE) is not None
    assert len(_built(cache)) == 2


def test_a_library_installed_beside_its_source_is_loaded_without_a_compiler(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "package"
    package.mkdir()
    source = package / SOURCE.name
    shutil.copy(SOURCE, source)
    compiled._compile(os.environ["CC"], source, package / compiled.prebuilt_name(source))  # what setup.py builds
    monkeypatch.setattr(compiled, "_prebuilt", INSTALLED)
    monkeypatch.setenv("CC", "/bin/false")
    library = compiled.load(source)
    assert library is not None
    assert Path(library._name).parent == package
    assert not cache.exists()  # nothing compiled
    # The source changed (another version of the package over this folder): that library is not its own.
    source.write_text(source.read_text() + "\n/* edited */\n")
    monkeypatch.setattr(compiled, "_loaded", {})
    assert compiled.load(source) is None


@pytest.mark.parametrize("case", ["no compiler", "a compiler that fails", "a compiler that fails --version",
                                  "a folder others can write to", "switched off"])
def test_without_a_library_the_numpy_path_reads_the_same(tmp_path: Path, cache: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture, case: str) -> None:
    path = tmp_path / "run"
    _write_run(path, random.Random(3), 200)
    assert compiled.load(SOURCE) is not None
    expected = trec_scan.scan(path, *RUN)
    monkeypatch.setattr(compiled, "_loaded", {})
    if case == "no compiler":
        monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    elif case == "a compiler that fails":
        monkeypatch.setenv("CC", str(_compiler_script(tmp_path / "bin", "cc 99", "echo broken >&2; exit 1")))
    elif case == "a compiler that fails --version":
        monkeypatch.setenv("CC", "/bin/false")
    elif case == "a folder others can write to":
        monkeypatch.setenv("EVALCORE_COMPILED_CACHE", str(tmp_path / "shared"))
        (tmp_path / "shared").mkdir(mode=0o777)
        (tmp_path / "shared").chmod(0o777)
    else:
        monkeypatch.setenv("EVALCORE_COMPILED", "0")
    with caplog.at_level(logging.WARNING, logger=compiled.__name__):
        assert compiled.load(SOURCE) is None
        columns = trec_scan.scan(path, *RUN)
    if case != "switched off":
        assert "numpy path" in caplog.text
    assert len(list(tmp_path.rglob("*.so"))) == 1  # only the library built before the case
    assert expected is not None
    assert columns is not None
    _assert_same(expected, columns)


def test_a_callers_signatures_are_declared_though_the_library_was_loaded_first_without_them(cache: Path) -> None:
    assert compiled.load(SOURCE) is not None  # loaded first by a caller declaring nothing
    library = compiled.load(SOURCE, {"evalcore_scan": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64])})
    assert library is not None
    assert library.evalcore_scan.argtypes == [ctypes.c_void_p, ctypes.c_int64]
    assert library.evalcore_scan.restype is ctypes.c_int


def test_signatures_already_declared_are_kept(cache: Path) -> None:
    first = [ctypes.c_void_p]
    assert compiled.load(SOURCE, {"evalcore_scan": (ctypes.c_int, first)}) is not None
    library = compiled.load(SOURCE, {"evalcore_scan": (ctypes.c_int64, [ctypes.c_int32])})
    assert library is not None
    assert library.evalcore_scan.argtypes == first
