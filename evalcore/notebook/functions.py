"""The functions a notebook calls: load questions, build a configuration, run, judge again, compare, score files and
texts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

import pandas as pd

from evalcore.campaigns import CampaignManager, find_campaign, get_manager
from evalcore.campaigns.launching import LaunchRequest, sweep_requests
from evalcore.campaigns.listing import campaign_rows
from evalcore.campaigns.rejudging import RejudgeRequest
from evalcore.compare import compare_campaigns, compare_sweep
from evalcore.compare.pairwise_job import judge_comparison
from evalcore.compare.production import (
    EFFECT_MEAN,
    EFFECT_RATE,
    PeriodFigures,
    compare_groups,
    judged_traces,
    moment,
    parse_group,
    timeline,
)
from evalcore.compare.stats import RESAMPLES
from evalcore.datasets import Dataset
from evalcore.datasets import load_dataset as _load_dataset
from evalcore.errors import EvalError
from evalcore.formats.shapes import keys
from evalcore.metrics import GENERATION_MEASURES, RETRIEVAL_MEASURES, generation_scores
from evalcore.metrics.trec import TrecOptions, evaluate
from evalcore.metrics.trec_files import read_pair
from evalcore.notebook.views import CampaignView, ComparisonView, RunHandle, SweepView
from evalcore.suites import DuplicateName, Suite, create_suite, get_suite, parse_suite_csv, parse_suite_jsonl
from evalcore.targets import TargetConfig
from evalcore.targets.presets import PRESETS, QUICK_START
from evalcore.targets.saved_targets import get_target
from evalcore.targets.target_config import parse_sweep
from evalcore.telemetry import TraceFilter, TraceImport, TraceSample, import_file, list_traces
from evalcore.telemetry.stored import as_mapping

Db = str | Path | None
TRACE_COLUMNS = ["number", "trace_id", "started_at", "question", "answer", "documents", "model", "prompt_tokens",
                 "completion_tokens", "latency_s"]
LIST_COLUMNS = ["id", "name", "source", "status", "finished", "total", "failed", "retriever", "reranker", "generator",
                "top_k"]


def manager(db: Db = None) -> CampaignManager:
    """The process's campaign manager for a database file (default: $EVALCORE_DB or .evalcore/evalcore.db)."""
    return get_manager(db)


def load_dataset(ref: str | Path = "default") -> Dataset:
    """A dataset folder (`default` is the built-in sample), validated whole: EvalError names every problem."""
    return _load_dataset(ref)


def load_suite(ref: str | Path, *, name: str | None = None, target: str = "default", db: Db = None) -> Suite:
    """A stored suite by id, or a suite CSV or JSONL file imported into the database (every line valid, or
    nothing); a conversation's lines are its turns."""
    store = manager(db).store
    path = Path(ref)
    if path.suffix.lower() not in (".csv", ".jsonl"):
        return get_suite(store, str(ref))
    try:
        data = path.read_bytes()
    except OSError as error:
        raise EvalError(f"cannot read the file ({error.strerror})", where=str(path)) from None
    places = None
    if path.suffix.lower() == ".jsonl":
        cases = list(parse_suite_jsonl(data, source=str(path)))
    else:
        report = parse_suite_csv(data, source=str(path))
        if not report.ok or not report.cases:
            raise EvalError("the suite file has rejected lines: nothing imported", where=str(path),
                            problems=[f"{path}:{line}: {reason}" for line, reason in report.rejected] or None)
        cases, places = report.cases, report.places
    try:
        return create_suite(store, name=name or path.stem, target_id=target, cases=cases, places=places)
    except DuplicateName as error:
        raise EvalError(f"a suite named {name or path.stem!r} already exists ({error.existing_id})", where="name",
                        fix="give another name, or load the existing one by its id") from None


def configuration(source: str | Path | TargetConfig | None = None, *, db: Db = None, **keys: Any) -> TargetConfig:
    """A target configuration: the quick start (None), a preset name, a TOML file, a saved target's id or a
    configuration; then `keys` override single keys (validated, each bad one named)."""
    if isinstance(source, TargetConfig):
        config = source
    elif source is None:
        config = QUICK_START.config
    elif str(source) in PRESETS:
        config = PRESETS[str(source)].config
    elif str(source).endswith(".toml") or Path(source).is_file():
        config = TargetConfig.from_toml(source)
    else:
        config = get_target(manager(db).store, str(source))
    return TargetConfig.from_dict({**config.to_dict(), **keys}) if keys else config


@overload
def run(dataset: str | Path | None = ..., *, suite: str | None = ..., config: TargetConfig | str | Path | None = ...,
        judges: Sequence[str] = ..., limit: int | None = ..., name: str | None = ..., db: Db = ...,
        progress: bool = ..., background: Literal[False] = ..., **options: Any) -> CampaignView: ...
@overload
def run(dataset: str | Path | None = ..., *, suite: str | None = ..., config: TargetConfig | str | Path | None = ...,
        judges: Sequence[str] = ..., limit: int | None = ..., name: str | None = ..., db: Db = ...,
        progress: bool = ..., background: Literal[True], **options: Any) -> RunHandle: ...
