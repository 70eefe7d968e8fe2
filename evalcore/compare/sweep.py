"""Sweeps: N campaigns that vary one configuration key, as a table and a series per measure."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from evalcore.access.principals import Principal
from evalcore.campaigns import Campaign, QuestionResult
from evalcore.compare import stats
from evalcore.compare.comparison import compare_results, load, row_values
from evalcore.compare.deltas import MeasureDelta
from evalcore.compare.exact import check_draws
from evalcore.errors import EvalError
from evalcore.formats.shapes import doc
from evalcore.store import Store
from evalcore.targets.target_config import EXECUTION_KEYS


@dataclass(frozen=True)
class MeanCI:
    """A measure over one campaign: mean, count and the bootstrap 95% interval of the mean."""

    mean: float
    count: int
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class SweepDelta:
    """One measure of a sweep's campaign against the baseline: B - A, its 95% interval, the paired test."""

    delta: float = field(metadata=doc())
    ci_low: float | None = field(metadata=doc())
    ci_high: float | None = field(metadata=doc())
    p_value: float = field(metadata=doc())
    significant: bool = field(metadata=doc())

    @classmethod
    def of(cls, measure: MeasureDelta) -> SweepDelta:
        """The parts of a comparison's delta a sweep shows."""
        return cls(measure.delta, measure.ci_low, measure.ci_high, measure.p_value, measure.significant)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"delta": self.delta, "ci_low": self.ci_low, "ci_high": self.ci_high, "p_value": self.p_value,
                "significant": self.significant}


@dataclass(frozen=True)
class SweepRow:
    """One campaign of a sweep: its value of the varied key, its measures, and how it compares with the baseline."""

    id: str
    value: Any
    measures: dict[str, MeanCI]
    verdicts: dict[str, int] | None = None  # None for the baseline
    deltas: dict[str, SweepDelta] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (verdicts and deltas only for the campaigns after the baseline)."""
        data: dict[str, Any] = {"id": self.id, "value": self.value,
                                "measures": {name: m.to_dict() for name, m in self.measures.items()}}
        if self.verdicts is not None:
            data["verdicts"] = self.verdicts
            data["deltas"] = {name: d.to_dict() for name, d in (self.deltas or {}).items()}
        return data


@dataclass(frozen=True)
class Sweep:
    """N campaigns varying one key: a table (one row per campaign) and a series per measure."""

    key: str | None  # the varied key, None when the campaigns vary several (or none)
    varied: list[str]
    baseline: str
    table: list[SweepRow]
    warnings: list[str] = field(default_factory=list)
    seed: int = 0
    resamples: int = stats.RESAMPLES

    @property
    def series(self) -> dict[str, list[dict[str, Any]]]:
        """Per measure: one point per campaign that has it (x = its value of the varied key)."""
        names = sorted({name for row in self.table for name in row.measures})
        return {name: [{"x": row.value, "id": row.id, **row.measures[name].to_dict()} for row in self.table
                       if name in row.measures] for name in names}

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for --json, the API and the dashboard."""
        return {"key": self.key, "varied": self.varied, "baseline": self.baseline,
                "table": [row.to_dict() for row in self.table], "series": self.series, "warnings": self.warnings,
                "seed": self.seed, "resamples": self.resamples}


def compare_sweep(store: Store, ids: list[str], *, seed: int = 0, resamples: int = stats.RESAMPLES,
                  tenant: str | None = None, principal: Principal | None = None) -> Sweep:
    """Compare N stored campaigns of a sweep (one configuration key varied): table and series."""
    return sweep_results([load(store, i, tenant, principal) for i in ids], seed=seed, resamples=resamples)


def varied_keys(configs: list[dict[str, Any]]) -> list[str]:
    """Keys of the system under test whose value is not the same in every campaign (where they ran is none)."""
    keys: set[str] = set().union(*configs) - EXECUTION_KEYS
    return sorted(k for k in keys if len({json.dumps(c.get(k), sort_keys=True) for c in configs}) > 1)


def sweep_value(campaign: Campaign, varied: list[str]) -> Any:
    """The campaign's point on the sweep: the varied key's value, `k=v` pairs for several, else its id."""
    if len(varied) == 1:
        return campaign.config.get(varied[0])
    return " ".join(f"{k}={campaign.config.get(k)}" for k in varied) or campaign.id


def measure_summary(rows: list[QuestionResult], *, seed: int, resamples: int) -> dict[str, MeanCI]:
    """Per measure of one campaign: mean, count and bootstrap 95% interval of the mean (draws shared, see stats)."""
    columns: dict[str, list[float]] = {}
    for row in rows:
        for name, value in row_values(row).items():
            columns.setdefault(name, []).append(value)
    names = sorted(columns)
    intervals = stats.bootstrap_intervals([columns[name] for name in names], resamples=resamples, seed=seed)
    return {name: MeanCI(sum(columns[name]) / len(columns[name]), len(columns[name]),
                         interval.low if interval else None, interval.high if interval else None)
            for name, interval in zip(names, intervals, strict=True)}


def sweep_results(campaigns: list[tuple[Campaign, list[QuestionResult]]], *, seed: int = 0,
                  resamples: int = stats.RESAMPLES) -> Sweep:
    """N campaigns varying one key: a table (one row per campaign, deltas against the first) and series."""
    if len(campaigns) < 2:
        raise EvalError("a sweep needs at least two campaigns", found=str(len(campaigns)), expected=">= 2")
    check_draws(seed, resamples)
    varied = varied_keys([c.config for c, _ in campaigns])
    key = varied[0] if len(varied) == 1 else None
    warnings = [] if key else [(f"a sweep varies one setting; these campaigns vary {len(varied)} "
                                f"({', '.join(varied) or 'none'})")]
    base, base_rows = campaigns[0]
    table = [SweepRow(base.id, sweep_value(base, varied), measure_summary(base_rows, seed=seed, resamples=resamples))]
    for campaign, rows in campaigns[1:]:
        versus = compare_results(base, base_rows, campaign, rows, seed=seed, resamples=resamples)
        deltas = {m.measure: SweepDelta.of(m) for m in versus.measures}
        table.append(SweepRow(campaign.id, sweep_value(campaign, varied),
                              measure_summary(rows, seed=seed, resamples=resamples), versus.verdicts, deltas))
        warnings += [f"{campaign.id} vs {base.id}: {w}" for w in versus.warnings
                     if not w.startswith("the configurations differ")]
    return Sweep(key, varied, base.id, table, warnings, seed, resamples)
