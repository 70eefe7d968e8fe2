"""Reading campaigns back from the store: one campaign, lists, per-question results, aggregates."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from evalcore.access.principals import Principal, owned, scope
from evalcore.campaigns.records import UNRECORDED, Aggregate, Campaign, QuestionResult, Summary, Tokens, results_version
from evalcore.campaigns.result_rows import QuestionLine, read_lines, read_results
from evalcore.costs import GENERATOR, Usage, summed
from evalcore.diagnosis import StageCounts
from evalcore.errors import EvalError
from evalcore.judges import JudgeResult
from evalcore.metrics.graded import current_name
from evalcore.store import Connection, NotFound, Store, campaign_rows, dumps, figure_rows, result_sums

CANDIDATES_SHOWN = 10  # campaigns an ambiguous name lists


def get_campaign(store: Store, campaign_id: str, tenant: str | None = None, *,
                 principal: Principal | None = None) -> Campaign:
    """One campaign with its configuration snapshot and progress; NotFound for other tenants too."""
    tenant = scope(principal, tenant)
    row = campaign_rows.campaign_row(store, Campaign.COLUMNS, campaign_id)
    if row is None or not owned(row["tenant"], tenant):
        raise NotFound(f"no campaign {campaign_id!r}", where="campaign",
                       fix="list them with `python -m evalcore campaigns list`")
    return Campaign.from_row(row)


def find_campaign(store: Store, text: str, tenant: str | None = None, *,
                  principal: Principal | None = None) -> Campaign:
    """The campaign `text` names: its id, its exact name, else the one name or id it starts (case ignored).

    NotFound when none does; an EvalError listing the candidates when several do."""
    tenant = scope(principal, tenant)
    row = campaign_rows.campaign_row(store, Campaign.COLUMNS, text)
    if row is not None and owned(row["tenant"], tenant):
        return Campaign.from_row(row)
    campaigns = list_campaigns(store, tenant)
    folded = text.casefold()
    for matches in ([c for c in campaigns if c.name == text],
                    [c for c in campaigns if c.name.casefold().startswith(folded) or c.id.startswith(text)]):
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise EvalError(f"{text!r} names {len(matches)} campaigns", where="campaign", found="; ".join(
                f"{c.name} ({c.id})" for c in matches[:CANDIDATES_SHOWN]) + (" …" if len(matches) > CANDIDATES_SHOWN
                                                                            else ""),
                fix="give more of the name, or the id")
    raise NotFound(f"no campaign {text!r} (as an id, a name or the start of one)", where="campaign",
                   fix="list them with `python -m evalcore campaigns list`")


def check_visible(store: Store, campaign_id: str, principal: Principal | None) -> None:
    """NotFound unless the principal sees this campaign (nothing to check without one: the local operator)."""
    if principal is not None:
        get_campaign(store, campaign_id, principal=principal)


def list_campaigns(store: Store, tenant: str | None = None, suite_id: str | None = None, *,
                   principal: Principal | None = None) -> list[Campaign]:
    """Campaigns, newest first, optionally of one tenant and/or one suite."""
    tenant = scope(principal, tenant)
    return [Campaign.from_row(row) for row in campaign_rows.campaign_rows(store, Campaign.COLUMNS, tenant, suite_id)]


def campaign_results(store: Store, campaign_id: str, offset: int = 0, limit: int | None = None,
                     *, principal: Principal | None = None, detail: bool = True,
                     positions: Sequence[int] | None = None) -> list[QuestionResult]:
    """The stored result of every finished question, in question order (pending ones are absent); `detail=False`
    without the ranked lists' scores and the signatures, which a comparison does not read; `positions`: of those
    questions only (read_results)."""
    check_visible(store, campaign_id, principal)
    return read_results(store, campaign_id, offset, limit, detail=detail, positions=positions)


def campaign_lines(store: Store, campaign_id: str, *, principal: Principal | None = None) -> list[QuestionLine]:
    """Every finished question's place, id, text, answer and error, in question order: what a list of them shows
    and filters on, without reading whole results."""
    check_visible(store, campaign_id, principal)
    return read_lines(store, campaign_id)


def campaign_aggregates(store: Store, campaign_id: str, *, principal: Principal | None = None) -> dict[str, Aggregate]:
    """Per measure: the mean over stored results where it is present, and that count (kept once the campaign has
    ended: `panel_figures`)."""
    return panel_figures(store, visible_campaign(store, campaign_id, principal), campaign_id)[0]


def campaign_summary(store: Store, campaign_id: str, *, principal: Principal | None = None) -> Summary:
    """The campaign summary of suites, computed from the stored rows (kept once the campaign has ended)."""
    return panel_figures(store, visible_campaign(store, campaign_id, principal), campaign_id)[1]


def visible_campaign(store: Store, campaign_id: str, principal: Principal | None) -> Campaign | None:
    """The campaign, NotFound unless the principal sees it; without a principal (the local operator), None when there
    is no such campaign."""
    if principal is not None:
        return get_campaign(store, campaign_id, principal=principal)
    row = campaign_rows.campaign_row(store, Campaign.COLUMNS, campaign_id)
    return Campaign.from_row(row) if row is not None else None


# A campaign's figures are computed from its result rows once it has ended and kept (campaign_figures), under its
# results version: a list of campaigns or a campaign's panel reads them instead of aggregating every row each time.
# Kinds of figures, and the format of each (a new format is computed afresh).
HEADLINE_FIGURES, PANEL_FIGURES = "headline/1", "panel/3"


def panel_figures(store: Store, campaign: Campaign | None, campaign_id: str) -> tuple[dict[str, Aggregate], Summary]:
    """A campaign's aggregates and summary: kept ones when its results have not changed since, else computed (and
    kept when it has ended; never kept without the campaign)."""
    version = results_version(campaign) if campaign is not None else ""
    kept = read_figures(store, PANEL_FIGURES, {campaign_id: version}) if campaign is not None else {}
    if campaign_id in kept:
        data = kept[campaign_id]
        aggregates = {name: Aggregate(mean, count) for name, (mean, count) in data["aggregates"].items()}
        summary = data["summary"]
        return aggregates, Summary(
            answered=summary["answered"], failed=summary["failed"], sources_found_rate=summary["sources_found_rate"],
            mean_coverage=summary["mean_coverage"], mean_judge_score=summary["mean_judge_score"],
            mean_latency_s=summary["mean_latency_s"], tokens=Tokens(**summary["tokens"]),
            judge_tokens=Tokens(**summary["judge_tokens"]), skipped=summary["skipped"], cut=summary["cut"],
            no_claim=summary["no_claim"], unknown=summary["unknown"], judged=summary["judged"],
            usage=tuple(Usage(**use) for use in summary.get("usage") or ()))
    aggregates = compute_aggregates(store, campaign_id)
    summary = compute_summary(store, campaign_id, aggregates)
    if campaign is not None and not campaign.active:
        keep_figures(store, PANEL_FIGURES, {campaign_id: version}, {campaign_id: {
            "aggregates": {name: [value.mean, value.count] for name, value in aggregates.items()},
            "summary": {**summary.to_dict(), "tokens": {"prompt": summary.tokens.prompt,
                                                        "completion": summary.tokens.completion},
                        "judge_tokens": {"prompt": summary.judge_tokens.prompt,
                                         "completion": summary.judge_tokens.completion}}}})
    return aggregates, summary


def read_figures(store: Store, kind: str, versions: Mapping[str, str]) -> dict[str, Any]:
    """The kept figures of this kind of the campaigns whose results version is still the one given."""
    if not versions:
        return {}
    rows = figure_rows.figure_rows(store, kind, list(versions))
    return {row["campaign_id"]: json.loads(row["data"]) for row in rows
            if versions.get(row["campaign_id"]) == row["version"]}


def keep_figures(store: Store, kind: str, versions: Mapping[str, str], data: Mapping[str, Any]) -> None:
    """Keep figures computed from these results versions, for the campaigns still at them (a campaign resumed or
    retried meanwhile keeps none)."""
    def write(conn: Connection) -> None:
        now = {row["id"]: results_version(Campaign.from_row(row))
               for row in campaign_rows.campaign_rows_by_id(conn, Campaign.COLUMNS, list(versions))}
        figure_rows.put_figures(
            conn, [(campaign_id, kind, version, dumps(data[campaign_id]), time.time())
             for campaign_id, version in versions.items() if now.get(campaign_id) == version])

    store.write(write)


def compute_aggregates(store: Store, campaign_id: str) -> dict[str, Aggregate]:
    """Per measure: the mean over the campaign's stored results where it is present, and that count."""
    return {current_name(row["name"]): Aggregate(row["mean"], row["n"])
            for row in result_sums.measure_aggregates(store, campaign_id)}