def run(dataset: str | Path | None = None, *, suite: str | None = None, config: TargetConfig | str | Path | None = None,
        judges: Sequence[str] = (), limit: int | None = None, name: str | None = None, db: Db = None,
        progress: bool = True, background: bool = False, **options: Any) -> CampaignView | RunHandle:
    """Run a configuration over a dataset (default: the sample) or a suite.

    Blocks with a progress bar and returns the campaign; with `background=True`, returns at once a
    handle to poll, wait on or cancel. `options` are the launch's (concurrency, cache, time_limit,
    max_failed_share, judge_samples).
    """
    chosen = manager(db)
    request = launch_request(dataset, suite, config, db, judges=tuple(judges), limit=limit, name=name, **options)
    handle = RunHandle(chosen, chosen.launch(request))
    return handle if background else handle.wait(progress=progress)


def launch_request(dataset: str | Path | None, suite: str | None, config: TargetConfig | str | Path | None, db: Db,
                   **fields: Any) -> LaunchRequest:
    """The launch of a dataset (the sample when neither is given) or a suite (its own target unless `config`)."""
    if dataset is None and suite is None:
        dataset = "default"
    chosen = configuration(config, db=db) if config is not None or suite is None else None
    return LaunchRequest(dataset=None if dataset is None else str(dataset), suite_id=suite, config=chosen, **fields)


def run_sweep(spec: str, dataset: str | Path | None = None, *, suite: str | None = None,
              config: TargetConfig | str | Path | None = None, limit: int | None = None, name: str | None = None,
              db: Db = None, progress: bool = True, **options: Any) -> SweepView:
    """One campaign per value of one key (`"retriever=bm25,vector"`), one after the other, then their sweep."""
    key, values = parse_sweep(spec)
    chosen = manager(db)
    request = launch_request(dataset, suite, config, db, limit=limit, name=name, **options)
    ids = [RunHandle(chosen, chosen.launch(each)).wait(progress=progress).id
           for each in sweep_requests(request, key, values, one_after_another=True)]
    return sweep(*ids, db=db)


def rejudge(campaign_id: str, *, judges: Sequence[str] = (), name: str | None = None, db: Db = None,
            progress: bool = True, concurrency: int | None = None, judge_samples: int | None = None,
            cache: bool = True, **settings: Any) -> CampaignView:
    """Judge a finished campaign's answers again, without asking its target: a new campaign that differs only in
    its judges (`settings`: judge keys, e.g. judge_model="gpt-4o-mini", rubrics={"name": "<text>"})."""
    chosen = manager(db)
    request = RejudgeRequest(find_campaign(chosen.store, campaign_id).id, judges=tuple(judges), settings=settings,
                             name=name, concurrency=concurrency, judge_samples=judge_samples, cache=cache)
    return RunHandle(chosen, chosen.rejudge(request)).wait(progress=progress)


def campaign(campaign_id: str, *, db: Db = None) -> CampaignView:
    """A stored campaign by its id, its name or the start of either (NotFound when none matches, an error listing
    them when several do)."""
    store = manager(db).store
    return CampaignView(store, find_campaign(store, campaign_id).id)


def list_campaigns(*, db: Db = None) -> pd.DataFrame:
    """Every campaign, newest first, as the lists show them: id, name, questions, status, counts, key settings."""
    rows = campaign_rows(manager(db).store, None)
    return pd.DataFrame([{"id": row.campaign.id, "name": row.campaign.name, "source": row.source_name,
                          "status": row.campaign.status.value, "finished": row.campaign.finished,
                          "total": row.campaign.total, "failed": row.campaign.failed, **row.settings.to_dict()}
                         for row in rows], columns=LIST_COLUMNS).astype({"top_k": "Int64"})  # a count, or <NA>


def comparison(a: str, b: str, *, db: Db = None, basis: str | None = None, seed: int = 0,
               resamples: int = RESAMPLES, pairwise: bool = False,
               judge: Mapping[str, Any] | None = None) -> ComparisonView:
    """Two campaigns compared, A the baseline and B the candidate (`basis`: the measure deciding verdicts);
    `pairwise=True` asks the pairwise judge first (its model: B's judge keys, or `judge`'s `judge_*` keys)."""
    store = manager(db).store
    a, b = find_campaign(store, a).id, find_campaign(store, b).id  # each by id or name
    if pairwise:
        judge_comparison(store, a, b, judge=judge)
    return ComparisonView(store, compare_campaigns(store, a, b, seed=seed, resamples=resamples, basis=basis))


def sweep(*ids: str, db: Db = None, seed: int = 0, resamples: int = RESAMPLES) -> SweepView:
    """Two or more campaigns as a sweep: the first is the baseline, each differs in one key's value."""
    if len(ids) < 2:
        raise EvalError("a sweep needs at least two campaign ids", found=str(len(ids)), expected=">= 2")
    store = manager(db).store
    ids = tuple(find_campaign(store, text).id for text in ids)  # each by id or name
    return SweepView(store, compare_sweep(store, list(ids), seed=seed, resamples=resamples))


