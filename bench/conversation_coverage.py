"""Coverage of a comparison's 95% interval on turns of conversations: per-turn against conversation-level.

    python bench/conversation_coverage.py [--comparisons 500] [--rounds 3] [--conversations 20] [--turns 5]
                                          [--resamples 1000]

Each simulated comparison draws `conversations` conversations of `turns` turns, a turn's difference being
u + e with u ~ N(0, sd_u) shared by its conversation and e ~ N(0, sd_e) its own (true difference 0);
the intra-class correlation is sd_u^2 / (sd_u^2 + sd_e^2). The per-turn bootstrap (the reference: what a
comparison does when turns are taken as independent) and the conversation-level bootstrap are computed on the
same simulated differences; an interval covers when it holds 0. A 95% interval should cover 95% of them.
Each round uses other seeds; rows give the median with min-max over the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.testing.coverage import simulate_coverage

CORRELATIONS = (0.0, 0.2, 0.5, 0.8)


def spread(values: list[float]) -> str:
    """median (min-max), as percentages or widths."""
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    print(f"{args.comparisons} comparisons x {args.rounds} rounds, {args.conversations} conversations of "
          f"{args.turns} turns, {args.resamples} resamples; nominal coverage 0.950")
    print("| ICC | per-turn coverage | conversation coverage | per-turn width | conversation width |")
    print("|---|---|---|---|---|")
    for icc in CORRELATIONS:
        rows = [simulate_coverage(comparisons=args.comparisons, conversations=args.conversations, turns=args.turns,
                                  conversation_sd=icc ** 0.5, turn_sd=(1 - icc) ** 0.5, resamples=args.resamples,
                                  seed=1000 * number + int(100 * icc)) for number in range(args.rounds)]
        print(f"| {icc:.1f} | {spread([r.per_turn for r in rows])} | {spread([r.per_conversation for r in rows])} "
              f"| {spread([r.per_turn_width for r in rows])} | {spread([r.per_conversation_width for r in rows])} |")


if __name__ == "__main__":
    main()
