"""Comparison speed on 2 campaigns x 10,000 questions: the statistics, compare_campaigns, the Compare page.

    python bench/compare.py [--questions 10000] [--rounds 5] [--reference-rounds 3] [--resamples 10000]

The store is a temporary database written through the real schema with synthetic rows
(bench/dashboard.py's `fill`: twelve retrieval and generation measures drawn uniformly, ten
retrieved passages and a 40-word answer per question); no pipeline runs.

1. Statistics of the twelve measures (bootstrap intervals and sign-flip tests, same seed), ours
   against the per-measure implementation they replace (kept below as the reference), on the
   campaigns' differences ("continuous": every difference non-zero) and on the same values
   rounded to fifths ("tied": zero differences, so each measure has its own count of non-zero
   differences); values must be equal (p-values exactly, intervals to rounding). Then one
   measure on 1,000 questions against scipy.stats.bootstrap and permutation_test, whose own
   random draws make them agree only to Monte Carlo error.
2. compare_campaigns cold (nothing stored: reads both campaigns' results, computes, stores) and
   warm (reads the stored comparison).
3. The Compare page with AppTest: first render with nothing stored, first render with the
   comparison stored (Streamlit's caches cleared, as in a new server process), and reruns.

Sides alternate round by round; each row gives the median with min-max.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np
import streamlit as st
from dashboard import fill
from scipy import stats as sps
from streamlit.testing.v1 import AppTest

from evalcore.campaigns import get_manager
from evalcore.compare import compare_campaigns, stats
from evalcore.store import Store

A, B = "bench_00", "bench_01"


def reference_bootstrap(values: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    """The previous per-measure bootstrap: its own generator, index matrices in slices of 2,000,000 cells."""
    rng = np.random.default_rng(seed)
    rows = max(1, 2_000_000 // values.size)
    means = np.concatenate([values[rng.integers(0, values.size, size=(min(rows, resamples - s), values.size))]
                            .mean(axis=1) for s in range(0, resamples, rows)])
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def reference_sign_flip(diffs: np.ndarray, resamples: int, seed: int) -> float:
    """The previous per-measure sign-flip test over the non-zero differences (sampled; exact when 2^k is small)."""
    data = diffs[diffs != 0]
    if 2 ** data.size <= resamples:
        return stats.sign_flip_exact(data)
    rng = np.random.default_rng(seed)
    rows, hits = max(1, 2_000_000 // data.size), 0
    for start in range(0, resamples, rows):
        signs = rng.integers(0, 2, size=(min(rows, resamples - start), data.size)) * 2 - 1
        hits += int(np.count_nonzero(np.abs((signs * data).mean(axis=1)) >= stats.threshold(data)))
    return (hits + 1) / (resamples + 1)


def ours(samples: list[np.ndarray], resamples: int, seed: int) -> list[tuple[float, float, float]]:
    """(low, high, p) per measure from the batch functions."""
    intervals = stats.bootstrap_intervals(samples, resamples=resamples, seed=seed)
    tests = stats.sign_flip_tests(samples, resamples=resamples, seed=seed)
    return [(i.low, i.high, t[0]) for i, t in zip(intervals, tests, strict=True) if i is not None]


def reference(samples: list[np.ndarray], resamples: int, seed: int) -> list[tuple[float, float, float]]:
    """(low, high, p) per measure, one measure at a time as before."""
    return [(*reference_bootstrap(s, resamples, seed), reference_sign_flip(s, resamples, seed)) for s in samples]


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """Seconds taken by fn(), and what it returned."""
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def spread(times: list[float]) -> str:
    """Median with min-max."""
    return f"{statistics.median(times):.3f} [{min(times):.3f}-{max(times):.3f}]"


def bench_statistics(samples: list[np.ndarray], label: str, args: argparse.Namespace) -> None:
    """Ours against the per-measure reference, alternating; values compared."""
    ours_t, ref_t = [], []
    for round_ in range(max(args.rounds, args.reference_rounds)):
        took, mine = timed(lambda: ours(samples, args.resamples, 0))
        ours_t.append(took)
        if round_ < args.reference_rounds:
            took, theirs = timed(lambda: reference(samples, args.resamples, 0))
            ref_t.append(took)
    gap = max(max(abs(m[0] - r[0]), abs(m[1] - r[1])) for m, r in zip(mine, theirs, strict=True))
    same_p = sum(m[2] == r[2] for m, r in zip(mine, theirs, strict=True))
    nonzero = sorted({int(np.count_nonzero(s)) for s in samples})
    print(f"| {label} ({len(samples)} measures, n = {samples[0].size}, non-zero differences "
          f"{nonzero[0]}..{nonzero[-1]}) | {spread(ours_t)} | {spread(ref_t)} | "
          f"{statistics.median(ref_t) / statistics.median(ours_t):.1f}x | {gap:.1e} | {same_p}/{len(samples)} |",
          flush=True)


def bench_scipy(diffs: np.ndarray, resamples: int) -> None:
    """One measure against scipy's percentile bootstrap and paired permutation test (their own draws)."""
    took, (result,) = timed(lambda: stats.bootstrap_intervals([diffs], resamples=resamples, seed=0))
    took_p, ((p_value, _),) = timed(lambda: stats.sign_flip_tests([diffs], resamples=resamples, seed=0))
    took_ref, boot = timed(lambda: sps.bootstrap((diffs,), np.mean, n_resamples=resamples, method="percentile",
                                                 rng=np.random.default_rng(0), vectorized=True))
    took_perm, perm = timed(lambda: sps.permutation_test(
        (diffs, np.zeros_like(diffs)), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
        n_resamples=resamples, rng=np.random.default_rng(0), vectorized=True))
    interval = boot.confidence_interval
    print(f"| bootstrap 95% interval, 1 measure, n = {diffs.size} | {took:.3f} | {took_ref:.3f} (scipy.stats.bootstrap) "
          f"| {max(abs(result.low - interval.low), abs(result.high - interval.high)):.1e} "
          f"(bootstrap se {result.se:.1e}) |")
    print(f"| sign-flip p-value, 1 measure, n = {diffs.size} | {took_p:.3f} | {took_perm:.3f} "
          f"(scipy.stats.permutation_test) | {abs(p_value - perm.pvalue):.1e} "
          f"(Monte Carlo se {np.sqrt(p_value * (1 - p_value) / resamples):.1e}) |", flush=True)


