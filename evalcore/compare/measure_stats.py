"""Each measure's delta between two campaigns over their common questions: its 95% interval, a paired test, its
significance and power; when the questions are turns of conversations, the interval and test resample whole
conversations. What a comparison computes in process, or in the statistics process of a large one
(`evalcore.compare.statistics_process`), which imports only this."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import replace

import numpy as np

from evalcore.compare import power, stats
from evalcore.compare.clusters import cluster_bootstrap as conversation_bootstrap
from evalcore.compare.clusters import cluster_sign_flip, conversation_count
from evalcore.compare.deltas import PASS_SUFFIX, MeasureDelta, Paired
from evalcore.metrics import MEASURES, higher_is_better


def measure_entries(paired: dict[str, Paired], table: np.ndarray, *, seed: int, resamples: int, effect: float,
                    pool: Executor | None = None, clusters: Mapping[int, str] | None = None) -> list[MeasureDelta]:
    """Every measure's delta: one bootstrap resample of the common questions and one stream of sign flips serve
    every measure (stats); with a pool, the sign flips are drawn beside the bootstrap (numpy releases the GIL).
    With `clusters` (question id -> its conversation), the interval and the test resample whole conversations."""
    diffs = [values.b - values.a for values in paired.values()]
    flips = pool.submit(stats.sign_flip_tests, diffs, resamples=resamples, seed=seed) if pool else None
    intervals = stats.bootstrap_table(table, resamples=resamples, seed=seed)
    tests = flips.result() if flips else stats.sign_flip_tests(diffs, resamples=resamples, seed=seed)
    entries = [measure_entry(name, values, interval, test, effect=effect)
               for (name, values), interval, test in zip(paired.items(), intervals, tests, strict=True)]
    if not clusters:
        return entries
    return [by_conversation(entry, values, clusters, seed=seed, resamples=resamples)
            for entry, values in zip(entries, paired.values(), strict=True)]


def by_conversation(entry: MeasureDelta, values: Paired, clusters: Mapping[int, str], *, seed: int,
                    resamples: int) -> MeasureDelta:
    """The delta with its interval and test resampling whole conversations (the per-turn ones kept beside them);
    a pass/fail measure is tested so too, McNemar's test assuming independent questions."""
    labels = [clusters.get(int(qid), f"question {qid}") for qid in values.qids.tolist()]
    diffs = values.b - values.a
    interval = conversation_bootstrap(diffs, labels, resamples=resamples, seed=seed)
    p_value, method = cluster_sign_flip(diffs, labels, resamples=resamples, seed=seed)
    significant = p_value < stats.ALPHA
    se = (interval.se if entry.sd_diff else 0.0) if interval else None
    return replace(entry, conversations=conversation_count(labels), ci_low_turns=entry.ci_low,
                   ci_high_turns=entry.ci_high, p_turns=entry.p_value,
                   ci_low=interval.low if interval else None, ci_high=interval.high if interval else None,
                   p_randomization=p_value, randomization=method, p_value=p_value,
                   test=f"conversation sign-flip randomization ({method})", significant=significant,
                   improved=significant and (entry.delta > 0) == entry.higher_is_better, se_bootstrap=se,
                   mde_bootstrap=power.mde_bootstrap(se))


def measure_entry(name: str, values: Paired, interval: stats.BootstrapMean | None, randomization: tuple[float, str],
                  *, effect: float) -> MeasureDelta:
    """Mean difference over the common questions, its 95% interval, a paired test, significance and power."""
    n = len(values.a)
    # Python's sum over the values, in question order: the means do not depend on numpy's summation.
    mean_a, mean_b = sum(values.a.tolist()) / n, sum(values.b.tolist()) / n
    p_random, method = randomization
    binary = is_binary(name, values)
    mcnemar = None
    if binary:
        mcnemar = stats.mcnemar_exact((values.a >= 0.5).tolist(), (values.b >= 0.5).tolist())
    p_value = mcnemar.p_value if mcnemar else p_random
    better = higher_is_better(name)
    significant = p_value < stats.ALPHA
    diffs = values.b - values.a
    sd = spread(diffs)
    moved = diffs[diffs != 0]
    # Equal differences resample to equal means: an se of 1e-17 is rounding, not a spread.
    se = (interval.se if sd else 0.0) if interval else None
    return MeasureDelta(
        measure=name, n=n, mean_a=mean_a, mean_b=mean_b, delta=mean_b - mean_a,
        ci_low=interval.low if interval else None, ci_high=interval.high if interval else None,
        p_randomization=p_random, randomization=method, higher_is_better=better, binary=binary, p_value=p_value,
        test="mcnemar-exact" if mcnemar else f"sign-flip randomization ({method})", significant=significant,
        improved=significant and (mean_b - mean_a > 0) == better, mcnemar=mcnemar, sd_diff=sd, se_bootstrap=se,
        mde=power.mde(sd, n), mde_bootstrap=power.mde_bootstrap(se), effect=effect,
        n_required=power.required_n(effect, sd), power_note=power.why_no_power(n, sd, float(diffs[0]) if n else 0.0),
        changed=int(moved.size), one_way=bool(moved.size) and bool((moved > 0).all() or (moved < 0).all()),
    )


def spread(diffs: np.ndarray) -> float | None:
    """Sample standard deviation of the differences; 0 when they are all equal, None below 2."""
    if diffs.size < 2:
        return None
    # Equal up to rounding (0.7 - 0.5 vs 0.3 - 0.1) is equal: a spread of 1e-17 would claim that
    # a difference of 1e-16 could be detected.
    equal = diffs.max() - diffs.min() <= 1e-12 * max(1.0, float(np.abs(diffs).max()))
    return 0.0 if equal else float(diffs.std(ddof=1))


def is_binary(name: str, values: Paired) -> bool:
    """Pass/fail measures (McNemar applies): known binary names whose values are all 0 or 1."""
    measure = MEASURES.get(name)
    known = bool(measure and measure.binary) or name.endswith(PASS_SUFFIX)
    return known and all(bool(np.isin(side, (0.0, 1.0)).all()) for side in (values.a, values.b))
