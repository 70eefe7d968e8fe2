"""The process-wide campaign manager: validates launches, owns the background runners."""

from __future__ import annotations

import math
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.access import Action, Principal, scope
from evalcore.campaigns.queries import get_campaign
from evalcore.campaigns.records import (
    DEFAULT_MAX_FAILED_SHARE,
    DEFAULT_TIME_LIMIT_S,
    Campaign,
    Question,
    RunOptions,
)
from evalcore.errors import EvalError
from evalcore.store import (
    ACTIVE,
    Conflict,
    Store,
    StoreCallCache,
    default_db_path,
    dumps,
    mark_orphans,
    new_owner_token,
)

if TYPE_CHECKING:
    from evalcore.campaigns.answering import Plan
    from evalcore.campaigns.cluster import Cluster
    from evalcore.campaigns.runner import Runner
    from evalcore.datasets import Dataset
    from evalcore.targets import Target, TargetConfig

# What launching needs (the plans, with the datasets' loader and pyarrow; the runner; the cluster) is
# imported by the functions that launch: a command that only reads the store does not load it.

_MANAGERS: dict[str, CampaignManager] = {}
_MANAGERS_LOCK = threading.Lock()


def get_manager(db_path: str | Path | None = None) -> CampaignManager:
    """The one manager of this process for a database path (created on first use)."""
    key = str(Path(db_path or default_db_path()).resolve())
    with _MANAGERS_LOCK:
        if key not in _MANAGERS:
            _MANAGERS[key] = CampaignManager(key)
        return _MANAGERS[key]


def new_campaign_id(tenant: str, dataset: str | None) -> str:
    """An evaluation task's id `evaluation_{tenant}_{unix_ms}_{8 hex}_{dataset_id}`; `run_...` for suite campaigns."""
    from evalcore.campaigns import plans

    stem = f"{tenant}_{int(time.time() * 1000)}_{secrets.token_hex(4)}"
    return f"evaluation_{stem}_{plans.dataset_tag(dataset)}" if dataset is not None else f"run_{stem}"


def _refuse_second_run(conn: sqlite3.Connection, suite_id: str | None, campaign_id: str) -> None:
    if suite_id is None:
        return
    row = conn.execute(
        "SELECT id FROM campaigns WHERE suite_id = ? AND id != ? AND status IN (?, ?)", (suite_id, campaign_id, *ACTIVE)
    ).fetchone()
    if row is not None:
        raise Conflict(
            "a campaign is already running on this suite", where=f"suite {suite_id}", found=row["id"],
            fix="wait for it to finish or cancel it", running_id=row["id"],
        )


def run_options(config: TargetConfig, concurrency: int | None, time_limit: float | None,
                max_failed_share: float | None, judge_samples: int, dataset_path: str,
                suite: bool = False, cluster: Cluster | None = None) -> RunOptions:
    """The run options of a launch, defaults filled in; EvalError naming a value out of range.

    A suite's questions are asked one after another unless told otherwise, so that its response
    times mean what they say. On a cluster, the automatic concurrency follows its worker threads.
    """
    from evalcore.campaigns import plans

    _check_concurrency(concurrency)
    if judge_samples < 1:
        raise EvalError("each judge must be asked at least once", where="judge_samples", found=str(judge_samples))
    # nan and inf compare false with everything and would switch the per-question limit off.
    if time_limit is not None and not (math.isfinite(time_limit) and time_limit > 0):
        raise EvalError("the time limit must be a finite number of seconds above 0", where="time_limit",
                        found=str(time_limit))
    if max_failed_share is not None and not 0 <= max_failed_share <= 1:
        raise EvalError("the failed share must be in [0, 1]", where="max_failed_share", found=str(max_failed_share))
    automatic = cluster.concurrency if cluster is not None else plans.default_concurrency(config)
    return RunOptions(concurrency=concurrency or (1 if suite else automatic),
                      time_limit=time_limit or DEFAULT_TIME_LIMIT_S,
                      max_failed_share=DEFAULT_MAX_FAILED_SHARE if max_failed_share is None else max_failed_share,
                      judge_samples=judge_samples, dataset_path=dataset_path)


