"""A comparison as one self-contained HTML file: names, settings, verdicts, deltas, power, sweep, questions.

The file needs nothing else to open (plotly.js is inlined once, no font, style or script is
fetched), so it can be mailed, archived or opened on a machine with no network. Every stored
string (names, settings, questions, answers, passage titles) is HTML-escaped; chart labels go
through `charts.chart_text`.
"""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from evalcore.access.principals import Principal
from evalcore.campaigns import Campaign
from evalcore.compare import charts
from evalcore.compare.campaign_pairs import compare_campaigns
from evalcore.compare.deltas import Change, Comparison, QuestionDiff
from evalcore.compare.export_context import ExportContext, comparison_context, sweep_context, value_text
from evalcore.compare.pairing import Group, group_of
from evalcore.compare.preference import INTERVAL, TEST, Preference
from evalcore.compare.sweep import Sweep
from evalcore.compare.tables import (
    MEASURE_COLUMNS,
    judge_frame,
    measure_frame,
    pairwise_frame,
    question_frame,
    sweep_frame,
    transition_frame,
)
from evalcore.store import Store

# The report lists changes first.
VERDICT_ORDER = (Change.WORSE, Change.BETTER, Change.NEW, Change.REMOVED, Change.UNSCORED, Change.SAME)
MEASURE_HEADERS = {"mean_a": "A", "mean_b": "B", "delta": "B − A", "ci_low": "95% low", "ci_high": "95% high",
                   "p_value": "p", "mde": "detects ±", "n_required": "questions for ±{effect:g}",
                   "power_note": "no power because"}
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.long { white-space: pre-wrap; max-width: 28em; }
tr.changed td { background: #fff6d6; }
.warning { color: #8a4b00; } .note { color: #455a64; }
"""


def comparison_report(comparison: Comparison, a: Campaign, b: Campaign, sources: dict[Group, str], *,
                      sweep: Sweep | None = None, sweep_campaigns: Sequence[Campaign] = (),
                      sweep_measure: str | None = None, today: dt.date | None = None, names: str = "project",
                      trust: Sequence[str] = ()) -> str:
    """The HTML report of A (baseline) against B, with a sweep's table and chart when given; each judged question's
    judge results under our names, or names="evaluator" under the evaluators' documented names.

    `trust` says how far each judge agrees with people's labels (evalcore.campaigns.question_labels.trust_lines).
    """
    context = comparison_context(comparison, a, b, sources, today)
    parts = [f"<h1>{esc(b.name)} against {esc(a.name)}</h1>", facts_table(context),
             "<h2>Campaigns</h2>", campaigns_table(a, b, sources), settings_section(comparison, a, b),
             verdicts_section(comparison), measures_section(comparison, context), trust_section(trust),
             pairwise_section(comparison.pairwise), stages_section(comparison, context),
             conversations_section(comparison)]
    if sweep is not None:
        parts.append(sweep_section(sweep, sweep_campaigns, sources, sweep_measure or comparison.basis, today))
    parts.append(questions_section(comparison, names))
    return page(f"{a.name} vs {b.name}", parts)


def sweep_report(store: Store, sweep: Sweep, campaigns: Sequence[Campaign], sources: dict[Group, str], *,
                 measure: str | None = None, principal: Principal | None = None, tenant: str | None = None,
                 today: dt.date | None = None, names: str = "project") -> str:
    """The report of a sweep: its baseline (the first campaign) against the last, with the sweep's table and chart
    (`names` as in `comparison_report`)."""
    first, last = campaigns[0], campaigns[-1]
    comparison = compare_campaigns(store, first.id, last.id, seed=sweep.seed, resamples=sweep.resamples,
                                   tenant=tenant, principal=principal)
    return comparison_report(comparison, first, last, sources, sweep=sweep, sweep_campaigns=campaigns,
                             sweep_measure=measure, today=today, names=names)


def page(title: str, parts: list[str]) -> str:
    """A whole HTML document with plotly.js inlined once."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{STYLE}</style>"
            f"<script type=\"text/javascript\">{get_plotlyjs()}</script></head>\n<body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def esc(value: object) -> str:
    """Text as HTML text (stored strings are never markup)."""
    return html.escape(str(value))


def cell(value: Any) -> str:
    """A table cell's text: numbers in 4 significant digits, missing values empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return esc(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], long: Sequence[str] = (),
          classes: Sequence[str] = ()) -> str:
    """An HTML table; the `long` columns keep their line breaks, `classes` are per-row CSS classes."""
    wide = {i for i, h in enumerate(headers) if h in long}
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join(row_html(row, wide, classes[r] if classes else "") for r, row in enumerate(rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def row_html(row: Sequence[Any], wide: set[int], css: str) -> str:
    """One table row."""
    cells = "".join(f'<td class="long">{cell(v)}</td>' if i in wide else f"<td>{cell(v)}</td>"
                    for i, v in enumerate(row))
    return f'<tr class="{css}">{cells}</tr>' if css else f"<tr>{cells}</tr>"


def frame_table(frame: pd.DataFrame, long: Sequence[str] = ()) -> str:
    """A DataFrame as an HTML table."""
    cells = frame.astype(object).where(frame.notna(), None)
    return table([str(c) for c in frame.columns], list(cells.itertuples(index=False, name=None)), long)


def figure_html(figure: go.Figure) -> str:
    """A figure as a div and the script that draws it with the inlined plotly.js."""
    return str(figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def facts_table(context: ExportContext) -> str:
    """Every fact of the context (names, questions, what changed, n, test, date, ids)."""
    return table(["", ""], [(f.label, f.value) for f in context.facts])


def campaigns_table(a: Campaign, b: Campaign, sources: dict[Group, str]) -> str:
    """A and B side by side: name, id, questions, status, progress, dates, dataset content, judges."""
    def row(c: Campaign) -> list[Any]:
        return [c.name, c.id, sources.get(group_of(c), c.source), c.status_text, f"{c.finished}/{c.total}", c.failed,
                when(c.created_at), when(c.ended_at), c.dataset_hash or "", ", ".join(c.judges)]

    fields = ["name", "id", "questions", "status", "finished", "failed", "created", "ended", "dataset content hash",
              "judges"]
    return table(["", "A (baseline)", "B (candidate)"],
                 [(f, x, y) for f, x, y in zip(fields, row(a), row(b), strict=False)])


def when(timestamp: float | None) -> str:
    """A local date and time, or empty."""
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).astimezone().strftime("%Y-%m-%d %H:%M:%S") if timestamp else ""


def settings_section(comparison: Comparison, a: Campaign, b: Campaign) -> str:
    """The settings that differ, then every setting of both (the differing ones marked)."""
    diff = comparison.config_diff
    changed = table(["setting", "A", "B"], [(k, value_text(x), value_text(y)) for k, (x, y) in diff.items()],
                    long=["A", "B"]) if diff else "<p>The two configurations are identical.</p>"
    keys = sorted(a.config.keys() | b.config.keys())
    every = table(["setting", "A", "B"], [(k, value_text(a.config.get(k)), value_text(b.config.get(k))) for k in keys],
                  long=["A", "B"], classes=["changed" if k in diff else "" for k in keys])
    return (f"<h2>Settings that differ</h2>{changed}"
            f"<details><summary>Every setting of both campaigns</summary>{every}</details>")


def verdicts_section(comparison: Comparison) -> str:
    """Warnings, verdict counts and their basis."""
    lines = [f"<p class=\"warning\">Warning: {esc(w)}</p>" for w in comparison.warnings]
    lines += [f"<p class=\"note\">Note: {esc(n)}</p>" for n in comparison.notes]
    counts = comparison.verdicts
    lines.append(table(list(VERDICT_ORDER), [[counts.get(v, 0) for v in VERDICT_ORDER]]))
    lines.append(f"<p>Verdicts by {esc(comparison.basis_reason or 'nothing in common')}.</p>")
    if comparison.cost is not None:
        lines.append(f"<p class=\"note\">Cost: {esc(comparison.trade_off)} ({esc(comparison.cost.text())}).</p>")
    if comparison.tolerance_note:
        lines.append(f"<p>Tolerance: {esc(comparison.tolerance_note)}.</p>")
    return "<h2>Verdicts per question</h2>" + "".join(lines)


def measures_section(comparison: Comparison, context: ExportContext) -> str:
    """The delta chart, the power warnings and the table of measures."""
    if not comparison.measures:
        return "<h2>Measures</h2><p>No measure is present in both campaigns.</p>"
    frame = measure_frame(comparison)[MEASURE_COLUMNS]
    headers = {k: v.format(effect=comparison.effect) for k, v in MEASURE_HEADERS.items()}
    power = [f"<li>{esc(w)}</li>" for w in comparison.power_warnings]
    disagree = "".join(f"<p class=\"note\">The interval and the test disagree on {esc(line)}.</p>"
                       for line in comparison.disagreements)
    return ("<h2>Measures: B − A with 95% intervals</h2>" + figure_html(charts.delta_figure(comparison, context))
            + disagree
            + (f"<p class=\"warning\">Power:</p><ul class=\"warning\">{''.join(power)}</ul>" if power else "")
            + frame_table(frame.rename(columns=headers)))


def trust_section(trust: Sequence[str]) -> str:
    """How far the judged measures can be trusted: each judge against people's labels, when there are some, and
    against the other campaign's judge when both judged the same answers."""
    if not trust:
        return ""
    return ("<h2>How far to trust the judges</h2><ul>" + "".join(f"<li>{esc(line)}</li>" for line in trust)
            + "</ul>")


def pairwise_section(preference: Preference | None) -> str:
    """The pairwise judge's figures and every question's verdict with its reason, when it was asked."""
    if preference is None:
        return ""
    return (f"<h2>Pairwise judge</h2><p>{esc(preference.summary)}.</p><p>{esc(INTERVAL)}; {esc(TEST)}; a verdict "
            f"that changed when the answers were swapped is a tie. Judge: {esc(preference.signature)}.</p>"
            + frame_table(pairwise_frame(preference), long=("question", "reason")))


def conversations_section(comparison: Comparison) -> str:
    """Each conversation's verdict, then its turns side by side: verdict and failure stage in A and in B."""
    found = comparison.conversations
    if not found:
        return ""
    verdicts = table(["conversation", "turns", "better", "worse", "verdict"],
                     [[c.conversation, len(c.turns), c.better, c.worse, c.verdict] for c in found])
    turns = table(["conversation", "turn", "qid", "verdict", "stage in A", "stage in B"],
                  [[c.conversation, t.turn, t.qid, t.verdict, t.stage_a, t.stage_b] for c in found for t in c.turns])
    return ("<h2>Conversations</h2><p>The measures' intervals and tests resample whole conversations; a conversation "
            "is better when more of its turns are better in B than worse.</p>" + verdicts + turns)


def stages_section(comparison: Comparison, context: ExportContext) -> str:
    """The failure stages of A and B and the transition table (the questions of each move are in the last table)."""
    if not comparison.transitions:
        return ""
    return ("<h2>Failure stages: A → B</h2>" + figure_html(charts.stages_figure(comparison, context))
            + frame_table(transition_frame(comparison.transitions)))


def sweep_section(sweep: Sweep, campaigns: Sequence[Campaign], sources: dict[Group, str], measure: str | None,
                  today: dt.date | None) -> str:
    """The sweep's table and the series of one measure (the verdict basis by default)."""
    context = sweep_context(sweep, campaigns, sources, today)
    names = list(sweep.series)
    chosen = measure if measure in names else next(iter(names), None)
    chart = figure_html(charts.series_figure(sweep, chosen, context)) if chosen else ""
    warnings = "".join(f"<p class=\"warning\">Warning: {esc(w)}</p>" for w in sweep.warnings)
    return (f"<h2>Sweep over {esc(sweep.key or 'several settings')}</h2>{warnings}{chart}"
            + frame_table(sweep_frame(sweep, {c.id: c for c in campaigns})))


def questions_section(comparison: Comparison, names: str = "project") -> str:
    """Every question with its verdict, changes first; then the judged questions' judge results in both."""
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    questions = sorted(comparison.questions, key=lambda q: rank.get(q.verdict, len(rank)))
    return (f"<h2>Questions ({len(questions):,}; changed verdicts first)</h2>"
            + frame_table(question_frame(questions),
                          long=["question", "answer A", "answer B", "queries A", "queries B"])
            + judges_table(questions, names))


def judges_table(questions: list[QuestionDiff], names: str) -> str:
    """The judge results (score or label, result, threshold, reason) of each judged question in A and B; nothing
    when neither campaign ran a judge."""
    frame = judge_frame(questions, names)
    if frame.empty:
        return ""
    shape = "the evaluators' documented names" if names == "evaluator" else "evalcore's names"
    reasons = [c for c in frame.columns if c == "question" or c.endswith(("_reason", "_claims"))]
    return (f"<h3>Judge results per question ({len(frame):,} judged; fields under {shape})</h3>"
            + frame_table(frame, long=reasons))
