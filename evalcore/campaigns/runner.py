"""Running one campaign: questions in parallel, each under a time limit, results written as they finish."""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from collections import deque
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from evalcore import metrics
from evalcore.errors import EvalError
from evalcore.store import HEARTBEAT_S, Store, StoreCallCache, dumps

# Judges that compare the answer with the expected answer: skipped on questions without one.
NEEDS_EXPECTED = frozenset({"score", "completeness"})
WAKE_S = 0.25


class Item(NamedTuple):
    """One question of a campaign's snapshot."""

    position: int
    qid: int
    text: str
    expected_answer: str | None
    references: tuple[str, ...]
    relevant: dict[int, int] | None
    expected_sources: tuple[str, ...]


@dataclass
class Plan:
    """Everything a runner needs, validated before the campaign is accepted."""

    campaign_id: str
    target: Any
    passages: tuple
    items: list[Item]
    total: int
    concurrency: int
    time_limit: float
    max_failed_share: float
    judges: tuple[str, ...] = ()
    judge_model: Any = None
    cache: StoreCallCache | None = None
    cache_hits_before: int = 0
    judge_samples: int = 1  # each judge asked this many times; the verdict carries their spread


@cache
def measure_signature(name: str) -> str:
    """The signature of a registered measure (cached: it never changes within a process)."""
    return metrics.signature(name)


def error_text(error: BaseException) -> str:
    """One line for a question's error column."""
    if isinstance(error, EvalError):
        return error.line()
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _judge(plan: Plan, item: Item, answer: str, context: list[str]) -> tuple[dict, dict, dict, list[str]]:
    """Run each requested judge; a judge that breaks is noted, never fails the question."""
    from evalcore.judges import run_judge  # judges pull prompt machinery only when asked for

    measures, signatures, details, notes = {}, {}, {}, []
    for name in plan.judges:
        if name in NEEDS_EXPECTED and not item.expected_answer:
            continue
        try:
            verdict = run_judge(plan.judge_model, name, question=item.text, answer=answer, context=context,
                                expected=item.expected_answer, samples=plan.judge_samples)
        except Exception as error:  # noqa: BLE001 - recorded on the question, the campaign goes on
            notes.append(f"judge {name} failed: {error_text(error)}")
            continue
        details[name] = verdict
        if verdict.get("score") is not None:
            measures[f"judge.{name}"] = float(verdict["score"])
            signatures[f"judge.{name}"] = f"{verdict['signature']}|model:{verdict.get('model')}"
    return measures, signatures, details, notes


def answer_question(plan: Plan, item: Item) -> dict[str, Any]:
    """Ask the target, score the answer, judge it: the row to store (errors included, never raised)."""
    start = time.perf_counter()
    try:
        reply = plan.target.answer(item.text, qid=item.qid)
        latency = time.perf_counter() - start
        retrieved = [
            {"pid": r.pid, "source": getattr(r, "source", ""), "title": r.title, "text": r.text, "score": r.score,
             "stages": dict(r.stages)}
            for r in reply.retrieved
        ]
        sources = question_sources(retrieved)
        measures = metrics.score_question(
            relevant=item.relevant, ranked=[r["pid"] for r in retrieved], answer=reply.answer,
            references=list(item.references), expected_answer=item.expected_answer,
            expected_sources=list(item.expected_sources) or None, retrieved_sources=sources,
        )
        signatures = {name: measure_signature(name) for name in measures}
        notes = list(reply.notes)
        judges: dict = {}
        if plan.judges and reply.answer is not None:
            judged, judge_signatures, judges, judge_notes = _judge(plan, item, reply.answer, [r["text"] for r in retrieved])
            measures.update(judged)
            signatures.update(judge_signatures)
            notes += judge_notes
        return {
            "answer": reply.answer, "retrieved": retrieved, "sources": sources, "measures": measures,
            "signatures": signatures, "judges": judges, "latency_s": latency, "notes": notes,
            "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens, "error": None,
        }
    except Exception as error:  # noqa: BLE001 - a failed question is recorded and the campaign goes on
        return failed_row(error_text(error), time.perf_counter() - start)


