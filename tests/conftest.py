"""Shared fixtures: tiny datasets written by the tests themselves."""

from __future__ import annotations

import atexit
import functools
import gc
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# The dashboard's pages are tested in this process; its campaigns run on its threads here (a worker process per
# test database would outlive each test). tests/test_campaigns_queue.py tests the supervised worker process.
os.environ.setdefault("EVALCORE_DASHBOARD_WORKER", "threads")
# Where a test does start the supervised worker process (the SIGKILL drill, a browser test of the worker), it runs at
# the usual priority: in the background (SCHED_IDLE) it gets a core only when no other process wants one, and beside
# the other test worker, its servers and its browser such a test waited up to 45 s of wall time for a child using
# 1.2 s of CPU. test_campaigns_queue.py checks the background default.
os.environ.setdefault("EVALCORE_DASHBOARD_WORKER_PRIORITY", "normal")
# Indexes built by the tests go to a folder of this run, never to the user's own cache: made by the process that
# starts the run (the test workers inherit it) and removed when that process exits.
if "EVALCORE_INDEX_DIR" not in os.environ:
    os.environ["EVALCORE_INDEX_DIR"] = tempfile.mkdtemp(prefix="evalcore-test-indexes-")
    atexit.register(shutil.rmtree, os.environ["EVALCORE_INDEX_DIR"], ignore_errors=True)
# The local model's threads (llama.cpp on OpenMP) wait for each other by spinning at every step of a token; with two
# test workers on two cores the spinning thread holds the core the working one waits for: one claims verdict took
# 175 s of CPU spinning and 14 s waiting asleep (read once, when OpenMP loads: so here, before any test imports it).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Where the environment asks Python not to write bytecode, every test worker and every process a test starts (a
# Streamlit server, the CLI, the API) would compile the whole project from source again: about 8 s of CPU per worker
# at collection alone. The tests' processes keep bytecode in __pycache__ as an installed package does.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def _scan_components_once() -> None:
    """Every new AppTest scans the metadata of every installed distribution for Streamlit components (a server does it
    once when it starts): 0.5 s of CPU per AppTest, four times the run of a page. Nothing is installed into this
    environment while the tests run, so the first scan's answer is kept for the process."""
    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


_scan_components_once()


def _compile_scripts_once() -> None:
    """Every run of an AppTest (each `run()`, each click) makes a new script cache, so the router and the page were
    parsed, rewritten for Streamlit's magic and compiled again at every run: a third of the CPU of a page's run (a
    server keeps one cache for as long as it runs). Here the code compiled from a script is kept for the process,
    keyed on the script's path and its whole text (and the magic setting): a script that changes compiles again."""
    from streamlit import config
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    compile_script = ScriptCache.get_bytecode
    compiled: dict[tuple[str, bytes, bool], Any] = {}

    def get_bytecode(self: ScriptCache, script_path: str) -> Any:
        path = os.path.abspath(script_path)
        key = (path, Path(path).read_bytes(), bool(config.get_option("runner.magicEnabled")))
        if key not in compiled:
            compiled[key] = compile_script(self, script_path)
        return compiled[key]

    ScriptCache.get_bytecode = get_bytecode  # type: ignore[method-assign]


_compile_scripts_once()

# Streamlit runs a page as the module __main__ and leaves it there (AppTest too): a test process that then starts
# processes by spawning (dask's LocalCluster, multiprocessing) had each child run the dashboard's script first, which
# opened the checkout's own store (two at once failed). The test process's own __main__ is put back after each test.
_MAIN_MODULE = sys.modules["__main__"]


@pytest.fixture(autouse=True)
def _own_main_module() -> Iterator[None]:
    yield
    sys.modules["__main__"] = _MAIN_MODULE

TINY = {
    "queries": {"id": [1, 2, 3],
                "text": ["What is the refund window?", "Quel est le délai ?", "路由器的默认地址是什么？"]},
    "corpus": {
        "id": [10, 11, 12, 13, 14],
        "text": [
            "Refunds are accepted within 30 days of delivery.",
            "Refunds were accepted within 14 days under the old terms.",
            "Le délai de rétractation est de 14 jours calendaires.",
            "路由器的默认地址是 192.168.8.1，可以在浏览器中打开。",
            "This passage is a distractor about thermostats and café breaks.",
        ],
        "title": ["Terms of Sale (EU)", "Terms of Sale (2022)", "CGV France", "路由器手册", "Lumio T3 Manual"],
    },
    "answers": {"id": [100, 101, 102], "text": ["30 days.", "Thirty days after delivery.", "14 jours."]},
    "qrels": {"qid": [1, 1, 2, 3], "pid": [10, 11, 12, 13], "score": [3, 1, 2, 3]},
    "qas": {"qid": [1, 1, 2], "aid": [100, 101, 102]},
}


