"""The SQLite store: WAL, one writer, concurrent readers, migrations, orphan detection, call cache."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evalcore.errors import EvalError
from evalcore.store import (
    MIGRATIONS,
    STALE_S,
    Store,
    StoreCallCache,
    StoreUnavailable,
    default_db_path,
    open_store,
)


@pytest.fixture
def sqlite_store(tmp_path: Path):
    """A SQLite store on a fresh file."""
    with Store(tmp_path / "store.db") as result:
        yield result


@pytest.fixture
def store(db: str):
    """A fresh store on each backend."""
    with open_store(db) as result:
        yield result


def test_open_creates_schema_in_wal_mode(sqlite_store: Store) -> None:
    store = sqlite_store
    assert store.read("PRAGMA journal_mode")[0][0] == "wal"
    assert store.read("PRAGMA user_version")[0][0] == len(MIGRATIONS)
    tables = {row["name"] for row in store.read("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"targets", "suites", "cases", "campaigns", "campaign_questions", "results", "call_cache",
            "api_keys"} <= tables
    columns = {row["name"] for row in store.read("PRAGMA table_info(api_keys)")}
    assert columns == {"id", "tenant", "role", "capability", "key_hash", "prefix", "created_at", "revoked_at"}


def test_reopening_keeps_data_and_does_not_migrate_again(db: str) -> None:
    with open_store(db) as first:
        first.write(lambda conn: conn.execute("INSERT INTO call_cache VALUES ('k', '{}', 1.0)"))
    with open_store(db) as second:
        assert [row["key"] for row in second.read("SELECT key FROM call_cache")] == ["k"]


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.close()
    with pytest.raises(EvalError, match="newer evalcore"):
        Store(path)


def test_write_returns_value_or_raises_and_rolls_back(store: Store) -> None:
    def insert_then_fail(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO call_cache VALUES ('a', '{}', 1.0)")
        raise ValueError("boom")

    assert store.write(lambda conn: conn.execute("SELECT 41 + 1").fetchone()[0]) == 42
    with pytest.raises(ValueError, match="boom"):
        store.write(insert_then_fail)
    assert store.read("SELECT count(*) FROM call_cache")[0][0] == 0
    with pytest.raises(sqlite3.IntegrityError):
        store.write(lambda conn: conn.execute("INSERT INTO results (campaign_id, position, qid, retrieved, sources, "
                                              "measures, signatures, judges, created_at) "
                                              "VALUES ('none', 0, 1, '[]', '[]', '{}', '{}', '{}', 0)"))


def test_writes_from_many_threads_are_serialised_and_readers_run_concurrently(store: Store) -> None:
    store.write(lambda conn: conn.execute("INSERT INTO call_cache VALUES ('n', '0', 0)"))

    def bump(conn: sqlite3.Connection) -> None:
        value = int(conn.execute("SELECT value FROM call_cache WHERE key = 'n'").fetchone()[0])
        conn.execute("UPDATE call_cache SET value = ? WHERE key = 'n'", (str(value + 1),))

    seen: list[int] = []

    def worker() -> None:
        for _ in range(25):
            store.write(bump)
            seen.append(int(store.read("SELECT value FROM call_cache WHERE key = 'n'")[0][0]))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.read("SELECT value FROM call_cache WHERE key = 'n'")[0][0] == "200"
    assert len(seen) == 200
    assert max(seen) == 200


def test_a_write_queued_for_soon_lands_when_the_process_ends_without_closing(tmp_path: Path) -> None:
    script = ("import sys, time\nfrom evalcore.store import Store\nstore = Store(sys.argv[1])\n"
              "def slow(conn):\n    time.sleep(0.5)\n"
              "    conn.execute(\"INSERT INTO call_cache VALUES ('soon', '1', 0)\")\n"
              "store.write_soon(slow)\n")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "store.db")], check=True, timeout=60,
                   cwd=Path(__file__).resolve().parent.parent)
    with Store(tmp_path / "store.db") as store:
        assert store.read("SELECT value FROM call_cache WHERE key = 'soon'")[0][0] == "1"


def test_a_write_queued_for_soon_is_read_back_by_whoever_reads_next(store: Store) -> None:
    # write_soon returns before the write is done (on SQLite); any read asked for afterwards, on any thread, waits
    # for it, and a failed one leaves its error in its future without breaking the writes and reads after it.
    started = threading.Event()

    def slow_insert(conn: sqlite3.Connection) -> None:
        started.set()
        time.sleep(0.3)
        conn.execute("INSERT INTO call_cache VALUES ('soon', '1', 0)")

    done = store.write_soon(slow_insert)
    queued = not done.done()   # SQLite: handed to its writer thread, which sleeps in it for 0.3 s
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(store.read("SELECT count(*) FROM call_cache")[0][0]))
    reader.start()
    assert store.read("SELECT value FROM call_cache WHERE key = 'soon'")[0][0] == "1"
    reader.join()
    assert seen == [1]
    assert done.result() is None
    assert started.is_set()
    assert queued == (type(store) is Store)   # PostgreSQL has no writer thread: written before it returns

    def fail(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO call_cache VALUES ('lost', '1', 0)")
        raise ValueError("boom")

    failed = store.write_soon(fail)
    assert store.read("SELECT count(*) FROM call_cache WHERE key = 'lost'")[0][0] == 0   # rolled back
    assert isinstance(failed.exception(), ValueError)
    # A write that reads (on the writer thread) does not wait for itself.
    assert store.write_soon(lambda conn: store.read("SELECT count(*) FROM call_cache")[0][0]).result(timeout=10) == 1
    store.write(lambda conn: conn.execute("INSERT INTO call_cache VALUES ('after', '1', 0)"))
    assert store.read("SELECT count(*) FROM call_cache")[0][0] == 2


def test_a_write_queued_for_a_table_holds_back_only_the_reads_of_that_table(sqlite_store: Store) -> None:
    release = threading.Event()

    def held_insert(conn: sqlite3.Connection) -> None:
        release.wait(10)
        conn.execute("INSERT INTO call_cache VALUES ('held', '1', 0)")

    done = sqlite_store.write_soon(held_insert, tables=("call_cache",))
    assert sqlite_store.read("SELECT count(*) FROM campaigns")[0][0] == 0   # another table: not held back
    assert not done.done()
    threading.Timer(0.2, release.set).start()
    assert sqlite_store.read("SELECT count(*) FROM Call_Cache")[0][0] == 1   # this one (in any case): after it
    assert done.done()


def dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def insert_campaign(store: Store, campaign_id: str, *, pid: int, heartbeat: float, status: str = "running") -> None:
    """A bare campaign row owned by a process on this host."""
    store.write(lambda conn: conn.execute(
        "INSERT INTO campaigns (id, tenant, kind, source, status, total, created_at, heartbeat, owner_host, "
        "owner_pid, config) VALUES (?, 'default', 'dataset', 'default', ?, 3, ?, ?, ?, ?, '{}')",
        (campaign_id, status, heartbeat, heartbeat, socket.gethostname(), pid),
    ))


def test_orphaned_campaigns_are_marked_interrupted_on_open(db: str) -> None:
    path, now = db, time.time()
    with open_store(path) as store:
        insert_campaign(store, "dead-owner", pid=dead_pid(), heartbeat=now)
        insert_campaign(store, "silent-owner", pid=os.getpid(), heartbeat=now - STALE_S - 5)
        insert_campaign(store, "alive", pid=os.getpid(), heartbeat=now)
        insert_campaign(store, "pending-dead", pid=dead_pid(), heartbeat=now, status="pending")
        insert_campaign(store, "done", pid=dead_pid(), heartbeat=now - 1000, status="succeeded")
    with open_store(path) as store:
        status = {row["id"]: row["status"] for row in store.read("SELECT id, status FROM campaigns")}
    assert status == {"dead-owner": "interrupted", "silent-owner": "interrupted", "alive": "running",
                      "pending-dead": "interrupted", "done": "succeeded"}


def test_default_path_follows_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "env.db"))
    assert default_db_path() == tmp_path / "env.db"
    monkeypatch.delenv("EVALCORE_DB")
    monkeypatch.chdir(tmp_path)
    assert default_db_path() == tmp_path / ".evalcore" / "evalcore.db"
    with Store() as store:
        assert store.path.exists()


def test_call_cache_counts_hits_and_misses(store: Store) -> None:
    cache, other = StoreCallCache(store), StoreCallCache(store)
    assert cache.get("k") is None
    cache.put("k", {"text": "Paris", "prompt_tokens": 3})
    cache.put("k", {"text": "ignored"})
    assert cache.get("k") == {"text": "Paris", "prompt_tokens": 3}
    assert other.get("k") == {"text": "Paris", "prompt_tokens": 3}
    assert (cache.hits, cache.misses, other.hits) == (1, 1, 1)


def test_closed_store_refuses_writes(tmp_path: Path) -> None:
    store = Store(tmp_path / "closed.db")
    store.close()
    with pytest.raises(EvalError, match="closed"):
        store.write(lambda conn: None)


def test_reads_from_short_lived_threads_reuse_connections(sqlite_store: Store) -> None:
    """Streamlit and the API read from a new thread per run: connections must not pile up."""
    store = sqlite_store
    for _ in range(30):
        reader = threading.Thread(target=store.read, args=("SELECT count(*) FROM campaigns",))
        reader.start()
        reader.join()
    assert len(store._readers) == 1


def test_a_file_that_is_not_a_database_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n", encoding="utf-8")
    with pytest.raises(EvalError, match="cannot open the database: file is not a database") as caught:
        Store(path)
    assert caught.value.where == str(path)


def test_a_version_one_database_is_migrated_on_open(tmp_path: Path) -> None:
    from evalcore.store import SCHEMA_V1, split_script

    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    for statement in split_script(SCHEMA_V1):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Store(path) as store:
        columns = {row["name"] for row in store.read("PRAGMA table_info(campaigns)")}
        assert "stage" in columns
        assert store.read("PRAGMA user_version")[0][0] == len(MIGRATIONS)


def test_stores_opening_a_new_sqlite_file_together_migrate_it_once(tmp_path: Path) -> None:
    """Each opener reads the schema's version under the write lock: none applies a migration another applied."""
    for attempt in range(5):
        opened, failures = _open_together(tmp_path / f"new-{attempt}.db", 6)
        assert failures == []
        assert len(opened) == 6
        assert opened[0].read("PRAGMA user_version")[0][0] == len(MIGRATIONS)
        for store in opened:
            store.close()


