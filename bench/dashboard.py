"""Dashboard page load times with a full store: 20 campaigns x 1,000 questions.

    python bench/dashboard.py [--campaigns 20] [--questions 1000] [--runs 3]

Rows are written straight into a temporary store through its write API (no pipeline runs), with
realistic payloads: twelve measures with signatures, ten retrieved passages, an answer of ~40 words.
Each page is loaded with Streamlit's AppTest: the first load (cold caches, including the dataset
and the comparison statistics of the two newest campaigns) and the median of the following loads.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest

from evalcore.campaigns import get_manager
from evalcore.metrics import MEASURES
from evalcore.store import dumps
from evalcore.targets import TargetConfig

PAGES = ["pages/datasets.py", "pages/suites.py", "pages/run.py", "pages/campaigns.py", "pages/compare.py"]
SCORED = [name for name, m in MEASURES.items() if m.family in ("retrieval", "generation") and "." not in name]
WORDS = ["refund", "window", "delivery", "router", "firmware", "thermostat", "warranty", "policy", "days", "update",
         "reset", "password"]


def campaign_row(number: int, questions: int, now: float) -> tuple:
    """A finished dataset campaign whose configuration differs from its neighbour in one key."""
    config = TargetConfig.from_dict({"retriever": "bm25", "embedding_top_k": 5 + number})
    return (f"bench_{number:02d}", "default", "dataset", "default", None, None, "succeeded", None, questions, questions, 0,
            now - 600 + number, now - 600 + number, now - 300 + number, now, "bench", 0, 0, 0,
            dumps(config.to_dict()), "benchhash", 0, "[]", 1, 0, "{}")


def questions(count: int) -> list[tuple[str, list[str], dict[str, int]]]:
    """The same questions for every campaign: text, reference answers, graded relevant passages."""
    rng = random.Random(0)
    return [(f"Question {n + 1}: {' '.join(rng.choices(WORDS, k=12))}?", [" ".join(rng.choices(WORDS, k=20))],
             {str(rng.randrange(5000)): rng.randint(1, 3) for _ in range(rng.randint(1, 3))}) for n in range(count)]


def question_rows(campaign_id: str, asked: list, rng: random.Random) -> tuple[list[tuple], list[tuple]]:
    """The question snapshot and one stored result per question."""
    snapshot, results = [], []
    for position, (text, references, relevant) in enumerate(asked):
        snapshot.append((campaign_id, position, position + 1, text, None, dumps(references), dumps(relevant), "[]"))
        retrieved = [{"pid": rng.choice([int(p) for p in relevant] + [rng.randrange(5000)]), "title": f"Doc {k}",
                      "score": 1.0 - k / 10, "stages": {"bm25": 10.0 - k}} for k in range(10)]
        measures = {name: rng.random() for name in SCORED}
        results.append((campaign_id, position, position + 1, " ".join(rng.choices(WORDS, k=40)), dumps(retrieved), "[]",
                        dumps(measures), dumps({name: MEASURES[name].signature for name in measures}), "{}",
                        rng.uniform(0.01, 0.2), 0, 0, None, 1, "[]", time.time()))
    return snapshot, results


def fill(db: str, campaigns: int, count: int) -> None:
    """Write the campaigns, their question snapshots and their results."""
    store = get_manager(db).store
    rng, now, asked = random.Random(1), time.time(), questions(count)
    for number in range(campaigns):
        row = campaign_row(number, count, now)
        snapshot, results = question_rows(row[0], asked, rng)

        def insert(conn, row=row, snapshot=snapshot, results=results) -> None:
            conn.execute(f"INSERT INTO campaigns (id, tenant, kind, source, suite_id, target_id, status, error, total, "
                         f"finished, failed, created_at, started_at, ended_at, heartbeat, owner_host, owner_pid, "
                         f"session_finished, cancel_requested, config, dataset_hash, use_judge, judges, cache, "
                         f"cache_hits, options) VALUES ({', '.join('?' * len(row))})", row)
            conn.executemany("INSERT INTO campaign_questions (campaign_id, position, qid, question, expected_answer, "
                             "refs, relevant, expected_sources) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", snapshot)
            conn.executemany("INSERT INTO results (campaign_id, position, qid, answer, retrieved, sources, measures, "
                             "signatures, judges, latency_s, prompt_tokens, completion_tokens, error, attempts, notes, "
                             "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", results)

        store.write(insert)


def time_page(page: str, runs: int) -> tuple[float, float]:
    """Seconds for the first load of a page in a new session, and the median of the next loads."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    times = []
    for run in range(runs + 1):
        if run == 0 and page != PAGES[0]:
            at.run()
            at.switch_page(page)
        started = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - started)
        if at.exception:
            raise RuntimeError(f"{page}: {at.exception[0].value}")
    return times[0], statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaigns", type=int, default=20)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3, help="loads after the first, per page")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as tmp:
        db = os.environ["EVALCORE_DB"] = str(Path(tmp) / "bench.db")
        started = time.perf_counter()
        fill(db, args.campaigns, args.questions)
        print(f"store: {args.campaigns} campaigns x {args.questions} questions written in "
              f"{time.perf_counter() - started:.1f} s ({Path(db).stat().st_size / 1e6:.0f} MB)\n")
        print("| page | first load (s) | next loads, median (s) |")
        print("|---|---:|---:|")
        for page in PAGES:
            first, warm = time_page(page, args.runs)
            print(f"| {Path(page).stem} | {first:.2f} | {warm:.2f} |", flush=True)
        get_manager(db).close()


if __name__ == "__main__":
    main()
