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
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Protocol

from evalcore.campaigns.answering import Plan, answer_question, timed_out_text
from evalcore.campaigns.records import Outcome, Question
from evalcore.models.http import Calls
from evalcore.targets.knowledge import Progress

WAKE_S = 0.25
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
    given up) drops its late outcome, so each question is collected once.
    """

    def __init__(self, time_limit: float, calls: Calls | None = None) -> None:
        self.time_limit = time_limit
        self.calls = calls or Calls()  # the campaign's: each question's own calls are under it
        self._deadlines: dict[int, float] = {}  # position -> time.monotonic() deadline (inf: not started yet)
        self._questions: dict[int, Calls] = {}  # position -> the calls of a question answered on a thread here
        self._done: queue.Queue[tuple[int, Outcome]] = queue.Queue()
        self._lock = threading.Lock()
        # The threads questions are answered on, kept for the next question once theirs is done (starting a thread
        # costs more CPU than some questions): how many wait for one, what they are handed, whether it all ended.
        self._idle = 0
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._closed = False

    def __len__(self) -> int:
        return len(self._deadlines)

    def wait_for(self, positions: Iterable[int]) -> None:
        """Questions handed over that have not started: no deadline yet."""
        with self._lock:
            self._deadlines.update((position, math.inf) for position in positions)

    def run(self, position: int, work: Callable[[], Outcome], seconds: float) -> None:
        """Do `work` on a daemon thread (a free one, else a new one), due within `seconds`."""
        calls = Calls(self.calls)
        item = (position, calls, work)
        with self._lock:
            self._deadlines[position] = time.monotonic() + seconds
            self._questions[position] = calls
            waiting = self._idle > 0
            if waiting:
                self._idle -= 1
                self._work.put(item)
        # A thread that waits for a question takes it; else a new daemon thread. A question past its limit is given
        # up (its connections shut, so its thread is free at once) without holding a slot or blocking the end of the
        # run; the threads end when the campaign does (close) or when no question came for IDLE_S.
        if not waiting:
            threading.Thread(target=self._answer, args=(item,), daemon=True, name=f"question-{position}").start()

    def _answer(self, item: _Work | None) -> None:
        """Answer questions on this thread, the given one first, then each handed to it, until none comes."""
        while item is not None:
            position, calls, work = item
            with calls.active():
                outcome = work()
            item = self._next((position, outcome))

    def _next(self, finished: tuple[int, Outcome]) -> _Work | None:
        """Hand a question's outcome back, then wait for the next question, or None when the thread should end.
        The thread counts as free before its outcome is seen, so the question that replaces it comes to it."""
        with self._lock:
            closed = self._closed
            if not closed:
                self._idle += 1
        self._done.put(finished)
        if closed:
            return None
        while True:
            try:
                return self._work.get(timeout=IDLE_S)   # None: the campaign ended
            except queue.Empty:
                with self._lock:   # unless a question was handed to it meanwhile, the thread ends
                    if self._work.empty():
                        self._idle -= 1
                        return None

    def put(self, position: int, outcome: Outcome) -> None:
        """An outcome known without further work."""
        self._done.put((position, outcome))

    def drop(self, positions: Iterable[int]) -> None:
        """Questions given up: whatever comes back for them is ignored."""
        positions = list(positions)
        with self._lock:
            for position in positions:
                self._deadlines.pop(position, None)
        self._give_up(positions)

    def _give_up(self, positions: Iterable[int]) -> None:
        """Shut the connections of questions no longer in flight (their threads end at once)."""
        with self._lock:
            given_up = [calls for position in positions if (calls := self._questions.pop(position, None))]
        for calls in given_up:
            calls.close()

    def close(self) -> None:
        """Give up every question still asking, close the connections the campaign's clients keep, and end the
        threads waiting for a question (those still answering one end after it)."""
        with self._lock:
            self._closed = True
            for _ in range(self._idle):
                self._work.put(None)
            self._idle = 0
        self.calls.close()

    def collect(self) -> Finished:
        """Outcomes that arrived (waiting at most until the next deadline), then the questions past theirs."""
        return self._arrived() + self._expired()

    def _arrived(self) -> Finished:
        with self._lock:
            if not self._deadlines:
                return []
            wait = min(WAKE_S, max(min(self._deadlines.values()) - time.monotonic(), 0.0))
        try:
            arrived = [self._done.get(timeout=wait)]
        except queue.Empty:
            return []
        while not self._done.empty():
            arrived.append(self._done.get_nowait())
        with self._lock:
            for position, _ in arrived:
                self._questions.pop(position, None)
            # A question already recorded as timed out is no longer in flight: its late reply is dropped.
            return [(position, outcome) for position, outcome in arrived
                    if self._deadlines.pop(position, None) is not None]

    def _expired(self) -> Finished:
        now = time.monotonic()
        with self._lock:
            expired = [position for position, deadline in self._deadlines.items() if deadline <= now]
            for position in expired:
                del self._deadlines[position]
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
    """Each question asked, scored and judged on a thread of this process, `concurrency` at a time."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.in_flight = InFlight(plan.options.time_limit, plan.calls)

    def prepare(self, progress: Progress) -> None:
        """Index the corpus here (from the disk cache when possible)."""
        self.plan.target.prepare(self.plan.passages, progress=progress)

    def room(self) -> int:
        """Free slots under the concurrency."""
        return self.plan.options.concurrency - len(self.in_flight)

    def submit(self, questions: Sequence[Question]) -> None:
        """Each question on a thread (InFlight.run), due within the time limit."""
        for question in questions:
            self.in_flight.run(question.position, partial(answer_question, self.plan, question),
                               self.plan.options.time_limit)

    def cancel(self) -> None:
        """Nothing to give up: every submitted question has started (it finishes or times out)."""

    def close(self) -> None:
        """Give up the questions still asking; close the connections the campaign held."""
        self.in_flight.close()
