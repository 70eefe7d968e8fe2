"""Running one campaign: questions in parallel, each under a time limit, results written as they finish."""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from evalcore.campaigns.answering import Plan, error_text
from evalcore.campaigns.budget import Budget
from evalcore.campaigns.executors import Executor, LocalExecutor
from evalcore.campaigns.pace import Window
from evalcore.campaigns.questions import stored_questions
from evalcore.campaigns.records import Outcome, Question
from evalcore.campaigns.result_rows import NotOwner, ResultWriter
from evalcore.campaigns.turn_order import Conversations, stored_answers, talking
from evalcore.errors import EvalError
from evalcore.runtime.memory import campaign_collection, give_back
from evalcore.store import HEARTBEAT_S, Connection, Store, StoreUnavailable, campaign_rows, lease_s
from evalcore.store.campaign_statuses import CampaignStatus

log = logging.getLogger("evalcore.campaigns")
T = TypeVar("T")
# Questions finished within this many seconds of the first one unwritten are written together (at most SAVE_ROWS).
SAVE_S = 0.1
SAVE_ROWS = 64
# A write that cannot reach the store is tried again for this share of the lease, and an owner whose heartbeat
# could not be written for as long gives its campaign up: both before another worker may take it over.
STORE_SHARE = 2 / 3
BACKOFF_S = (0.05, 2.0)  # the first wait between tries of a write, and the longest


class CampaignGone(Exception):
    """The campaign's row was deleted while it ran (its suite or itself was deleted), or another process took it
    over."""


class CancelledDuringSetup(Exception):
    """A cancel arrived while the knowledge base was being built."""


class StoreLost(Exception):
    """The store could not be reached for longer than a runner waits: the campaign is given up (back to the queue
    when workers run it, to be resumed when the store is back)."""


def write_patiently(store: Store, fn: Callable[[Connection], T], deadline: float,
                    sleep: Callable[[float], object] = time.sleep) -> T:
    """store.write(fn), tried again with exponential back-off (full jitter) while the store cannot be reached,
    until the monotonic `deadline`; StoreLost then."""
    attempt = 0
    while True:
        try:
            return store.write(fn)
        except StoreUnavailable as error:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreLost(str(error)) from None
            log.warning("the store cannot be reached (%s); trying again", error)
            sleep(min(left, random.uniform(0, min(BACKOFF_S[0] * 2 ** attempt, BACKOFF_S[1]))))
            attempt += 1