def compute_summary(store: Store, campaign_id: str, aggregates: Mapping[str, Aggregate]) -> Summary:
    """The campaign summary of suites, from the stored rows and the campaign's aggregates."""
    row = result_sums.answer_sums(store, campaign_id)
    skipped = judge_counts(store, campaign_id, "result", JudgeResult.SKIPPED.value)
    cut = judge_counts(store, campaign_id, "context_cut")
    no_claim = judge_counts(store, campaign_id, "result", JudgeResult.NO_CLAIM.value)
    unknown = judge_counts(store, campaign_id, "result", JudgeResult.UNKNOWN.value)
    verdicts = judge_counts(store, campaign_id, "result")

    def mean(name: str) -> float | None:
        return aggregates[name].mean if name in aggregates else None

    return Summary(answered=row["answered"], failed=row["failed"], sources_found_rate=mean("sources_found"),
                   mean_coverage=mean("coverage"), mean_judge_score=mean("judge.score"),
                   mean_latency_s=row["latency"], tokens=Tokens(row["prompt"], row["completion"]),
                   judge_tokens=Tokens(row["judge_prompt"], row["judge_completion"]),
                   skipped=skipped, cut=cut, no_claim=no_claim, unknown=unknown,
                   judged={name: count - skipped.get(name, 0) for name, count in verdicts.items()},
                   usage=campaign_usage(store, campaign_id))


