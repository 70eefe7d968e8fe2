"""The two stores on the same work: SQLite (the default) against PostgreSQL (a throwaway server on loopback).

    python bench/store.py [--sizes 2000 8000] [--questions 10000] [--rounds 3]

1. One campaign of 2,000 and of 8,000 questions (the sample corpus, bm25, extractive answers, cache off; the
   dataset of bench/scale.py), each in a fresh store: wall and CPU time per question (this process: dispatch,
   retrieval, answer, scoring, the writes; the PostgreSQL server's own CPU is not counted), and the cost of the
   first and the last fifth of the questions (a store whose writes grow dearer shows a dearer last fifth).
2. compare_campaigns on 2 campaigns x 10,000 questions (bench/dashboard.py's synthetic rows): cold (nothing stored:
   reads both campaigns' results, computes, stores) and warm (reads the stored comparison).

PostgreSQL runs with fsync on and synchronous_commit off, the durability of the SQLite store (WAL, synchronous
NORMAL: a commit survives the process, the last ones may not survive a power cut). The backends alternate round
by round; each cell is the median with min-max.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard import fill
from scale import cell, fifths, write_dataset

from evalcore.campaigns import CampaignManager, get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.compare import compare_campaigns
from evalcore.targets import TargetConfig
from evalcore.testing.postgres_server import new_database, temporary_postgres

A, B = "bench_00", "bench_01"


def campaign(location: str, dataset: Path, size: int) -> dict[str, float]:
    """One campaign of `size` questions in a fresh store; per question: wall and CPU ms, first and last fifth."""
    manager = CampaignManager(location)
    config = TargetConfig.of(retriever="bm25", knowledge_base=str(dataset))
    manager.wait(manager.launch(LaunchRequest(dataset=str(dataset), config=config, limit=20, cache=False)))  # imports
    cpu, start = time.process_time(), time.perf_counter()
    campaign_id = manager.launch(LaunchRequest(dataset=str(dataset), config=config, limit=size, cache=False))
    done = manager.wait(campaign_id)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if done.status != "succeeded" or done.finished != size:
        raise SystemExit(f"{campaign_id} ended {done.status_text}: {done.error}")
    first, last = fifths(manager, campaign_id)
    manager.close()
    return {"wall": wall / size * 1000, "cpu": cpu / size * 1000, "first": first, "last": last}


def comparison(location: str) -> dict[str, float]:
    """compare_campaigns of the two filled campaigns, cold then warm (seconds)."""
    store = get_manager(location).store
    store.write(lambda conn: conn.execute("DELETE FROM comparisons"))
    start = time.perf_counter()
    compare_campaigns(store, A, B)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    compare_campaigns(store, A, B)
    return {"cold": cold, "warm": time.perf_counter() - start}


def main() -> None:
    """Interleave the backends over the rounds and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--questions", type=int, default=10_000, help="per campaign of the comparison")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    compares: dict[str, list[dict[str, float]]] = {"sqlite": [], "postgresql": []}
    with tempfile.TemporaryDirectory() as scratch, temporary_postgres(durable=True) as server:
        folder = Path(scratch)
        dataset = write_dataset(folder / "data", max(args.sizes))
        filled = {"sqlite": str(folder / "compare.db"), "postgresql": new_database(server)}
        for location in filled.values():
            fill(location, 2, args.questions)
        for round_ in range(args.rounds):
            order = ["sqlite", "postgresql"][:: 1 if round_ % 2 == 0 else -1]
            for size in args.sizes:
                for backend in order:
                    location = str(folder / f"s-{size}-{round_}.db") if backend == "sqlite" else new_database(server)
                    runs.setdefault((backend, size), []).append(campaign(location, dataset, size))
            for backend in order:
                compares[backend].append(comparison(filled[backend]))
    print_tables(runs, compares, args)


def print_tables(runs: dict[tuple[str, int], list[dict[str, float]]], compares: dict[str, list[dict[str, float]]],
                 args: argparse.Namespace) -> None:
    """Markdown tables: the campaigns by store and size, then the comparison by store."""
    print(f"Median (min-max) of {args.rounds} interleaved rounds, {os.cpu_count()} cores.\n")
    print("| store | questions | wall per question (ms) | CPU per question (ms) | first fifth (ms/q) "
          "| last fifth (ms/q) |")
    print("|---|---:|---:|---:|---:|---:|")
    for (backend, size), rows in sorted(runs.items(), key=lambda item: (item[0][1], item[0][0] != "sqlite")):
        print(f"| {backend} | {size:,} | {cell([r['wall'] for r in rows])} | {cell([r['cpu'] for r in rows])} | "
              f"{cell([r['first'] for r in rows])} | {cell([r['last'] for r in rows])} |")
    print(f"\n| compare 2 x {args.questions:,} questions | nothing stored (s) | stored (s) |")
    print("|---|---:|---:|")
    for backend, rows in compares.items():
        print(f"| {backend} | {cell([r['cold'] for r in rows])} | {cell([r['warm'] for r in rows])} |")


if __name__ == "__main__":
    main()
