"""Reading campaigns back from the store: one campaign, lists, per-question results, aggregates."""

from __future__ import annotations

from evalcore.access import Principal, owned, scope
from evalcore.campaigns.records import Aggregate, Campaign, QuestionResult, Summary, Tokens
from evalcore.campaigns.result_rows import read_results
from evalcore.diagnosis import StageCounts
from evalcore.errors import EvalError
from evalcore.judges import JudgeResult
from evalcore.metrics.graded import current_name
from evalcore.store import NotFound, Store

CANDIDATES_SHOWN = 10  # campaigns an ambiguous name lists


def get_campaign(store: Store, campaign_id: str, tenant: str | None = None, *,
                 principal: Principal | None = None) -> Campaign:
    """One campaign with its configuration snapshot and progress; NotFound for other tenants too."""
    tenant = scope(principal, tenant)
    rows = store.read(f"SELECT {Campaign.COLUMNS} FROM campaigns WHERE id = ?", (campaign_id,))
    if not rows or not owned(rows[0]["tenant"], tenant):
        raise NotFound(f"no campaign {campaign_id!r}", where="campaign",
                       fix="list them with `python -m evalcore campaigns list`")
    return Campaign.from_row(rows[0])


def find_campaign(store: Store, text: str, tenant: str | None = None, *,
                  principal: Principal | None = None) -> Campaign:
    """The campaign `text` names: its id, its exact name, else the one name or id it starts (case ignored).

    NotFound when none does; an EvalError listing the candidates when several do."""
    tenant = scope(principal, tenant)
    rows = store.read(f"SELECT {Campaign.COLUMNS} FROM campaigns WHERE id = ?", (text,))
    if rows and owned(rows[0]["tenant"], tenant):
        return Campaign.from_row(rows[0])
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
    clauses, params = [], []
    if tenant is not None:
        clauses.append("tenant = ?")
        params.append(tenant)
    if suite_id is not None:
        clauses.append("suite_id = ?")
        params.append(suite_id)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = store.read(f"SELECT {Campaign.COLUMNS} FROM campaigns {where} ORDER BY created_at DESC, id", params)
    return [Campaign.from_row(row) for row in rows]


def campaign_results(store: Store, campaign_id: str, offset: int = 0, limit: int | None = None,
                     *, principal: Principal | None = None, detail: bool = True) -> list[QuestionResult]:
    """The stored result of every finished question, in question order (pending ones are absent); `detail=False`
    without the ranked lists' scores and the signatures, which a comparison does not read (read_results)."""
    check_visible(store, campaign_id, principal)
    return read_results(store, campaign_id, offset, limit, detail=detail)


def campaign_aggregates(store: Store, campaign_id: str, *, principal: Principal | None = None) -> dict[str, Aggregate]:
    """Per measure: the mean over stored results where it is present, and that count."""
    check_visible(store, campaign_id, principal)
    sql = store.dialect
    value = sql.entry_number("m.value")
    rows = store.read(
        f"SELECT m.key AS name, avg({value}) AS mean, count({value}) AS n "
        f"FROM results r, {sql.json_entries('r.measures')} m WHERE r.campaign_id = ? GROUP BY m.key ORDER BY m.key",
        (campaign_id,),
    )
    return {current_name(row["name"]): Aggregate(row["mean"], row["n"]) for row in rows}


def campaign_summary(store: Store, campaign_id: str, *, principal: Principal | None = None) -> Summary:
    """The campaign summary of suites, computed from the stored rows."""
    check_visible(store, campaign_id, principal)
    row = store.read(
        "SELECT count(*) AS n, count(*) - count(error) AS answered, count(error) AS failed, "
        "avg(CASE WHEN error IS NULL THEN latency_s END) AS latency, "
        "coalesce(sum(prompt_tokens), 0) AS prompt, coalesce(sum(completion_tokens), 0) AS completion, "
        "coalesce(sum(judge_prompt_tokens), 0) AS judge_prompt, "
        "coalesce(sum(judge_completion_tokens), 0) AS judge_completion FROM results WHERE campaign_id = ?",
        (campaign_id,),
    )[0]
    skipped = judge_counts(store, campaign_id, "result", f"= '{JudgeResult.SKIPPED}'")
    cut = judge_counts(store, campaign_id, "context_cut", "IS NOT NULL")
    no_claim = judge_counts(store, campaign_id, "result", f"= '{JudgeResult.NO_CLAIM}'")
    aggregates = campaign_aggregates(store, campaign_id)  # visibility checked above

    def mean(name: str) -> float | None:
        return aggregates[name].mean if name in aggregates else None

    return Summary(answered=row["answered"], failed=row["failed"], sources_found_rate=mean("sources_found"),
                   mean_coverage=mean("coverage"), mean_judge_score=mean("judge.score"),
                   mean_latency_s=row["latency"], tokens=Tokens(row["prompt"], row["completion"]),
                   judge_tokens=Tokens(row["judge_prompt"], row["judge_completion"]),
                   skipped=skipped, cut=cut, no_claim=no_claim)


def judge_counts(store: Store, campaign_id: str, key: str, test: str) -> dict[str, int]:
    """Per judge, the campaign's verdicts whose field `key` meets `test` (a constant SQL text, e.g. "IS NOT NULL")."""
    sql = store.dialect
    rows = store.read(
        f"SELECT j.key AS judge, count(*) AS n FROM results r, {sql.json_entries('r.judges')} j "
        f"WHERE r.campaign_id = ? AND {sql.entry_text('j.value', key)} {test} GROUP BY j.key ORDER BY j.key",
        (campaign_id,),
    )
    return {r["judge"]: r["n"] for r in rows}


def campaign_diagnosis(store: Store, campaign_id: str, *, principal: Principal | None = None) -> StageCounts:
    """How many of the stored questions failed at each stage (evalcore.diagnosis), from the stored stages."""
    check_visible(store, campaign_id, principal)
    rows = store.read("SELECT diagnosis, count(*) AS n FROM results WHERE campaign_id = ? GROUP BY diagnosis",
                      (campaign_id,))
    return StageCounts.of((row["diagnosis"], row["n"]) for row in rows)
