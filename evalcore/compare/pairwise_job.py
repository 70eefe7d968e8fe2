"""Asking the pairwise judge on two finished campaigns: every common answered question, in both orders, kept.

The judge model is B's configuration's (its judge keys: `judge_kind`, `judge_model`, ...) unless the caller
gives other judge keys; every call goes through the store's model-call cache, so asking again on the same
answers asks the model nothing. The result is kept per pair of campaign versions and judge signature
(`saved_comparisons.keep_preference`), and every comparison of the pair carries the newest one (`compare_campaigns`).

Asking it is a job (`evalcore.jobs.job_queue`, kind "pairwise"): started by a request at once (`start_pairwise`), run by
a worker, each question's verdict kept as it comes, so a job resumed after its worker stopped asks only the rest.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import as_completed
from typing import Any

from evalcore.access.principals import Action, Principal, scope
from evalcore.campaigns import Campaign, QuestionResult, campaign_results, get_campaign
from evalcore.compare import saved_comparisons
from evalcore.compare.comparison import question_key
from evalcore.compare.preference import Preference
from evalcore.errors import EvalError
from evalcore.jobs import job_queue
from evalcore.judges import JudgeSettings, Passage
from evalcore.judges.pairwise import PairVerdict, Side, judge_pair, pairwise_signature
from evalcore.runtime.threads import DaemonPool
from evalcore.store import Store, StoreCallCache
from evalcore.targets import TargetConfig
from evalcore.targets.allowed import check_request
from evalcore.targets.generators import build_chat_model, build_judge_model, judged_locally

# The configuration keys a caller may give for the pairwise judge's model (the rest is B's configuration).
JUDGE_KEYS = ("judge_kind", "judge_model", "judge_base_url", "judge_api_key_env", "judge_deployment",
              "judge_api_version", "judge_api_key_header", "judge_temperature", "judge_max_tokens",
              "judge_structured_output")


def judge_config(campaign: Campaign, judge: Mapping[str, Any]) -> TargetConfig:
    """B's configuration with the given judge keys (EvalError naming an unknown key)."""
    unknown = sorted(set(judge) - set(JUDGE_KEYS))
    if unknown:
        raise EvalError("not a key of the pairwise judge's model", where=", ".join(unknown),
                        expected=", ".join(JUDGE_KEYS))
    return TargetConfig.from_dict({**campaign.config, **judge})


def asks_local_model(campaign: Campaign, judge: Mapping[str, Any]) -> bool:
    """Whether the pairwise judge of B (`campaign`) with these judge keys would ask the offline SmolLM2."""
    return judged_locally(judge_config(campaign, judge))


def pairwise_settings(store: Store, campaign: Campaign, judge: Mapping[str, Any],
                      principal: Principal | None) -> JudgeSettings:
    """How the pairwise judge asks: the model of these judge keys (checked), its temperature and length, cached."""
    config = judge_config(campaign, judge)
    if principal is not None:
        if judge:
            principal.require(Action.CONFIGURE)  # a judge model names a host the server connects to
        check_request(config)
    call_cache = StoreCallCache(store)
    model = build_judge_model(config, build_chat_model(config, call_cache), call_cache)
    return JudgeSettings(model, config.judge.judge_temperature, config.judge.judge_max_tokens)


def answered_pairs(a_rows: list[QuestionResult], b_rows: list[QuestionResult]) -> list[tuple[QuestionResult,
                                                                                            QuestionResult]]:
    """The questions both campaigns answered (same id and text), in A's order."""
    answered = {question_key(row): row for row in b_rows if row.outcome.answer and not row.outcome.error}
    return [(row, answered[question_key(row)]) for row in a_rows
            if row.outcome.answer and not row.outcome.error and question_key(row) in answered]


def side_of(row: QuestionResult) -> Side:
    """A campaign's answer with the passages it was built from, whole and with their titles."""
    return Side(row.outcome.answer or "", tuple(Passage(hit.text, hit.title) for hit in row.outcome.context))


def judge_question(settings: JudgeSettings, a_row: QuestionResult, b_row: QuestionResult) -> PairVerdict:
    """The pairwise judge on one common question, with every reference answer."""
    question = a_row.question
    references = (question.expected_answer,) if question.expected_answer else question.references
    return judge_pair(settings, qid=question.qid, question=question.text, references=references,
                      a=side_of(a_row), b=side_of(b_row))


