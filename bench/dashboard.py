"""Dashboard page times with a full store: 20 campaigns x 1,000 questions, plus the sample dataset.

    python bench/dashboard.py [--campaigns 20] [--questions 1000] [--rounds 3] [--no-browser] [--no-apptest]

Rows are written straight into a temporary store by the runner's own writer (no pipeline runs), with
realistic payloads: the retrieval and generation measures with signatures, ten retrieved passages,
an answer of ~40 words; each campaign's configuration differs from its neighbour's in one key.

Two measurements, each page in turn, over several rounds (median and min-max):

- AppTest: the script's own time, the first run in a new session and the following runs.
- A real browser (headless Debian chromium driven by Playwright, as tests/test_browser.py launches
  it) against `streamlit run app.py`: the time from the address typed (or the click) until the page
  is usable, its title, its controls and its first chart or table visible (checked by the page at every
  frame it draws: Playwright's own waits poll every 500 ms after the first quarter second), and until the
  script has finished (Streamlit's running indicator gone). "first visit": a new browser session (no cache)
  opens the page by its address, so the whole app loads with it; the server is up (its own first
  imports and caches are paid by a round before, shown apart as "server's first round"). "next
  visits": the same session comes back to the page from another one through the navigation.

The floor, measured in the same rounds before each page: Streamlit alone (a title, a picker, a 3-row
table) as it ships, and the same app with Nagle's algorithm turned off on its server's sockets as the
dashboard does (ui.no_delay).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalcore.campaigns import Outcome, Question, get_manager
from evalcore.campaigns.questions import insert_questions
from evalcore.campaigns.result_rows import ResultWriter
from evalcore.diagnosis import Stage
from evalcore.metrics import MEASURES
from evalcore.store import dumps
from evalcore.targets import Retrieved, TargetConfig
from evalcore.testing.served_dashboard import CHROMIUM, CHROMIUM_ARGS, serve_streamlit

PAGES = {"pages/datasets.py": "Datasets", "pages/suites.py": "Suites", "pages/run.py": "Run",
         "pages/campaigns.py": "Campaigns", "pages/compare.py": "Compare"}
# What "usable" means on each page: the title, then its controls and its first chart or table.
USABLE = {
    "Datasets": ("Datasets", ["[data-testid='stSelectbox']", ".vega-embed"]),
    "Suites": ("Suites", ["[data-testid='stSelectbox']", "[data-testid='stDataFrame']"]),
    "Run": ("Run a campaign", ["[data-testid='stSelectbox']", "button:has-text('Launch')"]),
    "Campaigns": ("Campaigns", ["[data-testid='stTextInput']", "[data-testid='stDataFrame']"]),
    "Compare": ("Compare", ["[data-testid='stSelectbox']", ".vega-embed"]),
}
# The reference: Streamlit alone, with nothing of ours, serving a title, a picker and a three-row table.
FLOOR = "Streamlit alone"
FLOOR_APP = """import pandas as pd
import streamlit as st
from evalcore.campaigns.launching import LaunchRequest

st.title("Streamlit alone")
st.selectbox("Pick", ["a", "b"])
st.dataframe(pd.DataFrame({"x": [1, 2, 3]}))
"""
# The same app with Nagle's algorithm turned off on the server's sockets, as the dashboard does (ui.no_delay):
# what is left of a first visit over Streamlit's own once its connections stop waiting for delayed ACKs.
# Each page usable within this on a first visit (a new browser session), and on the next ones.
FIRST_GOAL_S, NEXT_GOAL_S = 2.0, 1.0
FLOORS = {FLOOR: FLOOR_APP, f"{FLOOR}, Nagle off": FLOOR_APP + "\nimport ui\n\nui.no_delay()\n"}
for name in FLOORS:
    USABLE[name] = (FLOOR, ["[data-testid='stSelectbox']", "[data-testid='stDataFrame']"])
SCORED = [name for name, m in MEASURES.items() if m.family in ("retrieval", "generation")]
WORDS = ["refund", "window", "delivery", "router", "firmware", "thermostat", "warranty", "policy", "days", "update",
         "reset", "password"]
RETRIEVERS = ("bm25", "vector", "hybrid")
PIPELINE_STAGES = [Stage.RETRIEVAL_MISS.value, Stage.RANKING_MISS.value, Stage.GENERATION_MISS.value, Stage.OK.value]


# --- the store ----------------------------------------------------------------------------------

def campaign_row(number: int, questions: int, now: float) -> dict[str, object]:
    """A finished dataset campaign whose configuration differs from its neighbour's in one key."""
    config = TargetConfig.from_dict({"retriever": RETRIEVERS[number % 3], "embedding_top_k": 5 + number})
    return {"id": f"bench_{number:02d}", "name": config.describe(), "tenant": "default", "kind": "dataset",
            "source": "default", "status": "succeeded", "total": questions, "finished": 0,
            "created_at": now - 600 + number, "started_at": now - 600 + number, "ended_at": now - 300 + number,
            "heartbeat": now, "owner_host": "bench", "config": dumps(config.to_dict()), "dataset_hash": "benchhash"}


