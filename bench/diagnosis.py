"""What failure attribution and the abstention measures add to the scoring of a question.

    python bench/diagnosis.py [--questions 2000] [--rounds 7]

Two contenders run interleaved over the rounds on the same questions (a 40-word answer, 30
retrieved passages, one relevant, one reference answer): `metrics.score_question` as campaigns
called it before (no abstention), and as they call it now (the abstention measures of an
answerable question) followed by `diagnosis.attribute`. Half the answers are plain answers, half
answers holding the words the refusal phrasings look for ("can", "source", "information"), which
are searched with the phrasings. There is no reference library: the figure is the CPU per question
added to a campaign (whose machinery costs about 0.5 ms a question, see bench/campaign.py). Both
sides give the same scores: the added measures are checked to be the only difference.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.diagnosis import Evidence, GenerationMarks, attribute
from evalcore.metrics import Inputs, score_question
from evalcore.targets import Retrieved

WORDS = ("refund", "window", "days", "delivery", "orders", "warranty", "router", "thermostat", "firmware", "reset",
         "button", "light", "amber")
CUED = ["you", "can", "check", "the", "source", "of", "this", "information"]
FALLBACK = "Sorry, I am unable to answer this question."
MARKS = GenerationMarks(rougel=0.3, coverage=0.5)


def questions(count: int) -> list[dict[str, Any]]:
    """Scoring inputs: an answer (every other one with cue words), 30 retrieved passages, one relevant, a reference."""
    rng = random.Random(0)
    out = []
    for number in range(count):
        words = rng.choices(WORDS, k=40 - len(CUED) * (number % 2)) + CUED * (number % 2)
        hits = [Retrieved(rng.randrange(300), "title", "passage text " * 25, 1.0, {}) for _ in range(30)]
        out.append({"relevant": {hits[rng.randrange(30)].pid: 1}, "ranked": [hit.pid for hit in hits],
                    "answer": " ".join(words) + ".", "references": [" ".join(rng.choices(WORDS, k=8))],
                    "expected_answer": None, "expected_sources": None, "retrieved_sources": [], "hits": hits})
    return out


def before(item: dict[str, Any]) -> dict[str, float]:
    """The scoring a question had before attribution and abstention."""
    return score_question(Inputs(**{k: v for k, v in item.items() if k != "hits"})).values


def now(item: dict[str, Any]) -> dict[str, float]:
    """The scoring with the abstention measures, then the question's stage."""
    values = score_question(Inputs(**{k: v for k, v in item.items() if k != "hits"}, answerable=True,
                                   fallback_answer=FALLBACK)).values
    attribute(Evidence(item["relevant"], (), item["hits"], item["hits"][:5], values), MARKS)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    items = questions(args.questions)
    for item in items:  # warm the token caches; the same values but for the added measure
        old, new = before(item), now(item)
        assert {k: v for k, v in new.items() if k != "false_abstention"} == old and new["false_abstention"] == 0.0
    cpu: dict[str, list[float]] = {"before": [], "now": []}
    for number in range(args.rounds):
        for name, fn in sorted({"before": before, "now": now}.items(), reverse=bool(number % 2)):
            start = time.process_time()
            for item in items:
                fn(item)
            cpu[name].append((time.process_time() - start) / len(items) * 1e6)
    print(f"{'scoring of one question':<48} {'CPU us, median (min-max)':>26}")
    for name, label in (("before", "measures (before)"), ("now", "measures + abstention + attribution (now)")):
        values = cpu[name]
        print(f"{label:<48} {statistics.median(values):>10.0f} ({min(values):.0f}-{max(values):.0f})")
    added = [b - a for a, b in zip(cpu["before"], cpu["now"], strict=True)]
    print(f"{'added per question':<48} {statistics.median(added):>10.0f} ({min(added):.0f}-{max(added):.0f})")


if __name__ == "__main__":
    main()