def write_dataset(folder: Path, tables: dict[str, dict[str, list]] | None = None) -> Path:
    """Write the five Parquet files (the tiny dataset unless tables are given)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, columns in (tables or TINY).items():
        pq.write_table(pa.table(columns), folder / f"{name}.parquet")
    return folder


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Path:
    """A valid three-question dataset folder (five passages) in three languages."""
    return write_dataset(tmp_path / "tiny")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL server for the whole run (skipped, saying why, when PostgreSQL is not installed)."""
    from evalcore.testing.postgres_server import postgres_bin, temporary_postgres

    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql): this test ran on SQLite only")
    pytest.importorskip("psycopg", reason="psycopg is not installed: this test ran on SQLite only")
    with temporary_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store on each backend: a SQLite file, then a new database on the test PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    from evalcore.testing.postgres_server import new_database

    return new_database(request.getfixturevalue("postgres_server"))


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The REST API served on loopback over a fresh database with its keys and saved targets, one per test module
    (tests.test_api.Api); a module needing more set-up defines its own."""
    from tests.test_api import Api, make_api, serve

    tmp = tmp_path_factory.mktemp("api")
    app, keys, targets = make_api(tmp)
    with serve(app) as url:
        yield Api(url, app, tmp / "api.db", keys, targets)


def as_stored_before_packing(conn: Any, where: str = "1 = 1", params: tuple = (),
                              drop: tuple[bytes, ...] = ()) -> None:
    """Results rows as a store written before packed rows holds them, for a test that then writes an older row's
    JSON columns: the measures and the pass/fail marks back in their JSON columns (by name), and the sections in
    `drop` (the ranked list, the answer) taken out of the packed value, for the test to write the plain column."""
    import json

    from evalcore.store.packing import MARKS, MEASURES, pack_row, sections, unpack_values

    rows = conn.execute(f"SELECT campaign_id, position, packed FROM results WHERE packed IS NOT NULL AND {where}",
                        params).fetchall()
    for campaign_id, position, packed in rows:
        parts = sections(packed)
        measures, marks = unpack_values(parts.get(MEASURES, b"")), unpack_values(parts.get(MARKS, b""))
        kept = [(tag, data) for tag, data in parts.items() if tag not in (MEASURES, MARKS, *drop)]
        conn.execute("UPDATE results SET measures = ?, results = ?, packed = ? WHERE campaign_id = ? AND position = ?",
                     (json.dumps(measures), json.dumps(marks), pack_row(kept) if kept else None, campaign_id,
                      position))


def require_c(library: object) -> None:
    """Skip a test of the C loops themselves where compiled loops are switched off, or this machine has no working C
    compiler (and no library was installed with the package): the numpy paths, tested everywhere, run there. Where a
    compiler answers, a missing library fails the test."""
    if library is not None:
        return
    from evalcore.runtime import compiled

    if not compiled.enabled():
        pytest.skip("compiled loops switched off (EVALCORE_COMPILED=0): the numpy path runs")
    if compiled.toolchain() is None:
        pytest.skip("no working C compiler ($CC, cc, gcc or clang): the numpy path runs on this machine")
    pytest.fail("a C compiler answers --version, but the library did not build (the warning logged says why)")


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (the project, its libraries, every test module: about 200,000 objects held for the
    whole run) is set aside from the cycle collector: every full collection walked it all again, and a campaign ends
    with one (memory.give_back: a full collection, then malloc_trim), 0.2 s of CPU each in a test process, a quarter
    of the CPU of the dashboard's and the judges' test files, whose campaigns are a few questions each. Objects made
    from here on are collected as before; a campaign's own garbage is among them."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests (marked `long`, and the groups that share one costly server or build) start first: the two
    workers then finish together instead of one running a 4-minute group alone at the end. The order of the others is
    kept (every worker collects the same order, as pytest-xdist requires)."""
    items.sort(key=lambda item: 0 if item.get_closest_marker("long") or item.get_closest_marker("xdist_group") else 1)
