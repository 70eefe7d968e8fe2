"""Cost in a comparison: B − A of the cost per question over the common questions, its 95% bootstrap interval (the
same resampling as the measures'), and the trade-off in words beside the deciding measure's change."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcore.costs import money
from evalcore.formats.shapes import doc
from evalcore.language.text import counted

QuestionCost = tuple[float | None, str]  # a question's cost (None: a model without a price) and its currency


@dataclass(frozen=True)
class CostDelta:
    """B − A of the cost per question over the common questions priced in both campaigns, or why it is not given."""

    n: int = field(metadata=doc("the common questions with a price in both campaigns"))
    currency: str = field(default="", metadata=doc("the currency of both campaigns' prices"))
    mean_a: float | None = field(default=None, metadata=doc("A's mean cost per question"))
    mean_b: float | None = field(default=None, metadata=doc("B's mean cost per question"))
    delta: float | None = field(default=None, metadata=doc("mean_b - mean_a"))
    ci_low: float | None = field(default=None, metadata=doc("the 95% bootstrap interval of delta"))
    ci_high: float | None = field(default=None, metadata=doc())
    unpriced: int = field(default=0, metadata=doc("common questions left out: a model without a price on a side"))
    refused: str = field(default="", metadata=doc("why costs are not compared ('' when they are)"))

    @property
    def ratio(self) -> float | None:
        """B's cost per question over A's (None when A's is 0 or unknown)."""
        if self.mean_a is None or self.mean_b is None or self.mean_a <= 0:
            return None
        return self.mean_b / self.mean_a

    def text(self) -> str:
        """`+0.0031 USD per question [0.0029, 0.0033] (1.8x)`, or why costs are not compared."""
        if self.refused or self.delta is None:
            return f"cost not compared: {self.refused}"
        sign = "+" if self.delta > 0 else ("-" if self.delta < 0 else "±")
        interval = "" if self.ci_low is None or self.ci_high is None else \
            f" [{signed(self.ci_low)}, {signed(self.ci_high)}]"
        ratio = "" if self.ratio is None else f" ({self.ratio:.2g}x)"
        left = f"; {counted(self.unpriced, 'question')} without a price left out" if self.unpriced else ""
        return f"cost per question {sign}{money(abs(self.delta), self.currency)}{interval}{ratio}{left}"

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"n": self.n, "currency": self.currency, "mean_a": self.mean_a, "mean_b": self.mean_b,
                "delta": self.delta, "ci_low": self.ci_low, "ci_high": self.ci_high, "unpriced": self.unpriced,
                "refused": self.refused}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CostDelta:
        """Back from the JSON shape."""
        return cls(int(data.get("n") or 0), data.get("currency") or "", data.get("mean_a"), data.get("mean_b"),
                   data.get("delta"), data.get("ci_low"), data.get("ci_high"), int(data.get("unpriced") or 0),
                   data.get("refused") or "")


def signed(amount: float) -> str:
    """An amount with its sign (`+0.0029`, `-0.01`)."""
    return ("-" if amount < 0 else "+") + money(abs(amount))


def cost_delta(a: Sequence[QuestionCost], b: Sequence[QuestionCost], *, seed: int, resamples: int,
               clusters: Sequence[Hashable] | None = None) -> CostDelta:
    """B − A of the cost per question over paired questions (`a[i]` and `b[i]` are the same question); with
    `clusters` (each question's conversation), the interval resamples whole conversations."""
    import numpy as np  # here: a kept comparison's cost is read back without the statistics

    from evalcore.compare import stats
    from evalcore.compare.clusters import cluster_bootstrap

    currencies = {currency for cost, currency in (*a, *b) if cost is not None and currency}
    if len(currencies) > 1:
        a_in = sorted({currency for cost, currency in a if cost is not None and currency}) or ["no currency"]
        b_in = sorted({currency for cost, currency in b if cost is not None and currency}) or ["no currency"]
        return CostDelta(0, refused=f"A's prices are in {' and '.join(a_in)}, B's in {' and '.join(b_in)}: costs in "
                                    "different currencies are not compared (there is no exchange rate); give the "
                                    "models of both prices in one currency in the price table")
    priced = [i for i, ((cost_a, _), (cost_b, _)) in enumerate(zip(a, b, strict=True))
              if cost_a is not None and cost_b is not None]
    both = [(a[i][0], b[i][0]) for i in priced]
    unpriced = len(a) - len(both)
    if not both:
        return CostDelta(0, unpriced=unpriced, refused="no common question has a price in both campaigns" if a
                         else "the campaigns have no question in common")
    costs = np.array(both, dtype=float)
    diffs = costs[:, 1] - costs[:, 0]
    if len(diffs) >= 2 and not diffs.any() and (clusters is None or len({clusters[i] for i in priced}) >= 2):
        # Every paired cost the same (no model priced a token, or one price on both sides): every resampled mean is 0,
        # so is the interval; resampling 10,000 times would say so after a second of CPU on 10,000 questions.
        interval: stats.BootstrapMean | None = stats.BootstrapMean(0.0, 0.0, 0.0)
    elif clusters is not None:
        interval = cluster_bootstrap(diffs, [clusters[i] for i in priced], resamples=resamples, seed=seed)
    else:
        [interval] = stats.bootstrap_table(diffs.reshape(-1, 1), resamples=resamples, seed=seed)
    mean_a, mean_b = math.fsum(costs[:, 0].tolist()) / len(both), math.fsum(costs[:, 1].tolist()) / len(both)
    return CostDelta(len(both), next(iter(currencies), ""), mean_a, mean_b, mean_b - mean_a,
                     interval.low if interval else None, interval.high if interval else None, unpriced)
