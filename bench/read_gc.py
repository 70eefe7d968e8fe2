"""Reading a campaign's results with the cycle collector paused, against reading with it running.

    python bench/read_gc.py [--questions 10000] [--rounds 5] [--heap 1000000]

The store is bench/shapes.py's (campaign bench_00: 23 measures, 30 retrieved passages a question). Each round runs
each way in a fresh process that first holds `--heap` live objects (a server's or a notebook's heap, which every full
collection walks), then reads the campaign's results twice (`read_results`, the first read in the process included).
The ways: `paused`, the collector paused around the read as the reader does; `running`, the reader's pause replaced
by nothing. Ways alternate round by round; the CPU seconds of a read are given as median with min-max over every
read, with the results' count as a check that both read the same.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shapes import fill

READ = """
import contextlib, json, sys, time
from evalcore.campaigns import get_manager, result_rows
if sys.argv[2] == "running":
    result_rows.no_cycle_collection = contextlib.nullcontext
heap = [{"key": i, "value": [i]} for i in range(int(sys.argv[3]))]
store, times, count = get_manager(sys.argv[1]).store, [], 0
for _ in range(2):
    started = time.process_time()
    count = len(result_rows.read_results(store, "bench_00"))
    times.append(time.process_time() - started)
print(json.dumps({"cpu": times, "count": count}))
get_manager(sys.argv[1]).close()
"""
WAYS = ("paused", "running")


def read(db: Path, way: str, heap: int) -> tuple[list[float], int]:
    """One fresh process reading the campaign twice `way`: its CPU seconds and how many results it read."""
    done = subprocess.run([sys.executable, "-c", READ, str(db), way, str(heap)], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    got = json.loads(done.stdout.splitlines()[-1])
    return [float(t) for t in got["cpu"]], int(got["count"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--heap", type=int, default=1_000_000)
    args = parser.parse_args()
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    counts: set[int] = set()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        fill(str(db), args.questions)
        for number in range(args.rounds):
            for way in WAYS if number % 2 == 0 else WAYS[::-1]:
                cpu, count = read(db, way, args.heap)
                times[way] += cpu
                counts.add(count)
    print(f"{args.questions} questions, a heap of {args.heap:,} objects, {args.rounds} rounds, results read: "
          f"{sorted(counts)}")
    print("| collector during the read | CPU s per read, median [min-max] |\n|---|---|")
    for way, spent in times.items():
        print(f"| {way} | {statistics.median(spent):.3f} [{min(spent):.3f}-{max(spent):.3f}] |")


if __name__ == "__main__":
    main()
