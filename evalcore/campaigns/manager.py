"""The process-wide campaign manager: validates launches, owns the background runners."""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from evalcore.access.principals import Action, Principal, scope
from evalcore.campaigns.queries import get_campaign
from evalcore.campaigns.records import (
    DEFAULT_MAX_FAILED_SHARE,
    DEFAULT_TIME_LIMIT_S,
    Campaign,
    CampaignKind,
    Question,
    RunOptions,
    run_option_problem,
)
from evalcore.errors import EvalError
from evalcore.language.text import name_problem, shown
from evalcore.runtime.memory import limit_arenas
from evalcore.store import (
    QUEUED,
    Conflict,
    Connection,
    NotFound,
    Store,
    StoreCallCache,
    campaign_rows,
    db_location,
    delete_unused_passages,
    dumps,
    lease_s,
    mark_orphans,
    new_owner_token,
    open_store,
    require_store,
)
from evalcore.store.campaign_statuses import OWNED, CampaignStatus

if TYPE_CHECKING:
    from evalcore.campaigns.answering import Plan
    from evalcore.campaigns.campaign_queue import Workers
    from evalcore.campaigns.cluster import Cluster
    from evalcore.campaigns.estimate import Estimate
    from evalcore.campaigns.launching import LaunchRequest
    from evalcore.campaigns.rejudging import RejudgeRequest
    from evalcore.campaigns.runner import Runner
    from evalcore.campaigns.supervisor import WorkerProcess
    from evalcore.datasets import Dataset
    from evalcore.jobs.job_queue import JobKind, JobWorkers
    from evalcore.judges import JudgeSettings
    from evalcore.models import ChatModel
    from evalcore.suites import Suite
    from evalcore.targets import Target, TargetConfig

# What launching needs (the corpus, with the datasets' loader and pyarrow; the questions; the checks of a launch; the
# re-judges' stored answers; the runner; the cluster; the judges) is imported by the functions that launch: a command
# that only reads the store does not load it.

_MANAGERS: dict[str, CampaignManager] = {}
_MANAGERS_LOCK = threading.Lock()


def get_manager(db_path: str | Path | None = None, *, create: bool = True) -> CampaignManager:
    """The one manager of this process for a database path (created on first use; its store made when missing only
    with `create`)."""
    key = db_location(db_path)
    if not create:
        require_store(key)
    with _MANAGERS_LOCK:
        if key not in _MANAGERS:
            _MANAGERS[key] = CampaignManager(key)
        return _MANAGERS[key]


def new_campaign_id(tenant: str, dataset: str | None) -> str:
    """An evaluation task's id `evaluation_{tenant}_{unix_ms}_{8 hex}_{dataset_id}`; `run_...` for suite campaigns."""
    from evalcore.campaigns.campaign_dataset import dataset_tag

    stem = f"{tenant}_{int(time.time() * 1000)}_{secrets.token_hex(4)}"
    return f"evaluation_{stem}_{dataset_tag(dataset)}" if dataset is not None else f"run_{stem}"


def _refuse_second_run(conn: Connection, suite_id: str | None, campaign_id: str) -> None:
    if suite_id is None:
        return
    running = campaign_rows.active_on_suite(conn, suite_id, campaign_id)
    if running is not None:
        raise Conflict(
            "a campaign is already running on this suite", where=f"suite {suite_id}", found=running,
            fix="wait for it to finish or cancel it", running_id=running,
        )


log = logging.getLogger("evalcore.campaigns")
SUITE_TIME_LIMIT_S = 240.0  # a suite's promise: each question answered within 4 minutes at most


def run_options(config: TargetConfig, concurrency: int | None, time_limit: float | None,
                max_failed_share: float | None, judge_samples: int, dataset_path: str,
                suite: bool = False, cluster: Cluster | None = None,
                models: Mapping[str, str] | None = None) -> RunOptions:
    """The run options of a launch, defaults filled in; EvalError naming a value out of range.

    A suite's questions are asked one after another unless told otherwise, so that its response
    times mean what they say. On a cluster, the automatic concurrency follows its worker threads.
    """
    from evalcore.campaigns.concurrency import default_concurrency

    given = {"concurrency": concurrency, "judge_samples": judge_samples, "time_limit": time_limit,
             "max_failed_share": max_failed_share}
    problems = [problem for name, value in given.items() if (problem := run_option_problem(name, value))]
    if problems:
        raise EvalError("invalid run options", where=problems[0].partition(":")[0], problems=problems)
    if suite and time_limit is not None and time_limit > SUITE_TIME_LIMIT_S:
        raise EvalError("a suite's questions get 4 minutes at most", where="time_limit", found=f"{time_limit:g} s",
                        expected=f"at most {SUITE_TIME_LIMIT_S:g} s", fix="leave it out (240 s) or lower it; "
                        "dataset campaigns take longer limits")
    automatic = cluster.concurrency if cluster is not None else default_concurrency(config)
    return RunOptions(concurrency=concurrency or (1 if suite else automatic),
                      time_limit=time_limit or DEFAULT_TIME_LIMIT_S,
                      max_failed_share=DEFAULT_MAX_FAILED_SHARE if max_failed_share is None else max_failed_share,
                      judge_samples=judge_samples, dataset_path=dataset_path, models=dict(models or {}))