def questions(count: int) -> list[Question]:
    """The same questions for every campaign: text, a reference answer, graded relevant passages."""
    rng = random.Random(0)
    return [Question(n, n + 1, f"Question {n + 1}: {' '.join(rng.choices(WORDS, k=12))}?",
                     references=(" ".join(rng.choices(WORDS, k=20)),),
                     relevant={rng.randrange(5000): rng.randint(1, 3) for _ in range(rng.randint(1, 3))})
            for n in range(count)]


CORPUS = [" ".join(random.Random(pid).choices(WORDS, k=30)) for pid in range(5000)]


def outcome(question: Question, rng: random.Random) -> Outcome:
    """An answer of ~40 words, ten retrieved passages of a 5,000-passage corpus (some relevant), the measures, a
    failure stage."""
    relevant = list(question.relevant or {})
    pids = [rng.choice([*relevant, rng.randrange(5000)]) for _ in range(10)]
    retrieved = tuple(Retrieved(pid, f"Doc {pid // 10}", CORPUS[pid], 1.0 - k / 10, {"bm25": 10.0 - k})
                      for k, pid in enumerate(pids))
    measures = {name: rng.random() for name in SCORED}
    return Outcome(answer=" ".join(rng.choices(WORDS, k=40)), retrieved=retrieved, context=retrieved[:5],
                   measures=measures, signatures={name: MEASURES[name].signature for name in measures},
                   latency_s=rng.uniform(0.01, 0.2), diagnosis=rng.choice(PIPELINE_STAGES))


def store_campaign(store: Any, row: dict[str, Any], asked: list[Question], outcomes: list[Outcome], *,
                   shared: bool = False) -> None:
    """Write one campaign, its question snapshot and its results in one transaction, as a runner stores them
    (`shared`: a re-judge's, whose answers are another campaign's)."""
    writer = ResultWriter(store, str(row["id"]), shared=shared)
    results, passages, signatures = writer.rows(list(zip(asked, outcomes, strict=True)))

    def insert(conn: Any) -> None:
        conn.execute(f"INSERT INTO campaigns ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})", row)
        insert_questions(conn, str(row["id"]), asked)
        writer.write(conn, results, passages, signatures, {})

    store.write(insert)


def fill(db: str, campaigns: int, count: int) -> None:
    """Write the campaigns, their question snapshots and their results as a runner stores them."""
    store = get_manager(db).store
    rng, now, asked = random.Random(1), time.time(), questions(count)
    for number in range(campaigns):
        store_campaign(store, campaign_row(number, count, now), asked, [outcome(q, rng) for q in asked])
    get_manager(db).close()


# --- AppTest ------------------------------------------------------------------------------------

def apptest_round(runs: int) -> dict[str, tuple[float, list[float]]]:
    """Per page: the first script run in a new session and the next runs (seconds)."""
    from streamlit.testing.v1 import AppTest

    times = {}
    for page, title in PAGES.items():
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        if page != "pages/datasets.py":
            at.run()
            at.switch_page(page)
        loads = []
        for _ in range(runs + 1):
            started = time.perf_counter()
            at.run()
            loads.append(time.perf_counter() - started)
            if at.exception:
                raise RuntimeError(f"{page}: {at.exception[0].value}")
        times[title] = (loads[0], loads[1:])
    return times


# --- the browser --------------------------------------------------------------------------------

@contextmanager
def serve(db: str, home: Path, script: Path = ROOT / "app.py") -> Iterator[str]:
    """`streamlit run` of a script (the app) on a loopback port over the database."""
    with serve_streamlit(script, {"EVALCORE_DB": db}, home / f"{script.stem}.log", cwd=ROOT) as url:
        yield url


