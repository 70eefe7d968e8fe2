"""Paired statistics for comparisons: bootstrap interval, sign-flip randomization test, exact McNemar."""

from __future__ import annotations

from collections.abc import Sequence
from math import comb
from typing import Any

import numpy as np

RESAMPLES = 10_000
ALPHA = 0.05
# Resample matrices are built in slices of at most this many cells, so memory stays bounded
# (10,000 x n int64 would be 80 MB at n = 1,000).
MAX_CELLS = 2_000_000


def slices(resamples: int, n: int) -> list[int]:
    """Row counts of the slices that together make `resamples` rows of width n."""
    rows = max(1, MAX_CELLS // max(n, 1))
    return [min(rows, resamples - start) for start in range(0, resamples, rows)]


def bootstrap_ci(values: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean (paired when `values` are differences); None below 2 values."""
    data = np.asarray(values, dtype=float)
    if data.size < 2:
        return None   # one value has no spread to resample: an interval [v, v] would claim certainty
    rng = np.random.default_rng(seed)
    means = np.concatenate([data[rng.integers(0, data.size, size=(rows, data.size))].mean(axis=1)
                            for rows in slices(resamples, data.size)])
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def sign_flip_exact(diffs: Sequence[float]) -> float:
    """Two-sided p-value of the paired randomization test over all 2^n sign assignments."""
    data = np.asarray(diffs, dtype=float)
    if data.size == 0:
        return 1.0
    patterns = np.arange(2 ** data.size)[:, None] >> np.arange(data.size) & 1
    means = ((1 - 2 * patterns) * data).mean(axis=1)
    return float(np.mean(np.abs(means) >= threshold(data)))


def sign_flip_sampled(diffs: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0) -> float:
    """Two-sided p-value of the paired randomization test from `resamples` random sign flips."""
    data = np.asarray(diffs, dtype=float)
    if data.size == 0:
        return 1.0
    rng = np.random.default_rng(seed)
    hits = 0
    for rows in slices(resamples, data.size):
        signs = rng.integers(0, 2, size=(rows, data.size)) * 2 - 1
        hits += int(np.count_nonzero(np.abs((signs * data).mean(axis=1)) >= threshold(data)))
    # (hits + 1) / (resamples + 1): the observed assignment is one of the possible ones, so p > 0.
    return (hits + 1) / (resamples + 1)


def threshold(data: np.ndarray) -> float:
    """|observed mean|, lowered by a rounding margin so that equal means count as extreme."""
    observed = abs(float(data.mean()))
    return observed - 1e-12 * max(1.0, float(np.abs(data).max()))


def sign_flip_test(diffs: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, str]:
    """p-value and method: exact enumeration when 2^(non-zero differences) <= resamples, else sampled."""
    # Flipping the sign of a zero changes nothing, and the statistic |mean| over n or over the
    # non-zero differences orders assignments the same way: the exact test needs only those.
    nonzero = [d for d in diffs if d != 0]
    if 2 ** len(nonzero) <= resamples:
        return sign_flip_exact(nonzero), "exact"
    return sign_flip_sampled(nonzero, resamples=resamples, seed=seed), "sampled"


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> dict[str, Any]:
    """Exact McNemar test on paired pass/fail outcomes: binomial test of the discordant pairs."""
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = only_a + only_b
    if n == 0:
        return {"only_a": 0, "only_b": 0, "p_value": 1.0}
    tail = sum(comb(n, i) for i in range(min(only_a, only_b) + 1))
    return {"only_a": only_a, "only_b": only_b, "p_value": min(1.0, 2 * tail / 2 ** n)}