MAX_NAME = 200


def log_dataset(campaign_id: str, corpus: Dataset) -> None:
    """Write the statistics of a dataset campaign's questions and corpus to the server's log."""
    from evalcore.datasets import dataset_summary

    log.info("campaign %s on dataset %s", campaign_id, dataset_summary(corpus))


def campaign_name(name: str | None, config: TargetConfig | None) -> str:
    """The name given (trimmed, one line), else one made from the configuration's distinguishing settings."""
    if name is None and config is not None:
        return config.describe()
    text = " ".join((name or "").split())
    if not text or len(text) > MAX_NAME:
        raise EvalError("a campaign name is 1 to 200 characters", where="name", found=shown(repr((name or "")[:40])))
    if (problem := name_problem(text)) is not None:
        raise EvalError(problem, where="name", found=shown(repr(text[:40])))
    return text


def owned_elsewhere(campaign_id: str, store: Store) -> Conflict:
    """The refusal to resume a campaign a live process owns, saying which and what to do."""
    row = campaign_rows.owner_of(store, campaign_id)
    owner = f"process {row['owner_pid']} on {row['owner_host']}" if row is not None else "another process"
    return Conflict(f"the campaign is still running: {owner} owns it (it may be paused, by Ctrl-Z or a sleeping "
                    "laptop)", where=campaign_id, running_id=campaign_id,
                    fix="let it finish, cancel it, or take it over with --force (its questions in flight are "
                        "asked again)")


class Resolved(NamedTuple):
    """A launch's request checked and resolved: what would run, before anything does."""

    tenant: str
    suite: Suite | None
    config: TargetConfig
    target_id: str | None
    corpus: Dataset
    questions: list[Question]
    judges: tuple[str, ...]


