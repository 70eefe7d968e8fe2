"""What max_reply_chars bounds: the time to score one answer of the largest accepted size.

    python bench/reply_cap.py [--sizes 200000 1000000] [--rounds 3]

Each answer is scored as a campaign scores it (`metrics.score_question`: the six generation
measures and coverage against a short expected answer), with the tokenizer's and the measures'
caches cleared first, so each round pays for a new text. There is no reference to compare with:
the figure is the most CPU a question can still spend scoring once its time limit is over.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore import metrics
from evalcore.language.text import clear_caches as clear_text_caches
from evalcore.metrics.bleu_rouge import clear_caches as clear_generation_caches

TEXTS = {
    "english words": lambda n: " ".join(["the", "refund", "window", "is", "thirty", "days"][i % 6]
                                        for i in range(n))[:n],
    "one-letter tokens": lambda n: " ".join("abcdefghij"[i * 7 % 10] for i in range(n))[:n],
    "distinct words": lambda n: " ".join(f"w{i}" for i in range(n))[:n],
    "chinese": lambda n: "".join("退款期限是三十天内的路由器型号"[i * 7 % 15] for i in range(n)),
}


def score_seconds(text: str) -> float:
    """Seconds to score one new answer."""
    clear_generation_caches()
    clear_text_caches()
    start = time.perf_counter()
    metrics.score_question(metrics.Inputs(answer=text, references=["The refund window is 30 days. 退款期限"],
                                          expected_answer="30 days"))
    return time.perf_counter() - start


def main() -> None:
    """Print one row per text kind and size: median (min-max) seconds over the rounds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    score_seconds("退款")  # the segmenter's dictionary loads once per process
    print("| answer | characters | scoring, median (min-max) s |\n|---|---:|---:|")
    for size in args.sizes:
        for kind, make in TEXTS.items():
            text = make(size)
            times = [score_seconds(text) for _ in range(args.rounds)]
            print(f"| {kind} | {len(text):,} | {statistics.median(times):.2f} ({min(times):.2f}-{max(times):.2f}) |",
                  flush=True)


if __name__ == "__main__":
    main()
