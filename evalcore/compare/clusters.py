"""Paired statistics that resample whole conversations: a cluster bootstrap and the matching randomization test.

The turns of one conversation are not independent (a system that misunderstood turn 1 tends to fail turn 2 as well),
so resampling turns as if they were makes intervals too narrow and tests too eager. Here the unit resampled is the
conversation (a question asked alone is a conversation of one turn), and the statistic is the same mean difference
over turns as the per-question one:

- cluster bootstrap: draw k conversations with replacement out of the k; the resampled mean is the sum of the drawn
  conversations' differences over the number of their turns (each conversation counted as often as drawn); the
  95% interval is the 2.5th and 97.5th percentiles of the resampled means (Davison & Hinkley 1997, section 3.8,
  resampling the first stage of a two-stage sample);
- cluster randomization test: under "no difference", each conversation's A and B answers could be swapped as a whole,
  which flips the sign of all its differences at once; the p-value is the share of the 2^k sign assignments (exact
  when 2^k <= resamples, else `resamples` random ones) whose |mean| reaches the observed one. Flipping conversation c
  changes the sum by -2 S_c, where S_c is its sum of differences, so the test is the paired sign-flip test on the
  conversations' sums (`stats.sign_flip_tests`).

Both draw their random numbers from the comparison's seed, through the same streams as the per-question statistics.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from evalcore.compare import stats


def cluster_sums(diffs: np.ndarray, clusters: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """Each conversation's sum of differences and number of turns, in order of first appearance."""
    index: dict[Hashable, int] = {}
    labels = np.array([index.setdefault(cluster, len(index)) for cluster in clusters], dtype=np.int64)
    sums = np.bincount(labels, weights=diffs, minlength=len(index))
    sizes = np.bincount(labels, minlength=len(index)).astype(float)
    return sums, sizes


def cluster_bootstrap(diffs: np.ndarray, clusters: Sequence[Hashable], *, resamples: int = stats.RESAMPLES,
                      seed: int = 0, level: float = 0.95) -> stats.BootstrapMean | None:
    """Percentile interval of the mean difference over turns, whole conversations resampled (None below 2 of them)."""
    sums, sizes = cluster_sums(np.asarray(diffs, dtype=float), clusters)
    if sums.size < 2:
        return None
    means = np.empty(resamples)
    for start, counts in stats.resample_counts(sums.size, resamples=resamples, seed=seed):
        means[start:start + counts.shape[0]] = (counts @ sums) / (counts @ sizes)
    return stats.percentile_interval(means, level)


def cluster_sign_flip(diffs: np.ndarray, clusters: Sequence[Hashable], *, resamples: int = stats.RESAMPLES,
                      seed: int = 0) -> tuple[float, str]:
    """p-value and method (exact or sampled) of the randomization test flipping whole conversations."""
    sums, _ = cluster_sums(np.asarray(diffs, dtype=float), clusters)
    return stats.sign_flip_tests([sums.tolist()], resamples=resamples, seed=seed)[0]


def conversation_count(clusters: Sequence[Hashable]) -> int:
    """How many conversations (a question asked alone counts as one)."""
    return len(set(clusters))