MAX_NAME = 200


def campaign_name(name: str | None, config: TargetConfig | None) -> str:
    """The name given (trimmed, one line), else one made from the configuration's distinguishing settings."""
    if name is None and config is not None:
        return config.describe()
    text = " ".join((name or "").split())
    if not text or len(text) > MAX_NAME:
        raise EvalError("a campaign name is 1 to 200 characters", where="name", found=repr((name or "")[:40]))
    return text


def owned_elsewhere(campaign_id: str, store: Store) -> Conflict:
    """The refusal to resume a campaign a live process owns, saying which and what to do."""
    row = store.read("SELECT owner_host, owner_pid FROM campaigns WHERE id = ?", (campaign_id,))
    owner = f"process {row[0]['owner_pid']} on {row[0]['owner_host']}" if row else "another process"
    return Conflict(f"the campaign is still running: {owner} owns it (it may be paused, by Ctrl-Z or a sleeping "
                    "laptop)", where=campaign_id, running_id=campaign_id,
                    fix="let it finish, cancel it, or take it over with --force (its questions in flight are "
                        "asked again)")


def sweep_name(name: str | None, config: TargetConfig, key: str, value: object) -> str:
    """The name of one campaign of a sweep: the name given (else the configuration's, without the swept key, which
    the name ends with) and the value it tries."""
    default = type(config).from_dict({**config.to_dict(), key: type(config)().to_dict()[key]})
    return f"{(name or '').strip() or default.describe()} · {key}={value}"


def _check_concurrency(concurrency: int | None) -> None:
    if concurrency is not None and concurrency < 1:
        raise EvalError("concurrency must be at least 1", where="concurrency", found=str(concurrency))