class Runner:
    """Runs a plan on its own thread, through an executor (this machine's threads by default); setting
    `cancelled` stops dispatching."""

    def __init__(self, store: Store, plan: Plan, after: Sequence[Callable[[Store, str], object]] = (),
                 executor: Executor | None = None, ended: Callable[[Runner], object] | None = None) -> None:
        self.store = store
        self.ended = ended  # told once the campaign ended, however (its owner then forgets this runner)
        self.lost = False  # it stopped because the campaign was deleted or another process took it over
        self.plan = plan
        self.after = tuple(after)  # called with the campaign id once it ended (not cancelled), off its thread
        self.cancelled = threading.Event()
        # A cancel stops the threads from taking the questions handed to them ahead as soon as it is set.
        self.executor = executor or LocalExecutor(plan, stopped=self.cancelled)
        self.released = threading.Event()  # stopped to be resumed elsewhere: back to the queue, not cancelled
        self.store_lost = False  # released because the store could not be reached for too long
        self.thread = threading.Thread(target=self.run, name=f"campaign-{plan.campaign_id}", daemon=True)
        self._failed = 0
        self._finished = 0  # the campaign's stored questions, after this session's last write
        self._writer = ResultWriter(store, plan.campaign_id, plan.owner_token, shared=plan.answers_from is not None)
        self._stage_written = 0.0
        self._step: str | None = None  # the index build's step being reported
        self._stage: tuple[object, ...] = ()  # its latest report (stage, done, total, pace), stored by the heartbeat
        self._stage_lock = threading.Lock()  # the campaign thread and the heartbeat write the stage in turn
        self._asking = False  # the questions' stage has started
        self._budget: Budget  # what it has spent, against its budgets (read once the target is ready)
        self._pace = Window()
        self._ended = threading.Event()
        self._beats = threading.Thread(target=self._beat_loop, name=f"heartbeat-{plan.campaign_id}", daemon=True)

    def start(self) -> None:
        """Start the campaign thread."""
        self.thread.start()

    def release(self) -> None:
        """Stop as a cancel does, but put the campaign back in the queue for another worker to resume."""
        self.released.set()
        self.cancelled.set()

    def hand_back(self) -> None:
        """Put the campaign back in the queue now, while a question still holds its thread (a target's call that
        cannot be interrupted): another worker resumes it from what was stored; what this runner finishes later is
        not written (the campaign no longer has its owner token). Its heartbeat stops."""
        self._ended.set()
        campaign_id, token, hits, now = self.plan.campaign_id, self.plan.owner_token, self._cache_hits(), time.time()
        try:  # once, not patiently: the process is closing (a campaign ended or taken over meanwhile is left)
            self.store.write(lambda conn: campaign_rows.finish_session(conn, campaign_id, token, CampaignStatus.QUEUED,
                                                                       0, None, now, hits))
        except StoreUnavailable:
            log.warning("campaign %s not handed back: the store cannot be written (its lease runs out)",
                        self.plan.campaign_id)

    def run(self) -> None:
        """Set up the target, run every question, record how the campaign ended; then release what it held."""
        try:
            with campaign_collection():
                self._record()
        finally:
            if self.ended is not None:
                self.ended(self)
            give_back()  # what the campaign's questions allocated goes back to the system, not kept by malloc

    def _record(self) -> None:
        try:
            status, error = self._run()
        except CampaignGone:
            self.lost = True
            return
        finally:
            self._ended.set()
            self.executor.close()
        if status == CampaignStatus.CANCELLED and self.released.is_set():
            status = CampaignStatus.QUEUED
        try:
            self._finish(status, error)
        except CampaignGone:
            self.lost = True
            return
        except StoreLost:  # its lease runs out: a worker puts it back in the queue once the store answers
            log.warning("campaign %s given up: the store cannot be reached", self.plan.campaign_id)
            self.lost = True
            return
        if self.after and not status.active and status != CampaignStatus.CANCELLED:
            # Off this thread: whoever waits for the campaign does not wait for what follows it.
            threading.Thread(target=self._after, name=f"after-{self.plan.campaign_id}", daemon=True).start()

    def _after(self) -> None:
        """The hooks of the layers above (e.g. comparing with the previous campaign); a broken one is logged."""
        for hook in self.after:
            try:
                hook(self.store, self.plan.campaign_id)
            except Exception:
                log.exception("after %s", self.plan.campaign_id)

    def _run(self) -> tuple[CampaignStatus, str | None]:
        try:
            return self._steps()
        except StoreLost:
            self._give_up()
            self.executor.cancel()
            return CampaignStatus.CANCELLED, None

    def _give_up(self) -> None:
        """The store could not be reached for too long: stop asking, to be resumed (what was stored is kept)."""
        self.store_lost = True
        self.release()

    def _steps(self) -> tuple[CampaignStatus, str | None]:
        try:
            self._set_up()
        except (CampaignGone, StoreLost):
            raise
        except CancelledDuringSetup:
            return CampaignStatus.CANCELLED, None
        except Exception as failure:  # noqa: BLE001 - a broken setup fails the campaign, with its reason
            return CampaignStatus.FAILED, f"setup failed: {error_text(failure)}"
        try:
            return self._dispatch()
        except (CampaignGone, StoreLost):
            raise
        except Exception as failure:  # noqa: BLE001 - e.g. the disk is full: stop, keep what was stored
            return CampaignStatus.FAILED, f"stopped: {error_text(failure)}"

    def _set_up(self) -> None:
        now = time.time()
        self._update(lambda conn, token: campaign_rows.start_session(conn, self.plan.campaign_id, token, now))
        self._beats.start()
        self.executor.prepare(self._preparing)
        self._budget = Budget(self.store, self.plan.campaign_id, self.plan.target.config.execution.max_cost)
        self._questions_start()

    def _preparing(self, done: int, total: int, step: str = "indexing the corpus") -> None:
        """Progress of the index build: stored (at once for a new step, else at most every half second) with
        the base of its recent rate, and a chance to cancel."""
        if self.cancelled.is_set():
            raise CancelledDuringSetup
        now = time.time()
        new_step = step != self._step
        self._step = step
        pace = self._pace.restart(now, done) if new_step else self._pace.sample(now, done)
        with self._stage_lock:
            self._stage = (step, done, total, *pace)
            if new_step or done == total or now - self._stage_written >= 0.5:
                self._stage_written = now
                stage = self._stage
                self._update(lambda conn, token: campaign_rows.set_stage(conn, self.plan.campaign_id, token, stage))

    def _questions_start(self) -> None:
        """The index is ready: no stage any more, and the questions' rate counts from now."""
        now = time.time()

        def start(conn: Connection) -> int:
            finished = campaign_rows.start_questions(conn, self.plan.campaign_id, self.plan.owner_token, now)
            if finished is None:
                raise CampaignGone  # deleted, or taken over by another process
            return finished

        with self._stage_lock:
            self._stage = ()
            self._pace.restart(now, self._write(start))
            self._asking = True

    def _dispatch(self) -> tuple[CampaignStatus, str | None]:
        pending, executor = self._pending(), self.executor
        by_position = {question.position: question for question in self.plan.questions}
        unsaved: list[tuple[Question, Outcome]] = []  # finished, to be written with those that follow them
        since = 0.0  # when the oldest of them finished
        stop = self._stop_reason()  # a cancel may have come during the setup (a long index build)
        # At its budget a campaign asks no more questions, but those in flight finish and are stored: paid for.
        spent = self._budget.reason()
        while (pending and stop is None and spent is None) or executor.busy:
            self._fill(pending, stop or (spent and spent[1]))
            finished = executor.collect()
            stop = stop or self._stop_reason()  # a cancel may have come while waiting
            self._budget.add(outcome for _, outcome in finished)
            if spent is None and (spent := self._budget.reason()) is not None:
                executor.cancel()  # the questions waiting for a thread are not asked; those asked finish
            # Refill the freed slots before the (serialised) write, so questions never wait on the disk;
            # not after a failure, which may cross the failed-share limit once counted.
            succeeded = all(outcome.error is None for _, outcome in finished)
            if succeeded:
                self._fill(pending, stop or (spent and spent[1]))
            if finished and not unsaved:
                since = time.monotonic()
            unsaved += [(by_position[position], outcome) for position, outcome in finished]
            # A failed turn's followers, when their history would hold its answer: recorded as not asked.
            unsaved += [pair for position, outcome in finished for pair in pending.finished(by_position[position],
                                                                                           outcome)]
            # One transaction for the questions that finished within SAVE_S of each other (each commit costs
            # more than a row); at once after a failure (the failed share counts stored rows), when nothing came
            # back (the questions in flight are slow), when the batch is full, and at the end.
            if unsaved and (not succeeded or not finished or len(unsaved) >= SAVE_ROWS or stop is not None
                            or not executor.busy or time.monotonic() - since >= SAVE_S):
                self._save(unsaved)
                unsaved = []
            stop = stop or self._stop_reason()
            if stop is not None:
                executor.cancel()
        if unsaved:
            self._save(unsaved)
        if stop == CampaignStatus.CANCELLED:
            return CampaignStatus.CANCELLED, None
        if stop is not None:
            return CampaignStatus.FAILED, stop
        if spent is not None and self._finished < self.plan.total:
            return spent
        if self._failed:
            return CampaignStatus.SUCCEEDED_WITH_FAILURES, None
        return CampaignStatus.SUCCEEDED, None

    def _fill(self, pending: Conversations, stop: str | None) -> None:
        room = min(self.executor.room(), len(pending)) if stop is None else 0
        ready = pending.ready(room) if room > 0 else []
        if ready:
            self.executor.submit(ready)

    def _pending(self) -> Conversations:
        """The questions to ask, in the order they may be asked (a conversation's turns one at a time); for a resume
        or a retry, with the snapshot's earlier turns and their stored answers."""
        questions, config = self.plan.questions, self.plan.target.config
        if not talking(questions) or self.plan.answers_from is not None:
            return Conversations(questions, config)
        campaign = self.plan.campaign_id
        return Conversations(questions, config, stored_questions(self.store, campaign, "all"),
                             stored_answers(self.store, campaign))

    def _stop_reason(self) -> str | None:
        if self.cancelled.is_set():
            return CampaignStatus.CANCELLED.value
        share = self.plan.options.max_failed_share
        if self._failed > share * self.plan.total:
            return f"stopped when {self._failed} of {self.plan.total} questions had failed (more than {share:.0%})"
        return None

    def _cache_hits(self) -> int:
        return self.plan.cache_hits_before + (self.plan.cache.hits if self.plan.cache else 0)

    def _save(self, finished: list[tuple[Question, Outcome]]) -> None:
        """Store results (one transaction for all that arrived together) and move the counters."""
        rows, passages, signatures = self._writer.rows(finished)
        if not rows:  # every one of them was written already in this session
            return
        extra = {"cache_hits": self._cache_hits()}
        try:
            self._finished, self._failed = self._write(
                lambda conn: self._writer.write(conn, rows, passages, signatures, extra))
        except (sqlite3.IntegrityError, NotOwner):
            raise CampaignGone from None

    def _write(self, fn: Callable[[Connection], T]) -> T:
        """A write of this runner, tried again while the store cannot be reached, for part of the lease."""
        return write_patiently(self.store, fn, time.monotonic() + STORE_SHARE * lease_s())

    def _update(self, change: Callable[[Connection, str], int]) -> None:
        """An update of this campaign's row, given this runner's owner token (it changes the row only while the
        token holds it, and says how many rows it changed)."""
        if self._write(lambda conn: change(conn, self.plan.owner_token)) == 0:
            raise CampaignGone  # deleted, or taken over by another process: stop without writing

    def _beat_loop(self) -> None:
        """Heartbeat (even during a long setup), pick up a cancel asked by another process, slide the rate's window;
        give the campaign up when no heartbeat could be written for part of the lease (another worker takes it
        over once the lease runs out, and this one must have stopped by then)."""
        last = time.monotonic()
        while not self._ended.wait(HEARTBEAT_S):
            try:
                self._beat()
                last = time.monotonic()
            except (StoreUnavailable, StoreLost):
                if time.monotonic() - last >= STORE_SHARE * lease_s():
                    log.warning("campaign %s given up: no heartbeat written for %.0f s", self.plan.campaign_id,
                                time.monotonic() - last)
                    self._give_up()
                    return
            except (CampaignGone, EvalError, sqlite3.Error):  # deleted, or the store closed under it
                self.cancelled.set()
                return

    def _beat(self) -> None:
        """One heartbeat, its writes tried once (the loop keeps count of the time without one)."""
        campaign_id = self.plan.campaign_id
        row = campaign_rows.beat_row(self.store, campaign_id)
        if row is not None and row["cancel_requested"]:
            self.cancelled.set()
        if not (row is not None and self._asking):
            # The latest report of the index build, in case the half-second rule held it back before a long step.
            with self._stage_lock:
                moment, hits, stage = time.time(), self._cache_hits(), self._stage
                self._update(lambda conn, token: campaign_rows.beat(conn, campaign_id, token, moment, hits, stage))
            return
        # While questions run, each heartbeat samples their count: the pace the time left counts down from.
        now, hits = time.time(), self._cache_hits()
        pace = self._pace.sample(now, row["finished"])
        self._update(lambda conn, token: campaign_rows.beat_with_pace(conn, campaign_id, token, now, hits, pace))

    def _finish(self, status: CampaignStatus, error: str | None) -> None:
        """Record how the campaign ended; one given up for the store that no worker runs (its own process launched
        it, no queue takes it back) is interrupted instead, to be resumed."""
        now = time.time()
        lost = int(self.store_lost and status == CampaignStatus.QUEUED)
        if lost:
            error = "interrupted: the store could not be reached"
        hits = self._cache_hits()
        self._update(lambda conn, token: campaign_rows.finish_session(conn, self.plan.campaign_id, token, status, lost,
                                                                      error, now, hits))