class CampaignManager:
    """Launch, resume, retry, cancel and delete campaigns; each runs on its own background thread."""

    def __init__(self, db_path: str | Path) -> None:
        limit_arenas()  # its campaigns' threads share few malloc arenas: less memory kept between campaigns
        self.store = open_store(db_path)
        self._runners: dict[str, Runner] = {}
        self._lost: set[str] = set()  # campaigns whose runner here stopped: deleted, or taken over elsewhere
        self._lock = threading.Lock()
        self._after: list[Callable[[Store, str], object]] = []
        self.workers: Workers | WorkerProcess | None = None  # when set, launches are queued for workers
        self._claimed: set[str] = set()  # campaigns this process runs for the queue
        self.job_workers: JobWorkers | None = None  # when set, this process runs queued jobs too

    def serve_queue(self, slots: int | None = None, tenant_cap: int | None = None) -> None:
        """From now on launches queue their campaign in the store; this process claims and runs queued campaigns
        (any process's) with threads, at most `slots` at once and `tenant_cap` of one tenant over every process."""
        from evalcore.campaigns.campaign_queue import Workers

        with self._lock:  # pages of several sessions may ask at once: one set of workers
            if self.workers is None:
                self.workers = Workers(self, slots, tenant_cap)
                self.workers.start()

    def serve_jobs(self, *kinds: JobKind) -> None:
        """From now on this process claims and runs queued jobs of these kinds (any process's), under the job caps;
        closing the manager puts those running here back in the queue."""
        from evalcore.jobs.job_queue import JobWorkers, register

        for kind in kinds:
            register(kind)
        with self._lock:
            if self.job_workers is None:
                self.job_workers = JobWorkers(self.store)
                self.job_workers.start()

    def supervise_worker(self, slots: int | None = None, tenant_cap: int | None = None) -> None:
        """From now on launches queue their campaign; a child process this one supervises claims and runs them
        (the dashboard: pages stay quick while a campaign embeds a corpus)."""
        from evalcore.campaigns.supervisor import WorkerProcess

        with self._lock:
            if self.workers is None:
                self.workers = WorkerProcess(self.store.location, slots, tenant_cap)
                self.workers.start()

    def running(self) -> int:
        """How many campaigns run in this process now."""
        with self._lock:
            return sum(runner.thread.is_alive() for runner in self._runners.values())

    def after_each(self, hook: Callable[[Store, str], object]) -> None:
        """Call `hook(store, campaign_id)` after every campaign this manager runs ends (not when cancelled).

        Layers above campaigns use it (the comparison of a new campaign with the previous one is
        computed then, in the background, so the Compare page opens on it at once). Once per hook.
        """
        if hook not in self._after:
            self._after.append(hook)

    def _resolved(self, request: LaunchRequest) -> Resolved:
        """What a launch asks for, checked: its tenant, suite, configuration, questions and judges."""
        from evalcore.campaigns.campaign_dataset import load_corpus
        from evalcore.campaigns.launching import check_judges, resolve_config
        from evalcore.campaigns.questions import dataset_questions, suite_questions
        from evalcore.suites import get_suite

        dataset, suite_id, config, target = request.dataset, request.suite_id, request.config, request.target
        target_id, limit, judges, use_judge = request.target_id, request.limit, request.judges, request.use_judge
        tenant = scope(request.principal, request.tenant, Action.CHANGE) or request.tenant
        if (dataset is None) == (suite_id is None):
            raise EvalError("give either a dataset or a suite", where="launch", fix="pass --dataset ID or --suite ID")
        suite = get_suite(self.store, suite_id, tenant) if suite_id is not None else None
        config = target.config if target is not None else config
        config, target_id = resolve_config(self.store, config, target_id, suite, tenant)
        corpus = load_corpus(config.knowledge_base if suite is not None else str(dataset), None,
                             request.dataset_root)
        if suite is None:  # a dataset campaign retrieves from the dataset's corpus: the snapshot names it
            config = replace(config, knowledge_base=corpus.name)
        if limit is not None and limit < 1:
            raise EvalError("the question limit must be at least 1", where="limit", found=str(limit),
                            fix="leave it out to run every question")
        questions = dataset_questions(corpus, limit) if suite is None else suite_questions(suite)
        questions = questions[:limit] if limit else questions
        if not questions and suite is None:
            raise EvalError(f"no questions yet (a corpus of {len(corpus.passages)} passages)",
                            where=f"dataset {corpus.name}", fix="use it as a suite's knowledge base, or add questions "
                                                                "to its queries.parquet first")
        if not questions:
            raise EvalError("there is no question to run", where=suite_id, fix="add questions first")
        judge_names = check_judges((("score",) if use_judge else ()) + tuple(judges)
                                   + tuple(name for name, _ in config.judge.rubrics), tuple(dict(config.judge.rubrics)))
        return Resolved(tenant, suite, config, target_id, corpus, questions, judge_names)

    def estimate(self, request: LaunchRequest) -> Estimate:
        """What the launch would cost, before anything runs: from the same configuration's earlier campaigns (the
        same judges too), else from the prompts of a sample of its questions (evalcore.campaigns.estimate)."""
        from evalcore.campaigns.estimate import estimate_cost

        tenant, _, config, _, corpus, questions, judges = self._resolved(request)
        return estimate_cost(self.store, tenant, config, judges, questions, corpus)

    def launch(self, request: LaunchRequest) -> str:
        """Validate, store the campaign and start it in the background (or queue it for a worker); return the id.

        The dataset or suite, the configuration's settings and the judges are checked before anything is stored.
        A campaign that runs here also has its target built and checked (models reachable, weights loaded: seconds)
        first; a queued one returns at once, and the worker that claims it makes those checks, failing the campaign
        with the reason.

        A principal launches in its own tenant, and only with a role that may change things.
        """
        from evalcore.campaigns.budget import refuse_over_daily_budget
        from evalcore.campaigns.campaign_dataset import graded_for
        from evalcore.campaigns.cluster import cluster_for
        from evalcore.metrics.registry import check_python_measures
        from evalcore.targets.allowed import check_request

        check_python_measures()
        refuse_over_daily_budget(self.store, scope(request.principal, request.tenant, Action.CHANGE) or request.tenant)
        if request.traces is not None:
            return self._launch_traces(request)
        tenant, suite, config, target_id, corpus, questions, judge_names = self._resolved(request)
        dataset, suite_id, target, use_judge = request.dataset, request.suite_id, request.target, request.use_judge
        name, cache, campaign_id = request.name, request.cache, request.campaign_id
        if request.principal is not None:  # before any connection: a request picks only what the operator listed
            check_request(config)
        with cluster_for(config, target is not None) as cluster:  # an unreachable scheduler refuses the launch
            # resume must find the same folder from any working directory: the path is stored absolute
            options = run_options(config, request.concurrency, request.time_limit, request.max_failed_share,
                                  request.judge_samples, str(corpus.path.resolve()), suite=suite is not None,
                                  cluster=cluster, models=request.models)
            campaign_id = campaign_id or new_campaign_id(tenant, dataset)
            plan = self._plan_here(campaign_id, config, corpus, questions, len(questions), options, judge_names,
                                   cache, 0, target)
            graded = plan.graded if plan is not None else graded_for(corpus, config, questions)
            options = replace(options, graded_thresholds=graded.marks() if graded else {})
            record = {
                "id": campaign_id, "name": campaign_name(name, config), "tenant": tenant,
                "kind": str(CampaignKind.SUITE if suite else CampaignKind.DATASET),
                "source": suite_id if suite else str(dataset),
                "suite_id": suite_id, "target_id": target_id, "total": len(questions),
                "config": dumps(config.to_dict()), "dataset_hash": corpus.content_hash, "use_judge": int(use_judge),
                "judges": dumps(list(judge_names)), "cache": int(cache), "options": dumps(options.to_dict()),
            }
            self.store.write(lambda conn: self._insert(conn, record, questions, plan))
            self._start_or_queue(plan, cluster)
        if suite is None:  # the server's log says what a dataset campaign runs on (computed aside: launch returns now)
            threading.Thread(target=log_dataset, args=(campaign_id, corpus), name=f"stats-{campaign_id}",
                             daemon=True).start()
        return campaign_id

    def _launch_traces(self, request: LaunchRequest) -> str:
        """A campaign over a sample of the tenant's traces (evalcore.campaigns.traced): it runs in this process."""
        from evalcore.campaigns.campaign_dataset import load_corpus
        from evalcore.campaigns.launching import check_judges, resolve_config
        from evalcore.campaigns.traced import DEFAULT_JUDGES, TraceAnswers, check_reference_free, trace_questions
        from evalcore.targets.allowed import check_request
        from evalcore.telemetry import sample_traces

        if request.dataset is not None or request.suite_id is not None or request.traces is None:
            raise EvalError("give traces, or a dataset or a suite, not both", where="launch")
        sample = request.traces
        tenant = scope(request.principal, request.tenant, Action.CHANGE) or request.tenant
        config, target_id = resolve_config(self.store, request.config, request.target_id, None, tenant)
        names = (("score",) if request.use_judge else ()) + (tuple(request.judges) or DEFAULT_JUDGES)
        rubrics = config.judge.rubrics
        judge_names = check_judges(names + tuple(name for name, _ in rubrics), tuple(dict(rubrics)))
        check_reference_free(judge_names)
        if request.principal is not None:
            check_request(config)
        questions = trace_questions(sample_traces(self.store, sample, tenant=tenant))
        if request.limit:
            questions = questions[:request.limit]
        corpus = load_corpus(config.knowledge_base, None, request.dataset_root)
        options = run_options(config, request.concurrency, request.time_limit, request.max_failed_share,
                              request.judge_samples, str(corpus.path.resolve()), models=request.models)
        campaign_id = request.campaign_id or new_campaign_id(tenant, None)
        plan = self._plan(campaign_id, config, corpus, questions, len(questions), options, judge_names,
                          request.cache, 0, TraceAnswers(self.store, campaign_id, config))
        record = {
            "id": campaign_id, "name": campaign_name(request.name or sample.describe(), None), "tenant": tenant,
            "kind": str(CampaignKind.TRACES), "source": sample.describe(), "suite_id": None, "target_id": target_id,
            "total": len(questions), "config": dumps(config.to_dict()), "dataset_hash": corpus.content_hash,
            "use_judge": int(request.use_judge), "judges": dumps(list(judge_names)), "cache": int(request.cache),
            "options": dumps(options.to_dict()),
        }
        self.store.write(lambda conn: self._insert(conn, record, questions, plan))
        self._start(plan, None)
        return campaign_id

    def rejudge(self, request: RejudgeRequest) -> str:
        """Judge a finished campaign's answers again with other judges, as a new campaign; return its id.

        Nothing is asked of the target: the new campaign reads the answers where they are stored
        (evalcore.campaigns.rejudging). Only a campaign of the principal's tenant whose every question ran.
        """
        from evalcore.campaigns.campaign_dataset import load_corpus, stored_dataset_path
        from evalcore.campaigns.questions import stored_questions
        from evalcore.campaigns.rejudging import judged_campaign, rejudge_judges, rejudge_name, rejudged_config
        from evalcore.targets import TargetConfig
        from evalcore.targets.allowed import check_request

        source = judged_campaign(self.store, request.campaign_id,
                                 scope(request.principal, request.tenant, Action.CHANGE))
        config = rejudged_config(TargetConfig.from_dict(source.config), request.settings)
        judges = rejudge_judges(source, request.judges, config, request.settings)
        if request.principal is not None:
            check_request(config)
        corpus = load_corpus(stored_dataset_path(source), source.dataset_hash)
        questions = stored_questions(self.store, source.id, "all")
        options = replace(source.options, max_failed_share=1.0,  # its failed questions are the judged campaign's
                          concurrency=request.concurrency or source.options.concurrency,
                          judge_samples=request.judge_samples or source.options.judge_samples)
        problems = [problem for name in ("concurrency", "judge_samples")
                    if (problem := run_option_problem(name, getattr(options, name)))]
        if problems:
            raise EvalError("invalid run options", where=problems[0].partition(":")[0], problems=problems)
        campaign_id = new_campaign_id(source.tenant, source.source if source.kind == "dataset" else None)
        answers_from = source.answers_from or source.id
        plan = self._plan_here(campaign_id, config, corpus, questions, len(questions), options, judges, request.cache,
                               0, None, answers_from=answers_from)
        record = {
            "id": campaign_id, "name": campaign_name(rejudge_name(request.name, source, judges, MAX_NAME), None),
            "tenant": source.tenant, "kind": source.kind, "source": source.source, "suite_id": source.suite_id,
            "target_id": source.target_id, "total": len(questions), "config": dumps(config.to_dict()),
            "dataset_hash": source.dataset_hash, "use_judge": int("score" in judges), "judges": dumps(list(judges)),
            "cache": int(request.cache), "options": dumps(options.to_dict()), "answers_from": answers_from,
        }
        self.store.write(lambda conn: self._insert(conn, record, questions, plan))
        self._start_or_queue(plan, None)
        return campaign_id

    def _start_or_queue(self, plan: Plan | None, cluster: Cluster | None) -> None:
        if plan is not None:
            self._start(plan, cluster)
        elif self.workers is not None:
            self.workers.wake()

    def _plan_here(self, campaign_id: str, config: TargetConfig, corpus: Dataset, questions: list[Question],
                   total: int, options: RunOptions, judges: tuple[str, ...], cache: bool, hits_before: int,
                   target: Target | None, answers_from: str | None = None) -> Plan | None:
        """The plan of a campaign that runs in this process (its target built and checked: seconds), or None for one
        that workers run (a ready-made target object runs here): its settings get the quick checks, and the worker
        that claims it makes the slow ones, failing the campaign with the reason."""
        from evalcore.campaigns.launching import check_settings

        if self.workers is None or target is not None:
            return self._plan(campaign_id, config, corpus, questions, total, options, judges, cache, hits_before,
                              target, answers_from=answers_from)
        check_settings(config, judges)
        return None

    def _plan(self, campaign_id: str, config: TargetConfig, corpus: Dataset, questions: list[Question], total: int,
              options: RunOptions, judges: tuple[str, ...], cache: bool, hits_before: int,
              target: Target | None, token: str | None = None, answers_from: str | None = None) -> Plan:
        """Build and check the target (fails fast when a model is unreachable); a re-judge's target gives back the
        answers stored by `answers_from`."""
        from evalcore.campaigns.answering import Plan
        from evalcore.campaigns.campaign_dataset import graded_for
        from evalcore.campaigns.rejudging import StoredAnswers
        from evalcore.costs import price_table
        from evalcore.metrics.registry import check_python_measures
        from evalcore.models.http import Calls

        check_python_measures()
        call_cache = StoreCallCache(self.store) if cache and target is None else None
        if answers_from is not None:
            target = StoredAnswers(self.store, answers_from, config, call_cache)
        if target is None:
            from evalcore.targets import build_target

            target = build_target(config, cache=call_cache)
        judging = None
        if judges:  # before the target's own check: a launch that cannot be judged is refused first
            from evalcore.targets.generators import build_judge_model

            model = build_judge_model(config, target.chat_model(), StoreCallCache(self.store) if cache else None)
            judging = judge_settings(model, config, options.judge_samples)
        if config.judge.answer_similarity_model != "none":  # its weights load now: not installed fails the launch
            from evalcore.targets.knowledge import get_embedder

            get_embedder(config.judge.answer_similarity_model)
        calls = Calls()  # the check's connection is the campaign's too: closed when it ends
        try:
            with calls.active():
                target.check()
        except BaseException:
            calls.close()
            raise
        graded = graded_for(corpus, config, questions)
        if graded is not None and options.graded_thresholds:  # a resumed campaign keeps its launch's pass marks
            graded = graded._replace(thresholds=dict(options.graded_thresholds))
        return Plan(campaign_id, target, tuple(corpus.passages), tuple(questions), total, options, judges, judging,
                    graded, call_cache, hits_before, token or new_owner_token(), calls, answers_from,
                    price_table(self.store.location), dataset=corpus)

    @staticmethod
    def _insert(conn: Connection, record: dict[str, Any], questions: list[Question], plan: Plan | None) -> None:
        # Checking and inserting in one writer transaction makes concurrent launches on one suite safe.
        from evalcore.campaigns.questions import insert_questions

        mark_orphans(conn)
        _refuse_second_run(conn, record["suite_id"], record["id"])
        if campaign_rows.campaign_exists(conn, record["id"]):
            raise Conflict("a campaign with this id exists", where="campaign_id", found=record["id"])
        now = time.time()
        row = {**record, "status": CampaignStatus.PENDING.value, "created_at": now, "heartbeat": now,
               "owner_host": socket.gethostname(), "owner_pid": os.getpid()}
        if plan is None:  # queued: no owner until a worker claims it
            row |= {"status": QUEUED, "owner_token": None, "heartbeat": None, "queued_at": now}
        else:
            row["owner_token"] = plan.owner_token
        campaign_rows.insert_campaign(conn, row)
        insert_questions(conn, record["id"], questions)

    def _start(self, plan: Plan, cluster: Cluster | None) -> None:
        from evalcore.campaigns.cluster import DaskExecutor
        from evalcore.campaigns.runner import Runner

        runner = Runner(self.store, plan, self._after, DaskExecutor(plan, cluster) if cluster is not None else None,
                        ended=self._forget)
        with self._lock:
            self._runners[plan.campaign_id] = runner
            self._lost.discard(plan.campaign_id)
        runner.start()

    def _forget(self, runner: Runner) -> None:
        """A campaign ended, however: nothing of its run is kept (a resumed one has a runner of its own)."""
        with self._lock:
            if self._runners.get(runner.plan.campaign_id) is runner:
                del self._runners[runner.plan.campaign_id]
                if runner.lost:
                    self._lost.add(runner.plan.campaign_id)

    def lost(self, campaign_id: str) -> bool:
        """Whether this process ran the campaign until another process took it over (or it was deleted)."""
        with self._lock:
            return campaign_id in self._lost

    def resume(self, campaign_id: str, *, tenant: str | None = None, concurrency: int | None = None,
               target: Target | None = None, dataset: str | None = None, principal: Principal | None = None,
               force: bool = False, run_on: tuple[str | None, str | None] = (None, None),
               max_cost: float | None = None) -> str:
        """Run the questions that have no result yet (after an interruption, a cancel or a failure).

        `dataset` is where the campaign's dataset is now, when its folder moved (same content).
        `force` takes over a campaign that another live process still owns (a paused one): that
        process stops at its next write, and its questions in flight are asked again here.
        `run_on` (executor, scheduler) changes where it runs from now on (another cluster, or this machine).
        `max_cost` replaces its budget (a campaign stopped over_budget goes on with a larger one).
        """
        return self._rerun(campaign_id, "missing", scope(principal, tenant, Action.CHANGE), concurrency, target,
                           dataset, force, run_on, principal, max_cost)

    def retry_failed(self, campaign_id: str, *, tenant: str | None = None, concurrency: int | None = None,
                     target: Target | None = None, dataset: str | None = None,
                     principal: Principal | None = None, force: bool = False,
                     run_on: tuple[str | None, str | None] = (None, None)) -> str:
        """Run again only the questions whose result is an error (`dataset`, `force` and `run_on` as for resume)."""
        return self._rerun(campaign_id, "failed", scope(principal, tenant, Action.CHANGE), concurrency, target,
                           dataset, force, run_on, principal)

    def _rerun(self, campaign_id: str, only: str, tenant: str | None, concurrency: int | None,
               target: Target | None, dataset: str | None, force: bool = False,
               run_on: tuple[str | None, str | None] = (None, None), principal: Principal | None = None,
               max_cost: float | None = None) -> str:
        from evalcore.campaigns.budget import refuse_budget_spent, refuse_over_daily_budget
        from evalcore.campaigns.campaign_dataset import load_corpus, stored_dataset_path
        from evalcore.campaigns.cluster import cluster_for
        from evalcore.campaigns.questions import stored_questions
        from evalcore.campaigns.rejudging import refuse_if_judged_again
        from evalcore.targets import TargetConfig
        from evalcore.targets.allowed import check_request

        if problem := run_option_problem("concurrency", concurrency):
            raise EvalError("invalid run options", where="concurrency", problems=[problem])
        self.store.write(mark_orphans)
        campaign = get_campaign(self.store, campaign_id, tenant)
        if only == "failed":
            refuse_if_judged_again(self.store, campaign_id, "answer its failed questions again")
        budget = {} if max_cost is None else {"max_cost": max_cost}
        config = TargetConfig.from_dict({**campaign.config, **budget}).run_on(*run_on)
        if principal is not None:
            check_request(config)
        refuse_over_daily_budget(self.store, campaign.tenant)
        refuse_budget_spent(self.store, campaign_id, max_cost)
        if campaign.active and not force:
            raise owned_elsewhere(campaign_id, self.store)
        questions = stored_questions(self.store, campaign_id, only)
        if not questions:
            what = "has a result" if only == "missing" else "succeeded"
            raise EvalError(f"nothing to run: every question {what}", where=campaign_id)
        corpus = load_corpus(dataset or stored_dataset_path(campaign), campaign.dataset_hash)
        if campaign.kind == CampaignKind.TRACES and target is None:
            from evalcore.campaigns.traced import TraceAnswers

            target = TraceAnswers(self.store, campaign_id, config)
        with cluster_for(config, target is not None) as cluster:
            options = replace(campaign.options, dataset_path=str(corpus.path.resolve()),
                              concurrency=campaign.options.concurrency if concurrency is None else concurrency)
            plan = self._plan_here(campaign_id, config, corpus, questions, campaign.total, options, campaign.judges,
                                   campaign.cache, campaign.cache_hits, target, answers_from=campaign.answers_from)
            token = None if plan is None else plan.owner_token
            self.store.write(lambda conn: self._reactivate(conn, campaign_id, campaign.suite_id, options, config,
                                                           token, force, only))
            self._start_or_queue(plan, cluster)
        return campaign_id

    def run_claimed(self, campaign_id: str, token: str) -> None:
        """Run a campaign this process claimed from the queue (its questions without a result), on a thread; one
        that cannot start here (its dataset is not on this host, a model is unreachable) fails with the reason."""
        from evalcore.campaigns.answering import error_text
        from evalcore.campaigns.campaign_dataset import load_corpus, stored_dataset_path
        from evalcore.campaigns.cluster import cluster_for
        from evalcore.campaigns.questions import stored_questions
        from evalcore.targets import TargetConfig

        try:
            campaign = get_campaign(self.store, campaign_id)
            config = TargetConfig.from_dict(campaign.config)
            corpus = load_corpus(stored_dataset_path(campaign), campaign.dataset_hash)
            only = campaign_rows.rerun_of(self.store, campaign_id)
            questions = stored_questions(self.store, campaign_id, only)
            target: Target | None = None
            if campaign.kind == CampaignKind.TRACES:
                from evalcore.campaigns.traced import TraceAnswers

                target = TraceAnswers(self.store, campaign_id, config)
            with cluster_for(config, False) as cluster:
                plan = self._plan(campaign_id, config, corpus, questions, campaign.total, campaign.options,
                                  campaign.judges, campaign.cache, campaign.cache_hits, target, token,
                                  campaign.answers_from)
                self._claimed.add(campaign_id)
                self._start(plan, cluster)
        except NotFound:
            return  # deleted since it was claimed
        except Exception as failure:  # noqa: BLE001 - the campaign fails with its reason; the worker goes on
            reason = f"setup failed: {error_text(failure)}"
            self.store.write(lambda conn: campaign_rows.fail_setup(conn, campaign_id, token, reason, time.time()))

    @staticmethod
    def _reactivate(conn: Connection, campaign_id: str, suite_id: str | None, options: RunOptions,
                    config: TargetConfig, token: str | None, force: bool, only: str = "missing") -> None:
        """Make a campaign active again: owned by `token`, or queued for workers when it is None."""
        mark_orphans(conn)
        row = campaign_rows.status_row(conn, campaign_id)
        if row is None or (row["status"] in OWNED and not force):
            raise Conflict("the campaign is already running or was deleted", where=campaign_id, running_id=campaign_id)
        if row["status"] in OWNED:  # taken over: the old owner's next write finds another token and stops
            campaign_rows.set_status(conn, campaign_id, CampaignStatus.INTERRUPTED.value)
        _refuse_second_run(conn, suite_id, campaign_id)
        # The runner moves the counters by each batch it writes; a new session starts them from the
        # stored rows (one count per session, not per write).
        campaign_rows.reactivate(conn, campaign_id, CampaignStatus.PENDING.value if token else QUEUED,
                                 None if token else time.time(), only, token, dumps(options.to_dict()),
                                 dumps(config.to_dict()))

    def rename(self, campaign_id: str, name: str, *, tenant: str | None = None,
               principal: Principal | None = None) -> Campaign:
        """Give a campaign another name (any state); EvalError for an empty one."""
        tenant = scope(principal, tenant, Action.CHANGE)
        get_campaign(self.store, campaign_id, tenant)
        new = campaign_name(name, None)
        self.store.write(lambda conn: campaign_rows.rename(conn, campaign_id, new))
        return get_campaign(self.store, campaign_id, tenant)

    def cancel(self, campaign_id: str, *, tenant: str | None = None, principal: Principal | None = None) -> None:
        """Stop dispatching questions; those in flight finish or time out; then it is `cancelled`."""
        get_campaign(self.store, campaign_id, scope(principal, tenant, Action.CHANGE))

        def request(conn: Connection) -> None:
            mark_orphans(conn)
            row = campaign_rows.status_row(conn, campaign_id)
            if row is None:  # deleted since get_campaign saw it
                raise NotFound(f"no campaign {campaign_id!r}", where="campaign")
            status, now = row["status"], time.time()
            if status == QUEUED or (status in OWNED and (row["heartbeat"] or now) < now - lease_s()):
                # No runner, or one silent past its lease (it stopped, or lost the store): cancelled at once, and
                # a runner that comes back finds the campaign no longer its own.
                campaign_rows.cancel_now(conn, campaign_id, now)
                return
            if status not in OWNED:
                raise Conflict(f"the campaign is {status}: there is nothing to cancel", where=campaign_id)
            campaign_rows.request_cancel(conn, campaign_id)

        self.store.write(request)
        runner = self._runners.get(campaign_id)
        if runner is not None:
            runner.cancelled.set()

    def delete(self, campaign_id: str, *, tenant: str | None = None, principal: Principal | None = None) -> None:
        """Delete a campaign and its results (a running one stops first); Conflict while re-judges read its answers."""
        from evalcore.campaigns.rejudging import refuse_if_judged_again

        get_campaign(self.store, campaign_id, scope(principal, tenant, Action.CHANGE))
        refuse_if_judged_again(self.store, campaign_id, "delete the campaign")
        runner = self._runners.pop(campaign_id, None)
        if runner is not None:
            runner.cancelled.set()
        dialect = self.store.dialect

        def delete(conn: Connection) -> None:  # the passages no other campaign names go with its rows
            campaign_rows.delete_campaign(conn, campaign_id)
            delete_unused_passages(conn, dialect)

        self.store.write(delete)

    def wait(self, campaign_id: str, timeout: float | None = None) -> Campaign:
        """Block until the campaign is no longer pending/running (or timeout); return it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        runner = self._runners.get(campaign_id)
        if runner is not None and runner.thread.ident is not None:  # registered just before it starts: poll instead
            runner.thread.join(timeout)  # even when the store says it ended (another owner): this runner's end
        campaign, pause = get_campaign(self.store, campaign_id), 0.01
        while campaign.active and (deadline is None or time.monotonic() < deadline):
            # Claimed since by this process's workers: until its thread ends. Queued, registered just before its
            # thread starts, or owned by another process: poll the store, soon at first (a claim here takes
            # milliseconds), then every 0.2 s.
            runner = self._runners.get(campaign_id)
            if runner is not None and runner.thread.ident is not None and runner.thread.is_alive():
                runner.thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            else:
                time.sleep(pause)
                pause = min(2 * pause, 0.2)
            campaign = get_campaign(self.store, campaign_id)
        return campaign

    def close(self) -> None:
        """Stop claiming, cancel local runners, wait for them, close the store, and forget this manager. A campaign
        claimed from the queue and still busy after the grace (a question waiting for a slow target) is handed back
        as it is: its daemon threads end with the process."""
        from evalcore.jobs.job_queue import CLOSE_GRACE_S

        if self.workers is not None:
            self.workers.stop()
        if self.job_workers is not None:
            self.job_workers.close()
        runners = list(self._runners.items())
        for campaign_id, runner in runners:
            if campaign_id in self._claimed:
                runner.release()  # another worker resumes it
            else:
                runner.cancelled.set()
        deadline = time.monotonic() + CLOSE_GRACE_S
        for campaign_id, runner in runners:
            if campaign_id not in self._claimed:
                runner.thread.join()
                continue
            runner.thread.join(max(0.0, deadline - time.monotonic()))
            if runner.thread.is_alive():
                runner.hand_back()
        self.store.close()
        with _MANAGERS_LOCK:
            for key in [k for k, v in _MANAGERS.items() if v is self]:
                del _MANAGERS[key]


def judge_settings(model: ChatModel, config: TargetConfig, samples: int) -> JudgeSettings:
    """How a campaign's judges ask: its model, its own prompts and rubrics, their pass marks."""
    from evalcore.judges import JudgeSettings, custom_prompt, parse_rubric, rubric_prompt

    rubrics = [parse_rubric(name, text) for name, text in config.judge.rubrics]
    prompts = {name: custom_prompt(name, text, where=f"judge_prompts.{name}")
               for name, text in config.judge.judge_prompts}
    prompts |= {rubric.name: rubric_prompt(rubric) for rubric in rubrics}
    thresholds = dict(config.judge.judge_thresholds) | {rubric.name: rubric.pass_mark for rubric in rubrics}
    judge = config.judge
    return JudgeSettings(model, judge.judge_temperature, judge.judge_max_tokens, thresholds, samples, prompts)