def _open_together(path: Path, count: int) -> tuple[list[Store], list[BaseException]]:
    """`count` stores opened on `path` by as many threads released at the same moment."""
    together = threading.Barrier(count)
    opened: list[Store] = []
    failures: list[BaseException] = []

    def open_it() -> None:
        together.wait()
        try:
            opened.append(Store(path))
        except BaseException as error:  # noqa: BLE001 - collected for the assertion
            failures.append(error)

    openers = [threading.Thread(target=open_it) for _ in range(count)]
    for thread in openers:
        thread.start()
    for thread in openers:
        thread.join()
    return opened, failures


def test_sqlite_placeholders_become_psycopg_ones_outside_quoted_text() -> None:
    from evalcore.store.postgres import to_pg

    assert to_pg("SELECT * FROM t WHERE a = ? AND b = :name AND c LIKE '50% ?:x' AND d::text = ?") == (
        "SELECT * FROM t WHERE a = %s AND b = %(name)s AND c LIKE '50%% ?:x' AND d::text = %s")


def test_postgresql_refuses_a_newer_schema_and_servers_starting_together_migrate_once(postgres_server: str) -> None:
    from evalcore.testing.postgres_server import new_database

    url = new_database(postgres_server)
    opened: list[Store] = []
    starters = [threading.Thread(target=lambda: opened.append(open_store(url))) for _ in range(4)]
    for thread in starters:
        thread.start()
    for thread in starters:
        thread.join()
    assert len(opened) == 4
    assert opened[0].read("SELECT version FROM evalcore_schema")[0]["version"] == len(MIGRATIONS)
    opened[0].write(lambda conn: conn.execute("UPDATE evalcore_schema SET version = version + 1"))
    for store in opened:
        store.close()
    with pytest.raises(EvalError, match="newer evalcore"):
        open_store(url)


