"""A large comparison's statistics in a process of their own: the same numbers as in process, whatever happens to
the process."""

from __future__ import annotations

import json
import subprocess

import pytest

from evalcore.compare import compare_campaigns, statistics_process
from evalcore.store import Store


def stored(store, cid, shift):
    """A finished campaign of 400 questions with measures of three different counts (every question, the labelled
    half, a judged tenth) written through the store's schema."""
    def values(i):
        data = {"coverage": ((i * 37 + shift) % 11) / 10, "rougel": ((i * 13 + 2 * shift) % 7) / 6}
        if i % 2:
            data["ndcg@10"] = ((i * 7 + shift) % 5) / 4
        if i % 10 == 0:
            data["judge.score"] = float((i + shift) % 5 + 1)
        return data

    def insert(conn):
        conn.execute("INSERT INTO campaigns (id, tenant, kind, source, status, total, finished, failed, created_at, "
                     "ended_at, config, dataset_hash) VALUES (?, 'default', 'dataset', 'default', 'succeeded', 400, "
                     "400, 0, 0, 1.0, ?, 'd1')", (cid, json.dumps({"top_k": 5 + shift})))
        conn.executemany("INSERT INTO campaign_questions (campaign_id, position, qid, question, refs, "
                         "expected_sources) VALUES (?, ?, ?, ?, '[]', '[]')",
                         [(cid, i, i, f"q{i}") for i in range(400)])
        conn.executemany("INSERT INTO results (campaign_id, position, qid, answer, retrieved, sources, measures, "
                         "signatures, judges, created_at) VALUES (?, ?, ?, 'an answer', '[]', '[]', ?, '{}', '{}', 0)",
                         [(cid, i, i, json.dumps(values(i))) for i in range(400)])
    store.write(insert)


@pytest.fixture
def pair(tmp_path):
    with Store(tmp_path / "w.db") as store:
        stored(store, "A", 0)
        stored(store, "B", 1)
        yield store


def computed(store, **options):
    store.write(lambda conn: conn.execute("DELETE FROM comparisons"))
    return compare_campaigns(store, "A", "B", resamples=2_000, **options).to_dict()


@pytest.fixture
def started(monkeypatch):
    """The processes started, each as its exit code once it ended."""
    codes = []
    start = statistics_process.Statistics.__init__

    def counted(self):
        start(self)
        codes.append(self._process)

    monkeypatch.setattr(statistics_process.Statistics, "__init__", counted)
    return codes


def test_statistics_in_a_process_are_the_in_process_ones_to_the_last_bit(pair, monkeypatch, started):
    from evalcore.compare import comparison

    here = []
    entries = comparison.measure_entries
    monkeypatch.setattr(comparison, "measure_entries", lambda *a, **k: here.append(1) or entries(*a, **k))
    in_process = computed(pair)
    assert not started
    assert here == [1]  # 400 questions: below the size where a process pays
    monkeypatch.setattr(statistics_process, "FROM_QUESTIONS", 100)
    assert computed(pair) == in_process
    assert len(started) == 1
    assert started[0].returncode == 0
    assert here == [1]  # computed there, not here
    monkeypatch.setenv(statistics_process.SWITCH, "0")   # switched off: in process again
    assert computed(pair) == in_process
    assert len(started) == 1


@pytest.mark.parametrize("serve", ["import sys; sys.exit(3)", "import sys; sys.stdin.buffer.read()",
                                   "import sys, pickle; sys.stdout.buffer.write(pickle.dumps((False, 'broke')))",
                                   "import sys; sys.stdout.write('not a pickle')"])
def test_a_process_that_fails_leaves_the_comparison_to_be_computed_in_process(pair, monkeypatch, started, serve,
                                                                             caplog):
    in_process = computed(pair)
    monkeypatch.setattr(statistics_process, "FROM_QUESTIONS", 100)
    monkeypatch.setattr(statistics_process, "SERVE", serve)
    with caplog.at_level("WARNING", logger="evalcore.compare"):
        assert computed(pair) == in_process
    assert len(started) == 1
    assert started[0].poll() is not None  # it ended: nothing left running
    assert "the statistics' process" in caplog.text
    assert "computed here" in caplog.text


def test_a_process_that_cannot_start_changes_nothing(pair, monkeypatch, started):
    in_process = computed(pair)
    monkeypatch.setattr(statistics_process, "FROM_QUESTIONS", 100)
    monkeypatch.setattr(statistics_process.sys, "executable", "/nonexistent/python")
    assert computed(pair) == in_process
    assert not started


def test_a_process_that_hangs_is_stopped_and_changes_nothing(pair, monkeypatch, started):
    in_process = computed(pair)
    monkeypatch.setattr(statistics_process, "FROM_QUESTIONS", 100)
    monkeypatch.setattr(statistics_process, "SERVE", "import time; time.sleep(60)")
    monkeypatch.setattr(statistics_process, "TIMEOUT", 0.5)
    assert computed(pair) == in_process
    assert len(started) == 1
    assert started[0].poll() is not None  # killed once given up on


def test_a_comparison_that_fails_before_its_statistics_stops_the_process(pair, monkeypatch, started):
    from evalcore.compare import comparison

    monkeypatch.setattr(statistics_process, "FROM_QUESTIONS", 100)

    def broken(*args, **kwargs):
        raise RuntimeError("the store went away")

    monkeypatch.setattr(comparison, "read_compared", broken)
    with pytest.raises(RuntimeError):
        computed(pair)
    assert len(started) == 1
    assert started[0].poll() is not None
    assert isinstance(started[0], subprocess.Popen)


def test_the_process_multiplies_on_one_blas_thread_from_its_start(pair, monkeypatch, caplog):
    # Its products are on one thread anyway; OpenBLAS's threads, started as numpy loads, would only spin.
    monkeypatch.setattr(statistics_process, "FROM_QUESTIONS", 100)
    monkeypatch.setattr(statistics_process, "SERVE",
                        "import os, pickle, sys; sys.stdin.buffer.read(); sys.stdout.buffer.write("
                        f"pickle.dumps((False, [os.environ.get(name) for name in {statistics_process.ONE_THREAD!r}])))")
    with caplog.at_level("WARNING", logger="evalcore.compare"):
        computed(pair)
    assert "failed (['1', '1'])" in caplog.text
