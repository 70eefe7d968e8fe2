"""Questions in flight on this machine's threads, at most `threads` answered at once: the others wait, without a
deadline, and the first thread free takes the next itself; a failure holds the rest until it was collected; a
question stuck past its time limit gives its place to a new thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from evalcore.campaigns.executors import InFlight
from evalcore.campaigns.records import Outcome


class Work:
    """Questions' work that records when it ran, and on how many threads at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: list[int] = []
        self.running = 0
        self.most = 0

    def of(self, position: int, seconds: float = 0.0, *, fails: bool = False,
           gate: threading.Event | None = None) -> Callable[[], Outcome]:
        def work() -> Outcome:
            with self.lock:
                self.started.append(position)
                self.running += 1
                self.most = max(self.most, self.running)
            if gate is not None:
                gate.wait(30)
            time.sleep(seconds)
            with self.lock:
                self.running -= 1
            return Outcome.failed(f"failure {position}", seconds) if fails else Outcome(answer=f"answer {position}")
        return work


def collect_all(in_flight: InFlight, seconds: float = 20) -> dict[int, Outcome]:
    """Collect until nothing is in flight."""
    collected: dict[int, Outcome] = {}
    deadline = time.monotonic() + seconds
    while len(in_flight) and time.monotonic() < deadline:
        for position, outcome in in_flight.collect():
            assert position not in collected, f"question {position} collected twice"
            collected[position] = outcome
    assert not len(in_flight), "questions still in flight"
    return collected


def until(condition: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def gated_then_waiting(in_flight: InFlight, waiting: int, seconds: float) -> tuple[Work, threading.Event]:
    """Question 0 on the one thread until the gate opens, then `waiting` questions handed over behind it."""
    work, gate = Work(), threading.Event()
    in_flight.run(0, work.of(0, gate=gate), seconds)
    for position in range(1, waiting + 1):
        in_flight.run(position, work.of(position), seconds)
    return work, gate


def test_questions_past_the_threads_wait_and_the_first_thread_free_takes_the_next_without_the_collector() -> None:
    work, in_flight = Work(), InFlight(60.0, threads=2)
    for position in range(12):
        in_flight.run(position, work.of(position, 0.01), 60.0)
    # Nothing is collected meanwhile: the threads take the waiting questions themselves, two at a time.
    assert until(lambda: len(work.started) == 12 and work.running == 0), work.started
    assert work.most == 2
    assert sorted(work.started) == list(range(12))
    assert work.started[2:] == sorted(work.started[2:])
    collected = collect_all(in_flight)
    assert {position: outcome.answer for position, outcome in collected.items()} == {
        position: f"answer {position}" for position in range(12)}
    in_flight.close()


def test_a_question_waiting_for_a_thread_has_no_deadline_until_it_starts() -> None:
    # Four questions of 0.3 s on one thread under a 0.6 s limit: counted from when they were handed over, the
    # third and fourth would be past it; each is within it from its own start.
    work, in_flight = Work(), InFlight(0.6, threads=1)
    for position in range(4):
        in_flight.run(position, work.of(position, 0.3), 0.6)
    collected = collect_all(in_flight)
    assert {position: outcome.error for position, outcome in collected.items()} == dict.fromkeys(range(4))
    assert work.most == 1
    in_flight.close()


@pytest.mark.parametrize("handed", ["before the failure", "after it"])
def test_after_a_failure_no_question_starts_until_the_collector_has_seen_it(handed: str) -> None:
    work, in_flight = Work(), InFlight(60.0, threads=1)
    in_flight.run(0, work.of(0, fails=True), 60.0)
    if handed == "after it":  # the thread is free again, but the failure is not collected yet
        assert until(lambda: work.started == [0] and work.running == 0)
        time.sleep(0.1)
    for position in range(1, 4):
        in_flight.run(position, work.of(position), 60.0)
    assert until(lambda: work.started[:1] == [0] and work.running == 0)
    time.sleep(0.3)  # time for the thread to have taken the next one, were it going to
    assert work.started == [0]
    first = in_flight.collect()
    assert [(position, outcome.error) for position, outcome in first] == [(0, "failure 0")]
    assert work.started == [0]  # the collector may still stop the campaign here: nothing more has started
    collected = collect_all(in_flight)
    assert sorted(collected) == [1, 2, 3]
    assert work.started == [0, 1, 2, 3]
    in_flight.close()


def test_the_waiting_questions_given_up_never_start() -> None:
    in_flight = InFlight(60.0, threads=1)
    work, gate = gated_then_waiting(in_flight, 4, 60.0)
    assert until(lambda: work.started == [0])
    in_flight.drop_waiting()
    assert len(in_flight) == 1
    gate.set()
    assert list(collect_all(in_flight)) == [0]
    time.sleep(0.2)
    assert work.started == [0]
    in_flight.close()


def test_a_question_stuck_past_its_limit_gives_its_thread_place_to_the_next_and_its_late_outcome_is_dropped() -> None:
    in_flight = InFlight(0.5, threads=1)
    work, gate = gated_then_waiting(in_flight, 3, 0.5)
    collected = collect_all(in_flight)
    assert collected[0].error == "timed out after 0.5 s"
    assert {position: collected[position].error for position in (1, 2, 3)} == dict.fromkeys((1, 2, 3))
    gate.set()  # the stuck question ends; what it returns is no longer wanted, and its thread takes nothing more
    assert until(lambda: work.running == 0)
    in_flight.run(4, work.of(4), 0.5)
    assert list(collect_all(in_flight)) == [4]
    assert work.most == 2  # the stuck question and the one that took its place; never more
    in_flight.close()


def test_without_a_thread_limit_every_question_starts_at_once() -> None:
    work, in_flight, gate = Work(), InFlight(60.0), threading.Event()
    for position in range(6):
        in_flight.run(position, work.of(position, gate=gate), 60.0)
    assert until(lambda: work.running == 6)
    gate.set()
    assert sorted(collect_all(in_flight)) == list(range(6))
    in_flight.close()


def test_once_stopped_no_waiting_question_starts() -> None:
    stopped = threading.Event()
    in_flight = InFlight(60.0, threads=1, stopped=stopped)
    work, gate = gated_then_waiting(in_flight, 3, 60.0)
    assert until(lambda: work.started == [0])
    stopped.set()  # a cancel: the question answered finishes, no other starts
    gate.set()
    assert until(lambda: work.running == 0)
    assert [position for position, _ in in_flight.collect()] == [0]
    time.sleep(0.2)
    assert in_flight.collect() == []
    assert work.started == [0]
    in_flight.drop_waiting()
    assert not len(in_flight)
    in_flight.close()
