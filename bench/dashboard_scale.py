"""Dashboard pages over a large store: 100 campaigns x 10,000 questions (1,000,000 results), in headless Chromium.

    python bench/dashboard_scale.py --db /tmp/scale.db [--campaigns 100] [--questions 10000] [--rounds 3]
                                    [--runs 2] [--code DIR ...] [--apptest N] [--no-browser] [--build-only]

The store (kept at --db, built when the file does not exist): two campaigns with the shapes of real ones
(bench/shapes.py: 23 measures of different counts, 30 passages with long ids, judge verdicts) written through
the runner's own writer, the second changing 40% of the first's questions; the other campaigns are copies of
those two's rows under new ids (SQL, one transaction each), each with its own configuration; then the
comparison of the default pair (the two newest) computed and kept in the store, as the dashboard's campaign
manager keeps it when a campaign ends.

Three pages, each "usable" as bench/dashboard.py defines it (its title, its controls and its first table or
chart visible), timed from the address typed or the navigation's link clicked:

- Campaigns (the list): the title, the search box and the campaigns' table.
- Questions (the Campaigns page's Questions tab, open by default, same navigation): its heading, the filter and
  the questions' table.
- Compare (the stored pair the page proposes): the title, the pickers and the measures' chart.

"first visit": a new browser session opens the page by its address; "next visits": the same session comes back
through the navigation. The server's first round (its caches empty, as after a restart) is shown apart.
Streamlit alone (a title, a picker, a 3-row table) is opened in a new session before each side's turn, the floor of
a first visit on the machine at that moment; "over the floor" is a first visit minus the floor of its turn.
`--apptest N`: first, N rounds of AppTest (the scripts' own time, no browser), each in a fresh process: the Campaigns
and Compare pages' first run there (caches empty, as a server just started), then a new session's.
`--code DIR ...`: serve the app of each of these checkouts (e.g. the code before a change), in turns round by
round (interleaved), each over its own copy of the store (a newer schema would not open with older code).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import shapes
from dashboard import FLOOR, FLOOR_APP, USABLE, campaign_row, link, spread, store_campaign, timed_open, wait_usable

from evalcore.campaigns import get_manager, list_campaigns
from evalcore.compare import compare_campaigns
from evalcore.compare.pairing import default_pair
from evalcore.testing.served_dashboard import CHROMIUM, CHROMIUM_ARGS, serve_streamlit

QUESTIONS_TAB = "Questions tab"
USABLE[QUESTIONS_TAB] = ("Questions", ["[data-testid='stTabs'] [data-testid='stTextInput']",
                                       "[data-testid='stTabs'] [data-testid='stDataFrame']"])
# What a visit times: the page it opens, and what shows on it (the Campaigns page's list, then its Questions tab).
VISITS = {"campaigns": ("Campaigns", [QUESTIONS_TAB]), "compare": ("Compare", [])}
ROWS = ("Campaigns", QUESTIONS_TAB, "Compare")
GOAL_S = 2.0  # each page usable within this, in Chromium
PER_CAMPAIGN = ("campaign_questions", "results", "campaign_signatures")  # passages are shared by the store


# --- the store ----------------------------------------------------------------------------------

def copy_campaign(conn, source: str, row: dict[str, object]) -> None:
    """A campaign's rows under another campaign's id: its questions, results and signatures (its passages are
    the store's, shared)."""
    conn.execute(f"INSERT INTO campaigns ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})", row)
    for table in PER_CAMPAIGN:
        columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})").fetchall() if c[1] != "campaign_id"]
        conn.execute(f"INSERT INTO {table} (campaign_id, {', '.join(columns)}) "
                     f"SELECT ?, {', '.join(columns)} FROM {table} WHERE campaign_id = ?", (row["id"], source))


