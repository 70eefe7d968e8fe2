"""Cost per question as campaigns grow: 500, 2,000 and 8,000 questions on the sample corpus (bm25, extractive).

    python bench/scale.py [--sizes 500 2000 8000] [--rounds 3]

The questions are the sample dataset's, repeated with a number appended (so every question is
distinct text) over the whole sample corpus: each answer retrieves up to 30 real passages, as
a real campaign does. For every size: wall and CPU time per question (this process: dispatch,
retrieval, extractive answer, scoring, the SQLite write), the cost of the first and the last
fifth of the questions (from the stored results' timestamps: a cost that grows with the
campaign shows as a last fifth dearer than the first), and the store's size per question.
Sizes are interleaved over the rounds (the machine may be shared); the table gives the median
and, in brackets, min-max. Flat means 8,000 within 10% of 500 per question.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.campaigns import CampaignManager
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


def run(folder: Path, dataset: Path, size: int, label: str) -> dict[str, float]:
    """One campaign of `size` questions in a fresh database; its costs."""
    manager = CampaignManager(folder / f"scale-{label}.db")
    config = TargetConfig(retriever="bm25", knowledge_base=str(dataset))
    manager.wait(manager.launch(dataset=str(dataset), config=config, limit=20, cache=False))  # index, imports
    before = store_bytes(folder)
    cpu, start = time.process_time(), time.perf_counter()
    campaign_id = manager.launch(dataset=str(dataset), config=config, limit=size, cache=False)
    campaign = manager.wait(campaign_id)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if campaign.status != "succeeded":
        raise SystemExit(f"{campaign_id} ended {campaign.status_text}: {campaign.error}")
    first, last = fifths(manager, campaign_id)
    manager.close()
    return {"wall": wall / size * 1000, "cpu": cpu / size * 1000, "first": first, "last": last,
            "kb": (store_bytes(folder) - before) / size / 1024}


def cell(values: list[float], digits: int = 2) -> str:
    """Median (min-max)."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    """Interleave the sizes over the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 8000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[int, list[dict[str, float]]] = {size: [] for size in args.sizes}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        dataset = write_dataset(folder / "data", max(args.sizes))
        for round_ in range(args.rounds):
            for size in args.sizes:
                results[size].append(run(folder, dataset, size, f"{size}-{round_}"))
                for path in folder.glob(f"scale-{size}-{round_}.db*"):
                    os.remove(path)
    print_table(results, args.rounds)


def print_table(results: dict[int, list[dict[str, Any]]], rounds: int) -> None:
    """Markdown table, one row per size."""
    print(f"Median (min-max) of {rounds} interleaved rounds, {os.cpu_count()} cores.\n")
    print("| questions | wall per question (ms) | CPU per question (ms) | first fifth (ms/q) | last fifth (ms/q) "
          "| store per question (KB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size, runs in results.items():
        print(f"| {size:,} | {cell([r['wall'] for r in runs])} | {cell([r['cpu'] for r in runs])} | "
              f"{cell([r['first'] for r in runs])} | {cell([r['last'] for r in runs])} | "
              f"{cell([r['kb'] for r in runs], 1)} |")
    smallest, largest = min(results), max(results)
    ratio = statistics.median(r["cpu"] for r in results[largest]) / statistics.median(
        r["cpu"] for r in results[smallest])
    print(f"\nCPU per question at {largest:,} / at {smallest:,}: {ratio:.2f} (flat: within 1.10)")


if __name__ == "__main__":
    main()
