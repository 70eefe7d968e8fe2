"""What the comparisons' statistics hold that needs no arrays: the resample count and the check of a draw's
settings, the exact McNemar test, the sign test and Wilson's interval (evalcore.compare.stats has the rest, on
numpy). A kept comparison is read back and printed with these alone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from math import comb
from statistics import NormalDist
from typing import Any

from evalcore.errors import EvalError
from evalcore.formats.shapes import doc

RESAMPLES = 10_000
ALPHA = 0.05


def check_draws(seed: int, resamples: int) -> None:
    """Refuse a seed numpy cannot take, or a resample count that leaves the tests nothing to draw."""
    if not isinstance(resamples, int) or resamples < 1:
        raise EvalError("resamples must be a whole number of at least 1", found=str(resamples),
                        expected=f">= 1 (default {RESAMPLES})")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise EvalError("the seed must be a whole number of at least 0", found=str(seed), expected=">= 0 (default 0)")


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test of paired pass/fail outcomes."""

    only_a: int = field(metadata=doc("questions passed in A only"))
    only_b: int = field(metadata=doc("questions passed in B only"))
    p_value: float = field(metadata=doc())

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"only_a": self.only_a, "only_b": self.only_b, "p_value": self.p_value}


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    """Exact McNemar test on paired pass/fail outcomes: binomial test of the discordant pairs."""
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    return McNemar(only_a, only_b, sign_test(only_a, only_b))


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test: the binomial probability (p = 1/2) of a split at least this uneven; 1 when n = 0."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(wins, losses) + 1))
    return min(1.0, float(2 * tail / 2 ** n))


def wilson_interval(rate: float, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion `rate` observed on n trials; None when n = 0.

    Also used for a mean of scores in [0, 1] (ties counted half), whose variance is at most rate * (1 - rate):
    the interval is then conservative.
    """
    if n == 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    shrink = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / shrink
    half = z / shrink * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
