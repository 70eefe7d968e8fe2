"""Reading a campaign's results and comparing two campaigns run without the cycle collector, from the query on.

A read builds about a hundred objects per question, none in a cycle; in a process that already holds many (a
server, a notebook) every full collection during the read walks all of them again: a read of 2 x 10,000 questions
took up to 1.9 s instead of 1.1 s once the process held two or three earlier reads. Each test lowers the collector's
thresholds so that any allocation outside the paused span would start a collection, and counts them.
"""

from __future__ import annotations

import gc

import pytest

from evalcore.campaigns import campaign_lines, campaign_results
from evalcore.campaigns.compared import read_compared
from evalcore.compare import compare_campaigns
from tests import test_worker

pair = test_worker.pair   # two finished campaigns of 400 questions in a store of their own

OUT = 5   # collections a paused span may let start as it ends (the collector is back on for its last objects)


@pytest.fixture
def collections():
    """The collections that start while the test runs, with the thresholds at their lowest."""
    started = []

    def count(phase, info):
        if phase == "start":
            started.append(info["generation"])

    thresholds = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1, 1, 1)
    gc.callbacks.append(count)
    try:
        yield started
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)


def test_the_collector_is_live_in_this_test(collections):
    [object() for _ in range(5)] and [[] for _ in range(5)]
    assert collections   # the counting works: outside a read, allocations do start collections


@pytest.fixture
def queried(pair, collections, monkeypatch):
    """How many collections had started when each query of the results table was sent."""
    marks = []
    read = pair.read

    def marked(sql, *args, **kwargs):
        if "results r" in sql:
            marks.append(len(collections))
        return read(sql, *args, **kwargs)

    monkeypatch.setattr(pair, "read", marked)
    return marks


@pytest.mark.parametrize("read", [lambda store: campaign_results(store, "A", detail=False),
                                  lambda store: campaign_results(store, "A"),
                                  lambda store: read_compared(store, "A").keys,
                                  lambda store: campaign_lines(store, "A")])
def test_a_read_starts_no_collection_from_its_query_on(pair, collections, queried, read):
    rows = read(pair)
    at_return = len(collections)   # (the collector, back on, starts one at the next allocation)
    assert len(rows) == 400
    # At these thresholds a read of 400 questions with the collector on starts hundreds; paused, none, but for the one
    # or two it starts on the way out, once back on (the objects of the function's return).
    assert len(queried) == 1
    assert at_return - queried[0] <= OUT
    assert gc.isenabled()


def test_a_comparison_starts_no_collection_from_its_first_query_until_it_is_kept(pair, collections, queried,
                                                                                 monkeypatch):
    from evalcore.compare import saved_comparisons

    kept = []
    keep = saved_comparisons.keep

    def counted(*args, **kwargs):
        kept.append(len(collections))
        return keep(*args, **kwargs)

    monkeypatch.setattr(saved_comparisons, "keep", counted)
    result = compare_campaigns(pair, "A", "B", resamples=200)
    assert len(result.questions) == 400
    assert len(queried) == 2
    assert queried[0] == queried[1]  # none between the two reads
    assert kept[0] - queried[0] <= OUT   # nor until the comparison is kept
    assert gc.isenabled()


def test_the_collector_is_back_on_after_a_read_fails(pair, monkeypatch):
    from evalcore.campaigns import result_rows

    def broken(*args, **kwargs):
        raise OSError("the disk went away")

    monkeypatch.setattr(result_rows, "ranked_by_key", broken)
    with pytest.raises(OSError, match="went away"):
        campaign_results(pair, "A")
    assert gc.isenabled()


def overlapping(first_ends_first: bool) -> list[bool]:
    """Two reads on two threads, the second starting while the first runs: whether the collector was on at each
    step (both running, one of them ended, both ended)."""
    import threading

    from evalcore.campaigns.result_rows import no_cycle_collection

    seen: list[bool] = []
    started, step, done = threading.Event(), threading.Event(), threading.Event()

    def second() -> None:
        with no_cycle_collection():
            started.set()
            step.wait(5)
        done.set()

    with no_cycle_collection():
        worker = threading.Thread(target=second)
        worker.start()
        started.wait(5)
        seen.append(gc.isenabled())
        if not first_ends_first:
            step.set()
            done.wait(5)
            seen.append(gc.isenabled())
    if first_ends_first:
        seen.append(gc.isenabled())
        step.set()
        done.wait(5)
    worker.join(5)
    seen.append(gc.isenabled())
    return seen


@pytest.mark.parametrize("first_ends_first", [True, False])
def test_overlapping_reads_on_two_threads_keep_the_collector_paused_until_the_last_ends(first_ends_first):
    # Each read saving and restoring the switch on its own turned it back on under the other read.
    assert overlapping(first_ends_first) == [False, False, True]


def test_a_collector_turned_off_elsewhere_stays_off_after_a_read():
    from evalcore.campaigns.result_rows import no_cycle_collection

    gc.disable()
    try:
        with no_cycle_collection():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_pause_ends_after_its_limit_even_when_reads_keep_overlapping(monkeypatch):
    from evalcore.campaigns import result_rows
    from evalcore.runtime import memory

    monkeypatch.setattr(memory.CollectorPause, "MAX_PAUSE_S", 0.0)
    with result_rows.no_cycle_collection():
        assert not gc.isenabled()   # the first read pauses it
        with result_rows.no_cycle_collection():
            assert gc.isenabled()   # a read starting after the limit finds the collector running again
        assert gc.isenabled()
    assert gc.isenabled()
    with result_rows.no_cycle_collection():
        assert not gc.isenabled()   # with no read left, the next one pauses it anew


def test_a_dataset_s_passages_and_questions_are_made_without_the_collector(tmp_path, monkeypatch):
    from evalcore.datasets import loader
    from tests.test_campaigns import many_questions

    folder = many_questions(tmp_path / "data", 300)
    made = loader._assemble
    within = []

    def assemble(*args, **kwargs):
        within.append(gc.isenabled())
        return made(*args, **kwargs)

    monkeypatch.setattr(loader, "_assemble", assemble)
    assert gc.isenabled()
    dataset = loader.load_dataset(folder)
    assert len(dataset.questions) == 300
    assert within == [False]   # paused while they are made
    assert gc.isenabled()   # and back on after