class CampaignManager:
    """Launch, resume, retry, cancel and delete campaigns; each runs on its own background thread."""

    def __init__(self, db_path: str | Path) -> None:
        self.store = Store(db_path)
        self._runners: dict[str, Runner] = {}
        self._lock = threading.Lock()
        self._after: list[Callable[[Store, str], object]] = []

    def after_each(self, hook: Callable[[Store, str], object]) -> None:
        """Call `hook(store, campaign_id)` after every campaign this manager runs ends (not when cancelled).

        Layers above campaigns use it (the comparison of a new campaign with the previous one is
        computed then, in the background, so the Compare page opens on it at once). Once per hook.
        """
        if hook not in self._after:
            self._after.append(hook)

    def launch(
        self, *, dataset: str | None = None, suite_id: str | None = None, config: TargetConfig | None = None,
        target_id: str | None = None, tenant: str = "default", use_judge: bool = False, judges: tuple[str, ...] = (),
        concurrency: int | None = None, cache: bool = True, campaign_id: str | None = None,
        time_limit: float | None = None, max_failed_share: float | None = None, limit: int | None = None,
        target: Target | None = None, judge_samples: int = 1, name: str | None = None,
        dataset_root: Path | None = None,
        principal: Principal | None = None,
    ) -> str:
        """Validate everything (dataset, configuration, target reachable), start in the background, return the id.

        `target` runs a ready-made Target object (its config is the snapshot) instead of building one.
        `dataset_root` is where dataset ids (a suite's knowledge base) are found, when not dataset/ (the API's).
        A principal launches in its own tenant, and only with a role that may change things.
        """
        from evalcore.campaigns import plans
        from evalcore.campaigns.cluster import cluster_for
        from evalcore.suites import get_suite

        tenant = scope(principal, tenant, Action.CHANGE) or tenant
        if (dataset is None) == (suite_id is None):
            raise EvalError("give either a dataset or a suite", where="launch", fix="pass --dataset ID or --suite ID")
        suite = get_suite(self.store, suite_id, tenant) if suite_id is not None else None
        config = target.config if target is not None else config
        config, target_id = plans.resolve_config(self.store, config, target_id, suite, tenant)
        corpus = plans.load_corpus(config.knowledge_base if suite is not None else str(dataset), None, dataset_root)
        questions = plans.dataset_questions(corpus) if suite is None else plans.suite_questions(suite)
        if limit is not None and limit < 1:
            raise EvalError("the question limit must be at least 1", where="limit", found=str(limit),
                            fix="leave it out to run every question")
        questions = questions[:limit] if limit else questions
        if not questions:
            raise EvalError("there is no question to run", where=suite_id or str(dataset), fix="add questions first")
        judge_names = plans.check_judges((("score",) if use_judge else ()) + tuple(judges))
        with cluster_for(config, target is not None) as cluster:  # an unreachable scheduler refuses the launch
            # resume must find the same folder from any working directory: the path is stored absolute
            options = run_options(config, concurrency, time_limit, max_failed_share, judge_samples,
                                  str(corpus.path.resolve()), suite=suite is not None, cluster=cluster)
            campaign_id = campaign_id or new_campaign_id(tenant, dataset)
            plan = self._plan(campaign_id, config, corpus, questions, len(questions), options, judge_names, cache, 0,
                              target)
            record = {
                "id": campaign_id, "name": campaign_name(name, config), "tenant": tenant,
                "kind": "suite" if suite else "dataset", "source": suite_id if suite else str(dataset),
                "suite_id": suite_id, "target_id": target_id, "total": len(questions),
                "config": dumps(config.to_dict()), "dataset_hash": corpus.content_hash, "use_judge": int(use_judge),
                "judges": dumps(list(judge_names)), "cache": int(cache), "options": dumps(options.to_dict()),
                "owner_token": plan.owner_token,
            }
            self.store.write(lambda conn: self._insert(conn, record, questions))
            self._start(plan, cluster)
        return campaign_id

    def _plan(self, campaign_id: str, config: TargetConfig, corpus: Dataset, questions: list[Question], total: int,
              options: RunOptions, judges: tuple[str, ...], cache: bool, hits_before: int,
              target: Target | None) -> Plan:
        """Build and check the target (fails fast when a model is unreachable)."""
        from evalcore.campaigns import plans
        from evalcore.campaigns.answering import Plan
        from evalcore.judges import JudgeSettings

        call_cache = StoreCallCache(self.store) if cache and target is None else None
        if target is None:
            from evalcore.targets import build_target

            # The index cache lives next to the database, so one --db keeps everything together.
            target = build_target(config, cache=call_cache, cache_dir=self.store.path.parent / "index")
        judging = None
        if judges:  # before the target's own check: a launch that cannot be judged is refused first
            from evalcore.targets.generation import build_judge_model

            model = build_judge_model(config, target.chat_model(), StoreCallCache(self.store) if cache else None)
            judging = JudgeSettings(model, config.judge_temperature, config.judge_max_tokens,
                                    dict(config.judge_thresholds), options.judge_samples)
        target.check()
        graded = plans.graded_scale(corpus, config) if any(q.relevant for q in questions) else None
        return Plan(campaign_id, target, tuple(corpus.passages), tuple(questions), total, options, judges, judging,
                    graded, call_cache, hits_before, new_owner_token())

    @staticmethod
    def _insert(conn: sqlite3.Connection, record: dict[str, Any], questions: list[Question]) -> None:
        # Checking and inserting in one writer transaction makes concurrent launches on one suite safe.
        from evalcore.campaigns import plans

        mark_orphans(conn)
        _refuse_second_run(conn, record["suite_id"], record["id"])
        if conn.execute("SELECT 1 FROM campaigns WHERE id = ?", (record["id"],)).fetchone():
            raise Conflict("a campaign with this id exists", where="campaign_id", found=record["id"])
        now = time.time()
        row = {**record, "status": "pending", "created_at": now, "heartbeat": now,
               "owner_host": socket.gethostname(), "owner_pid": os.getpid()}
        conn.execute(f"INSERT INTO campaigns ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})", row)
        plans.insert_questions(conn, record["id"], questions)

    def _start(self, plan: Plan, cluster: Cluster | None) -> None:
        from evalcore.campaigns.cluster import DaskExecutor
        from evalcore.campaigns.runner import Runner

        runner = Runner(self.store, plan, self._after, DaskExecutor(plan, cluster) if cluster is not None else None)
        with self._lock:
            self._runners[plan.campaign_id] = runner
        runner.start()

    def resume(self, campaign_id: str, *, tenant: str | None = None, concurrency: int | None = None,
               target: Target | None = None, dataset: str | None = None, principal: Principal | None = None,
               force: bool = False, run_on: tuple[str | None, str | None] = (None, None)) -> str:
        """Run the questions that have no result yet (after an interruption, a cancel or a failure).

        `dataset` is where the campaign's dataset is now, when its folder moved (same content).
        `force` takes over a campaign that another live process still owns (a paused one): that
        process stops at its next write, and its questions in flight are asked again here.
        `run_on` (executor, scheduler) changes where it runs from now on (another cluster, or this machine).
        """
        return self._rerun(campaign_id, "missing", scope(principal, tenant, Action.CHANGE), concurrency, target,
                           dataset, force, run_on)

    def retry_failed(self, campaign_id: str, *, tenant: str | None = None, concurrency: int | None = None,
                     target: Target | None = None, dataset: str | None = None,
                     principal: Principal | None = None, force: bool = False,
                     run_on: tuple[str | None, str | None] = (None, None)) -> str:
        """Run again only the questions whose result is an error (`dataset`, `force` and `run_on` as for resume)."""
        return self._rerun(campaign_id, "failed", scope(principal, tenant, Action.CHANGE), concurrency, target,
                           dataset, force, run_on)

    def _rerun(self, campaign_id: str, only: str, tenant: str | None, concurrency: int | None,
               target: Target | None, dataset: str | None, force: bool = False,
               run_on: tuple[str | None, str | None] = (None, None)) -> str:
        from evalcore.campaigns import plans
        from evalcore.campaigns.cluster import cluster_for
        from evalcore.targets import TargetConfig

        _check_concurrency(concurrency)
        self.store.write(mark_orphans)
        campaign = get_campaign(self.store, campaign_id, tenant)
        if campaign.active and not force:
            raise owned_elsewhere(campaign_id, self.store)
        questions = plans.stored_questions(self.store, campaign_id, only)
        if not questions:
            what = "has a result" if only == "missing" else "succeeded"
            raise EvalError(f"nothing to run: every question {what}", where=campaign_id)
        config = TargetConfig.from_dict(campaign.config).run_on(*run_on)
        corpus = plans.load_corpus(dataset or plans.stored_dataset_path(campaign), campaign.dataset_hash)
        with cluster_for(config, target is not None) as cluster:
            options = replace(campaign.options, dataset_path=str(corpus.path.resolve()),
                              concurrency=campaign.options.concurrency if concurrency is None else concurrency)
            plan = self._plan(campaign_id, config, corpus, questions, campaign.total, options, campaign.judges,
                              campaign.cache, campaign.cache_hits, target)
            self.store.write(lambda conn: self._reactivate(conn, campaign_id, campaign.suite_id, options, config,
                                                           plan.owner_token, force))
            self._start(plan, cluster)
        return campaign_id

    @staticmethod
    def _reactivate(conn: sqlite3.Connection, campaign_id: str, suite_id: str | None, options: RunOptions,
                    config: TargetConfig, token: str, force: bool) -> None:
        mark_orphans(conn)
        row = conn.execute("SELECT status FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
        if row is None or (row["status"] in ACTIVE and not force):
            raise Conflict("the campaign is already running or was deleted", where=campaign_id, running_id=campaign_id)
        if row["status"] in ACTIVE:  # taken over: the old owner's next write finds another token and stops
            conn.execute("UPDATE campaigns SET status = 'interrupted' WHERE id = ?", (campaign_id,))
        _refuse_second_run(conn, suite_id, campaign_id)
        # The runner moves the counters by each batch it writes; a new session starts them from the
        # stored rows (one count per session, not per write).
        conn.execute(
            "UPDATE campaigns SET status = 'pending', error = NULL, ended_at = NULL, cancel_requested = 0, "
            "owner_host = ?, owner_pid = ?, owner_token = ?, heartbeat = ?, options = ?, config = ?, "
            "finished = (SELECT count(*) FROM results WHERE campaign_id = ?), "
            "failed = (SELECT count(error) FROM results WHERE campaign_id = ?) WHERE id = ?",
            (socket.gethostname(), os.getpid(), token, time.time(), dumps(options.to_dict()), dumps(config.to_dict()),
             campaign_id, campaign_id, campaign_id),
        )

    def rename(self, campaign_id: str, name: str, *, tenant: str | None = None,
               principal: Principal | None = None) -> Campaign:
        """Give a campaign another name (any state); EvalError for an empty one."""
        tenant = scope(principal, tenant, Action.CHANGE)
        get_campaign(self.store, campaign_id, tenant)
        new = campaign_name(name, None)
        self.store.write(lambda conn: conn.execute("UPDATE campaigns SET name = ? WHERE id = ?", (new, campaign_id)))
        return get_campaign(self.store, campaign_id, tenant)

    def cancel(self, campaign_id: str, *, tenant: str | None = None, principal: Principal | None = None) -> None:
        """Stop dispatching questions; those in flight finish or time out; then it is `cancelled`."""
        get_campaign(self.store, campaign_id, scope(principal, tenant, Action.CHANGE))

        def request(conn: sqlite3.Connection) -> None:
            mark_orphans(conn)
            status = conn.execute("SELECT status FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()["status"]
            if status not in ACTIVE:
                raise Conflict(f"the campaign is {status}: there is nothing to cancel", where=campaign_id)
            conn.execute("UPDATE campaigns SET cancel_requested = 1 WHERE id = ?", (campaign_id,))

        self.store.write(request)
        runner = self._runners.get(campaign_id)
        if runner is not None:
            runner.cancelled.set()

    def delete(self, campaign_id: str, *, tenant: str | None = None, principal: Principal | None = None) -> None:
        """Delete a campaign and its results (a running one stops first)."""
        get_campaign(self.store, campaign_id, scope(principal, tenant, Action.CHANGE))
        runner = self._runners.pop(campaign_id, None)
        if runner is not None:
            runner.cancelled.set()
        self.store.write(lambda conn: conn.execute("DELETE FROM campaigns WHERE id = ?", (campaign_id,)))

    def wait(self, campaign_id: str, timeout: float | None = None) -> Campaign:
        """Block until the campaign is no longer pending/running (or timeout); return it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        runner = self._runners.get(campaign_id)
        if runner is not None:
            runner.thread.join(timeout)
        campaign = get_campaign(self.store, campaign_id)
        # Owned by another process: poll the store.
        while campaign.active and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.2)
            campaign = get_campaign(self.store, campaign_id)
        return campaign

    def close(self) -> None:
        """Cancel local runners, wait for them, close the store, and forget this manager."""
        for runner in list(self._runners.values()):
            runner.cancelled.set()
        for runner in list(self._runners.values()):
            runner.thread.join()
        self.store.close()
        with _MANAGERS_LOCK:
            for key in [k for k, v in _MANAGERS.items() if v is self]:
                del _MANAGERS[key]