def test_an_unreachable_postgresql_is_a_user_error_without_the_password(postgres_server: str) -> None:
    with pytest.raises(StoreUnavailable, match="cannot be reached") as caught:
        open_store("postgresql://evalcore:secret@127.0.0.1:1/none")
    assert "secret" not in str(caught.value)
    assert "***" in caught.value.where


def _ranked(scores: list, stages: list[dict]) -> tuple:
    from evalcore.targets import Retrieved

    return tuple(Retrieved(pid, f"title {pid}", f"text {pid}", score, own) for pid, (score, own)
                 in enumerate(zip(scores, stages, strict=True)))


def _same_bits(a: object, b: object) -> bool:
    """Equal to the last bit: the same type and the same repr (a zero's sign, NaN included)."""
    return type(a) is type(b) and repr(a) == repr(b)


def test_ranked_lists_are_packed_and_read_back_to_the_last_bit() -> None:
    # Every list reads back exactly as it was, whatever its scores: float32 numbers (BM25, cosine), float64, ints, NaN,
    # infinities, zeros of either sign, missing stage values, stages of millionths or not.
    import numpy as np

    from evalcore.campaigns.result_rows import Passages, decode_ranked, ranked_of
    from evalcore.store.packing import pack_ranked

    raw = np.array([11.044711, 10.421133, 4.428916, 1e-30, 0.0, 3e38, 7.0], dtype=np.float32)
    norm = (raw / raw[0]).tolist()
    bm25 = [{"bm25": round(r, 6), "bm25_norm": round(s, 6)} for r, s in zip(raw.tolist(), norm, strict=True)]
    cases = [
        (norm, bm25),
        (norm[:3], bm25[:3]),
        ([-0.0, -0.5, 0.25], [{"vector": round(s, 6)} for s in (-0.0, -0.5, 0.25)]),
        ([1 / 61, 1 / 62 + 1 / 70, 0.1], [{"rrf": round(s, 6), "bm25": 1.5} for s in (1 / 61, 1 / 62 + 1 / 70, 0.1)]),
        ([1.0, 0.0, 2.0], [{"rerank": 1}, {"rerank": 0}, {}]),
        ([float("nan"), 0.5, float("inf")], [{}, {"x": 0.5}, {}]),
        ([1, 0.5], [{"s": 1.0}, {"s": 0.5}]),
        ([0.5, 0.25], [{"s": 0.5}, {"t": 0.25}]),
        ([], []),
        ([0.5, 0.25, 0.125], [{"bm25": 2146.999999}, {"bm25": -3.25}, {"bm25": 1e-06}]),
        ([0.5, 0.25], [{"bm25": 0.1 + 0.2}, {"bm25": 1.5}]),
        ([0.5, 0.25], [{"bm25": -0.0}, {"bm25": 1.5}]),
        ([0.5, 0.25], [{"bm25": 2147.0}, {"bm25": 1.5}]),
    ]
    passages = Passages()
    stored = 0
    for scores, stages in cases:
        hits = _ranked(scores, stages)
        new: list = []
        ranked = ranked_of(hits, passages, new)
        ids = {key: stored + n for n, (key, _) in enumerate(new)}  # as a write stores the batch's new passages
        stored += len(new)
        passages.stored(ids)
        packed = pack_ranked(ranked._replace(keys=[ids.get(key, key) for key in ranked.keys]))
        back = decode_ranked(packed, passages.by_key)
        assert [h.pid for h in back] == [h.pid for h in hits]
        assert all(_same_bits(a.score, b.score) for a, b in zip(back, hits, strict=True)), packed
        assert [list(h.stages) for h in back] == [list(h.stages) for h in hits], packed
        assert all(_same_bits(a.stages[name], b.stages[name]) for a, b in zip(back, hits, strict=True)
                   for name in b.stages), packed
        passages.next_batch()