def campaign_usage(store: Store, campaign_id: str) -> tuple[Usage, ...]:
    """A campaign's tokens and their cost by role and model, summed over its stored questions; the tokens of rows
    stored before costs were kept count without their model, and so without a price."""
    # Rows whose usage is an empty list (no model was called: retrieval, the extractive generator) add nothing: not
    # read, so a campaign without models reads none of its rows here.
    rows = result_sums.usage_rows(store, campaign_id)
    uses: list[Usage] = []
    for row in rows:
        if row["usage"] is None:
            for role, prompt, completion in ((GENERATOR, row["prompt_tokens"], row["completion_tokens"]),
                                             ("judge", row["judge_prompt_tokens"], row["judge_completion_tokens"])):
                if prompt + completion:
                    uses.append(Usage(role, UNRECORDED, prompt, completion, None, ""))
        else:
            uses.extend(Usage.from_json(use) for use in json.loads(row["usage"]))
    return summed(uses)


def judge_counts(store: Store, campaign_id: str, key: str, value: str | None = None) -> dict[str, int]:
    """Per judge, the campaign's verdicts whose field `key` is this value (any, without one)."""
    return result_sums.verdict_counts(store, campaign_id, key, value)


def campaign_diagnosis(store: Store, campaign_id: str, *, principal: Principal | None = None) -> StageCounts:
    """How many of the stored questions failed at each stage (evalcore.diagnosis), from the stored stages."""
    check_visible(store, campaign_id, principal)
    return StageCounts.of((row["diagnosis"], row["n"]) for row in result_sums.stage_counts(store, campaign_id))
