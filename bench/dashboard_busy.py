"""Dashboard page times while one of its campaigns embeds a 10,000-passage corpus, against the same pages idle.

    python bench/dashboard_busy.py [--passages 10000] [--rounds 2] [--runs 2]

The store holds 5 campaigns x 1,000 questions (bench/dashboard.py's synthetic rows). A real browser (headless
chromium, bench/dashboard.py's rounds: a first visit by address in a new session, then visits through the
navigation) times each page until usable and until its script has finished, in interleaved rounds: one with
nothing running ("idle"), then one while a campaign queued in the dashboard's store is being run by the dashboard's
supervised worker process (EVALCORE_DASHBOARD_WORKER=process, the default) and is embedding its corpus with the
vector retriever ("busy"); the campaign is then cancelled and the next pair starts (each busy round embeds a corpus
of its own, so nothing comes from the index cache). A busy round counts only when its campaign was embedding from
its start to its end. Each row gives the median (min-max) and busy / idle of the medians: within 1.5 is the goal.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pyarrow as pa
import pyarrow.parquet as pq
from dashboard import PAGES, WORDS, browser_round, fill, serve

from evalcore.campaigns import get_campaign, get_manager
from evalcore.campaigns.campaign_queue import Workers
from evalcore.campaigns.launching import LaunchRequest
from evalcore.targets import TargetConfig

Times = dict[str, list[tuple[float, float]]]


def corpus_dataset(folder: Path, passages: int, seed: int = 7) -> Path:
    """A dataset of 20 questions over `passages` distinct passages of ~60 words (another seed, another corpus)."""
    rng = random.Random(seed)
    tables = {
        "queries": {"id": list(range(1, 21)), "text": [f"{' '.join(rng.choices(WORDS, k=8))}?" for _ in range(20)]},
        "corpus": {"id": list(range(1, passages + 1)),
                   "text": [f"Passage {n}: {' '.join(rng.choices(WORDS, k=60))}." for n in range(passages)]},
        "answers": {"id": list(range(101, 121)), "text": ["the refund window"] * 20},
        "qrels": {"qid": list(range(1, 21)), "pid": list(range(1, 21))},
        "qas": {"qid": list(range(1, 21)), "aid": list(range(101, 121))},
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, columns in tables.items():
        pq.write_table(pa.table(columns), folder / f"{name}.parquet")
    return folder


def queue_campaign(db: str, dataset: Path) -> str:
    """Queue an embedding campaign in the store, as the dashboard's Run page does (its worker process claims it)."""
    manager = get_manager(db)
    manager.workers = Workers(manager)  # launches queue; this process never claims
    config = TargetConfig.of(retriever="vector", knowledge_base=str(dataset))
    return manager.launch(LaunchRequest(dataset=str(dataset), config=config, cache=False))


def embedding(db: str, campaign_id: str) -> bool:
    """Whether the campaign is embedding its corpus now."""
    stage = get_campaign(get_manager(db).store, campaign_id).stage or ""
    return stage.startswith("embedding")


def embedded(db: str, campaign_id: str) -> tuple[float, int]:
    """Now, and how many chunks the campaign has embedded."""
    return time.monotonic(), get_campaign(get_manager(db).store, campaign_id).progress().stage_done


def cancel(db: str, campaign_id: str) -> None:
    """Cancel the campaign and wait until it has ended (its worker has stopped embedding)."""
    manager = get_manager(db)
    manager.cancel(campaign_id)
    deadline = time.monotonic() + 120
    while get_campaign(manager.store, campaign_id).active and time.monotonic() < deadline:
        time.sleep(0.5)


def one_round(url: str, runs: int, first: Times, later: Times, check: Callable[[], bool] = lambda: True) -> None:
    """A browser round added to the tables (dropped when `check()` fails at its start or its end)."""
    before = check()
    times = browser_round(url, runs)
    if before and check():
        for title, (visit, visits) in times.items():
            first[title].append(visit)
            later[title] += visits
    else:
        print("a busy round was dropped: the campaign was not embedding throughout", flush=True)


def busy_round(db: str, url: str, runs: int, dataset: Path, tables: tuple[Times, Times]) -> tuple[int, float]:
    """Queue a campaign embedding `dataset`, time a round while it embeds, cancel it; the worker's process id and
    the chunks it embedded per second meanwhile."""
    campaign_id = queue_campaign(db, dataset)
    deadline = time.monotonic() + 300
    while not embedding(db, campaign_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    (start, before) = embedded(db, campaign_id)
    one_round(url, runs, *tables, check=lambda: embedding(db, campaign_id))
    (end, after) = embedded(db, campaign_id)
    owner = get_manager(db).store.read("SELECT owner_pid FROM campaigns WHERE id = ?", (campaign_id,))
    cancel(db, campaign_id)
    return int(owner[0]["owner_pid"] or 0), (after - before) / (end - start)


def cell(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    tables: dict[str, tuple[Times, Times]] = {name: ({t: [] for t in PAGES.values()}, {t: [] for t in PAGES.values()})
                                              for name in ("idle", "busy")}
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as tmp:
        db = os.environ["EVALCORE_DB"] = str(Path(tmp) / "bench.db")
        os.environ["EVALCORE_DASHBOARD_WORKER"] = "process"
        fill(db, 5, 1000)
        datasets = [corpus_dataset(Path(tmp) / f"big{n}", args.passages, seed=n) for n in range(args.rounds)]
        with serve(db, Path(tmp)) as url:
            browser_round(url, args.runs)  # the server's own first imports and caches
            for dataset in datasets:
                one_round(url, args.runs, *tables["idle"])
                owner, rate = busy_round(db, url, args.runs, dataset, tables["busy"])
                print(f"a pair of rounds done: the campaign ran in process {owner} (this bench is {os.getpid()}), "
                      f"embedding {rate:.0f} chunks/s during the busy round; load average {os.getloadavg()[0]:.1f}",
                      flush=True)
    print_table(tables)


def print_table(tables: dict[str, tuple[Times, Times]]) -> None:
    print("| page | idle: first visit usable (s) | busy: first visit usable (s) | busy / idle "
          "| idle: next visits usable (s) | busy: next visits usable (s) | busy / idle |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    (idle_first, idle_later), (busy_first, busy_later) = tables["idle"], tables["busy"]
    for title in PAGES.values():
        cells = []
        for idle, busy in ((idle_first[title], busy_first[title]), (idle_later[title], busy_later[title])):
            idle_usable, busy_usable = [u for u, _ in idle], [u for u, _ in busy]
            ratio = (statistics.median(busy_usable) / statistics.median(idle_usable)
                     if idle_usable and busy_usable else float("nan"))
            cells += [cell(idle_usable), cell(busy_usable), f"{ratio:.2f}"]
        print(f"| {title} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
