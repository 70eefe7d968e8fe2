"""Where a campaign's questions are answered: the seam between the runner and the machines doing the work.

The runner keeps the questions and the store; an executor takes questions (`submit`, as many as
`room()` allows) and hands back their outcomes (`collect`), each question once, under its time
limit. `LocalExecutor` answers each question on a thread of this process; `cluster.DaskExecutor`
asks a Dask cluster and scores the replies here.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Protocol

from evalcore.campaigns.answering import Plan, answer_question, know_tokens, timed_out_text
from evalcore.campaigns.records import Outcome, Question
from evalcore.models.http import Calls
from evalcore.targets.knowledge import Progress

WAKE_S = 0.25
AHEAD = 32  # questions handed to a local executor beyond its concurrency, waiting for the first thread free
IDLE_S = 2.0  # a question's thread waits this long for the next question before it ends
Finished = list[tuple[int, Outcome]]  # (question position, outcome)
_Work = tuple[int, Calls, Callable[[], Outcome]]  # a question handed to a thread: position, its calls, the work


class Executor(Protocol):
    """What the runner drives: prepare, submit, collect, cancel, close."""

    def prepare(self, progress: Progress) -> None:
        """Get the target ready (the knowledge base indexed); `progress` may raise to stop."""

    def room(self) -> int:
        """How many more questions may be submitted now."""

    def submit(self, questions: Sequence[Question]) -> None:
        """Start answering these questions."""

    def collect(self) -> Finished:
        """Outcomes that arrived or timed out, waiting a little for one; each question's once."""

    @property
    def busy(self) -> bool:
        """Some question is still in flight."""

    def cancel(self) -> None:
        """Give up what has not started, where it can be given up (a started question finishes or times out)."""

    def close(self) -> None:
        """Release what the executor holds."""