def question_sources(retrieved: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct documents an answer drew on: passage id (or the external id) and title."""
    sources: dict[tuple, dict[str, Any]] = {}
    for hit in retrieved:
        source_id = hit["pid"] if hit["pid"] is not None else (hit["source"] or None)
        if source_id is not None or hit["title"]:
            sources.setdefault((source_id, hit["title"]), {"id": source_id, "title": hit["title"]})
    return list(sources.values())


def failed_row(error: str, latency: float | None) -> dict[str, Any]:
    """The row of a question that produced no answer."""
    return {
        "answer": None, "retrieved": [], "sources": [], "measures": {}, "signatures": {}, "judges": {},
        "latency_s": latency, "notes": [], "prompt_tokens": 0, "completion_tokens": 0, "error": error,
    }


class CampaignGone(Exception):
    """The campaign's row was deleted while it ran (its suite or itself was deleted)."""


class CancelledDuringSetup(Exception):
    """A cancel arrived while the knowledge base was being built."""


class Runner:
    """Runs a plan on its own thread; setting `cancelled` stops dispatching."""

    def __init__(self, store: Store, plan: Plan) -> None:
        self.store = store
        self.plan = plan
        self.cancelled = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"campaign-{plan.campaign_id}", daemon=True)
        self._failed = 0
        self._stage_written = 0.0
        self._ended = threading.Event()
        self._beats = threading.Thread(target=self._beat_loop, name=f"heartbeat-{plan.campaign_id}", daemon=True)

    def start(self) -> None:
        """Start the campaign thread."""
        self.thread.start()

    def run(self) -> None:
        """Set up the target, run every question, record the outcome."""
        try:
            outcome, error = self._run()
        except CampaignGone:
            return
        finally:
            self._ended.set()
        try:
            self._finish(outcome, error)
        except CampaignGone:
            return

    def _run(self) -> tuple[str, str | None]:
        try:
            self._set_up()
        except CampaignGone:
            raise
        except CancelledDuringSetup:
            return "cancelled", None
        except Exception as failure:  # noqa: BLE001 - a broken setup fails the campaign, with its reason
            return "failed", f"setup failed: {error_text(failure)}"
        try:
            return self._dispatch()
        except CampaignGone:
            raise
        except Exception as failure:  # noqa: BLE001 - e.g. the disk is full: stop, keep what was stored
            return "failed", f"stopped: {error_text(failure)}"

    def _set_up(self) -> None:
        now = time.time()
        self._update(
            "UPDATE campaigns SET status = 'running', started_at = ?, heartbeat = ?, session_finished = finished "
            "WHERE id = ?",
            (now, now, self.plan.campaign_id),
        )
        self._beats.start()
        self.plan.target.prepare(self.plan.passages, progress=self._preparing)
        self._update("UPDATE campaigns SET stage = NULL WHERE id = ?", (self.plan.campaign_id,))

    def _preparing(self, done: int, total: int) -> None:
        """Progress of the index build: stored (at most every half second) and a chance to cancel."""
        if self.cancelled.is_set():
            raise CancelledDuringSetup
        now = time.monotonic()
        if now - self._stage_written >= 0.5 or done == total:
            self._stage_written = now
            self._update("UPDATE campaigns SET stage = ? WHERE id = ?",
                         (f"indexing the corpus {done}/{total}", self.plan.campaign_id))

    def _dispatch(self) -> tuple[str, str | None]:
        plan, pending = self.plan, deque(self.plan.items)
        done: queue.Queue[tuple[int, dict]] = queue.Queue()
        in_flight: dict[int, float] = {}  # position -> deadline
        by_position = {item.position: item for item in plan.items}
        stop = self._stop_reason()  # a cancel may have come during the setup (a long index build)
        while (pending and stop is None) or in_flight:
            self._fill(pending, in_flight, done, stop)
            finished = self._collect(done, in_flight) + self._expire(in_flight)
            stop = stop or self._stop_reason()  # a cancel may have come while waiting
            # Refill the freed slots before the (serialised) write, so questions never wait on the disk;
            # not after a failure, which may cross the failed-share limit once counted.
            if all(row["error"] is None for _, row in finished):
                self._fill(pending, in_flight, done, stop)
            if finished:
                self._save([(by_position[position], row) for position, row in finished])
            stop = stop or self._stop_reason()
        if stop == "cancelled":
            return "cancelled", None
        if stop is not None:
            return "failed", stop
        return "succeeded", None

    def _fill(self, pending: deque, in_flight: dict[int, float], done: queue.Queue, stop: str | None) -> None:
        while pending and stop is None and len(in_flight) < self.plan.concurrency:
            item = pending.popleft()
            in_flight[item.position] = time.monotonic() + self.plan.time_limit
            self._spawn(item, done)

    def _spawn(self, item: Item, done: queue.Queue) -> None:
        # One daemon thread per question: a question that hangs past its limit is abandoned
        # (a thread cannot be killed) without holding a pool slot or blocking the end of the run.
        thread = threading.Thread(
            target=lambda: done.put((item.position, answer_question(self.plan, item))), daemon=True,
            name=f"question-{item.position}",
        )
        thread.start()

    @staticmethod
    def _collect(done: queue.Queue, in_flight: dict[int, float]) -> list[tuple[int, dict]]:
        """Results that arrived (waiting at most until the next deadline); late ones are dropped."""
        if not in_flight:
            return []
        wait = min([WAKE_S] + [max(deadline - time.monotonic(), 0.0) for deadline in in_flight.values()])
        try:
            arrived = [done.get(timeout=wait)]
        except queue.Empty:
            return []
        while not done.empty():
            arrived.append(done.get_nowait())
        # A question already recorded as timed out is no longer in flight: its late reply is dropped.
        return [(position, row) for position, row in arrived if in_flight.pop(position, None) is not None]

    def _expire(self, in_flight: dict[int, float]) -> list[tuple[int, dict]]:
        now = time.monotonic()
        expired = [position for position, deadline in in_flight.items() if deadline <= now]
        for position in expired:
            del in_flight[position]
        row = failed_row(f"timed out after {self.plan.time_limit:g} s", self.plan.time_limit)
        return [(position, row) for position in expired]

    def _stop_reason(self) -> str | None:
        if self.cancelled.is_set():
            return "cancelled"
        limit = self.plan.max_failed_share * self.plan.total
        if self._failed > limit:
            return f"stopped when {self._failed} of {self.plan.total} questions had failed (more than {self.plan.max_failed_share:.0%})"
        return None

    def _cache_hits(self) -> int:
        return self.plan.cache_hits_before + (self.plan.cache.hits if self.plan.cache else 0)

    def _save(self, finished: list[tuple[Item, dict[str, Any]]]) -> None:
        """Store results (one transaction for all that arrived together) and refresh the counters."""
        campaign_id, now = self.plan.campaign_id, time.time()
        values = [
            (campaign_id, item.position, item.qid, row["answer"], dumps(row["retrieved"]), dumps(row["sources"]),
             dumps(row["measures"]), dumps(row["signatures"]), dumps(row["judges"]), row["latency_s"],
             row["prompt_tokens"], row["completion_tokens"], row["error"], dumps(row["notes"]), now)
            for item, row in finished
        ]

        def write(conn: sqlite3.Connection) -> tuple[int, int]:
            conn.executemany(
                "INSERT INTO results (campaign_id, position, qid, answer, retrieved, sources, measures, signatures, "
                "judges, latency_s, prompt_tokens, completion_tokens, error, notes, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (campaign_id, position) DO UPDATE SET "
                "answer = excluded.answer, retrieved = excluded.retrieved, sources = excluded.sources, "
                "measures = excluded.measures, signatures = excluded.signatures, judges = excluded.judges, "
                "latency_s = excluded.latency_s, prompt_tokens = excluded.prompt_tokens, "
                "completion_tokens = excluded.completion_tokens, error = excluded.error, notes = excluded.notes, "
                "created_at = excluded.created_at, attempts = results.attempts + 1",
                values,
            )
            return conn.execute(
                "UPDATE campaigns SET finished = (SELECT count(*) FROM results WHERE campaign_id = :id), "
                "failed = (SELECT count(error) FROM results WHERE campaign_id = :id), heartbeat = :now, "
                "cache_hits = :hits WHERE id = :id RETURNING finished, failed",
                {"id": campaign_id, "now": now, "hits": self._cache_hits()},
            ).fetchone()

        try:
            _, self._failed = self.store.write(write)
        except sqlite3.IntegrityError:
            raise CampaignGone from None

    def _update(self, sql: str, params: tuple) -> None:
        if self.store.write(lambda conn: conn.execute(sql, params).rowcount) == 0:
            raise CampaignGone

    def _beat_loop(self) -> None:
        """Heartbeat (even during a long setup), and pick up a cancel asked by another process."""
        campaign_id = self.plan.campaign_id
        while not self._ended.wait(HEARTBEAT_S):
            try:
                self._update("UPDATE campaigns SET heartbeat = ?, cache_hits = ? WHERE id = ?",
                             (time.time(), self._cache_hits(), campaign_id))
            except (CampaignGone, EvalError):
                self.cancelled.set()
                return
            rows = self.store.read("SELECT cancel_requested FROM campaigns WHERE id = ?", (campaign_id,))
            if rows and rows[0]["cancel_requested"]:
                self.cancelled.set()

    def _finish(self, outcome: str, error: str | None) -> None:
        now = time.time()
        self._update(
            "UPDATE campaigns SET status = ?, error = ?, ended_at = ?, heartbeat = ?, cache_hits = ? WHERE id = ?",
            (outcome, error, now, now, self._cache_hits(), self.plan.campaign_id),
        )