def build(db: str, campaigns: int, count: int) -> None:
    """The two real-shaped campaigns (the newest), the copies, and the kept comparison of the default pair."""
    manager = get_manager(db)
    store = manager.store
    rng, now, asked = random.Random(1), time.time(), shapes.questions(count)
    started = time.perf_counter()
    a_outcomes = [shapes.outcome(q, rng) for q in asked]
    b_outcomes = [shapes.outcome(q, rng) if rng.random() < 0.4 else o for q, o in zip(asked, a_outcomes, strict=True)]
    originals = [campaign_row(campaigns - 2, count, now), campaign_row(campaigns - 1, count, now)]
    for row, outcomes in zip(originals, (a_outcomes, b_outcomes), strict=True):
        store_campaign(store, row, asked, outcomes)
    print(f"2 campaigns written by the runner's writer in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    for number in range(campaigns - 2):
        source = str(originals[number % 2]["id"])
        store.write(lambda conn, number=number, source=source: copy_campaign(conn, source,
                                                                              campaign_row(number, count, now)))
    print(f"{campaigns - 2} copies in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    pair = default_pair(list_campaigns(store))
    assert pair is not None
    compare_campaigns(store, pair[0].id, pair[1].id)
    print(f"comparison of {pair[0].id} and {pair[1].id} kept in {time.perf_counter() - started:.1f} s", flush=True)
    manager.close()
    store.close()


# --- the browser --------------------------------------------------------------------------------

def visit(tab, page: str, go: Callable[[], None]) -> dict[str, float]:
    """Seconds from go() until each thing the page shows is usable, and until its script has finished."""
    title, more = VISITS[page]
    started = time.perf_counter()
    go()
    times = {}
    for name in (title, *more):
        wait_usable(tab, name, 300_000)
        times[name] = time.perf_counter() - started
    tab.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=300_000)
    times[f"{title} finished"] = time.perf_counter() - started
    return times


def browser_round(browser, url: str, runs: int) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Each page in a new browser session by its address (first visit), then `runs` visits through the navigation."""
    first: dict[str, float] = {}
    later: dict[str, list[float]] = {}
    for page, (title, _) in VISITS.items():
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        tab = context.new_page()
        first |= visit(tab, page, lambda tab=tab, page=page: tab.goto(f"{url}/{page}"))
        for _ in range(runs):
            timed_open(tab, "Suites", link(tab, "Suites"))
            for name, seconds in visit(tab, page, link(tab, title)).items():
                later.setdefault(name, []).append(seconds)
        context.close()
    return first, later


def server_pid(url: str) -> int:
    """The process of the `streamlit run` serving this address."""
    port = url.rsplit(":", 1)[1]
    return int(subprocess.check_output(["pgrep", "-f", "--", f"server.port {port} "]).split()[0])


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident memory so far (VmHWM), MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1]) / 1024


def measure(sides: dict[str, tuple[Path, str]], rounds: int, runs: int, home: Path) -> None:
    """Serve each side, a first round on each (its caches empty), then the rounds, the sides' order alternating; the
    floor (Streamlit alone: a title, a picker, a 3-row table) opened in a new session before each side's turn."""
    from playwright.sync_api import sync_playwright

    cold: dict[str, dict[str, float]] = {}
    first: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    later: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    over: dict[str, dict[str, list[float]]] = {side: {} for side in sides}  # first visit - the floor's, same turn
    floor: list[tuple[float, float]] = []
    loads = []
    (home / "floor.py").write_text(FLOOR_APP)
    with ExitStack() as stack, sync_playwright() as playwright:
        urls = {side: stack.enter_context(serve_streamlit(code / "app.py", {"EVALCORE_DB": db},
                                                          home / f"{side.replace('/', '_')}.log", cwd=code,
                                                          timeout=300))
                for side, (code, db) in sides.items()}
        floor_url = stack.enter_context(serve_streamlit(home / "floor.py", {}, home / "floor.log", cwd=ROOT))
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)

        def floor_visit() -> tuple[float, float]:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            tab = context.new_page()
            times = timed_open(tab, FLOOR, lambda: tab.goto(floor_url))
            context.close()
            return times

        floor_visit()  # the floor server's own first imports
        for side, url in urls.items():
            cold[side] = browser_round(browser, url, 0)[0]
        for number in range(rounds):
            loads.append(os.getloadavg()[0])
            for side in list(sides)[:: 1 if number % 2 == 0 else -1]:
                floor.append(floor_visit())
                visits, visits_after = browser_round(browser, urls[side], runs)
                for name, seconds in visits.items():
                    first[side].setdefault(name, []).append(seconds)
                    over[side].setdefault(name, []).append(seconds - floor[-1][0])
                for name, seconds in visits_after.items():
                    later[side].setdefault(name, []).extend(seconds)
        try:
            rss = {side: peak_rss_mb(server_pid(url)) for side, url in urls.items()}
        except (OSError, subprocess.CalledProcessError, StopIteration, ValueError):
            rss = {}
        browser.close()
    print(f"load average (1 min) at the start of each round: {', '.join(f'{load:.1f}' for load in loads)}")
    print("servers' peak RSS (MB): " + ", ".join(f"{side} {mb:,.0f}" for side, mb in rss.items()) + "\n")
    print("| side | page | server's first round: usable (s) | first visit: usable (s) | first visit over the floor "
          "(s) | first visit: finished (s) | next visits: usable (s) | next visits: finished (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for side in sides:
        for name in ROWS:
            finished = f"{'Compare' if name == 'Compare' else 'Campaigns'} finished"
            print(f"| {side} | {name} | {cold[side][name]:.2f} | {spread(first[side][name])} | "
                  f"{spread(over[side][name])} | {spread(first[side][finished])} | {spread(later[side][name])} | "
                  f"{spread(later[side][finished])} |")
    print(f"| | {FLOOR} (a title, a picker, a 3-row table; before each side's turn) | | "
          f"{spread([u for u, _ in floor])} | | {spread([f for _, f in floor])} | | |")
    print("\n| page (this checkout, medians) | goal | first visit | next visits | met |\n|---|---|---:|---:|---|")
    ours = next(iter(sides))
    for name in ROWS:
        visit, again = statistics.median(first[ours][name]), statistics.median(later[ours][name])
        print(f"| {name} | usable within {GOAL_S:g} s | {visit:.2f} s | {again:.2f} s | "
              f"{'both' if max(visit, again) < GOAL_S else 'next visits' if again < GOAL_S else 'no'} |")


# One process per sample: the Campaigns and the Compare page's first run in it (its caches empty, as a server just
# started), then a second session's first run (the caches warm). Prints JSON: page -> [cold, warm] seconds.
APPTEST = """
import json, sys, time
from streamlit.testing.v1 import AppTest
times = {}
for page in ("pages/campaigns.py", "pages/compare.py"):
    runs = []
    for _ in range(2):
        at = AppTest.from_file(sys.argv[1] + "/app.py", default_timeout=600)
        at.run()
        at.switch_page(page)
        started = time.perf_counter()
        at.run()
        runs.append(time.perf_counter() - started)
        assert not at.exception, at.exception
    times[page] = runs
print(json.dumps(times))
"""


def apptest(sides: dict[str, tuple[Path, str]], rounds: int) -> None:
    """AppTest (the scripts' own time, no browser), each sample in a fresh process, sides interleaved."""
    samples: dict[str, dict[str, list[list[float]]]] = {side: {} for side in sides}
    for number in range(rounds):
        for side in list(sides)[:: 1 if number % 2 == 0 else -1]:
            code, db = sides[side]
            out = subprocess.run([sys.executable, "-c", APPTEST, str(code)], cwd=code, env={**os.environ,
                                 "EVALCORE_DB": db, "EVALCORE_DASHBOARD_WORKER": "threads"}, check=True,
                                 capture_output=True, text=True).stdout
            for page, runs in json.loads(out.strip().splitlines()[-1]).items():
                samples[side].setdefault(page, []).append(runs)
    print(f"load average (1 min) after the AppTest rounds: {os.getloadavg()[0]:.1f}\n")
    print("| side | page | AppTest, a new process's first run (s) | AppTest, a new session's first run after (s) |")
    print("|---|---|---:|---:|")
    for side, pages in samples.items():
        for page, runs in pages.items():
            print(f"| {side} | {page} | {spread([r[0] for r in runs])} | {spread([r[1] for r in runs])} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="the store: kept, built when missing")
    parser.add_argument("--campaigns", type=int, default=100)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3, help="new sessions per page and side")
    parser.add_argument("--runs", type=int, default=2, help="visits after the first, per page and session")
    parser.add_argument("--code", type=Path, nargs="*", default=[], help="other checkouts to serve, interleaved")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--apptest", type=int, default=0, help="AppTest rounds (fresh processes) before the browser")
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    db = Path(args.db)
    if not db.exists():
        started = time.perf_counter()
        build(str(db), args.campaigns, args.questions)
        print(f"store: {args.campaigns} campaigns x {args.questions:,} questions in "
              f"{time.perf_counter() - started:.0f} s ({db.stat().st_size / 1e9:.2f} GB)\n", flush=True)
    if args.build_only:
        return
    if not CHROMIUM.exists():
        sys.exit("the browser needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)")
    sides: dict[str, tuple[Path, str]] = {}
    for number, code in enumerate([ROOT, *args.code]):
        copy = db.with_name(f"{db.stem}-side{number}{db.suffix}")
        if not copy.exists():  # each side its own copy: a side's code may migrate the store, older code would refuse
            shutil.copyfile(db, copy)
        started = time.perf_counter()  # the store opened (and migrated) once before the server, as an upgrade does
        subprocess.run([sys.executable, "-c", ("import sys; from evalcore.store import open_store; "
                        "open_store(sys.argv[1]).close()"), str(copy)], cwd=code, check=True)
        print(f"{code}: store opened in {time.perf_counter() - started:.1f} s", flush=True)
        sides["this" if number == 0 else str(code)] = (code.resolve(), str(copy))
    if args.apptest:
        apptest(sides, args.apptest)
    if args.no_browser:
        return
    home = db.parent / f"{db.stem}-logs"
    home.mkdir(exist_ok=True)
    measure(sides, args.rounds, args.runs, home)


if __name__ == "__main__":
    main()
