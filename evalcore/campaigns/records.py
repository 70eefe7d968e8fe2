"""The typed records of a campaign, as every layer above the store sees them.

A `Campaign` is one row of the campaigns table; a `QuestionResult` is one question of its
snapshot (`Question`) with what answering it produced (`Outcome`). Each has `from_row` (the
store's columns) and `to_dict` (the JSON shape the API, the CLI's --json and the exports share).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar

from evalcore import store
from evalcore.campaigns.pace import estimate
from evalcore.costs import Cost, Usage
from evalcore.diagnosis import Stage
from evalcore.formats.shapes import Key, doc
from evalcore.judges import JudgeResult, Verdict
from evalcore.metrics.graded import stored_values
from evalcore.store.campaign_statuses import CampaignStatus
from evalcore.targets.base import Retrieved, Round
from evalcore.targets.saved_targets import ID_NAMES
from evalcore.targets.target_config import Snapshot

Row = store.Row | Mapping[str, Any]
UNRECORDED = "a model not recorded (stored before costs were kept)"


class CampaignKind(StrEnum):
    """What a campaign asks: a dataset's questions, a suite's cases, or a sample of production traces."""

    DATASET = "dataset"
    SUITE = "suite"
    TRACES = "traces"


DIAGNOSIS = ("the stage the question failed at: retrieval miss, ranking miss, generation miss, ok, unlabeled or "
             "failed (null or 'not attributed': stored before failure attribution existed)")
DEFAULT_TIME_LIMIT_S = 240.0
DEFAULT_MAX_FAILED_SHARE = 0.5
# The run options' bounds, inclusive (time_limit excludes 0): the engine enforces them, the faces show them.
RUN_BOUNDS: dict[str, tuple[float, float]] = {"concurrency": (1, 256), "judge_samples": (1, 20),
                                              "time_limit": (0, 86_400), "max_failed_share": (0, 1)}


def run_option_problem(name: str, value: float | None) -> str | None:
    """What is wrong with one run option's value (None: unset, or within its bounds)."""
    low, high = RUN_BOUNDS[name]
    # nan and inf compare false with everything and would switch a limit off.
    if value is None or (math.isfinite(value) and low <= value <= high and not (name == "time_limit" and value == 0)):
        return None
    opening = "(" if name == "time_limit" else "["  # a time limit of 0 would switch the limit off
    return f"{name}: expected a value in {opening}{low:g}, {high:g}], found {value!r}"