def test_ranked_lists_of_random_hits_are_read_stage_by_stage_and_hit_by_hit() -> None:
    # ranked_of reads the stages name by name when every hit has the same ones, and the passages' ids by content;
    # on random lists (stages shared, in another order, missing, or of several kinds; passages stored or not) it
    # gives what a plain reading gives: each stage's list in the order its name first appears, None where a hit
    # lacks it, and each passage's key as Passages.key gives it.
    import random

    from evalcore.campaigns.result_rows import Passages, ranked_of
    from evalcore.store.packing import Ranked

    def plain(hits: tuple, passages: Passages, new: list) -> Ranked:
        lists: dict[str, list] = {}
        for position, hit in enumerate(hits):
            for name, value in hit.stages.items():
                lists.setdefault(name, [None] * len(hits))[position] = value
        return Ranked([passages.key(hit, new) for hit in hits], [hit.score for hit in hits], lists)

    rng = random.Random(5)
    ours, theirs = Passages(), Passages()
    for _ in range(400):
        size = rng.randint(1, 12)
        scores = [rng.choice([round(rng.random(), 15), float(rng.randint(0, 3))]) for _ in range(size)]
        names = rng.sample(["bm25", "vector", "rrf", "rerank"], rng.randint(0, 3))
        kind = rng.choice(["same", "shuffled", "missing"])
        stages = []
        for score in scores:
            own = list(names) if kind != "missing" else [n for n in names if rng.random() < 0.6]
            if kind == "shuffled":
                rng.shuffle(own)
            stages.append({n: rng.choice([round(score, 6), round(rng.random() * 30, 6), 0.1 + 0.2]) for n in own})
        pids = rng.sample(range(30), size)
        hits = tuple(h._replace(pid=pid, title=f"title {pid}", text=f"text {pid}")
                     for h, pid in zip(_ranked(scores, stages), pids, strict=True))
        new_ours: list = []
        new_theirs: list = []
        assert ranked_of(hits, ours, new_ours) == plain(hits, theirs, new_theirs), hits
        assert new_ours == new_theirs
        if rng.random() < 0.5:  # the batch written: its passages known by their ids from now on
            ids = {key: 100 + -key + len(ours.keys) for key in ours.fresh.values()}
            ours.stored(ids)
            theirs.stored(ids)
        ours.next_batch()
        theirs.next_batch()


