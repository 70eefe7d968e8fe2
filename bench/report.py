"""The HTML report of a comparison of 2 campaigns x 10,000 questions: time to build it and its size.

    python bench/report.py [--questions 10000] [--rounds 5]

The store is a temporary database written through the real schema with synthetic rows
(bench/dashboard.py's `fill`); the comparison is computed once and stored, as the page has it
when its report button is clicked. Ours (`comparison_report`: context, settings, verdicts, the
delta chart, measures, every question, plotly.js inlined once) against the same content written by
the usual tools (pandas `DataFrame.to_html` for the tables, plotly's `to_html` with plotly.js for
the chart), sides alternating round by round; the question tables of both must hold the same
ids, questions and verdicts. Each row gives the median with min-max.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dashboard import fill

from evalcore.campaigns import get_campaign, get_manager
from evalcore.compare import compare_campaigns
from evalcore.compare.charts import delta_figure
from evalcore.compare.export_context import comparison_context, source_names
from evalcore.compare.report import comparison_report
from evalcore.compare.tables import measure_frame, question_frame
from tests.htmlreport import table_with

A, B = "bench_00", "bench_01"


def reference(store, a, b, sources) -> str:
    """The same content with pandas' and plotly's own HTML writers."""
    comparison = compare_campaigns(store, A, B)
    chart = delta_figure(comparison, comparison_context(comparison, a, b, sources))
    return "\n".join([chart.to_html(include_plotlyjs=True, full_html=True),
                      measure_frame(comparison).to_html(index=False),
                      question_frame(comparison.questions).to_html(index=False)])


def ours(store, a, b, sources) -> str:
    """comparison_report, as the page's button and `compare --report` build it."""
    return comparison_report(compare_campaigns(store, A, B), a, b, sources)


def timed(build: Callable[[], str]) -> tuple[float, str]:
    """Seconds to build a document, and the document."""
    started = time.perf_counter()
    text = build()
    return time.perf_counter() - started, text


def row(name: str, times: list[float], size: int) -> str:
    """A table row: median (min-max) seconds and the size in MB."""
    return (f"| {name} | {statistics.median(times):.2f} ({min(times):.2f}-{max(times):.2f}) | "
            f"{size / 1e6:.1f} |")


def same_questions(first: str, second: str) -> bool:
    """Both documents list the same questions with the same verdicts, in some order."""
    def rows(text: str) -> set[tuple[str, ...]]:
        return {tuple(r[:3]) for r in table_with(text, ["qid", "question", "verdict"])[1:]}
    return rows(first) == rows(second)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        db = os.path.join(home, "evalcore.db")
        fill(db, 2, args.questions)
        store = get_manager(db).store
        a, b = get_campaign(store, A), get_campaign(store, B)
        sources = source_names(store, [a, b])
        compare_campaigns(store, A, B)  # computed once and kept, as when the page shows it
        sides = {"ours": ours, "pandas + plotly to_html": reference}
        times: dict[str, list[float]] = {name: [] for name in sides}
        texts: dict[str, str] = {}
        for number in range(args.rounds):
            for name in list(sides)[number % 2:] + list(sides)[:number % 2]:
                seconds, texts[name] = timed(lambda build=sides[name]: build(store, a, b, sources))
                times[name].append(seconds)
        assert same_questions(texts["ours"], texts["pandas + plotly to_html"]), "the question tables differ"
    print(f"report of 2 campaigns x {args.questions:,} questions, {args.rounds} rounds (stored comparison)\n")
    print("| document | seconds, median (min-max) | MB |\n|---|---:|---:|")
    for name in sides:
        print(row(name, times[name], len(texts[name].encode("utf-8"))))


if __name__ == "__main__":
    main()
