"""Sweeps: N campaigns that vary one configuration key, as a table and a series per measure."""

from __future__ import annotations

import json
from typing import Any

from evalcore.compare import stats
from evalcore.compare.comparison import check_resamples, compare_results, load, row_values
from evalcore.errors import EvalError


def compare_sweep(store: Any, ids: list[str], *, seed: int = 0, resamples: int = stats.RESAMPLES,
                  tenant: str | None = None) -> dict:
    """Compare N stored campaigns of a sweep (one configuration key varied): table and series."""
    return sweep_results([load(store, i, tenant) for i in ids], seed=seed, resamples=resamples)


def varied_keys(configs: list[dict]) -> list[str]:
    """Configuration keys whose value is not the same in every campaign."""
    keys = set().union(*configs)
    return sorted(k for k in keys if len({json.dumps(c.get(k), sort_keys=True) for c in configs}) > 1)


def sweep_value(campaign: dict, varied: list[str]) -> Any:
    """The campaign's point on the sweep: the varied key's value, `k=v` pairs for several, else its id."""
    config = campaign.get("config") or {}
    if len(varied) == 1:
        return config.get(varied[0])
    return " ".join(f"{k}={config.get(k)}" for k in varied) or campaign.get("id")


def measure_summary(rows: list[dict], *, seed: int, resamples: int) -> dict[str, dict]:
    """Per measure of one campaign: mean, count and bootstrap 95% interval of the mean."""
    columns: dict[str, list[float]] = {}
    for row in rows:
        for name, value in row_values(row).items():
            columns.setdefault(name, []).append(value)
    out = {}
    for name, values in sorted(columns.items()):
        low, high = stats.bootstrap_ci(values, resamples=resamples, seed=seed) or (None, None)
        out[name] = {"mean": sum(values) / len(values), "count": len(values), "ci_low": low, "ci_high": high}
    return out


def sweep_results(campaigns: list[tuple[dict, list[dict]]], *, seed: int = 0,
                  resamples: int = stats.RESAMPLES) -> dict:
    """N campaigns varying one key: a table (one row per campaign, deltas against the first) and series."""
    if len(campaigns) < 2:
        raise EvalError("a sweep needs at least two campaigns", found=str(len(campaigns)), expected=">= 2")
    check_resamples(resamples)
    varied = varied_keys([c.get("config") or {} for c, _ in campaigns])
    key = varied[0] if len(varied) == 1 else None
    warnings = [] if key else [(f"a sweep varies one setting; these campaigns vary {len(varied)} "
                                f"({', '.join(varied) or 'none'})")]
    base, base_rows = campaigns[0]
    table = []
    for campaign, rows in campaigns:
        row: dict[str, Any] = {"id": campaign.get("id"), "value": sweep_value(campaign, varied),
                               "measures": measure_summary(rows, seed=seed, resamples=resamples)}
        if campaign is not base:
            versus = compare_results(base, base_rows, campaign, rows, seed=seed, resamples=resamples)
            row["verdicts"] = versus.verdicts
            row["deltas"] = {m["measure"]: {k: m[k] for k in ("delta", "ci_low", "ci_high", "p_value", "significant")}
                             for m in versus.measures}
            warnings += [f"{campaign.get('id')} vs {base.get('id')}: {w}" for w in versus.warnings
                         if not w.startswith("the configurations differ")]
        table.append(row)
    names = sorted({name for row in table for name in row["measures"]})
    series = {name: [{"x": row["value"], "id": row["id"], **row["measures"][name]} for row in table
                     if name in row["measures"]] for name in names}
    return {"key": key, "varied": varied, "baseline": base.get("id"), "table": table, "series": series,
            "warnings": warnings, "seed": seed, "resamples": resamples}