def test_ranked_of_tells_stages_of_the_same_count_apart_and_finds_a_passage_stored_under_id_zero() -> None:
    # Every hit having the first's stage names is not enough to read them by those names (one may have more), nor is
    # every hit having as many stages (one may lack a name the first has and have another). A passage stored under id
    # 0 is known by that id, not met as new again.
    from evalcore.campaigns.result_rows import Passages, ranked_of

    hits = _ranked([1.0, 0.5, 0.25], [{"bm25": 3.0, "vector": 0.9}, {"bm25": 2.0, "rerank": 0.4},
                                      {"vector": 0.1, "bm25": 1.0}])
    passages = Passages()
    new: list = []
    first = ranked_of(hits, passages, new)
    assert first.stages == {"bm25": [3.0, 2.0, 1.0], "vector": [0.9, None, 0.1], "rerank": [None, 0.4, None]}
    assert first.keys == [-1, -2, -3]
    assert [key for key, _ in new] == [-1, -2, -3]
    passages.stored({-1: 0, -2: 7, -3: 9})
    passages.next_batch()
    again: list = []
    ranked = ranked_of(hits[::-1], passages, again)
    assert ranked.keys == [9, 7, 0]
    assert again == []
    assert ranked.scores == [0.25, 0.5, 1.0]
    assert ranked.stages == {"vector": [0.1, None, 0.9], "bm25": [1.0, 2.0, 3.0], "rerank": [None, 0.4, None]}
    same = ranked_of(_ranked([0.5, 0.25], [{"a": 1.0, "b": 2.0}, {"b": 3.0, "a": 4.0}]), passages, again)
    assert same.stages == {"a": [1.0, 4.0], "b": [2.0, 3.0]}
    more = ranked_of(_ranked([0.5, 0.25], [{"a": 1.0}, {"a": 2.0, "b": 3.0}]), passages, again)  # the first's, and more
    assert more.stages == {"a": [1.0, 2.0], "b": [None, 3.0]}


def test_ranked_lists_stored_before_read_as_they_did() -> None:
    # Rows written before schema version 16 hold the float64 form of every score and each stage's whole list; rows
    # written before passages were shared hold the passages themselves; rows of schema versions 25 to 27 hold float32
    # scores as base64 bytes ("g") and a stage of millionths as base64 text.
    import json

    from evalcore.campaigns.result_rows import Passages, decode_ranked, ranked_of, ranked_passages
    from evalcore.store.packing import pack_ranked

    passages = Passages()
    hits = _ranked([1.0, 0.9435405731201172], [{"bm25": 11.044711, "bm25_norm": 1.0},
                                               {"bm25": 10.421133, "bm25_norm": 0.943541}])
    packed = pack_ranked(ranked_of(hits, passages, [])._replace(keys=[0, 1]))
    passages.stored({-1: 0, -2: 1})  # as a write stores them, under ids 0 and 1
    v15 = json.dumps({"k": [0, 1], "s": [1.0, 0.9435405731201172],
                      "st": {"bm25": [11.044711, 10.421133], "bm25_norm": [1.0, 0.943541]}}, separators=(",", ":"))
    v26 = '{"k":[0,1],"g":"AACAP+CLcT8=","st":{"bm25":"Z4eoAI0DnwA=","bm25_norm":6}}'
    v4 = json.dumps([{"pid": 0, "title": "title 0", "text": "text 0", "score": 1.0,
                      "stages": {"bm25": 11.044711, "bm25_norm": 1.0}}])
    assert decode_ranked(v15, passages.by_key) == hits
    assert decode_ranked(v26, passages.by_key) == hits
    assert decode_ranked(packed, passages.by_key) == hits
    assert decode_ranked(v4, passages.by_key) == hits[:1]
    assert [[h.pid for h in ranked] for ranked in ranked_passages([v15, v26, packed, v4], passages.by_key)] == \
        [[0, 1], [0, 1], [0, 1], [0]]


