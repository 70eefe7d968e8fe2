"""A kept comparison read back: this checkout against an earlier one, 2 campaigns x 10,000 questions of real shapes.

    python bench/stored.py --reference DIR [--questions 10000] [--rounds 5] [--reads 3]

DIR is a checkout of the code to compare with (e.g. `git worktree add /tmp/before main`). The
store is bench/shapes.py's (23 measures of different counts, 30 retrieved passages with long ids,
two judges' verdicts on most questions); each side gets its own copy, compares the pair once (so
the comparison is kept in its own stored format), then each round runs each side in a fresh process
that reads the kept comparison `--reads` times (`compare_campaigns`, the first read in the process
included). Sides alternate round by round; the CPU seconds of a read are given as median with
min-max over every read. The JSON of both sides' comparisons must be the same to the last digit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shapes import fill, fill_as

GOAL = 0.3
READ = """
import hashlib, json, sys, time
from evalcore.campaigns import get_manager
from evalcore.compare import compare_campaigns
store, times = get_manager(sys.argv[1]).store, []
for _ in range(int(sys.argv[2])):
    started = time.process_time()
    comparison = compare_campaigns(store, "bench_00", "bench_01")
    times.append(time.process_time() - started)
text = json.dumps(comparison.to_dict(), sort_keys=True, default=str)
print(json.dumps({"cpu": times, "json": hashlib.sha256(text.encode()).hexdigest()}))
get_manager(sys.argv[1]).close()
"""


def read(side: Path, db: Path, reads: int) -> tuple[list[float], str]:
    """One fresh process of `side` reading the kept comparison `reads` times: their CPU seconds and its JSON's hash."""
    done = subprocess.run([sys.executable, "-c", READ, str(db), str(reads)], cwd=side, capture_output=True, text=True,
                          check=True)
    got = json.loads(done.stdout.splitlines()[-1])
    return [float(t) for t in got["cpu"]], str(got["json"])


def spread(times: list[float]) -> str:
    """Median with min-max."""
    return f"{statistics.median(times):.3f} [{min(times):.3f}-{max(times):.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, required=True, metavar="DIR", help="a checkout of the earlier code")
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reads", type=int, default=3, help="reads of the kept comparison per process")
    args = parser.parse_args()
    sides = {"this checkout": ROOT, f"reference ({args.reference})": args.reference.resolve()}
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as tmp:
        fill(str(Path(tmp) / "shapes.db"), args.questions)
        dbs = {name: Path(tmp) / f"side{i}.db" for i, name in enumerate(sides)}
        for name, side in sides.items():
            if side == ROOT:
                shutil.copy(Path(tmp) / "shapes.db", dbs[name])
            else:   # written by that checkout's own code: an older one refuses a newer schema
                fill_as(side, dbs[name], args.questions)
            read(side, dbs[name], 1)   # computes and keeps the comparison in this side's own format
        times: dict[str, list[float]] = {name: [] for name in sides}
        hashes = set()
        for _ in range(args.rounds):
            for name, side in sides.items():
                took, digest = read(side, dbs[name], args.reads)
                times[name] += took
                hashes.add(digest)
    same = len(hashes) == 1
    print(f"A kept comparison of 2 x {args.questions} questions read back (compare_campaigns), CPU seconds per read, "
          f"{args.rounds} interleaved rounds of {args.reads} reads (median [min-max]):\n")
    print("| code | CPU s | goal |")
    print("|---|---:|---:|")
    for name, took in times.items():
        print(f"| {name} | {spread(took)} | < {GOAL} |")
    print(f"\nthe comparison's JSON on both sides: {'the same to the last digit' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
