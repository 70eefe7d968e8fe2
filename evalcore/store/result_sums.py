"""What the `results` table sums to (one row per answered question of a campaign): costs per campaign and per
tenant's day, measure means, counts of answers, tokens, verdicts and failure stages. Measures and verdicts are read
out of their JSON text through the store's dialect."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evalcore.store import Row, Store
from evalcore.store.measure_codes import named, sql_name, stored_keys
from evalcore.store.packing import MEASURES, sections, unpack_values


def spent_by_tenant_since(store: Store, tenant: str, since: float, besides: str) -> float:
    """What a tenant's questions stored since this time cost, those of campaign `besides` left out."""
    row = store.read(
        "SELECT coalesce(sum(r.cost), 0) AS spent FROM results r JOIN campaigns c ON c.id = r.campaign_id "
        "WHERE c.tenant = ? AND r.created_at >= ? AND c.id <> ?", (tenant, since, besides))[0]
    return float(row["spent"])


def spent_by_campaign(store: Store, campaign_id: str, since: float | None = None) -> float:
    """What a campaign's stored questions cost (those stored since this time, when given)."""
    if since is None:
        row = store.read("SELECT coalesce(sum(cost), 0) AS spent FROM results WHERE campaign_id = ?",
                         (campaign_id,))[0]
    else:
        row = store.read("SELECT coalesce(sum(cost), 0) AS spent FROM results WHERE campaign_id = ? AND "
                         "created_at >= ?", (campaign_id, since))[0]
    return float(row["spent"])


def tenant_and_spent(store: Store, campaign_id: str) -> Row | None:
    """A campaign's tenant with what its stored questions cost (spent), or None without the campaign."""
    rows = store.read("SELECT c.tenant AS tenant, coalesce(sum(r.cost), 0) AS spent FROM campaigns c "
                      "LEFT JOIN results r ON r.campaign_id = c.id WHERE c.id = ? GROUP BY c.tenant", (campaign_id,))
    return rows[0] if rows else None


def cost_sums(store: Store, campaign_ids: Sequence[str]) -> list[Row]:
    """Per campaign with stored questions: campaign_id, amount (the sum of their costs), currency (the least),
    currencies (how many), unpriced (questions that used tokens without a cost)."""
    return store.read(
        "SELECT campaign_id, sum(cost) AS amount, min(currency) AS currency, count(DISTINCT currency) AS currencies, "
        "count(CASE WHEN cost IS NULL AND prompt_tokens + completion_tokens + judge_prompt_tokens "
        "+ judge_completion_tokens > 0 THEN 1 END) AS unpriced FROM results WHERE campaign_id IN "
        f"({', '.join('?' * len(campaign_ids))}) GROUP BY campaign_id", list(campaign_ids))


def measure_means(store: Store, names: Sequence[str], campaign_ids: Sequence[str]) -> list[Row | dict[str, Any]]:
    """Per campaign with stored questions: campaign_id and m0, m1... the mean of each named measure (None where no
    question has it); a row's measure read under its code or its name (evalcore.store.measure_codes)."""
    number = store.dialect.json_number("measures")
    columns = ", ".join(f"avg(coalesce({number}, {number})) AS m{i}" for i in range(len(names)))
    keys = [key for name in names for key in stored_keys(name)]
    packed = _packed_campaigns(store, campaign_ids)
    plain = [campaign_id for campaign_id in campaign_ids if campaign_id not in packed]
    rows: list[Row | dict[str, Any]] = list(store.read(
        f"SELECT campaign_id, {columns} FROM results r WHERE campaign_id IN "
        f"({', '.join('?' * len(plain))}) GROUP BY campaign_id", [*keys, *plain])) if plain else []
    means = [_python_means(store, campaign_id) for campaign_id in packed]
    return rows + [
        {"campaign_id": campaign_id, **{f"m{i}": found.get(name, (None,))[0] for i, name in enumerate(names)}}
        for campaign_id, found in zip(packed, means, strict=True)]


