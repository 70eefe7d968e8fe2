"""A bounded soak: campaigns at once against a trickling agent and one of 199,000-character replies, in one
long-lived manager; this process's threads, sockets and resident memory before and after each round (threads
and sockets must come back to where they started, memory must not grow round after round).

    python bench/soak.py [--campaigns 20] [--questions 4] [--rounds 3]

A first round of the same size (not counted) loads what a process loads once (the tokenizer's dictionary, the
HTTP stack) and grows the allocator's arenas to their working size, so the starting level is a warm server's;
the cold level is printed too. "after" is once the campaigns ended and their threads and sockets are gone, freed
memory handed back to the system (malloc_trim).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.testing.soak import Soak, levels, settled


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--campaigns", type=int, default=20)
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cold = levels()
    with tempfile.TemporaryDirectory() as tmp, Soak(Path(tmp) / "soak.db") as soak:
        soak.run(args.campaigns, args.questions)
        start = settled()
        print(f"{'round':<6} {'seconds':>8} {'threads (end -> after)':>24} {'sockets (end -> after)':>24} "
              f"{'RSS MB (end -> after)':>23}  statuses")
        print(f"{'cold':<6} {'':>8} {cold.threads:>24} {cold.sockets:>24} {cold.rss_mb:>23.0f}")
        print(f"{'warm':<6} {'':>8} {start.threads:>24} {start.sockets:>24} {start.rss_mb:>23.0f}")
        for round_ in range(1, args.rounds + 1):
            began = time.perf_counter()
            statuses = soak.run(args.campaigns, args.questions)
            seconds = time.perf_counter() - began
            ended = levels()
            after = settled(start)
            print(f"{round_:<6} {seconds:>8.1f} {f'{ended.threads} -> {after.threads}':>24} "
                  f"{f'{ended.sockets} -> {after.sockets}':>24} {f'{ended.rss_mb:.0f} -> {after.rss_mb:.0f}':>23}  "
                  f"{', '.join(sorted(set(statuses)))}")


if __name__ == "__main__":
    main()
