"""What production answered, over time and across releases: the judged traces of traces campaigns, each measure's
mean and pass rate per day or week with their intervals next to the traces' volume, the worst traces, and the
unpaired comparison of two groups of traces (two windows, two metadata values such as releases)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evalcore.access.principals import Principal
from evalcore.campaigns.queries import campaign_results, get_campaign
from evalcore.campaigns.records import CampaignKind
from evalcore.compare.stats import wilson_interval
from evalcore.compare.unpaired import LEVEL, UnpairedDelta, compare_means, compare_proportions, t_quantile
from evalcore.errors import EvalError
from evalcore.formats.shapes import doc
from evalcore.judges import JudgeResult
from evalcore.store import Store
from evalcore.telemetry import Trace, TraceFilter, list_traces
from evalcore.telemetry.sampling import PERIODS, period_of
from evalcore.telemetry.stored import traces_by_number

EFFECT_MEAN = 0.25  # the default change to detect in a judge's mean score (its 1-5 scale)
EFFECT_RATE = 0.05  # and in a pass rate
PASS = " pass"  # a judge's pass rate is named after it: `judge.groundedness pass`


@dataclass(frozen=True)
class JudgedTrace:
    """A trace with what a traces campaign measured of it."""

    trace: Trace
    campaign_id: str
    measures: dict[str, float]  # measure -> value
    passed: dict[str, bool]  # judge measure -> passed (pass or fail only)
    error: str | None


def judged_traces(store: Store, campaign_ids: Sequence[str], *,
                  principal: Principal | None = None) -> list[JudgedTrace]:
    """The traces judged by these traces campaigns (a trace deleted since is left out), in time order."""
    rows: list[JudgedTrace] = []
    for campaign_id in campaign_ids:
        campaign = get_campaign(store, campaign_id, principal=principal)
        if campaign.kind != CampaignKind.TRACES:
            raise EvalError("not a traces campaign", where=campaign_id, found=str(campaign.kind),
                            fix="run one with `traces run`")
        results = campaign_results(store, campaign_id, principal=principal, detail=False)
        traces = traces_by_number(store, [r.question.qid for r in results])
        for result in results:
            trace = traces.get(result.question.qid)
            if trace is None:
                continue
            outcome = result.outcome
            passed = {f"judge.{name}": verdict.result == JudgeResult.PASS for name, verdict in outcome.judges.items()
                      if verdict.result in (JudgeResult.PASS, JudgeResult.FAIL)}
            rows.append(JudgedTrace(trace, campaign_id, dict(outcome.measures), passed, outcome.error))
    return sorted(rows, key=lambda row: (row.trace.started_at, row.trace.number))


def measure_names(rows: Iterable[JudgedTrace]) -> list[str]:
    """Every measure of the judged traces, sorted."""
    return sorted({name for row in rows for name in row.measures})


@dataclass(frozen=True)
class PeriodFigures:
    """One measure over one day or week: the traces' volume, the judged ones' mean and pass rate with intervals."""

    period: str = field(metadata=doc("the day (2026-12-06) or ISO week (2026-W49)"))
    measure: str = field(metadata=doc("the measure"))
    volume: int = field(metadata=doc("traces stored in the period (judged or not)"))
    n: int = field(metadata=doc("judged traces with a value"))
    mean: float | None = field(metadata=doc("their mean"))
    low: float | None = field(metadata=doc("95% t interval of the mean, low end"))
    high: float | None = field(metadata=doc("95% t interval of the mean, high end"))
    passed: int = field(metadata=doc("judged traces that passed"))
    judged: int = field(metadata=doc("judged traces with a pass or a fail"))
    pass_rate: float | None = field(metadata=doc("passed / judged"))
    pass_low: float | None = field(metadata=doc("Wilson 95% interval of the pass rate, low end"))
    pass_high: float | None = field(metadata=doc("Wilson 95% interval of the pass rate, high end"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON of the CLI's --json and the API."""
        return dict(self.__dict__)