@dataclass(frozen=True)
class RunOptions:
    """How a campaign runs (not what it runs): stored with it, reused by resume and retry."""

    concurrency: int = field(metadata=doc("questions in flight at once"))
    time_limit: float = field(default=DEFAULT_TIME_LIMIT_S, metadata=doc("seconds a question may take"))
    max_failed_share: float = field(default=DEFAULT_MAX_FAILED_SHARE,
                                    metadata=doc("the share of failed questions that stops the campaign"))
    judge_samples: int = field(default=1, metadata=doc("each judge asked this many times; the verdict carries "
                                                       "their spread"))
    dataset_path: str | None = field(default=None, metadata=doc("where the dataset was loaded from (absolute), for "
                                                                "resume", optional=True, private=True))
    models: Mapping[str, str] = field(default_factory=dict, metadata=doc(
        "evaluation tasks: role (chat, rerank) -> which model it got and why (an id, the operator's default, none)",
        optional=True))
    graded_thresholds: Mapping[str, float] = field(default_factory=dict, metadata=doc(
        "graded retrieval: measure -> the pass mark its results used (fixed at launch, kept on resume)", optional=True))

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON; dataset_path and models only when known."""
        data: dict[str, Any] = {"concurrency": self.concurrency, "time_limit": self.time_limit,
                                "max_failed_share": self.max_failed_share, "judge_samples": self.judge_samples}
        if self.dataset_path is not None:
            data["dataset_path"] = self.dataset_path
        if self.models:
            data["models"] = dict(self.models)
        if self.graded_thresholds:
            data["graded_thresholds"] = dict(self.graded_thresholds)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunOptions:
        """From the stored JSON (keys written by older versions are accepted, unknown ones ignored)."""
        return cls(concurrency=int(data.get("concurrency") or 1),
                   time_limit=float(data.get("time_limit") or DEFAULT_TIME_LIMIT_S),
                   max_failed_share=float(data.get("max_failed_share", DEFAULT_MAX_FAILED_SHARE)),
                   judge_samples=int(data.get("judge_samples") or 1), dataset_path=data.get("dataset_path"),
                   models=dict(data.get("models") or {}),
                   graded_thresholds=dict(data.get("graded_thresholds") or {}))


@dataclass(frozen=True)
class Progress:
    """Questions finished of total, the stage before them (the index build: chunks done of total), how fast
    questions go (over the last half minute while running, over the session once ended) and the time the
    current stage has left at its recent rate."""

    finished: int = field(metadata=doc())
    total: int = field(metadata=doc())
    rate_per_s: float | None = field(metadata=doc("questions per second over the last half minute (the session's "
                                                  "average once ended)"))
    eta_s: float | None = field(metadata=doc("seconds left in the current stage at its recent rate (null: unknown)"))
    stage: str | None = field(default=None, metadata=doc("the index build's step, e.g. 'embedding the corpus with "
                                                         "use'; null once questions run"))
    stage_done: int | None = field(default=None, metadata=doc("chunks done in that step"))
    stage_total: int | None = field(default=None, metadata=doc("chunks of that step"))

    @property
    def share(self) -> float:
        """How much of the current stage is done, 0 to 1 (the questions once no stage runs)."""
        if self.stage is not None:
            return min(self.stage_done / self.stage_total, 1.0) if self.stage_done and self.stage_total else 0.0
        return min(self.finished / self.total, 1.0) if self.total else 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"finished": self.finished, "total": self.total, "rate_per_s": self.rate_per_s, "eta_s": self.eta_s,
                "stage": self.stage, "stage_done": self.stage_done, "stage_total": self.stage_total}


@dataclass(frozen=True)
class Campaign:
    """One run of a target over a dataset or a suite, with its configuration snapshot."""

    id: str = field(metadata=doc())
    name: str = field(metadata=doc("given at launch, or made from the configuration's distinguishing settings; "
                                   "editable"))
    tenant: str = field(metadata=doc())
    kind: CampaignKind = field(metadata=doc("dataset, suite or traces"))
    source: str = field(metadata=doc("the dataset id, or the suite id"))
    suite_id: str | None = field(metadata=doc())
    target_id: str | None = field(metadata=doc(ID_NAMES["target_id"] + "; null: a preset or a configuration given "
                                                                       "whole"))
    status: CampaignStatus = field(metadata=doc("queued (waiting for a worker), pending, running, succeeded, "
                                                "succeeded_with_failures (every question ran, some failed), failed, "
                                                "interrupted, cancelled, or over_budget (stopped between questions at "
                                                "its budget: resumable with a larger one)"))
    error: str | None = field(metadata=doc())
    total: int = field(metadata=doc())
    finished: int = field(metadata=doc())
    failed: int = field(metadata=doc())
    created_at: float = field(metadata=doc())
    started_at: float | None = field(metadata=doc())
    ended_at: float | None = field(metadata=doc())
    heartbeat: float | None = field(metadata=doc())
    session_finished: int = field(metadata=doc("finished when the current session started (its rate counts from "
                                               "there)"))
    cancel_requested: bool = field(metadata=doc())
    config: Snapshot = field(metadata=doc("the configuration snapshot: every key as stored at launch"))
    dataset_hash: str | None = field(metadata=doc())
    use_judge: bool = field(metadata=doc())
    judges: tuple[str, ...] = field(metadata=doc())
    cache: bool = field(metadata=doc())
    cache_hits: int = field(metadata=doc())
    options: RunOptions = field(metadata=doc())
    stage: str | None = field(metadata=doc("the index build's step while it runs, else null"))
    # The stage's units done of stage_total (chunks of the index build).
    stage_done: int | None = field(default=None, metadata=doc(hidden=True))
    stage_total: int | None = field(default=None, metadata=doc(hidden=True))
    # The current stage's units per second over the half minute before pace_at; at pace_at, pace_done were done.
    pace_rate: float | None = field(default=None, metadata=doc(hidden=True))
    pace_at: float | None = field(default=None, metadata=doc(hidden=True))
    pace_done: int | None = field(default=None, metadata=doc(hidden=True))
    answers_from: str | None = field(default=None, metadata=doc(
        "a re-judge: the campaign whose stored answers it judges again (its target was not asked); else null"))

    COLUMNS: ClassVar[str]  # every field, as the campaigns table's columns (set below the class)
    JSON_EXTRA = (Key("status_code", int, "0 queued or pending, 1 running, 2 succeeded (with or without failures), "
                      "3 otherwise"),
                  Key("status_text", str, "the status as people read it, e.g. 'succeeded with 3 failed'"),
                  Key("progress", Progress))

    def __post_init__(self) -> None:
        if not isinstance(self.config, Snapshot):  # a campaign built in code from a plain dict of keys
            object.__setattr__(self, "config", Snapshot(self.config))

    @property
    def active(self) -> bool:
        """Queued, pending or running."""
        return self.status.active

    @property
    def status_code(self) -> int:
        """The evaluation task's numeric status."""
        return self.status.code

    def progress(self, now: float | None = None) -> Progress:
        """Progress now: while it runs, the current stage and its time left at the recent rate; once ended, the
        session's rate, no stage and no time left."""
        now = time.time() if now is None else now
        if not self.active:
            done_now, elapsed = self.finished - self.session_finished, (self.ended_at or now) - (self.started_at or now)
            rate = done_now / elapsed if elapsed > 0 and done_now > 0 else None
            return Progress(self.finished, self.total, rate, 0.0 if self.finished >= self.total else None)
        if self.stage is not None:
            done, total = self.stage_done or 0, self.stage_total or 0
            _, eta = estimate(done, total, self.pace_rate, self.pace_at, self.pace_done, now)
            return Progress(self.finished, self.total, None, eta if total else None, self.stage, self.stage_done,
                            self.stage_total)
        rate, eta = estimate(self.finished, self.total, self.pace_rate, self.pace_at, self.pace_done, now)
        return Progress(self.finished, self.total, rate, 0.0 if self.finished >= self.total else eta)

    @classmethod
    def from_row(cls, row: Row) -> Campaign:
        """From a campaigns row (JSON columns decoded)."""
        return cls(
            id=row["id"], name=row["name"] or row["id"], tenant=row["tenant"], kind=CampaignKind(row["kind"]),
            source=row["source"], suite_id=row["suite_id"],
            target_id=row["target_id"], status=CampaignStatus(row["status"]), error=row["error"], total=row["total"],
            finished=row["finished"], failed=row["failed"], created_at=row["created_at"],
            started_at=row["started_at"], ended_at=row["ended_at"], heartbeat=row["heartbeat"],
            session_finished=row["session_finished"], cancel_requested=bool(row["cancel_requested"]),
            config=Snapshot(json.loads(row["config"])), dataset_hash=row["dataset_hash"],
            use_judge=bool(row["use_judge"]),
            judges=tuple(json.loads(row["judges"])), cache=bool(row["cache"]), cache_hits=row["cache_hits"],
            options=RunOptions.from_dict(json.loads(row["options"])), stage=row["stage"],
            stage_done=row["stage_done"], stage_total=row["stage_total"], pace_rate=row["pace_rate"],
            pace_at=row["pace_at"], pace_done=row["pace_done"], answers_from=row["answers_from"],
        )

    @property
    def status_text(self) -> str:
        """The status as people read it: `succeeded with 3 failed` for a campaign that ran every question."""
        if self.status == CampaignStatus.SUCCEEDED_WITH_FAILURES:
            return f"succeeded with {self.failed} failed"
        return self.status.label

    def to_dict(self) -> dict[str, Any]:
        """JSON shape: every column, the numeric status and the progress."""
        return {
            "id": self.id, "name": self.name, "tenant": self.tenant, "kind": str(self.kind), "source": self.source,
            "suite_id": self.suite_id, "target_id": self.target_id, "status": self.status.value,
            "error": self.error, "total": self.total, "finished": self.finished, "failed": self.failed,
            "created_at": self.created_at, "started_at": self.started_at, "ended_at": self.ended_at,
            "heartbeat": self.heartbeat, "session_finished": self.session_finished,
            "cancel_requested": self.cancel_requested, "config": self.config, "dataset_hash": self.dataset_hash,
            "use_judge": self.use_judge, "judges": list(self.judges), "cache": self.cache,
            "cache_hits": self.cache_hits, "options": self.options.to_dict(), "stage": self.stage,
            "answers_from": self.answers_from, "status_code": self.status_code, "status_text": self.status_text,
            "progress": self.progress().to_dict(),
        }


