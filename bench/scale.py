"""Cost per question as campaigns grow: 500, 2,000 and 8,000 questions on the sample corpus (bm25, extractive).

    python bench/scale.py [--sizes 500 2000 8000] [--rounds 3] [--no-dask]

The questions are the sample dataset's, repeated with a number appended (so every question is
distinct text) over the whole sample corpus: each answer retrieves up to 30 real passages, as
a real campaign does. For every size: wall and CPU time per question (this process: dispatch,
retrieval, extractive answer, scoring, the SQLite write), the cost of the first and the last
fifth of the questions (from the stored results' timestamps: a cost that grows with the
campaign shows as a last fifth dearer than the first), and the store's size per question.
Sizes are interleaved over the rounds (the machine may be shared); the table gives the median
and, in brackets, min-max. Flat means 8,000 within 10% of 500 per question.

Each campaign also runs on a Dask LocalCluster of 2 worker processes (one thread each, loopback),
right after or before the local one (the order alternates by round). For those, "CPU" is this
process's (dispatch, scoring, the write) and "workers' CPU" the workers' (retrieval and answers);
the overhead of the Dask path is its wall and total CPU per question minus the local executor's.
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
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.datasets import load_dataset
from evalcore.targets import TargetConfig


def write_dataset(folder: Path, questions: int) -> Path:
    """The sample corpus with `questions` questions cycled from the sample's labeled ones."""
    sample = load_dataset("default")
    asked = [q for q in sample.questions if q.labels and q.references]
    folder.mkdir(parents=True, exist_ok=True)
    picks = [(number, asked[number % len(asked)]) for number in range(1, questions + 1)]
    answers = [(number, text) for number, q in picks for text in q.references[:1]]
    tables = {
        "queries": {"id": [n for n, _ in picks], "text": [f"{q.text} ({n})" for n, q in picks]},
        "corpus": {"id": [p.pid for p in sample.passages], "text": [p.text for p in sample.passages],
                   "title": [p.title for p in sample.passages]},
        "answers": {"id": [n for n, _ in answers], "text": [t for _, t in answers]},
        "qrels": {"qid": [n for n, q in picks for _ in q.labels], "pid": [p for _, q in picks for p in q.labels],
                  "score": [label for _, q in picks for label in q.labels.values()]},
        "qas": {"qid": [n for n, _ in answers], "aid": [n for n, _ in answers]},
    }
    for name, columns in tables.items():
        pq.write_table(pa.table(columns), folder / f"{name}.parquet")
    return folder


def store_bytes(folder: Path) -> int:
    """The database and its write-ahead log."""
    return sum(path.stat().st_size for path in folder.glob("scale-*.db*"))


def fifths(manager: CampaignManager, campaign_id: str) -> tuple[float, float]:
    """Milliseconds per question of the first and the last fifth, from the results' write times."""
    rows = manager.store.read("SELECT created_at FROM results WHERE campaign_id = ? ORDER BY created_at",
                              (campaign_id,))
    stamps = [row["created_at"] for row in rows]
    fifth = len(stamps) // 5
    return ((stamps[fifth] - stamps[0]) / fifth * 1000, (stamps[-1] - stamps[-fifth - 1]) / fifth * 1000)


