"""Comparison speed on 2 campaigns x 10,000 questions with real shapes: the statistics, compare_campaigns, the page.

    python bench/compare.py [--questions 10000] [--rounds 5] [--reference-rounds 3] [--resamples 10000]
                            [--real 10000]

Run it from the repository's root (the dashboard reads its settings there).

The store is a temporary database written through the real schema and the runner's own writer
(bench/shapes.py): 23 measures with different counts as a real campaign has them (retrieval on the
labelled questions, generation on those with a reference, graded, abstention, judge verdicts),
30 retrieved passages with long document ids, an answer of 40 words; campaign B changes 40% of the
questions. No pipeline runs.

1. Statistics of the 23 measures (bootstrap intervals and sign-flip tests, same seed), ours (one
   resample of the questions for every measure) against the per-measure implementation (kept
   below as the reference: each measure resamples its own values). Measures present on every
   question must get equal intervals (to rounding); the others differ by Monte Carlo error only
   (shown in units of the bootstrap standard error); p-values must be equal. Then one measure on
   1,000 questions against scipy.stats.bootstrap and permutation_test, whose own random draws
   make them agree only to Monte Carlo error.
2. compare_campaigns cold (nothing stored: reads both campaigns' results, computes, stores) and
   stored (reads the kept comparison), against their goals; and the parts of a cold one.
3. The Compare page with AppTest: first render with nothing stored, first render with the
   comparison stored (Streamlit's caches cleared, as in a new server process), and reruns.
4. With --real N (0: skipped): two real campaigns run by the campaign manager on a generated
   dataset of N labelled questions with reference answers (bench/campaign.py's), bm25 with the
   extractive generator, 30 retrieved passages against 10; compare_campaigns cold and stored on
   that pair, with the same parts as 2.

Sides alternate round by round; each row gives the median with min-max.
"""

from __future__ import annotations

import argparse
import os
import resource
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
from campaign import write_dataset
from scipy import stats as sps
from shapes import fill
from streamlit.testing.v1 import AppTest

from evalcore.campaigns import campaign_results, get_campaign, get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.compare import compare_campaigns, compare_results, saved_comparisons, stats
from evalcore.store import Store
from evalcore.targets import TargetConfig

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


def ours(table: np.ndarray, samples: list[np.ndarray], resamples: int, seed: int) -> list[tuple[float, float, float]]:
    """(low, high, p) per measure: one resample of the questions for every measure, one stream of signs."""
    intervals = stats.bootstrap_table(table, resamples=resamples, seed=seed)
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


def cpu_now() -> float:
    """This process's CPU seconds and its ended children's (a large comparison's statistics run in a process
    of their own)."""
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime


def timed_cpu(fn: Callable[[], object]) -> tuple[float, float, object]:
    """Wall and CPU seconds taken by fn() (the machine is shared: CPU is the steadier figure), and what it returned."""
    wall, cpu = time.perf_counter(), cpu_now()
    result = fn()
    return time.perf_counter() - wall, cpu_now() - cpu, result


def spread(times: list[float]) -> str:
    """Median with min-max."""
    return f"{statistics.median(times):.3f} [{min(times):.3f}-{max(times):.3f}]"


