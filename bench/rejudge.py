"""A re-judge against a campaign run again: what the store holds for each, and how long reading it back takes.

    python bench/rejudge.py [--questions 10000] [--rounds 5]

Three campaigns of the same questions (bench/dashboard.py's synthetic rows: ~40-word answers, ten passages of a
5,000-passage corpus, the retrieval and generation measures): the judged one, the same campaign run again (every
answer, ranked list and context stored a second time: what judging again cost before re-judges), and a re-judge
of the first (its rows keep what judging produced and read the rest from the judged campaign's). For each: the
bytes of its result rows and passages, and `campaign_results` read back (cold: each round opens the store anew),
rounds interleaved; each cell is the median with min-max.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard import campaign_row, fill, outcome, questions, store_campaign
from scale import cell

from evalcore.campaigns import campaign_results, get_manager

JUDGED, AGAIN, REJUDGE = "bench_00", "bench_01", "bench_rejudge"
ROW_BYTES = ("coalesce(length(answer), 0) + length(retrieved) + coalesce(length(context), 0) + length(sources) "
             "+ length(measures) + length(signatures) + length(results) + length(judges) + length(notes) "
             "+ length(queries)")


def write(db: str, count: int) -> None:
    """The judged campaign, the same run again, and a re-judge of the first."""
    fill(db, 2, count)
    store, rng, asked = get_manager(db).store, random.Random(2), questions(count)
    row = campaign_row(2, count, time.time()) | {"id": REJUDGE, "answers_from": JUDGED}
    store_campaign(store, row, asked, [outcome(q, rng) for q in asked], shared=True)
    get_manager(db).close()


def stored_bytes(db: str) -> dict[str, int]:
    """Per campaign: the bytes of its result rows, and of the store's passages for the first (they are shared)."""
    store = get_manager(db).store
    rows = {r["campaign_id"]: r["n"] for r in store.read(
        f"SELECT campaign_id, sum({ROW_BYTES}) AS n FROM results GROUP BY campaign_id")}
    passages = {JUDGED: store.read(
        "SELECT coalesce(sum(length(title) + length(text)), 0) AS n FROM passage_texts")[0]["n"]}
    get_manager(db).close()
    return {c: rows.get(c, 0) + passages.get(c, 0) for c in (JUDGED, AGAIN, REJUDGE)}


def read_seconds(db: str, campaign_id: str) -> float:
    """campaign_results of one campaign on a store opened for it."""
    store = get_manager(db).store
    start = time.perf_counter()
    results = campaign_results(store, campaign_id)
    elapsed = time.perf_counter() - start
    assert results[-1].outcome.answer, "every question reads its answer back"
    get_manager(db).close()
    return elapsed


def main() -> None:
    """Write the three campaigns, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "rejudge.db")
        write(db, args.questions)
        sizes = stored_bytes(db)
        times: dict[str, list[float]] = {AGAIN: [], REJUDGE: []}
        for _ in range(args.rounds):
            for campaign_id, seconds in times.items():  # interleaved: the machine's load falls on both alike
                seconds.append(read_seconds(db, campaign_id))
    print(f"{args.questions} questions, {args.rounds} rounds\n")
    print(f"| {'campaign':<38} | {'stored (MB)':>11} | {'campaign_results (s)':>22} |")
    print(f"|{'-' * 40}|{'-' * 13}|{'-' * 24}|")
    print(f"| {'judged campaign':<38} | {sizes[JUDGED] / 1e6:>11.2f} | {'':>22} |")
    for campaign_id, label in ((AGAIN, "the same campaign run again"), (REJUDGE, "a re-judge of it")):
        print(f"| {label:<38} | {sizes[campaign_id] / 1e6:>11.2f} | {cell(times[campaign_id]):>22} |")


if __name__ == "__main__":
    main()