def kept_pairwise(store: Store, a_id: str, b_id: str, *, tenant: str | None = None,
                  principal: Principal | None = None) -> Preference | None:
    """The pairwise judge's newest verdicts on A and B as they are now, or None when it was not asked since."""
    tenant = scope(principal, tenant)
    return saved_comparisons.find_preference(store, get_campaign(store, a_id, tenant=tenant), get_campaign(store, b_id,
                                                                                                tenant=tenant))


PAIRWISE_JOB = "pairwise"


def _common_pairs(store: Store, a: Campaign, b: Campaign,
                  limit: int | None) -> list[tuple[QuestionResult, QuestionResult]]:
    """The first `limit` common answered questions of two finished campaigns (EvalError when none, or running)."""
    if a.active or b.active:
        raise EvalError("the pairwise judge compares finished campaigns", where=(a if a.active else b).id,
                        found="still running", fix="wait until it ends, then ask again")
    pairs = answered_pairs(campaign_results(store, a.id), campaign_results(store, b.id))[:limit]
    if not pairs:
        raise EvalError("A and B have no answered question in common: nothing for the pairwise judge",
                        where=f"{a.id}, {b.id}", fix="compare two campaigns over the same questions")
    return pairs


def start_pairwise(store: Store, a_id: str, b_id: str, *, judge: Mapping[str, Any] | None = None,
                   limit: int | None = None, tenant: str | None = None, principal: Principal | None = None) -> str:
    """Queue the pairwise judge on the common answered questions of A and B (the first `limit`) as a job: its id.

    Everything a request can get wrong is checked here, at once (the rights, finished campaigns with questions in
    common, the judge's keys); the model is asked by the worker that runs the job. It spends model calls, so a
    principal needs the right to launch; other judge keys than B's need full access. Conflict while the same job
    is under way."""
    tenant = scope(principal, tenant, Action.CHANGE)
    a, b = get_campaign(store, a_id, tenant=tenant), get_campaign(store, b_id, tenant=tenant)
    pairs = _common_pairs(store, a, b, limit)
    config = judge_config(b, judge or {})
    if principal is not None:
        if judge:
            principal.require(Action.CONFIGURE)  # a judge model names a host the server connects to
        check_request(config)
    params = {"a": a.id, "b": b.id, "judge": dict(judge or {}), "limit": limit}
    return job_queue.submit(store, PAIRWISE_JOB, params, tenant=b.tenant, total=len(pairs), unique=True)


def run_pairwise(context: job_queue.JobContext) -> dict[str, Any]:
    """The pairwise job: each common question judged (B's questions in flight at once) and kept as it is done, so
    a resumed job asks only the rest; then the preference, kept for the pair."""
    store, params = context.store, context.job.params
    a, b = get_campaign(store, params["a"]), get_campaign(store, params["b"])
    pairs = _common_pairs(store, a, b, params.get("limit"))
    settings = pairwise_settings(store, b, params.get("judge") or {}, None)
    kept = context.kept()
    todo = [position for position in range(len(pairs)) if position not in kept]
    with DaemonPool(b.options.concurrency, "pairwise-judge") as pool:  # B's questions in flight
        asked = {pool.submit(judge_question, settings, *pairs[position]): position for position in todo}
        try:
            for future in as_completed(asked):
                verdict = future.result().to_dict()
                kept[asked[future]] = verdict
                context.keep(asked[future], verdict, len(pairs))
                context.check()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    verdicts = tuple(PairVerdict.from_dict(kept[position]) for position in range(len(pairs)))
    preference = Preference(a.id, b.id, settings.model.name, pairwise_signature(settings.model.name), verdicts,
                            time.time())
    saved_comparisons.keep_preference(store, preference, a, b)
    return {"pairwise": preference.to_dict()}


PAIRWISE = job_queue.JobKind(PAIRWISE_JOB, run_pairwise)
job_queue.register(PAIRWISE)


def judge_comparison(store: Store, a_id: str, b_id: str, *, judge: Mapping[str, Any] | None = None,
                     limit: int | None = None, tenant: str | None = None,
                     principal: Principal | None = None) -> Preference:
    """The pairwise job started and run on this thread (the CLI): its preference, kept."""
    job = job_queue.run_now(store, start_pairwise(store, a_id, b_id, judge=judge, limit=limit, tenant=tenant,
                                             principal=principal))
    if job.status != job_queue.JobStatus.SUCCEEDED or job.result is None:
        raise EvalError(f"the pairwise judge {job.status.value}: {job.error or 'no result'}", where=job.id)
    return Preference.from_dict(job.result["pairwise"])