def measure_aggregates(store: Store, campaign_id: str) -> list[Row | dict[str, Any]]:
    """Per measure stored under this name (name; a coded key read as its name), its mean over the campaign's questions
    that have it and their count (n), by name.

    The entries are grouped by their stored key and the few groups named after (naming each of a campaign's entries
    took twice as long); a campaign holding a measure under both its code and its name (rows of an older campaign
    scored again) has its entries named first, so that each mean is one average, as before codes."""
    sql = store.dialect
    if _packed_campaigns(store, [campaign_id]):
        found = _python_means(store, campaign_id)
        return [{"name": name, "mean": mean, "n": n} for name, (mean, n) in sorted(found.items())]
    value = sql.entry_number("m.value")
    entries = f"FROM results r, {sql.json_entries('r.measures')} m WHERE r.campaign_id = ?"
    rows = store.read(
        f"SELECT {sql_name('g.key')} AS name, g.mean AS mean, g.n AS n FROM "
        f"(SELECT m.key AS key, avg({value}) AS mean, count({value}) AS n {entries} GROUP BY m.key) g ORDER BY 1",
        (campaign_id,))
    if len({row["name"] for row in rows}) == len(rows):
        return list(rows)
    return [*store.read(f"SELECT {sql_name('m.key')} AS name, avg({value}) AS mean, count({value}) AS n {entries} "
                        "GROUP BY 1 ORDER BY 1", (campaign_id,))]


def _packed_campaigns(store: Store, campaign_ids: Sequence[str]) -> list[str]:
    """Those of these campaigns with packed rows (evalcore.store.packing)."""
    return [row["campaign_id"] for row in store.read(
        f"SELECT DISTINCT campaign_id FROM results WHERE packed IS NOT NULL AND campaign_id IN "
        f"({', '.join('?' * len(campaign_ids))})", list(campaign_ids))]


def _python_means(store: Store, campaign_id: str) -> dict[str, tuple[float | None, int]]:
    """Each measure's mean over a campaign's questions that have it as a number, and their count, summed in question
    order as the databases' avg() sums (for a campaign with packed rows, which SQL cannot read)."""
    sums: dict[str, list[float]] = {}
    for row in store.read("SELECT measures, packed FROM results WHERE campaign_id = ? ORDER BY position",
                          (campaign_id,)):
        part = None if row["packed"] is None else sections(row["packed"]).get(MEASURES)
        values = unpack_values(part) if part is not None else named(json.loads(row["measures"]))
        for name, value in values.items():
            numbers = sums.setdefault(name, [])
            if type(value) in (int, float):
                numbers.append(value)
    return {name: (sum(values) / len(values) if values else None, len(values)) for name, values in sums.items()}


def answer_sums(store: Store, campaign_id: str) -> Row:
    """A campaign's n, answered, failed, latency (mean of the answered), and its tokens summed: prompt,
    completion, judge_prompt, judge_completion."""
    return store.read(
        "SELECT count(*) AS n, count(*) - count(error) AS answered, count(error) AS failed, "
        "avg(CASE WHEN error IS NULL THEN latency_s END) AS latency, "
        "coalesce(sum(prompt_tokens), 0) AS prompt, coalesce(sum(completion_tokens), 0) AS completion, "
        "coalesce(sum(judge_prompt_tokens), 0) AS judge_prompt, "
        "coalesce(sum(judge_completion_tokens), 0) AS judge_completion FROM results WHERE campaign_id = ?",
        (campaign_id,),
    )[0]


def usage_rows(store: Store, campaign_id: str) -> list[Row]:
    """The usage (JSON text, None before it was kept) and token counts of the campaign's questions that called a
    model (an empty usage list is not read)."""
    return store.read("SELECT usage, prompt_tokens, completion_tokens, judge_prompt_tokens, judge_completion_tokens "
                      "FROM results WHERE campaign_id = ? AND (usage IS NULL OR usage <> '[]')", (campaign_id,))


def verdict_counts(store: Store, campaign_id: str, key: str, value: str | None = None) -> dict[str, int]:
    """Per judge, the campaign's verdicts whose field `key` is this value (any value but null, without one)."""
    sql = store.dialect
    test = "IS NOT NULL" if value is None else "= ?"
    rows = store.read(
        f"SELECT j.key AS judge, count(*) AS n FROM results r, {sql.json_entries('r.judges')} j "
        f"WHERE r.campaign_id = ? AND {sql.entry_text('j.value', key)} {test} GROUP BY j.key ORDER BY j.key",
        (campaign_id,) if value is None else (campaign_id, value),
    )
    return {r["judge"]: r["n"] for r in rows}


def stage_counts(store: Store, campaign_id: str) -> list[Row]:
    """How many of the campaign's questions have each stored failure stage: diagnosis, n."""
    return store.read("SELECT diagnosis, count(*) AS n FROM results WHERE campaign_id = ? GROUP BY diagnosis",
                      (campaign_id,))