def test_a_version_fifteen_store_is_migrated_and_its_rows_read_the_same(tmp_path: Path) -> None:
    # A store an older evalcore wrote (schema 15, ranked lists with float64 scores) opens, moves to the version that
    # tells older code to refuse the newer rows, and reads every stored row as before; new rows are the short form.
    from evalcore.campaigns.records import Outcome, Question
    from evalcore.campaigns.result_rows import ResultWriter, read_results
    from evalcore.store import split_script
    from evalcore.store.packing import RANKED, Ranked, sections, unpack_ranked

    path = tmp_path / "v15.db"
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:15]:
        for statement in split_script(script):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 15")
    conn.execute("INSERT INTO campaigns (id, tenant, kind, source, status, total, finished, failed, created_at, "
                 "ended_at, config) VALUES ('c', 'default', 'dataset', 'default', 'succeeded', 2, 1, 0, 0, 1, '{}')")
    conn.execute("INSERT INTO campaign_questions (campaign_id, position, qid, question, refs, expected_sources) "
                 "VALUES ('c', 0, 1, 'q1', '[]', '[]'), ('c', 1, 2, 'q2', '[]', '[]')")
    conn.execute("INSERT INTO campaign_passages VALUES ('c', 0, 0, '', 'title 0', 'text 0'), "
                 "('c', 1, 1, '', 'title 1', 'text 1')")
    conn.execute("INSERT INTO results (campaign_id, position, qid, answer, retrieved, context, sources, measures, "
                 "signatures, results, judges, created_at) VALUES ('c', 0, 1, 'a', ?, '1', '', '{\"mrr\":0.5}', '{}', "
                 "'{}', '{}', 0)",
                 ('{"k":[0,1],"s":[1.0,0.9435405731201172],"st":{"bm25":[11.044711,10.421133],"bm25_norm":[1.0,0.943541]}}',))
    conn.commit()
    conn.close()
    hits = _ranked([1.0, 0.9435405731201172], [{"bm25": 11.044711, "bm25_norm": 1.0},
                                               {"bm25": 10.421133, "bm25_norm": 0.943541}])
    with Store(path) as store:
        assert store.read("PRAGMA user_version")[0][0] == len(MIGRATIONS)
        old = read_results(store, "c")
        assert old[0].outcome.retrieved == hits
        assert old[0].outcome.measures == {"mrr": 0.5}
        writer = ResultWriter(store, "c")
        rows, passages, signatures = writer.rows([(Question(1, 2, "q2"), Outcome(answer="a", retrieved=hits,
                                                                                context=hits[:1]))])
        store.write(lambda conn: writer.write(conn, rows, passages, signatures, {}))
        stored = store.read("SELECT retrieved, packed FROM results WHERE position = 1")[0]
        assert stored["retrieved"] == ""  # a new row's ranked list is packed
        assert unpack_ranked(sections(stored["packed"])[RANKED]) == Ranked(
            [0, 1], [1.0, 0.9435405731201172], {"bm25": [11.044711, 10.421133], "bm25_norm": [1.0, 0.943541]})
        assert [r.outcome.retrieved for r in read_results(store, "c")] == [hits, hits]


def test_a_store_given_where_its_location_is_expected_is_refused_naming_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store(tmp_path / "e.db") as store, pytest.raises(TypeError, match=r"found Store \(pass its location"):
        open_store(store)  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("e.db")) == []  # no file named by a repr


def test_a_new_sqlite_store_waits_for_a_write_lock_on_the_file_before_turning_it_to_write_ahead_logging(
        tmp_path: Path) -> None:
    """Turning a file to write-ahead logging takes its exclusive lock without SQLite's busy handler while another
    connection holds the file's write lock (as a second opener of a new store does for a moment): an opener asks
    again until the lock is free, not failing at once with "database is locked"."""
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write lock of a file still in rollback mode, held until the rollback
    releaser = threading.Timer(0.5, holder.rollback)
    releaser.start()
    try:
        store = Store(path)
    finally:
        releaser.join()
        holder.close()
    assert store.read("PRAGMA journal_mode")[0][0] == "wal"
    assert store.read("PRAGMA user_version")[0][0] == len(MIGRATIONS)
    store.close()