def mean_interval(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """The mean and its 95% t interval (no interval below 2 values)."""
    if not values:
        return None, None, None
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return mean, None, None
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
    half = t_quantile(0.5 + LEVEL / 2, len(values) - 1) * sd / math.sqrt(len(values))
    return mean, mean - half, mean + half


def timeline(rows: Sequence[JudgedTrace], volume: Iterable[Trace], period: str,
             measures: Sequence[str] | None = None) -> list[PeriodFigures]:
    """Per period (oldest first) and measure: volume, mean and pass rate with their intervals."""
    if period not in PERIODS:
        raise EvalError(f"unknown period {period!r}", where="period", expected=" or ".join(PERIODS))
    counts: dict[str, int] = {}
    for trace in volume:
        key = period_of(trace.started_at, period)
        counts[key] = counts.get(key, 0) + 1
    by_period: dict[str, list[JudgedTrace]] = {}
    for row in rows:
        by_period.setdefault(period_of(row.trace.started_at, period), []).append(row)
    names = list(measures) if measures is not None else measure_names(rows)
    figures = []
    for key in sorted(set(counts) | set(by_period)):
        members = by_period.get(key, [])
        for name in names:
            values = [row.measures[name] for row in members if name in row.measures]
            outcomes = [row.passed[name] for row in members if name in row.passed]
            mean, low, high = mean_interval(values)
            rate = sum(outcomes) / len(outcomes) if outcomes else None
            interval = wilson_interval(rate, len(outcomes)) if rate is not None else None
            figures.append(PeriodFigures(key, name, counts.get(key, 0), len(values), mean, low, high, sum(outcomes),
                                         len(outcomes), rate, *(interval or (None, None))))
    return figures


def worst_traces(rows: Sequence[JudgedTrace], measure: str, count: int = 20) -> list[JudgedTrace]:
    """The judged traces with the lowest value of a measure (failed ones first), then by time."""
    scored = [row for row in rows if measure in row.measures]
    return sorted(scored, key=lambda row: (row.passed.get(measure, True), row.measures[measure],
                                           -row.trace.started_at))[:count]


@dataclass(frozen=True)
class Group:
    """One side of an unpaired comparison: traces with a metadata value, or started in a window."""

    label: str
    keeps: Callable[[Trace], bool]


def parse_group(spec: str) -> Group:
    """`KEY=VALUE` (a metadata value, e.g. release=v2) or `FROM..TO` (a window of ISO dates or times, TO excluded)."""
    text = spec.strip()
    if ".." in text:
        start, _, end = text.partition("..")
        since, until = moment(start, "from"), moment(end, "to")
        if since is not None and until is not None and until <= since:
            raise EvalError("the window ends before it starts", where=spec)
        return Group(text, lambda trace: (since is None or trace.started_at >= since)
                     and (until is None or trace.started_at < until))
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise EvalError("a group is KEY=VALUE or FROM..TO", where="group", found=spec[:80],
                        fix="e.g. release=v2, or 2026-12-01..2026-12-08")
    key, value = key.strip(), value.strip()
    return Group(text, lambda trace: str(trace.metadata.get(key, "")) == value)


def moment(text: str, name: str) -> float | None:
    """An ISO date or date and time (UTC when it names no zone) as Unix seconds; None for ''."""
    if not text.strip():
        return None
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise EvalError(f"not an ISO date or time: {text!r}", where=f"window {name}",
                        expected="e.g. 2026-12-01 or 2026-12-01T12:00") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


@dataclass(frozen=True)
class GroupComparison:
    """Two groups of judged traces compared measure by measure, unpaired."""

    a: str = field(metadata=doc("group A (KEY=VALUE or FROM..TO)"))
    b: str = field(metadata=doc("group B"))
    deltas: tuple[UnpairedDelta, ...] = field(metadata=doc("each measure's mean, then each judge's pass rate"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON of the CLI's --json and the API."""
        return {"a": self.a, "b": self.b, "deltas": [d.to_dict() for d in self.deltas]}


def compare_groups(rows: Sequence[JudgedTrace], a: Group, b: Group, *, effect_mean: float = EFFECT_MEAN,
                   effect_rate: float = EFFECT_RATE) -> GroupComparison:
    """Each measure between the two groups: means (Welch) and pass rates (two proportions)."""
    side_a = [row for row in rows if a.keeps(row.trace)]
    side_b = [row for row in rows if b.keeps(row.trace)]
    if not side_a or not side_b:
        empty = a.label if not side_a else b.label
        raise EvalError("no judged trace in this group", where=empty,
                        fix="check the metadata value or the window (`traces list --where KEY=VALUE`)")
    deltas = []
    for name in measure_names(rows):
        deltas.append(compare_means(name, [r.measures[name] for r in side_a if name in r.measures],
                                    [r.measures[name] for r in side_b if name in r.measures], effect=effect_mean))
        if any(name in r.passed for r in rows):
            deltas.append(compare_proportions(name + PASS, [r.passed[name] for r in side_a if name in r.passed],
                                              [r.passed[name] for r in side_b if name in r.passed],
                                              effect=effect_rate))
    return GroupComparison(a.label, b.label, tuple(deltas))


def traces_volume(store: Store, selection: TraceFilter | None = None, *, principal: Principal | None = None,
                  tenant: str | None = None) -> list[Trace]:
    """The stored traces a timeline counts."""
    return list_traces(store, selection, principal=principal, tenant=tenant)


def stamp(moment_s: float) -> str:
    """A trace's time as people read it (UTC)."""
    return datetime.fromtimestamp(moment_s, UTC).strftime("%Y-%m-%d %H:%M")