# Whether a page is usable, as Playwright's locators would say (the heading with exactly this text, and the first
# element of the main area matching each selector, visible: a box of some size, not hidden), checked by the page
# itself at every frame it draws. Playwright's own waits poll at growing intervals (at once, then after 20, 50, 100
# and 100 ms, then every 500 ms), so a page that became usable just after a poll was seen up to half a second late:
# measured in the page on the Campaigns page over 100 x 10,000 questions, 0.05-0.4 s later than it was drawn.
USABLE_JS = """([heading, selectors]) => {
  const main = document.querySelector("[data-testid='stMain']");
  if (!main) return false;
  const shown = (e) => { const box = e.getBoundingClientRect();
                         return box.width > 0 && box.height > 0 && getComputedStyle(e).visibility !== "hidden"; };
  const headings = main.querySelectorAll("h1, h2, h3, h4, h5, h6, [role='heading']");
  if (![...headings].some((e) => e.textContent.trim() === heading && shown(e))) return false;
  return selectors.every(([css, text]) => {
    const found = [...main.querySelectorAll(css)].find((e) => text === null || e.textContent.includes(text));
    return found !== undefined && shown(found);
  });
}"""


def _css(selector: str) -> tuple[str, str | None]:
    """A selector of USABLE as CSS, and the text Playwright's `:has-text('...')` at its end asks for (or None)."""
    if selector.endswith("')") and ":has-text('" in selector:
        css, text = selector[:-2].split(":has-text('", 1)
        return css, text
    return selector, None


def wait_usable(tab, title: str, timeout_ms: float = 120_000) -> None:
    """Until the page `title` of USABLE is usable, checked at every frame the page draws."""
    heading, selectors = USABLE[title]
    tab.wait_for_function(USABLE_JS, arg=[heading, [_css(selector) for selector in selectors]], polling="raf",
                          timeout=timeout_ms)


def timed_open(tab, title: str, go: Callable[[], None]) -> tuple[float, float]:
    """Seconds from go() until the page is usable, and until its script has finished."""
    started = time.perf_counter()
    go()
    wait_usable(tab, title)
    usable = time.perf_counter() - started
    # The running indicator shows while a script runs (a page switch starts one at once).
    tab.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=120_000)
    return usable, time.perf_counter() - started