class InFlight:
    """Questions started and not yet collected: each one's deadline, and the outcomes that came back.

    Thread-safe: outcomes may come from any thread. A question no longer in flight (timed out,
    given up) drops its late outcome, so each question is collected once. With `threads`, at most
    that many questions are answered at once; the others handed over wait, not started and with no
    deadline yet, and the first thread free takes the next of them itself, without waiting for the
    collector. After a failure (or a question past its limit), no waiting question starts until
    the collector has been handed it, so a campaign that must stop on its failures starts nothing
    more meanwhile; once `stopped` is set (a cancel), none starts at all.
    """

    def __init__(self, time_limit: float, calls: Calls | None = None, threads: int | None = None,
                 low: int = 0, stopped: threading.Event | None = None) -> None:
        self.time_limit = time_limit
        self.calls = calls or Calls()  # the campaign's: each question's own calls are under it
        self.threads = threads  # questions answered at once (None: every one handed over, at once)
        # A success wakes the collector only once at most this many questions wait for a thread: until then the
        # threads have work, and each wake-up costs the threads the GIL (it then comes within WAKE_S).
        self.low = low
        self.stopped = stopped or threading.Event()  # once set (a cancel), no waiting question starts
        self._deadlines: dict[int, float] = {}  # position -> time.monotonic() deadline (inf: not started yet)
        self._questions: dict[int, Calls] = {}  # position -> the calls of a question answered on a thread here
        self._lock = threading.Lock()
        self._done: list[tuple[int, Outcome]] = []  # outcomes not collected yet
        self._arrival = threading.Condition(self._lock)  # the collector is woken by this
        # The threads questions are answered on, kept for the next question once theirs is done (starting a thread
        # costs more CPU than some questions): how many wait for one, what they are handed, whether it all ended.
        self._idle = 0
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._closed = False
        self._answering = 0  # threads answering a question not given up
        self._waiting: deque[tuple[_Work, float]] = deque()  # handed over past `threads`: each with its seconds
        self._held = False  # a failure came back: questions waiting start once the collector was handed it
        self._unseen = 0  # failures come back and not collected yet

    def __len__(self) -> int:
        return len(self._deadlines)

    def wait_for(self, positions: Iterable[int]) -> None:
        """Questions handed over that have not started: no deadline yet."""
        with self._lock:
            self._deadlines.update((position, math.inf) for position in positions)

    def run(self, position: int, work: Callable[[], Outcome], seconds: float) -> None:
        """Do `work` on a daemon thread (a free one, else a new one), due within `seconds` of its start; past
        `threads` answering (or while a failure is held), once one of them is free."""
        calls = Calls(self.calls)
        item = (position, calls, work)
        with self._lock:
            self._questions[position] = calls
            if self.threads is not None and (self._held or self._answering >= self.threads or self._waiting):
                self._deadlines[position] = math.inf
                self._waiting.append((item, seconds))
                return
            self._begin(item, seconds)
            waiting = self._idle > 0
            if waiting:
                self._idle -= 1
                self._work.put(item)
        # A thread that waits for a question takes it; else a new daemon thread. A question past its limit is given
        # up (its connections shut, so its thread is free at once) without holding a slot or blocking the end of the
        # run; the threads end when the campaign does (close) or when no question came for IDLE_S.
        if not waiting:
            self._thread(item)

    def _begin(self, item: _Work, seconds: float) -> None:
        """A question starts (the lock held): its deadline counts from now."""
        self._deadlines[item[0]] = time.monotonic() + seconds
        self._answering += 1

    def _thread(self, item: _Work) -> None:
        threading.Thread(target=self._answer, args=(item,), daemon=True, name=f"question-{item[0]}").start()

    def _answer(self, item: _Work | None) -> None:
        """Answer questions on this thread, the given one first, then each handed to it, until none comes."""
        while item is not None:
            position, calls, work = item
            with calls.active():
                outcome = work()
            item = self._next((position, outcome))

    def _next(self, finished: tuple[int, Outcome]) -> _Work | None:
        """Hand a question's outcome back, then take the next question waiting, or wait to be handed one; None
        when the thread should end. The thread counts as free before its outcome is seen, so the question that
        replaces it comes to it. A thread whose question was given up ends: a new one took its place."""
        position, outcome = finished
        item = None
        with self._lock:
            self._done.append(finished)
            self._unseen += outcome.error is not None
            if outcome.error is not None or len(self._waiting) <= self.low:
                self._arrival.notify()
            closed = self._closed
            given_up = position not in self._deadlines
            if not given_up:
                self._answering -= 1
                self._questions.pop(position, None)  # nothing of it is left to shut
                if outcome.error is not None:
                    self._held = True
                if not closed and self._waiting and not self._held and not self.stopped.is_set():
                    item, seconds = self._waiting.popleft()
                    self._begin(item, seconds)
                elif not closed:
                    self._idle += 1
        if item is not None:
            return item
        if closed or given_up:
            return None
        while True:
            try:
                return self._work.get(timeout=IDLE_S)   # None: the campaign ended
            except queue.Empty:
                with self._lock:   # unless a question was handed to it meanwhile, the thread ends
                    if self._work.empty():
                        self._idle -= 1
                        return None

    def _start_waiting(self) -> None:
        """Start the questions waiting that have a thread now (the lock held): on the free threads, else new ones."""
        if self.threads is None or self.stopped.is_set():
            return
        while self._waiting and self._answering < self.threads:
            item, seconds = self._waiting.popleft()
            self._begin(item, seconds)
            if self._idle > 0:
                self._idle -= 1
                self._work.put(item)
            else:
                self._thread(item)

    def put(self, position: int, outcome: Outcome) -> None:
        """An outcome known without further work."""
        with self._lock:
            self._done.append((position, outcome))
            self._unseen += outcome.error is not None
            self._arrival.notify()

    def drop(self, positions: Iterable[int]) -> None:
        """Questions given up: whatever comes back for them is ignored."""
        self._give_up(list(positions))

    def drop_waiting(self) -> None:
        """Give up the questions handed over that have not started."""
        with self._lock:
            positions = [item[0] for item, _ in self._waiting]
            self._waiting.clear()
        self._give_up(positions)

    def _give_up(self, positions: list[int]) -> None:
        """Forget these questions, and shut the connections of those still asking (their threads end at once); a
        thread answering one no longer counts, so the questions waiting may start (with the next `collect`)."""
        with self._lock:
            dropped = set(positions)
            if self._waiting and dropped:
                self._waiting = deque(entry for entry in self._waiting if entry[0][0] not in dropped)
            given_up = []
            for position in positions:
                deadline = self._deadlines.pop(position, None)
                if (calls := self._questions.pop(position, None)) is not None:
                    given_up.append(calls)
                    if deadline is not None and deadline != math.inf:  # its thread is still answering it
                        self._answering -= 1
                        self._held = True  # counted as a failure: the collector sees it first
        for calls in given_up:
            calls.close()

    def close(self) -> None:
        """Give up every question still asking, close the connections the campaign's clients keep, and end the
        threads waiting for a question (those still answering one end after it)."""
        with self._lock:
            self._closed = True
            self._waiting.clear()
            for _ in range(self._idle):
                self._work.put(None)
            self._idle = 0
        self.calls.close()

    def collect(self) -> Finished:
        """Outcomes that arrived (waiting at most until the next deadline), then the questions past theirs. The
        questions waiting for a thread that a failure held back start first: their collector has seen it."""
        with self._lock:
            if self._held and not self._unseen:
                self._held = False
                self._start_waiting()
        return self._arrived() + self._expired()

    def _arrived(self) -> Finished:
        with self._lock:
            if not self._deadlines:
                return []
            if not self._done:
                self._arrival.wait(min(WAKE_S, max(min(self._deadlines.values()) - time.monotonic(), 0.0)))
            arrived, self._done = self._done, []
            self._unseen -= sum(outcome.error is not None for _, outcome in arrived)
            # A question already recorded as timed out is no longer in flight: its late reply is dropped.
            return [(position, outcome) for position, outcome in arrived
                    if self._deadlines.pop(position, None) is not None]

    def _expired(self) -> Finished:
        now = time.monotonic()
        with self._lock:
            expired = [position for position, deadline in self._deadlines.items() if deadline <= now]
        self._give_up(expired)
        outcome = Outcome.failed(timed_out_text(self.time_limit), self.time_limit)
        return [(position, outcome) for position in expired]