def score_trec(qrels: str | Path, run_file: str | Path, *, relevance_level: int = 1, complete: bool = False,
               max_docs: int | None = None) -> pd.DataFrame:
    """Per-query retrieval measures of a TREC run against qrels (as `score`, like trec_eval -q): one row per
    query, one column per measure; `.mean()` gives trec_eval's `all` line."""
    judgements, ranking = read_pair(Path(qrels), Path(run_file))
    scores = evaluate(judgements, ranking, TrecOptions(complete, relevance_level, max_docs))
    frame = pd.DataFrame({name: scores.values[name] for name in RETRIEVAL_MEASURES})
    frame.insert(0, "qid", scores.qids)
    return frame


def score_texts(hypotheses: Sequence[str], references: Sequence[Sequence[str] | str],
                ids: Sequence[Any] | None = None) -> pd.DataFrame:
    """BLEU and ROUGE of each answer against its reference answers (as `score-text`): one row per answer."""
    if len(hypotheses) != len(references):
        raise EvalError("as many reference lists as answers are needed", where="references",
                        found=str(len(references)), expected=str(len(hypotheses)))
    rows = [generation_scores(hyp, [refs] if isinstance(refs, str) else list(refs))
            for hyp, refs in zip(hypotheses, references, strict=True)]
    frame = pd.DataFrame(rows, columns=list(GENERATION_MEASURES))
    frame.insert(0, "id", list(ids) if ids is not None else range(len(rows)))
    return frame



def import_traces(path: str | Path, *, db: Db = None, tenant: str = "default") -> TraceImport:
    """Import a trace file (OTLP JSON with OpenInference attributes, or JSONL): its report says what was stored and
    what was skipped, where and why."""
    return import_file(manager(db).store, Path(path), tenant=tenant)


def traces(*, db: Db = None, tenant: str = "default", since: str | None = None, until: str | None = None,
           where: Mapping[str, str] | None = None, search: str = "", limit: int | None = None) -> pd.DataFrame:
    """The stored traces, newest first, one row each: number, trace_id, started_at (UTC), question, answer,
    documents (their count), model, tokens, latency, and one `metadata.KEY` column per metadata key."""
    selection = TraceFilter(moment(since or "", "since"), moment(until or "", "until"),
                            tuple((str(k), str(v)) for k, v in (where or {}).items()), search)
    rows = [as_mapping(trace) for trace in list_traces(manager(db).store, selection, tenant=tenant, limit=limit)]
    frame = pd.DataFrame(rows, columns=list(dict.fromkeys(
        [*TRACE_COLUMNS, *(key for row in rows for key in row)])))
    frame["started_at"] = pd.to_datetime(frame["started_at"], unit="s", utc=True)
    return frame


def judge_traces(*, per: int = 100, by: str = "", seed: int = 0, judges: Sequence[str] = (), since: str | None = None,
                 until: str | None = None, where: Mapping[str, str] | None = None, name: str | None = None,
                 config: TargetConfig | str | Path | None = None, db: Db = None, tenant: str = "default",
                 progress: bool = True, **options: Any) -> CampaignView:
    """Judge a stratified, seeded sample of traces without references (`per` traces per day, week or value of the
    metadata key `by`), as a campaign; `config` carries the judges' model (judge_* keys)."""
    chosen = manager(db)
    sample = TraceSample(per, by, seed, moment(since or "", "since"), moment(until or "", "until"),
                         tuple((str(k), str(v)) for k, v in (where or {}).items()))
    request = LaunchRequest(traces=sample, judges=tuple(judges), name=name, tenant=tenant,
                            config=None if config is None else configuration(config, db=db), **options)
    return RunHandle(chosen, chosen.launch(request)).wait(progress=progress)


def traces_timeline(*campaign_ids: str, period: str = "day", db: Db = None, tenant: str = "default") -> pd.DataFrame:
    """Per day or week and measure of these traces campaigns: the traces' volume, the mean with its 95% t interval,
    the pass rate with its Wilson interval."""
    store = manager(db).store
    figures = timeline(judged_traces(store, list(campaign_ids)), list_traces(store, tenant=tenant), period)
    return pd.DataFrame([f.to_dict() for f in figures], columns=[k.name for k in keys(PeriodFigures)])


def compare_traces(*campaign_ids: str, a: str, b: str, db: Db = None, effect_mean: float = EFFECT_MEAN,
                   effect_rate: float = EFFECT_RATE) -> pd.DataFrame:
    """Two groups of judged traces (`a`, `b`: `KEY=VALUE` such as release=v2, or `FROM..TO` windows), unpaired: one
    row per measure's mean and judge's pass rate with the difference, its 95% interval, the test, power, MDE and
    the traces needed per group."""
    rows = judged_traces(manager(db).store, list(campaign_ids))
    found = compare_groups(rows, parse_group(a), parse_group(b), effect_mean=effect_mean, effect_rate=effect_rate)
    return pd.DataFrame([d.to_dict() for d in found.deltas])
