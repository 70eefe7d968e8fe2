"""Benchmark: TREC scoring of one run written in three row orders, against pytrec_eval, whole processes.

The inputs come from the realistic TREC generator (`realistic_trec.py OUT`: 100,000 scattered query ids, 100
results each, ClueWeb-style, MS MARCO v2-style and numeric document ids, ~10% tied scores, 10 graded labels per
query), which writes one qrels file and the same run three times: in rank order (`run_ranked.txt`), grouped by
query with each query's rows in any order (`run_grouped.txt`), and fully shuffled (`run_shuffled.txt`). Each
contender is a whole process, interpreter start and imports included: ours is `python -m evalcore score --qrels Q
--run R --json`, the reference parses both files with pytrec_eval, binarises the labels (>= 1 relevant), evaluates
six measures and prints JSON. The labels are graded and our `ndcg@k` is binary (trec_eval's `ndcg_cut_k` on binarised
qrels; `ndcg_graded@k` is the one with the labels as gains), so pytrec_eval on the graded labels as they are would
differ on nDCG wherever a query's relevant documents have different grades; with them binarised every value must be
equal to the bit (the count of values that are not is printed, and the largest difference);
`--before DIR` adds the same command run from another checkout (the code before a change). CPU is the process's
user + system time and memory its peak resident set (/usr/bin/time). Contenders run interleaved, one after the
other in each round, and each cell is the median with the min-max; every value of ours is compared with
pytrec_eval's (max abs difference), and with `--before` every output byte with the other checkout's.

    python -m bench.trec_orders --generator PATH/realistic_trec.py [--data DIR] [--rounds 3]
                                [--order ranked|grouped|shuffled ...] [--before DIR] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.metrics import ORACLE_NAMES, Timing, process, rounds, spread

ORDERS = {"ranked": ">= 5x", "grouped": ">= 5x", "shuffled": ">= 3x"}
GOAL = {"ranked": 5.0, "grouped": 5.0, "shuffled": 3.0}
# pytrec_eval on the labels binarised as ours counts them (>= 1 relevant): nDCG with binary gains, as our ndcg@k.
ORACLE_BINARISED = """
import json, sys, pytrec_eval
with open(sys.argv[1]) as qrels_file, open(sys.argv[2]) as run_file:
    qrels, run = pytrec_eval.parse_qrel(qrels_file), pytrec_eval.parse_run(run_file)
qrels = {query: {doc: int(label >= 1) for doc, label in docs.items()} for query, docs in qrels.items()}
measures = {"set_P", "set_recall", "ndcg_cut_3", "ndcg_cut_10", "recip_rank", "map"}
print(json.dumps(pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)))
"""


def generate(generator: Path, folder: Path, seed: int | None) -> Path:
    """The generator's files in `folder` (made unless they are there)."""
    if not (folder / "run_shuffled.txt").exists():
        command = [sys.executable, str(generator), str(folder)] + (["--seed", str(seed)] if seed is not None else [])
        subprocess.run(command, check=True)
    return folder


def order_rows(folder: Path, order: str, count: int, before: Path | None) -> tuple[list[tuple[str, ...]], str]:
    qrels, run = str(folder / "qrels.txt"), str(folder / f"run_{order}.txt")
    ours = [sys.executable, "-m", "evalcore", "score", "--qrels", qrels, "--run", run, "--json"]
    oracle = [sys.executable, "-c", ORACLE_BINARISED, qrels, run]
    contenders: dict[str, Callable[[], object]] = {"ours": process(ours), "pytrec_eval": process(oracle)}
    if before is not None:
        contenders["before"] = process(ours, cwd=before)
    timings = rounds(contenders, count)
    unequal, values, worst = agreement(timings)
    queries = len(json.loads(str(timings["pytrec_eval"].result)))
    label = f"TREC, run_{order}.txt ({queries:,} queries), whole process"
    rows: list[tuple[str, ...]] = []
    verdicts = []
    for kind in ("wall", "cpu"):
        ours_t, oracle_t = getattr(timings["ours"], kind), getattr(timings["pytrec_eval"], kind)
        times = statistics.median(oracle_t) / statistics.median(ours_t)
        verdicts.append(f"{kind} {times:.2f}x" + (" met" if times >= GOAL[order] else " NOT met"))
        rows.append((f"{label}: {kind}", spread(ours_t), spread(oracle_t), f"{times:.2f}x faster",
                     f"{unequal:,} of {values:,} ({worst:.1e})", _before_cell(timings, kind)))
    share = statistics.median(timings["ours"].peak) / statistics.median(timings["pytrec_eval"].peak)
    rows.append((f"{label}: peak MB", _mb(timings["ours"]), _mb(timings["pytrec_eval"]),
                 f"{share:.2f} of pytrec_eval's", "", ""))
    return rows, f"run_{order}.txt: goal {ORDERS[order]} pytrec_eval: " + ", ".join(verdicts)


def agreement(timings: dict[str, Timing]) -> tuple[int, int, float]:
    """How many of pytrec_eval's values ours does not equal to the bit, out of how many, and the largest difference.
    A query pytrec_eval scores that ours does not is an error (KeyError), not a difference."""
    ours = json.loads(str(timings["ours"].result))["queries"]
    oracle = json.loads(str(timings["pytrec_eval"].result))
    pairs = [(ours[qid][name], oracle[qid][code]) for qid in oracle for name, code in ORACLE_NAMES.items()]
    if set(ours) != set(oracle):
        raise SystemExit(f"the scored queries differ: {len(set(ours) ^ set(oracle)):,} in one side only")
    return sum(a != b for a, b in pairs), len(pairs), max((abs(a - b) for a, b in pairs), default=0.0)


def _before_cell(timings: dict[str, Timing], kind: str) -> str:
    if "before" not in timings:
        return ""
    same = "same output" if timings["before"].result == timings["ours"].result else "OUTPUT DIFFERS"
    return f"{spread(getattr(timings['before'], kind))} ({same})"


def _mb(timing: Timing) -> str:
    return f"{statistics.median(timing.peak):,.0f} ({min(timing.peak):,.0f}-{max(timing.peak):,.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generator", type=Path, required=True, help="the realistic TREC generator script")
    parser.add_argument("--data", type=Path, help="generate here (reused when there) instead of a temporary folder")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of interleaved runs (median, min-max)")
    parser.add_argument("--order", action="append", choices=list(ORDERS), help="run file order (default: all)")
    parser.add_argument("--before", type=Path, help="also run `python -m evalcore score` from this checkout")
    parser.add_argument("--seed", type=int, help="the generator's seed")
    args = parser.parse_args()
    rows, verdicts = [], []
    with tempfile.TemporaryDirectory() as scratch:
        folder = generate(args.generator, args.data or Path(scratch), args.seed)
        for order in args.order or list(ORDERS):
            found, verdict = order_rows(folder, order, args.rounds, args.before)
            rows += found
            verdicts.append(verdict)
    load = os.getloadavg()
    print(f"{args.rounds} rounds, seconds as median (min-max), python {sys.version.split()[0]}, "
          f"load average at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} on {os.cpu_count()} cores\n")
    print("| workload | ours | pytrec_eval | ratio | values not equal to the bit (max abs difference) | before |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    for verdict in verdicts:
        print(verdict)


if __name__ == "__main__":
    main()