def question_table(paired: dict[str, object]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The B - A table (a row per question id, NaN where a measure is absent) and each measure's differences."""
    qids = sorted({int(q) for values in paired.values() for q in values.qids})
    row = {qid: i for i, qid in enumerate(qids)}
    table = np.full((len(qids), len(paired)), np.nan)
    for j, values in enumerate(paired.values()):
        table[[row[int(q)] for q in values.qids], j] = values.b - values.a
    return table, [values.b - values.a for values in paired.values()]


def bench_statistics(paired: dict[str, object], args: argparse.Namespace) -> None:
    """Ours against the per-measure reference, alternating; values compared."""
    table, samples = question_table(paired)
    ours_t, ref_t = [], []
    for round_ in range(max(args.rounds, args.reference_rounds)):
        ours_t.append(timed_cpu(lambda: ours(table, samples, args.resamples, 0)))
        if round_ < args.reference_rounds:
            ref_t.append(timed_cpu(lambda: reference(samples, args.resamples, 0)))
    mine, theirs = ours_t[-1][2], ref_t[-1][2]
    full = [s.size == table.shape[0] for s in samples]
    ses = [i.se for i in stats.bootstrap_table(table, resamples=args.resamples, seed=0)]
    gaps = [max(abs(m[0] - r[0]), abs(m[1] - r[1])) for m, r in zip(mine, theirs, strict=True)]
    same = max([g for g, f in zip(gaps, full, strict=True) if f], default=0.0)
    monte_carlo = max([g / se for g, f, se in zip(gaps, full, ses, strict=True) if not f], default=0.0)
    same_p = sum(m[2] == r[2] for m, r in zip(mine, theirs, strict=True))
    counts = sorted({s.size for s in samples})
    for kind, side in (("wall", 0), ("CPU", 1)):
        mine_s, ref_s = [t[side] for t in ours_t], [t[side] for t in ref_t]
        print(f"| {len(samples)} measures, {len(counts)} distinct counts ({counts[0]}..{counts[-1]}) of "
              f"{table.shape[0]} questions: {kind} | {spread(mine_s)} | {spread(ref_s)} | "
              f"{statistics.median(ref_s) / statistics.median(mine_s):.1f}x | {same:.1e} ({sum(full)} measures) | "
              f"{monte_carlo:.2f} se | {same_p}/{len(samples)} |", flush=True)


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
    print(f"| bootstrap 95% interval, 1 measure, n = {diffs.size} | {took:.3f} | {took_ref:.3f} "
          "(scipy.stats.bootstrap) "
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


def bench_engine(store: Store, rounds: int, pair: tuple[str, str] = (A, B)) -> None:
    """compare_campaigns with nothing stored, then read back; and the parts of a cold one."""
    cold, warm, reads, computes, keeps = [], [], [], [], []
    a, b = get_campaign(store, pair[0]), get_campaign(store, pair[1])
    rows = [campaign_results(store, c, detail=False) for c in pair]
    comparison = compare_results(a, rows[0], b, rows[1])
    for _ in range(rounds):
        forget(store)
        cold.append(timed_cpu(lambda: compare_campaigns(store, *pair)))
        warm.append(timed_cpu(lambda: compare_campaigns(store, *pair)))
        reads.append(timed_cpu(lambda: [campaign_results(store, c, detail=False) for c in pair]))
        computes.append(timed_cpu(lambda: compare_results(a, rows[0], b, rows[1])))
        forget(store)
        keeps.append(timed_cpu(lambda: saved_comparisons.keep(store, comparison, a, b)))
    for name, times, goal in (("compare_campaigns, nothing stored (reads 2 x results, computes, stores)", cold, 1.5),
                               ("compare_campaigns, stored", warm, 0.3),
                               ("  part: read both campaigns' results", reads, None),
                               ("  part: compare_results (verdicts, statistics, power)", computes, None),
                               ("  part: keep the comparison", keeps, None)):
        print(f"| {name} | {spread([t[0] for t in times])} | {spread([t[1] for t in times])} | "
              f"{'' if goal is None else f'< {goal}'} |", flush=True)


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


def real_pair(store: Store, folder: Path, questions: int) -> tuple[str, str]:
    """Two campaigns run for real on a generated dataset: bm25 and the extractive generator, top 30 against 10."""
    manager = get_manager(store.path)
    dataset = write_dataset(folder, questions)
    ids = []
    for top in (30, 10):
        config = TargetConfig.from_dict({"retriever": "bm25", "generator": "extractive", "embedding_top_k": top})
        ids.append(manager.launch(LaunchRequest(dataset=str(dataset), config=config, cache=False)))
        done = manager.wait(ids[-1])
        if done.status != "succeeded":
            raise SystemExit(f"campaign {ids[-1]} ended {done.status_text}: {done.error}")
    return ids[0], ids[1]


def paired_values(store: Store) -> dict[str, object]:
    """Every measure's per-question values in both campaigns, from the comparison."""
    return dict(compare_campaigns(store, A, B).paired)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of our side")
    parser.add_argument("--reference-rounds", type=int, default=3, help="rounds of the (slow) reference")
    parser.add_argument("--resamples", type=int, default=stats.RESAMPLES)
    parser.add_argument("--reruns", type=int, default=3, help="page reruns per round")
    parser.add_argument("--real", type=int, default=10_000, metavar="N",
                        help="questions of the two real campaigns of the second case (0: skip it)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as tmp:
        db = os.environ["EVALCORE_DB"] = str(Path(tmp) / "bench.db")
        took, _ = timed(lambda: fill(db, args.questions))
        store = get_manager(db).store
        print(f"store: 2 campaigns x {args.questions} questions written in {took:.1f} s\n")
        paired = paired_values(store)
        print(f"Statistics, {args.resamples} resamples, seconds (median [min-max]):\n")
        print("| data | ours | per-measure reference | reference / ours | max interval difference, measures on "
              "every question | max interval difference, the others | p-values equal |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        bench_statistics(paired, args)
        print("\n| against scipy | ours (s) | scipy (s) | difference |")
        print("|---|---:|---:|---:|")
        rougel = paired["rougel"]
        bench_scipy((rougel.b - rougel.a)[:1000], args.resamples)
        print("\n| engine | wall seconds (median [min-max]) | CPU seconds | goal (wall) |")
        print("|---|---:|---:|---:|")
        bench_engine(store, args.rounds)
        if args.real:
            took, pair = timed(lambda: real_pair(store, Path(tmp) / "generated", args.real))
            print(f"\nTwo real campaigns of {args.real} questions (bm25, extractive, top 30 vs 10) "
                  f"ran in {took:.0f} s\n")
            print("| engine, real campaigns | wall seconds (median [min-max]) | CPU seconds | goal (wall) |")
            print("|---|---:|---:|---:|")
            bench_engine(store, args.rounds, pair)
        print("\n| Compare page (AppTest) | seconds (median [min-max]) |")
        print("|---|---:|")
        bench_page(store, args.rounds, args.reruns)
        get_manager(db).close()


if __name__ == "__main__":
    main()