@dataclass(frozen=True)
class Question:
    """One question of a campaign's snapshot: what was asked and what a good answer is."""

    position: int = field(metadata=doc("its place in the campaign's snapshot"))
    qid: int = field(metadata=doc("the dataset's question id (a suite's case number)"))
    text: str = field(metadata=doc(key="question"))
    expected_answer: str | None = field(default=None, metadata=doc())
    references: tuple[str, ...] = field(default=(), metadata=doc())
    relevant: dict[int, int] | None = field(default=None, metadata=doc("passage id -> qrels label; null when "
                                                                       "unlabeled"))
    expected_sources: tuple[str, ...] = field(default=(), metadata=doc())
    answerable: bool | None = field(default=None, metadata=doc(
        "false: declining is the right answer (an unanswerable marker or the dataset's answerable column); null: "
        "no reference answer"))
    checks: tuple[str, ...] = field(default=(), metadata=doc("exact checks its answer must pass, as written "
                                                             "(`contains:30 jours`)"))
    conversation: str | None = field(default=None, metadata=doc("the conversation it is a turn of (null: a question "
                                                                "asked alone)"))
    turn: int | None = field(default=None, metadata=doc("its turn in the conversation, from 1 (null: asked alone)"))
    # The earlier rounds the target is given with it (evalcore.campaigns.turn_order): set just before it is
    # asked, never stored with the snapshot.
    history: tuple[Round, ...] = field(default=(), metadata=doc(hidden=True))

    @classmethod
    def from_row(cls, row: Row | Mapping[str, Any]) -> Question:
        """From a campaign_questions row (its JSON columns as stored, or decoded already: `loaded`)."""
        relevant = loaded(row["relevant"]) if row["relevant"] is not None else None
        names = row.keys()
        return cls(row["position"], row["qid"], row["question"], row["expected_answer"],
                   tuple(loaded(row["refs"])),
                   {int(k): v for k, v in relevant.items()} if relevant is not None else None,
                   tuple(loaded(row["expected_sources"])),
                   None if row["answerable"] is None else bool(row["answerable"]),
                   checks=tuple(loaded(row["checks"]) or ()) if "checks" in names else (),
                   conversation=row["conversation"] if "conversation" in names else None,
                   turn=row["turn"] if "turn" in names else None)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (`question` is the text)."""
        return {"qid": self.qid, "position": self.position, "question": self.text,
                "expected_answer": self.expected_answer, "references": list(self.references),
                "relevant": self.relevant, "expected_sources": list(self.expected_sources),
                "answerable": self.answerable, "checks": list(self.checks), "conversation": self.conversation,
                "turn": self.turn}


@dataclass(frozen=True)
class Source:
    """A document an answer drew on: a passage id (or an external target's own id), its title and file name."""

    id: int | str | None = field(metadata=doc())
    title: str = field(metadata=doc())
    file_name: str = field(default="", metadata=doc("the file an agent named for it (file_name, filename, source, "
                                                    "path, url or agent_source_file), matched by expected sources"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"id": self.id, "title": self.title, "file_name": self.file_name}

    @property
    def label(self) -> str:
        """How a page names it: the title (or id), with the file name when there is one."""
        name = str(self.title or self.id)
        return f"{name} ({self.file_name})" if self.file_name and self.file_name != name else name


@dataclass(frozen=True)
class Outcome:
    """What answering one question produced: the answer, what was retrieved, what the answer was built from
    (`context`), the sources it drew on, its measures (with pass/fail `results` where a mark applies), the
    judges' verdicts, and the tokens of the answer's model calls (the judges' are in their verdicts), or its error.
    `diagnosis` is the stage the question failed at (evalcore.diagnosis.Stage), None in rows stored before it existed.
    `queries` are the texts a query transformation retrieved with (empty without one).
    """

    answer: str | None = field(default=None, metadata=doc())
    retrieved: tuple[Retrieved, ...] = field(default=(), metadata=doc())
    context: tuple[Retrieved, ...] = field(default=(), metadata=doc("what the answer was built from (the judges see "
                                                                    "exactly this)"))
    sources: tuple[Source, ...] = field(default=(), metadata=doc("the documents of the context"))
    measures: dict[str, float] = field(default_factory=dict, metadata=doc())
    signatures: dict[str, str] = field(default_factory=dict, metadata=doc())
    results: dict[str, JudgeResult] = field(default_factory=dict, metadata=doc(
        "pass, fail or unknown of the measures with a pass mark"))
    judges: dict[str, Verdict] = field(default_factory=dict, metadata=doc())
    latency_s: float | None = field(default=None, metadata=doc())
    prompt_tokens: int = field(default=0, metadata=doc())
    completion_tokens: int = field(default=0, metadata=doc())
    error: str | None = field(default=None, metadata=doc())
    notes: tuple[str, ...] = field(default=(), metadata=doc())
    diagnosis: Stage | None = field(default=None, metadata=doc(DIAGNOSIS))
    queries: tuple[str, ...] = field(default=(), metadata=doc("the texts a query transformation retrieved with (a "
                                                              "rewrite, the multi-query rewrites, a HyDE passage); "
                                                              "empty without one"))
    usage: tuple[Usage, ...] = field(default=(), metadata=doc(
        "tokens and their cost by role and model: the target's calls (generator, query, rerank) and each judge's "
        "(judge:NAME), priced when the question was answered; empty in rows stored before costs were kept"))
    check_results: dict[str, bool] = field(default_factory=dict, metadata=doc(
        "each exact check of the question as written -> whether the answer passed it (checks_passed is all of them)"))

    JSON_EXTRA = (Key("judge_prompt_tokens", int), Key("judge_completion_tokens", int),
                  Key("cost", Cost, "what the question's model calls cost (the sum of usage)"))

    @classmethod
    def failed(cls, error: str, latency_s: float | None, tokens: tuple[int, int] = (0, 0),
               usage: tuple[Usage, ...] = ()) -> Outcome:
        """A question that produced no answer (keeping the tokens of the calls that did succeed, and their cost)."""
        return cls(error=error, latency_s=latency_s, prompt_tokens=tokens[0], completion_tokens=tokens[1],
                   diagnosis=Stage.FAILED, usage=usage)

    @property
    def cost(self) -> Cost:
        """What the question's model calls cost; no price for tokens stored before costs were kept (no usage)."""
        if not self.usage and self.prompt_tokens + self.completion_tokens + sum(self.judge_tokens):
            return Cost(None, unpriced=(UNRECORDED,))
        return Cost.of(self.usage)

    @property
    def judge_tokens(self) -> tuple[int, int]:
        """Prompt and completion tokens of every judge call."""
        return (sum(v.prompt_tokens for v in self.judges.values()),
                sum(v.completion_tokens for v in self.judges.values()))

    @classmethod
    def from_row(cls, row: Row | Mapping[str, Any], retrieved: tuple[Retrieved, ...],
                 signatures: dict[str, str]) -> Outcome:
        """From a results row (its JSON columns as stored, or decoded already: `loaded`), its ranked list and its
        signatures (the store keeps both compactly)."""
        stored = loaded(row["context"]) if row["context"] is not None else len(retrieved)
        context = retrieved[:stored] if isinstance(stored, int) else tuple(map(retrieved_from_json, stored))
        return cls(
            answer=row["answer"], retrieved=retrieved, context=context,
            # "" stands for the context's own documents, which is what they nearly always are.
            sources=tuple(Source(s["id"], s["title"], s.get("file_name") or "") for s in loaded(row["sources"]))
            if row["sources"] not in (None, "")
            else sources_of(context),
            measures=stored_values(row["measures"]),
            results={name: JudgeResult(value) for name, value in stored_values(row["results"]).items()},
            signatures=signatures,
            judges={name: Verdict.from_dict(v) for name, v in loaded(row["judges"]).items()},
            latency_s=row["latency_s"], prompt_tokens=row["prompt_tokens"], completion_tokens=row["completion_tokens"],
            error=row["error"], notes=tuple(loaded(row["notes"])),
            diagnosis=Stage(row["diagnosis"]) if row["diagnosis"] else None,
            queries=tuple(loaded(row["queries"])),
            usage=tuple(map(Usage.from_json, loaded(row["usage"]) or ())),
            check_results=loaded(row["check_results"]) or {},
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"answer": self.answer, "retrieved": [retrieved_to_json(h) for h in self.retrieved],
                "context": [retrieved_to_json(h) for h in self.context],
                "sources": [s.to_dict() for s in self.sources], "measures": self.measures,
                "signatures": self.signatures, "results": {name: str(value) for name, value in self.results.items()},
                "judges": {n: v.to_dict() for n, v in self.judges.items()},
                "latency_s": self.latency_s, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "judge_prompt_tokens": self.judge_tokens[0],
                "judge_completion_tokens": self.judge_tokens[1], "error": self.error, "notes": list(self.notes),
                "diagnosis": str(self.diagnosis) if self.diagnosis else None, "queries": list(self.queries),
                "usage": [use._asdict() for use in self.usage], "cost": self.cost.to_dict(),
                "check_results": self.check_results}


def loaded(value: Any) -> Any:
    """A JSON column's value: its stored text decoded, or as a reader that decodes a column for every row at once
    gave it (none of these columns holds a JSON string at its top)."""
    return json.loads(value) if isinstance(value, str) else value


def sources_of(hits: tuple[Retrieved, ...]) -> tuple[Source, ...]:
    """The distinct documents of these hits: passage id (or an external target's own id), title and file name."""
    sources: dict[tuple[int | str | None, str, str], Source] = {}
    for hit in hits:
        source_id = hit.pid if hit.pid is not None else (hit.source or None)
        if source_id is not None or hit.title or hit.file_name:
            sources.setdefault((source_id, hit.title, hit.file_name), Source(source_id, hit.title, hit.file_name))
    return tuple(sources.values())


def retrieved_to_json(hit: Retrieved) -> dict[str, Any]:
    """A retrieved chunk as stored and exported."""
    return {"pid": hit.pid, "source": hit.source, "title": hit.title, "text": hit.text, "score": hit.score,
            "stages": dict(hit.stages)}


def retrieved_from_json(data: Mapping[str, Any]) -> Retrieved:
    """The stored form back to a Retrieved."""
    return Retrieved(data["pid"], data.get("title") or "", data.get("text") or "", data.get("score") or 0.0,
                     dict(data.get("stages") or {}), data.get("source") or "")


@dataclass(frozen=True)
class QuestionResult:
    """A finished question: the snapshot, its outcome, and how many times it was run."""

    question: Question = field(metadata=doc(flatten=True))
    outcome: Outcome = field(metadata=doc(flatten=True))
    attempts: int = field(default=1, metadata=doc("how many times it was run"))

    def to_dict(self) -> dict[str, Any]:
        """One flat JSON object per question, as the API and the JSONL export give it."""
        return {**self.question.to_dict(), **self.outcome.to_dict(), "attempts": self.attempts}


@dataclass(frozen=True)
class Aggregate:
    """A measure over a campaign: the mean over the questions where it is present, and their count."""

    mean: float | None = field(metadata=doc())
    count: int = field(metadata=doc("the questions that have the measure"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"mean": self.mean, "count": self.count}


@dataclass(frozen=True)
class Tokens:
    """Tokens consumed."""

    prompt: int = field(metadata=doc())
    completion: int = field(metadata=doc())

    JSON_EXTRA = (Key("total", int),)

    @property
    def total(self) -> int:
        """prompt + completion."""
        return self.prompt + self.completion

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"prompt": self.prompt, "completion": self.completion, "total": self.total}


# Above this share of unreadable verdicts, a judge's figures are mostly missing: every face warns.
UNKNOWN_WARNING_SHARE = 0.2


@dataclass(frozen=True)
class Summary:
    """A campaign's summary: answered and failed questions, the suite measures, response time, tokens by role.

    `tokens` are the answers' (every model call a question made before its answer, failed ones
    included), `judge_tokens` the judges'; `skipped` counts per judge the questions it could not
    judge for want of a reference answer, `cut` the questions whose context was cut to fit the judge model,
    `no_claim` the answers the claims judge found no claim in (refusals: marked, not scored), `unknown` the
    verdicts without a reading (unreadable replies, failed calls) of the `judged` questions (the rest).
    """

    answered: int = field(metadata=doc())
    failed: int = field(metadata=doc())
    sources_found_rate: float | None = field(metadata=doc())
    mean_coverage: float | None = field(metadata=doc())
    mean_judge_score: float | None = field(metadata=doc())
    mean_latency_s: float | None = field(metadata=doc())
    tokens: Tokens = field(metadata=doc("the answers' model calls"))
    judge_tokens: Tokens = field(default=Tokens(0, 0), metadata=doc("the judges' model calls"))
    skipped: dict[str, int] = field(default_factory=dict, metadata=doc(
        "per judge, questions not judged for want of a reference answer"))
    cut: dict[str, int] = field(default_factory=dict, metadata=doc(
        "per judge, questions whose context was cut to fit the judge model's context window"))
    no_claim: dict[str, int] = field(default_factory=dict, metadata=doc(
        "per judge, answers the claims judge found no claim in (refusals: marked, not scored)"))
    unknown: dict[str, int] = field(default_factory=dict, metadata=doc(
        "per judge, verdicts without a reading: an unreadable reply (after its retry), a failed call, nothing to "
        "judge; never a pass"))
    judged: dict[str, int] = field(default_factory=dict, metadata=doc(
        "per judge, the questions it was asked to judge (its verdicts but the skipped)"))
    usage: tuple[Usage, ...] = field(default=(), metadata=doc(
        "tokens and their cost by role and model over the stored questions (each priced when it was answered)"))

    JSON_EXTRA = (Key("total_tokens", int),
                  Key("cost", Cost, "what the campaign's model calls cost so far (no amount: a model without a price, "
                                    "or prices in several currencies)"),
                  Key("unknown_share", dict[str, float], "per judge, unknown / judged"),
                  Key("warnings", list[str], f"a line per judge whose verdicts are unreadable on more than "
                                             f"{UNKNOWN_WARNING_SHARE:.0%} of the questions it judged"))

    @property
    def total_tokens(self) -> int:
        """Answer and judge tokens together."""
        return self.tokens.total + self.judge_tokens.total

    @property
    def cost(self) -> Cost:
        """What the stored questions' model calls cost."""
        return Cost.of(self.usage)

    @property
    def unknown_share(self) -> dict[str, float]:
        """Per judge with an unknown verdict, unknown / judged."""
        return {name: count / self.judged[name] for name, count in self.unknown.items() if self.judged.get(name)}

    @property
    def warnings(self) -> list[str]:
        """A line per judge with more than UNKNOWN_WARNING_SHARE of its verdicts unreadable."""
        return [unknown_line(name, self.unknown[name], self.judged[name])
                for name, share in self.unknown_share.items() if share > UNKNOWN_WARNING_SHARE]

    def unknown_lines(self) -> list[str]:
        """A line per judge with an unknown verdict, a warning above UNKNOWN_WARNING_SHARE (the text faces')."""
        shares = self.unknown_share
        return [("warning: " if shares.get(name, 0.0) > UNKNOWN_WARNING_SHARE else "")
                + unknown_line(name, count, self.judged.get(name, 0)) for name, count in self.unknown.items()]

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"answered": self.answered, "failed": self.failed, "sources_found_rate": self.sources_found_rate,
                "mean_coverage": self.mean_coverage, "mean_judge_score": self.mean_judge_score,
                "mean_latency_s": self.mean_latency_s, "tokens": self.tokens.to_dict(),
                "judge_tokens": self.judge_tokens.to_dict(), "skipped": self.skipped, "cut": self.cut,
                "no_claim": self.no_claim, "unknown": self.unknown,
                "judged": self.judged, "usage": [use._asdict() for use in self.usage],
                "total_tokens": self.total_tokens, "cost": self.cost.to_dict(),
                "unknown_share": self.unknown_share, "warnings": self.warnings}



def unknown_line(judge: str, unknown: int, judged: int) -> str:
    """`judge score: 120 of 120 verdicts unreadable (100%)`, and what to do when it is most of them."""
    share = unknown / judged if judged else 0.0
    line = f"judge {judge}: {unknown} of {judged} verdicts unreadable ({share:.0%})"
    if share > UNKNOWN_WARNING_SHARE:
        line += (": its mean and pass rate are over the readable ones only; each question's judge reason says why (a "
                 "failed call, a reply that is no verdict), and 'Structured replies' in docs/judges.md what helps")
    return line


def results_version(campaign: Campaign) -> str:
    """Changes whenever a campaign's stored results may have changed: status, counts, end time."""
    return f"{campaign.status.value}|{campaign.finished}|{campaign.failed}|{campaign.ended_at!r}"


Campaign.COLUMNS = ", ".join(f.name for f in fields(Campaign))