def run(folder: Path, dataset: Path, size: int, label: str, config: TargetConfig,
        remote_cpu: Callable[[], float]) -> dict[str, float]:
    """One campaign of `size` questions in a fresh database; its costs (`remote_cpu`: the workers' CPU so far)."""
    manager = CampaignManager(folder / f"scale-{label}.db")
    manager.wait(manager.launch(LaunchRequest(dataset=str(dataset), config=config, limit=20,
                                              cache=False)))  # index, imports
    before = store_bytes(folder)
    remote, cpu, start = remote_cpu(), time.process_time(), time.perf_counter()
    campaign_id = manager.launch(LaunchRequest(dataset=str(dataset), config=config, limit=size, cache=False))
    campaign = manager.wait(campaign_id)
    wall, cpu, remote = time.perf_counter() - start, time.process_time() - cpu, remote_cpu() - remote
    if campaign.status != "succeeded" or campaign.finished != size:
        raise SystemExit(f"{campaign_id} ended {campaign.status_text}: {campaign.error}")
    first, last = fifths(manager, campaign_id)
    manager.close()
    return {"wall": wall / size * 1000, "cpu": cpu / size * 1000, "remote": remote / size * 1000, "first": first,
            "last": last, "kb": (store_bytes(folder) - before) / size / 1024, "rss": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (MB): run one size per process to read it as that size's."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def no_workers() -> float:
    """The local executor has no workers."""
    return 0.0


def cell(values: list[float], digits: int = 2) -> str:
    """Median (min-max)."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    """Interleave the sizes (and the executors) over the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 8000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-dask", action="store_true", help="measure the local executor only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        dataset = write_dataset(folder / "data", max(args.sizes))
        config = TargetConfig.of(retriever="bm25", knowledge_base=str(dataset))
        executors: dict[str, tuple[TargetConfig, Callable[[], float]]] = {"local": (config, no_workers)}
        cluster = None if args.no_dask else start_cluster(folder / "worker-index")
        if cluster is not None:
            executors["dask"] = (config.run_on("dask", cluster.scheduler_address), workers_cpu(cluster))
        results: dict[tuple[str, int], list[dict[str, float]]] = {(e, s): [] for s in args.sizes for e in executors}
        for round_ in range(args.rounds):
            for size in args.sizes:
                for name in list(executors)[:: 1 if round_ % 2 == 0 else -1]:
                    results[name, size].append(run(folder, dataset, size, f"{name}-{size}-{round_}", *executors[name]))
                    for path in folder.glob(f"scale-{name}-{size}-{round_}.db*"):
                        os.remove(path)
        if cluster is not None:
            cluster.close()
    print_table(results, args.rounds)


def start_cluster(index: Path) -> Any:
    """A LocalCluster of 2 single-thread worker processes on loopback, with their own index folder."""
    from distributed import LocalCluster

    os.environ["EVALCORE_INDEX_DIR"] = str(index)  # inherited by the worker processes
    return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1")


def workers_cpu(cluster: Any) -> Callable[[], float]:
    """The workers' CPU seconds so far (user + system of each worker process)."""
    client = cluster.get_client()
    return lambda: sum(client.run(time.process_time).values())


def print_table(results: dict[tuple[str, int], list[dict[str, Any]]], rounds: int) -> None:
    """Markdown table, one row per executor and size; then the flatness and the Dask path's overhead."""
    print(f"Median (min-max) of {rounds} interleaved rounds, {os.cpu_count()} cores.\n")
    print("| executor | questions | wall per question (ms) | CPU per question (ms) | workers' CPU per question (ms) "
          "| first fifth (ms/q) | last fifth (ms/q) | store per question (KB) | peak RSS so far (MB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, size), runs in results.items():
        print(f"| {name} | {size:,} | {cell([r['wall'] for r in runs])} | {cell([r['cpu'] for r in runs])} | "
              f"{cell([r['remote'] for r in runs])} | {cell([r['first'] for r in runs])} | "
              f"{cell([r['last'] for r in runs])} | {cell([r['kb'] for r in runs], 1)} | "
              f"{cell([r['rss'] for r in runs], 0)} |")
    sizes = sorted({size for _, size in results})
    names = sorted({name for name, _ in results})

    def median(name: str, size: int, key: str) -> float:
        return statistics.median(r[key] + (r["remote"] if key == "cpu" else 0) for r in results[name, size])

    print()
    for name in names:
        ratio = median(name, sizes[-1], "cpu") / median(name, sizes[0], "cpu")
        print(f"{name}: total CPU per question at {sizes[-1]:,} / at {sizes[0]:,}: {ratio:.2f} (goal, flat: within "
              f"1.10; {'met' if ratio <= 1.10 else 'not met'})")
        fifths = median(name, sizes[-1], "last") / median(name, sizes[-1], "first")
        print(f"{name}: last fifth / first fifth at {sizes[-1]:,}: {fifths:.2f} (goal, flat: within 1.10; "
              f"{'met' if fifths <= 1.10 else 'not met'})")
        kb, rss = median(name, sizes[-1], "kb"), median(name, sizes[-1], "rss")
        print(f"{name}: store per question at {sizes[-1]:,}: {kb:.2f} KB (goal at most 3 KB; "
              f"{'met' if kb <= 3 else 'not met'}); peak RSS {rss:,.0f} MB (goal under 1 GB; "
              f"{'met' if rss < 1024 else 'not met'})")
    if "dask" in names:
        for size in sizes:
            wall = median("dask", size, "wall") - median("local", size, "wall")
            cpu = median("dask", size, "cpu") - median("local", size, "cpu")
            print(f"dask path overhead at {size:,} questions: {wall:+.2f} ms wall, {cpu:+.2f} ms total CPU "
                  "per question")


if __name__ == "__main__":
    main()