def browser_round(url: str, runs: int, floors: dict[str, str] | None = None,
                  ) -> dict[str, tuple[tuple[float, float], list[tuple[float, float]]]]:
    """Per page: a new browser session opening it by its address (the whole app loads: a first visit), then
    `runs` visits from another page through the navigation (the app already loaded: the next visits); before
    each page, the same first visit of each floor app (name: its address), when given."""
    from playwright.sync_api import sync_playwright

    times: dict[str, tuple[tuple[float, float], list[tuple[float, float]]]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for page, title in PAGES.items():
            for name, floor in (floors or {}).items():
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                tab = context.new_page()
                visit = timed_open(tab, name, lambda tab=tab, floor=floor: tab.goto(floor))
                times[f"{name} | {title}"] = (visit, [])
                context.close()
            context = browser.new_context(viewport={"width": 1400, "height": 1000})  # no cache, no cookies
            tab = context.new_page()
            address = url if page == "pages/datasets.py" else f"{url}/{Path(page).stem}"
            first = timed_open(tab, title, lambda tab=tab, address=address: tab.goto(address))
            other = "Suites" if title != "Suites" else "Run"
            visits = []
            for _ in range(runs):
                timed_open(tab, other, link(tab, other))
                visits.append(timed_open(tab, title, link(tab, title)))
            times[title] = (first, visits)
            context.close()
        browser.close()
    return times


def link(tab, title: str) -> Callable[[], None]:
    """A click on the navigation's link to a page."""
    return lambda: tab.locator("[data-testid='stSidebarNav'] a").filter(has_text=title).first.click()


# --- the report ---------------------------------------------------------------------------------

def spread(values: list[float]) -> str:
    """median (min-max)."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def browser_table(db: str, home: Path, rounds: int, runs: int) -> list[str]:
    """Browser rows: the server's first round, first visits in new sessions, next visits; usable and finished."""
    first: dict[str, list[tuple[float, float]]] = {t: [] for t in PAGES.values()}
    later: dict[str, list[tuple[float, float]]] = {t: [] for t in PAGES.values()}
    floor: dict[str, list[tuple[float, float]]] = {name: [] for name in FLOORS}
    loads = []
    with ExitStack() as servers:
        url = servers.enter_context(serve(db, home))
        floors = {}
        for number, (name, source) in enumerate(FLOORS.items()):
            (home / f"floor{number}.py").write_text(source)
            floors[name] = servers.enter_context(serve(db, home, home / f"floor{number}.py"))
        cold = browser_round(url, runs, floors)  # each server's own first imports and caches, page by page
        for _ in range(rounds):
            loads.append(os.getloadavg()[0])
            for title, (visit, visits) in browser_round(url, runs, floors).items():
                if (name := title.partition(" | ")[0]) in floor:
                    floor[name].append(visit)
                    continue
                first[title].append(visit)
                later[title] += visits
    lines = [f"load average (1 min) at the start of each round: {', '.join(f'{load:.1f}' for load in loads)}", "",
             ("| page | server's first round: usable (s) | first visit: usable (s) | first visit: finished (s) "
              "| next visits: usable (s) | next visits: finished (s) |"), "|---|---:|---:|---:|---:|---:|"]
    for title in PAGES.values():
        lines.append(f"| {title} | {cold[title][0][0]:.2f} | {spread([u for u, _ in first[title]])} | "
                     f"{spread([f for _, f in first[title]])} | {spread([u for u, _ in later[title]])} | "
                     f"{spread([f for _, f in later[title]])} |")
    for name, visits in floor.items():
        lines.append(f"| {name} (a title, a picker, a 3-row table; the same rounds) | | "
                     f"{spread([u for u, _ in visits])} | {spread([f for _, f in visits])} | | |")
    lines += ["", "| page (medians) | goal | first visit: usable (s) | next visits: usable (s) | met |",
              "|---|---|---:|---:|---|"]
    for title in PAGES.values():
        visit = statistics.median(u for u, _ in first[title])
        again = statistics.median(u for u, _ in later[title])
        met = visit < FIRST_GOAL_S and again < NEXT_GOAL_S
        lines.append(f"| {title} | usable within {FIRST_GOAL_S:g} s on a first visit, {NEXT_GOAL_S:g} s after | "
                     f"{visit:.2f} | {again:.2f} | {'yes' if met else 'no'} |")
    return lines


def apptest_table(rounds: int, runs: int) -> list[str]:
    """AppTest rows: first run in a new session and the next runs."""
    first: dict[str, list[float]] = {t: [] for t in PAGES.values()}
    later: dict[str, list[float]] = {t: [] for t in PAGES.values()}
    for _ in range(rounds):
        for title, (run, runs_after) in apptest_round(runs).items():
            first[title].append(run)
            later[title] += runs_after
    lines = ["| page | AppTest first run (s) | AppTest next runs (s) |", "|---|---:|---:|"]
    lines += [f"| {title} | {spread(first[title])} | {spread(later[title])} |" for title in PAGES.values()]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaigns", type=int, default=20)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="new sessions per page")
    parser.add_argument("--runs", type=int, default=2, help="visits after the first, per page and session")
    parser.add_argument("--no-browser", action="store_true", help="AppTest only")
    parser.add_argument("--no-apptest", action="store_true", help="the browser only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as tmp:
        db = os.environ["EVALCORE_DB"] = str(Path(tmp) / "bench.db")
        started = time.perf_counter()
        fill(db, args.campaigns, args.questions)
        print(f"store: {args.campaigns} campaigns x {args.questions} questions written in "
              f"{time.perf_counter() - started:.1f} s ({Path(db).stat().st_size / 1e6:.0f} MB); "
              f"{args.rounds} rounds, {args.runs} visits after the first\n", flush=True)
        if not args.no_apptest:
            print("\n".join(apptest_table(args.rounds, args.runs)) + "\n", flush=True)
        if not args.no_browser:
            if not CHROMIUM.exists():
                sys.exit("the browser rows need Debian's chromium at /usr/bin/chromium (apt-get install chromium)")
            print("\n".join(browser_table(db, Path(tmp), args.rounds, args.runs)), flush=True)


if __name__ == "__main__":
    main()