def forget(store: Store) -> None:
    """Drop the stored comparisons and Streamlit's caches: the next comparison starts from the results."""
    store.write(lambda conn: conn.execute("DELETE FROM comparisons"))
    forget_caches()


def forget_caches() -> None:
    """Clear Streamlit's caches, as a new server process starts."""
    st.cache_data.clear()
    st.cache_resource.clear()


def bench_engine(store: Store, rounds: int) -> None:
    """compare_campaigns with nothing stored, then read back."""
    cold, warm = [], []
    for _ in range(rounds):
        forget(store)
        cold.append(timed(lambda: compare_campaigns(store, A, B))[0])
        warm.append(timed(lambda: compare_campaigns(store, A, B))[0])
    print(f"| compare_campaigns, nothing stored (reads 2 x results, computes, stores) | {spread(cold)} |")
    print(f"| compare_campaigns, stored | {spread(warm)} |", flush=True)


def first_render() -> tuple[float, AppTest]:
    """Seconds for the Compare page's first run in a new session (the app and its imports already loaded)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()
    at.switch_page("pages/compare.py")
    took, _ = timed(at.run)
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return took, at


def bench_page(store: Store, rounds: int, reruns: int) -> None:
    """First render with nothing stored, with the comparison stored, and reruns; alternating."""
    first_render()   # imports and the app's first run out of the way
    cold, stored, again = [], [], []
    for _ in range(rounds):
        forget(store)
        cold.append(first_render()[0])
        forget_caches()
        took, at = first_render()
        stored.append(took)
        again += [timed(at.run)[0] for _ in range(reruns)]
    print(f"| first render, nothing stored | {spread(cold)} |")
    print(f"| first render, comparison stored (new process: caches cleared) | {spread(stored)} |")
    print(f"| rerun (same session) | {spread(again)} |", flush=True)


def paired_differences(store: Store, decimals: int | None) -> list[np.ndarray]:
    """B - A of every measure of the stored comparison, optionally after rounding the values to a grid."""
    comparison = compare_campaigns(store, A, B)

    def grid(values: np.ndarray) -> np.ndarray:
        return values if decimals is None else np.round(values * decimals) / decimals

    return [grid(p.b) - grid(p.a) for p in comparison.paired.values()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of our side")
    parser.add_argument("--reference-rounds", type=int, default=3, help="rounds of the (slow) reference")
    parser.add_argument("--resamples", type=int, default=stats.RESAMPLES)
    parser.add_argument("--reruns", type=int, default=3, help="page reruns per round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as tmp:
        db = os.environ["EVALCORE_DB"] = str(Path(tmp) / "bench.db")
        took, _ = timed(lambda: fill(db, 2, args.questions))
        store = get_manager(db).store
        print(f"store: 2 campaigns x {args.questions} questions written in {took:.1f} s\n")
        print(f"Statistics, {args.resamples} resamples, seconds (median [min-max]):\n")
        print("| data | ours | per-measure reference | reference / ours | max interval difference | "
              "p-values equal |")
        print("|---|---:|---:|---:|---:|---:|")
        bench_statistics(paired_differences(store, None), "continuous", args)
        bench_statistics(paired_differences(store, 5), "tied", args)
        print("\n| against scipy | ours (s) | scipy (s) | difference |")
        print("|---|---:|---:|---:|")
        bench_scipy(paired_differences(store, None)[0][:1000], args.resamples)
        print("\n| engine | seconds (median [min-max]) |")
        print("|---|---:|")
        bench_engine(store, args.rounds)
        print("\n| Compare page (AppTest) | seconds (median [min-max]) |")
        print("|---|---:|")
        bench_page(store, args.rounds, args.reruns)
        get_manager(db).close()


if __name__ == "__main__":
    main()