class Tracked:
    """What the executors share: the questions in flight, collected once each, and whether any is left."""

    in_flight: InFlight

    def collect(self) -> Finished:
        """What finished, failed or timed out."""
        return self.in_flight.collect()

    @property
    def busy(self) -> bool:
        """A question is in flight (being answered, or its reply being scored)."""
        return len(self.in_flight) > 0


class LocalExecutor(Tracked):
    """Each question asked, scored and judged on a thread of this process, `concurrency` at a time. AHEAD more
    wait for a thread, which takes the next as soon as its question is done; the collector is woken once a
    quarter of those are left (or on a failure), not for every question: each wake-up takes the GIL from the
    threads."""

    def __init__(self, plan: Plan, stopped: threading.Event | None = None) -> None:
        self.plan = plan
        self.in_flight = InFlight(plan.options.time_limit, plan.calls, threads=plan.options.concurrency,
                                 low=AHEAD // 4, stopped=stopped)

    def prepare(self, progress: Progress) -> None:
        """Index the corpus here (from the disk cache when possible)."""
        self.plan.target.prepare(self.plan.passages, progress=progress)
        know_tokens(self.plan, progress)

    def room(self) -> int:
        """Free slots under the concurrency, and among those waiting for a thread."""
        return self.plan.options.concurrency + AHEAD - len(self.in_flight)

    def submit(self, questions: Sequence[Question]) -> None:
        """Each question on a thread (InFlight.run), due within the time limit from its start."""
        for question in questions:
            self.in_flight.run(question.position, partial(answer_question, self.plan, question),
                               self.plan.options.time_limit)

    def cancel(self) -> None:
        """Give up the questions not started; those started finish or time out."""
        self.in_flight.drop_waiting()

    def close(self) -> None:
        """Give up the questions still asking; close the connections the campaign held."""
        self.in_flight.close()
