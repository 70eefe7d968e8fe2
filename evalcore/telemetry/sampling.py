"""A sample of traces for a campaign: N per period (day, week) or per metadata value, stratified, seeded and
reproducible. Within a stratum, traces are ordered by a hash of the seed and the trace id and the first N kept, so the
same seed picks the same traces whatever order they were stored in, and a trace added later changes a stratum's
sample by at most one trace."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evalcore.access.principals import Principal
from evalcore.errors import EvalError
from evalcore.formats.shapes import doc
from evalcore.store import Store
from evalcore.telemetry.stored import TraceFilter, list_traces
from evalcore.telemetry.trace_records import Trace

PERIODS = ("day", "week")
NONE = "(none)"  # the stratum of traces without the metadata key


def period_of(moment: float, period: str) -> str:
    """The day (2026-12-06) or ISO week (2026-W49) a moment falls in, in UTC."""
    day = datetime.fromtimestamp(moment, UTC).date()
    if period == "day":
        return day.isoformat()
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def stratum_of(trace: Trace, by: str) -> str:
    """The stratum a trace falls in: its day, its week, or its value of a metadata key ('' for no strata)."""
    if not by:
        return ""
    if by in PERIODS:
        return period_of(trace.started_at, by)
    value = trace.metadata.get(by.removeprefix("metadata."))
    return NONE if value is None else str(value)


@dataclass(frozen=True)
class TraceSample:
    """Which traces a traces campaign judges."""

    per_stratum: int = field(default=100, metadata=doc("traces drawn from each stratum (all when it has fewer)"))
    by: str = field(default="", metadata=doc("the strata: day, week, a metadata key, or '' for one stratum"))
    seed: int = field(default=0, metadata=doc("the seed of the draw"))
    since: float | None = field(default=None, metadata=doc("traces started at or after (Unix seconds)"))
    until: float | None = field(default=None, metadata=doc("traces started before (Unix seconds)"))
    where: tuple[tuple[str, str], ...] = field(default=(), metadata=doc("metadata key = value, all of them"))

    def __post_init__(self) -> None:
        if not 1 <= self.per_stratum <= 100_000:
            raise EvalError("the sample per stratum must be 1 to 100000 traces", where="per_stratum",
                            found=str(self.per_stratum))

    def to_dict(self) -> dict[str, Any]:
        """Kept in the campaign's options, so that its source says what was drawn."""
        return {"per_stratum": self.per_stratum, "by": self.by, "seed": self.seed, "since": self.since,
                "until": self.until, "where": [list(pair) for pair in self.where]}

    def describe(self) -> str:
        """A campaign's source: `traces · 50 per week · release=v2 · seed 0`."""
        parts = [f"{self.per_stratum} per {self.by}" if self.by else f"{self.per_stratum} traces"]
        parts += [f"{key}={value}" for key, value in self.where]
        for name, moment in (("from", self.since), ("before", self.until)):
            if moment is not None:
                parts.append(f"{name} {datetime.fromtimestamp(moment, UTC).strftime('%Y-%m-%d %H:%M')}")
        return " · ".join(["traces", *parts, f"seed {self.seed}"])

    @property
    def selection(self) -> TraceFilter:
        """The traces the draw is made from."""
        return TraceFilter(self.since, self.until, self.where)


def draw_key(seed: int, trace_id: str) -> str:
    """A trace's place in its stratum's draw."""
    return hashlib.sha256(f"{seed}:{trace_id}".encode()).hexdigest()


def draw(traces: list[Trace], sample: TraceSample) -> list[Trace]:
    """The sample of these traces, oldest first."""
    strata: dict[str, list[Trace]] = {}
    for trace in traces:
        strata.setdefault(stratum_of(trace, sample.by), []).append(trace)
    chosen = [trace for members in strata.values()
              for trace in sorted(members, key=lambda t: draw_key(sample.seed, t.trace_id))[:sample.per_stratum]]
    return sorted(chosen, key=lambda t: (t.started_at, t.number))


def sample_traces(store: Store, sample: TraceSample, *, principal: Principal | None = None,
                  tenant: str | None = None) -> list[Trace]:
    """The traces a campaign over this sample judges; EvalError when there is none."""
    chosen = draw(list_traces(store, sample.selection, principal=principal, tenant=tenant), sample)
    if not chosen:
        raise EvalError("no trace matches", where="traces", found=sample.describe(),
                        fix="import traces first (`traces import FILE`), or widen the window and the filters")
    return chosen
