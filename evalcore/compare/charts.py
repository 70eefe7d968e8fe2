"""The charts of a comparison and of a sweep, each titled with its context.

Two forms of each chart, drawn from the same numbers: a Plotly figure (`*_figure`), which the PNG
and HTML exports and the one-file report are made of, and a Vega-Lite spec (`*_spec`), which the
dashboard shows (a browser loads Vega-Lite's script about a second sooner than Plotly's on a first
visit). Built here rather than in the dashboard so that every face draws the same charts. In the
Plotly figures every stored string goes through `chart_text`: Plotly reads `<b>`, `<a href>`,
`<br>` and entities in labels as markup; Vega-Lite shows text as text.
"""

from __future__ import annotations

import html
import math
import textwrap
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evalcore.compare.deltas import Comparison, MeasureDelta, Paired
from evalcore.compare.export_context import LINE_IN_CHART, ExportContext, Fact, shown
from evalcore.compare.sweep import Sweep
from evalcore.diagnosis import NOT_ATTRIBUTED, STAGES, StageCounts, side_counts
from evalcore.language.text import counted
from evalcore.metrics import SCALES, display_order, higher_is_better, scale_of

GREEN, RED, GREY = "#2e7d32", "#c62828", "#607d8b"
SAME_VALUE = 9  # decimals two values must share to be drawn as one point of the scatter
HOVER_QUESTIONS = 12  # question ids listed in the hover of a point


def chart_text(text: object) -> str:
    """Text shown literally in a Plotly title, label or tick (Plotly reads <a>, <b>, <br> and entities as markup)."""
    return html.escape(str(text), quote=False)


def titled(figure: go.Figure, title: str, context: ExportContext) -> go.Figure:
    """The figure with its title and, as its subtitle, the context's lines (names, questions, change, n, date)."""
    lines = [chart_text(line) for line in context.chart_lines()]
    figure.update_layout(title={"text": chart_text(title), "subtitle": {"text": "<br>".join(lines)},
                                "x": 0.01, "xanchor": "left", "xref": "container", "yref": "container", "y": 1,
                                "yanchor": "top", "pad": {"t": 14}},
                         margin={"t": 64 + 17 * len(lines)})
    return figure


Spec = dict[str, Any]


def spec_title(title: str, context: ExportContext) -> Spec:
    """A Vega-Lite title: what is drawn, and the context's lines under it."""
    return {"text": title, "subtitle": context.chart_lines(), "anchor": "start", "subtitlePadding": 4}


def direction(improved: bool, worse: bool) -> str:
    """The colour class of a point: better, worse, or neither."""
    return "better" if improved else "worse" if worse else "no difference"


NEUTRAL = "count (neither better nor worse)"  # the colour class of a count's change: more documents is not quality
DIRECTION_COLORS = {"better": GREEN, "worse": RED, "no difference": GREY, NEUTRAL: "#1565c0"}
DIRECTION_SCALE = {"domain": list(DIRECTION_COLORS), "range": list(DIRECTION_COLORS.values())}
DELTA_TITLE = "B − A per measure, each scale on its own axis (95% paired bootstrap interval; * p < 0.05)"
# Height of one measure's row in the dashboard's delta chart: its label above its point clears the row above.
ROW_PX = 32
# An interval under this share of its panel's axis is a few pixels wide, hidden by its point: such measures are
# drawn in a panel of their own (on a 700-pixel axis, 5% is 35 px).
SMALL_SHARE = 0.05


def ordered(comparison: Comparison) -> list[MeasureDelta]:
    """The comparison's measures in display order."""
    return sorted(comparison.measures, key=lambda m: display_order(m.measure))


def scale_groups(comparison: Comparison) -> list[tuple[str, list[MeasureDelta]]]:
    """The measures a delta chart draws, one group per scale (0-1 measures, 0-100 scores, counts…) with the group's
    title, each in display order; measures with the same value in A and B on every question are left out."""
    titles = dict(SCALES)
    groups: dict[str, list[MeasureDelta]] = {scale: [] for scale, _ in SCALES}
    for m in ordered(comparison):
        if not m.unchanged:
            groups[scale_of(m.measure)].append(m)
    return [(titles[scale], members) for scale, members in groups.items() if members]


def unchanged_line(comparison: Comparison) -> str:
    """The line under a delta chart naming the measures it leaves out ("" when none is)."""
    names = [m.measure for m in ordered(comparison) if m.unchanged]
    return f"Not drawn, the same in A and B on every question: {', '.join(names)}." if names else ""


def detects_text(m: MeasureDelta) -> str:
    """What a measure could detect: `n = 74 can detect ±0.031`, or why it cannot say."""
    return f"n = {m.n} can detect ±{m.mde:.2g}" if m.mde is not None else m.power_note or ""


def needs_text(m: MeasureDelta) -> str:
    """The questions needed to see the effect size: `±0.02 needs 180 questions` ("" when unknown)."""
    return f"±{m.effect:g} needs {m.n_required:,} questions" if m.n_required else ""


def point_class(m: MeasureDelta) -> str:
    """A measure's colour class in the delta chart: a count's change is neutral, else better, worse or neither."""
    if scale_of(m.measure) == "count":
        return NEUTRAL
    return direction(m.improved, m.significant and not m.improved)


def delta_label(value: float) -> str:
    """B − A as a label: three significant digits in plain decimals, never an exponent (`+0.0000187`, `-0.437`)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:+g}"
    decimals = min(max(0, 2 - math.floor(math.log10(abs(value)))), 12)
    text = f"{value:+,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


def _interval(m: MeasureDelta) -> tuple[float, float]:
    return (m.delta if m.ci_low is None else m.ci_low, m.delta if m.ci_high is None else m.ci_high)


def small_changes(members: list[MeasureDelta]) -> list[MeasureDelta]:
    """The members whose interval would be under SMALL_SHARE of their panel's axis (zero included), and sit that
    close to zero, hidden by their point on the zero line: they get a panel and an axis of their own, where their
    intervals can be seen (none when all or none are that small)."""
    ends = [end for m in members for end in _interval(m)] + [0.0]
    span = max(ends) - min(ends)
    small = [m for m in members if max(_interval(m)[1] - _interval(m)[0], abs(m.delta)) < SMALL_SHARE * span]
    return small if 0 < len(small) < len(members) else []


def split_groups(comparison: Comparison) -> list[tuple[str, list[MeasureDelta]]]:
    """scale_groups, each group's small changes (small_changes) moved to a group of their own right after it."""
    groups = []
    for title, members in scale_groups(comparison):
        small = small_changes(members)
        groups.append((title, [m for m in members if m not in small]))
        if small:
            groups.append((f"{title}, small changes (an axis of their own)", small))
    return groups


def delta_points(comparison: Comparison) -> pd.DataFrame:
    """One row per measure drawn, by scale group then display order: its group, B − A, its interval (the point itself
    when none), its label, colour class and what the hover says. Both forms of the delta chart draw these."""
    return pd.DataFrame([{
        "scale": title, "measure": m.measure, "delta": m.delta, "low": _interval(m)[0], "high": _interval(m)[1],
        "label": f"{delta_label(m.delta)}{' *' if m.significant else ''}",
        "n": m.n, "p": m.p_value, "test": m.test, "detects": detects_text(m), "needs": needs_text(m),
        "direction": point_class(m)} for title, members in split_groups(comparison) for m in members],
        columns=["scale", "measure", "delta", "low", "high", "label", "n", "p", "test", "detects", "needs",
                 "direction"])


def delta_figure(comparison: Comparison, context: ExportContext) -> go.Figure:
    """B − A per measure (display order, top down) with its 95% interval, significant ones starred: one panel per
    scale, each with its own axis; the measures left out (no change anywhere) named under the chart."""
    points = delta_points(comparison)
    groups = list(dict.fromkeys(points["scale"])) or ["no measure changed"]
    sizes = [max(int((points["scale"] == group).sum()), 1) for group in groups]
    note = textwrap.wrap(unchanged_line(comparison), LINE_IN_CHART)
    plot = 40 * sum(sizes) + 85 * (len(groups) - 1)
    figure = make_subplots(rows=len(groups), cols=1, row_heights=sizes,
                           vertical_spacing=85 / plot if len(groups) > 1 else 0,
                           subplot_titles=[chart_text(group) for group in groups])
    for row, group in enumerate(groups, start=1):
        delta_trace(figure, points[points["scale"] == group].iloc[::-1], row)  # Plotly draws the first at the bottom
        figure.update_xaxes(title_text="difference (B − A)", title_standoff=4, zeroline=False, row=row, col=1)
    figure.update_annotations(x=0, xanchor="left", font_size=13)  # the panels' titles, before the note is added
    titled(figure, DELTA_TITLE, context)
    bottom = 60 + 17 * len(note)
    figure.update_layout(height=plot + figure.layout.margin.t + bottom, showlegend=False, margin={"b": bottom})
    if note:
        figure.add_annotation(text="<br>".join(map(chart_text, note)), xref="paper", yref="paper", x=0, y=0,
                              xanchor="left", yanchor="top", yshift=-50, showarrow=False, align="left")
    return figure


def delta_trace(figure: go.Figure, points: pd.DataFrame, row: int) -> None:
    """One scale's points with their intervals, and its zero line, in the figure's `row`."""
    figure.add_trace(go.Scatter(
        x=points["delta"], y=points["measure"].map(chart_text), mode="markers+text", textposition="top center",
        text=points["label"], marker={"color": points["direction"].map(DIRECTION_COLORS), "size": 10},
        error_x={"type": "data", "symmetric": False, "array": points["high"] - points["delta"],
                 "arrayminus": points["delta"] - points["low"]},
        customdata=points[["n", "p", "test", "detects", "needs"]],
        hovertemplate="%{y}: %{x:+.4f}<br>n=%{customdata[0]} · p=%{customdata[1]:.4f}<br>%{customdata[2]}"
                      "<br>%{customdata[3]}<br>%{customdata[4]}<extra></extra>"), row=row, col=1)
    figure.add_vline(x=0, line_dash="dot", line_color="#9e9e9e", row=row, col=1)
    figure.update_yaxes(automargin=True, range=[-0.7, len(points) - 0.3], row=row, col=1)


def delta_specs(comparison: Comparison, context: ExportContext) -> list[Spec]:
    """The delta chart for the dashboard (Vega-Lite): the same points, intervals, marks and hover as delta_figure, one
    chart per scale (a composed Vega-Lite view cannot take the page's width), the first titled with the context."""
    points = delta_points(comparison)
    panels = [delta_panel(points[points["scale"] == group]) for group in dict.fromkeys(points["scale"])]
    if panels:
        panels[0]["title"] = spec_title(DELTA_TITLE, context)
    return panels


def delta_panel(points: pd.DataFrame) -> Spec:
    """One scale's panel of the delta chart: its points, intervals, labels and zero line on its own axis."""
    group = str(points["scale"].iloc[0])
    y = {"field": "measure", "type": "nominal", "sort": list(points["measure"]), "title": None,
         "axis": {"labelLimit": 320, "minExtent": 200}}
    x = {"field": "delta", "type": "quantitative"}
    tooltip = [{"field": "measure"}, {"field": "delta", "format": "+.4f", "title": "B − A"},
               {"field": "low", "format": "+.4f", "title": "95% low"},
               {"field": "high", "format": "+.4f", "title": "95% high"},
               {"field": "n"}, {"field": "p", "format": ".4f"}, {"field": "test"}, {"field": "detects"},
               {"field": "needs"}]
    color = {"field": "direction", "scale": DIRECTION_SCALE, "legend": None}
    # "fit-x": the width fits the page, the height is the rows' own (title and axis added around them).
    return {"title": {"text": f"B − A: {group}", "anchor": "start", "fontSize": 12},
            "data": {"values": points.to_dict("records")}, "height": ROW_PX * len(points) + 8, "width": "container",
            "autosize": {"type": "fit-x", "contains": "padding"},
            "layer": [
                {"mark": {"type": "rule", "strokeDash": [3, 3], "color": "#9e9e9e"}, "encoding": {"x": {"datum": 0}}},
                {"mark": "rule", "encoding": {"y": y, "x": {"field": "low", "type": "quantitative",
                                                            "title": f"difference (B − A), {group}"},
                                             "x2": {"field": "high"}, "color": color}},
                {"mark": {"type": "point", "filled": True, "size": 90},
                 "encoding": {"y": y, "x": x, "tooltip": tooltip, "color": color}},
                {"mark": {"type": "text", "dy": -11}, "encoding": {"y": y, "x": x, "text": {"field": "label"}}},
            ]}


def stacked(values: Paired) -> pd.DataFrame:
    """The distinct (A, B) points of a measure with how many questions sit on each and which (first ids)."""
    frame = pd.DataFrame({"a": values.a, "b": values.b, "qid": values.qids})
    frame["key_a"], frame["key_b"] = frame["a"].round(SAME_VALUE), frame["b"].round(SAME_VALUE)
    points = frame.groupby(["key_a", "key_b"], sort=False).agg(
        a=("a", "first"), b=("b", "first"), count=("qid", "size"), qids=("qid", list)).reset_index(drop=True)
    points["questions"] = [", ".join(map(str, q[:HOVER_QUESTIONS])) + (", …" if len(q) > HOVER_QUESTIONS else "")
                           for q in points["qids"]]
    return points.drop(columns="qids")


def scatter_points(values: Paired, measure: str) -> pd.DataFrame:
    """The scatter's points (stacked) with their label (the count, when over one) and colour class (B better or
    worse in the measure's direction). Both forms of the scatter draw these."""
    points = stacked(values)
    gain = (points["b"] - points["a"]) * (1 if higher_is_better(measure) else -1)
    points["label"] = [str(c) if c > 1 else "" for c in points["count"]]
    points["direction"] = [direction(g > 1e-12, g < -1e-12) for g in gain]
    return points


def scatter_domain(values: Paired) -> tuple[float, float]:
    """Both axes' range: [0, 1] widened to every value."""
    return (min(0.0, float(values.a.min(initial=0.0)), float(values.b.min(initial=0.0))),
            max(1.0, float(values.a.max(initial=1.0)), float(values.b.max(initial=1.0))))


def scatter_figure(values: Paired, measure: str, context: ExportContext, delta: MeasureDelta | None = None,
                   ) -> go.Figure:
    """Each distinct (A, B) pair of a measure once, its size and label the number of questions on it."""
    points, (low, high) = scatter_points(values, measure), scatter_domain(values)
    figure = go.Figure(go.Scatter(
        x=points["a"], y=points["b"], mode="markers+text", opacity=0.75,
        text=points["label"], textposition="middle right",
        marker={"size": 8 + 4 * np.sqrt(points["count"] - 1), "sizemode": "diameter",
                "color": points["direction"].map(DIRECTION_COLORS)},
        customdata=np.column_stack([[counted(int(c), "question") for c in points["count"]], points["questions"]]),
        hovertemplate="%{customdata[0]}: A %{x:.3f} · B %{y:.3f}<br>questions %{customdata[1]}"
                      "<extra></extra>"))
    figure.add_shape(type="line", x0=low, y0=low, x1=high, y1=high, line={"dash": "dot", "color": "#9e9e9e"})
    name = chart_text(measure)
    figure.update_layout(xaxis_title=f"A {name}", yaxis_title=f"B {name}", height=520)
    return titled(figure, scatter_title(measure), scatter_context(values, measure, context, delta))


def scatter_title(measure: str) -> str:
    """What the scatter shows."""
    return f"{measure} per question (above the diagonal: B is higher; a number: questions on the same point)"


def scatter_context(values: Paired, measure: str, context: ExportContext, delta: MeasureDelta | None) -> ExportContext:
    """The comparison's context with the scatter's n and, when known, the measure's test and difference."""
    context = context.with_fact(shown("n", f"{len(values.qids):,} questions with {measure} in both"))
    if delta is not None:
        context = context.with_fact(Fact("test", delta.test,
                                         f"{delta.test}: B − A {delta.delta:+.4f}, p = {delta.p_value:.3g}"))
    return context


def scatter_spec(values: Paired, measure: str, context: ExportContext, delta: MeasureDelta | None = None) -> Spec:
    """The scatter for the dashboard (Vega-Lite): each distinct (A, B) point once, sized and labelled by its count."""
    rows = scatter_points(values, measure).to_dict("records")
    low, high = scatter_domain(values)
    scale = {"domain": [low, high], "nice": False}
    x = {"field": "a", "type": "quantitative", "title": f"A {measure}", "scale": scale}
    y = {"field": "b", "type": "quantitative", "title": f"B {measure}", "scale": scale}
    tooltip = [{"field": "count", "title": "questions"}, {"field": "a", "format": ".3f", "title": "A"},
               {"field": "b", "format": ".3f", "title": "B"}, {"field": "questions", "title": "question ids"}]
    return {"title": spec_title(scatter_title(measure), scatter_context(values, measure, context, delta)),
            "data": {"values": rows}, "height": 440, "width": "container",
            "layer": [
                {"mark": {"type": "rule", "strokeDash": [3, 3], "color": "#9e9e9e"},
                 "encoding": {"x": {"datum": low, "type": "quantitative", "scale": scale},
                              "y": {"datum": low, "type": "quantitative", "scale": scale},
                              "x2": {"datum": high}, "y2": {"datum": high}}},
                {"mark": {"type": "circle", "opacity": 0.75},
                 "encoding": {"x": x, "y": y, "tooltip": tooltip,
                              "size": {"field": "count", "type": "quantitative", "legend": None,
                                       "scale": {"range": [60, 900]}},
                              "color": {"field": "direction", "scale": DIRECTION_SCALE, "legend": None}}},
                # Labels only where points stack: a text mark per point costs the browser more than the circles.
                {"data": {"values": [{"a": r["a"], "b": r["b"], "label": r["label"]} for r in rows if r["label"]]},
                 "mark": {"type": "text", "align": "left", "dx": 9},
                 "encoding": {"x": x, "y": y, "text": {"field": "label"}}},
            ]}


def series_figure(sweep: Sweep, measure: str, context: ExportContext) -> go.Figure:
    """The measure's mean (with its 95% interval) for each value of the swept key."""
    points = pd.DataFrame(sweep.series[measure])
    points["x"] = points["x"].astype(str).map(chart_text)  # swept values are stored text (model names, URLs)
    figure = go.Figure(go.Scatter(
        x=points["x"], y=points["mean"], mode="lines+markers",
        error_y={"type": "data", "symmetric": False, "array": points["ci_high"].fillna(points["mean"]) - points["mean"],
                 "arrayminus": points["mean"] - points["ci_low"].fillna(points["mean"])}))
    axis = chart_text(sweep.key or "campaign")
    figure.update_layout(xaxis_title=axis, yaxis_title=chart_text(measure), height=460)
    return titled(figure, f"{measure} by {sweep.key or 'campaign'} (mean, 95% bootstrap interval)", context)


def series_spec(sweep: Sweep, measure: str, context: ExportContext) -> Spec:
    """The sweep's series for the dashboard (Vega-Lite): the measure's mean and interval per swept value."""
    rows = [{"x": str(point["x"]), "mean": point["mean"],
             "low": point["mean"] if point["ci_low"] is None else point["ci_low"],
             "high": point["mean"] if point["ci_high"] is None else point["ci_high"]}
            for point in sweep.series[measure]]
    x = {"field": "x", "type": "ordinal", "sort": [row["x"] for row in rows], "title": sweep.key or "campaign",
         "axis": {"labelAngle": 0}}
    y = {"field": "mean", "type": "quantitative", "title": measure, "scale": {"zero": False}}
    tooltip = [{"field": "x", "title": sweep.key or "campaign"}, {"field": "mean", "format": ".4f"},
               {"field": "low", "format": ".4f", "title": "95% low"}, {"field": "high", "format": ".4f",
                                                                        "title": "95% high"}]
    return {"title": spec_title(f"{measure} by {sweep.key or 'campaign'} (mean, 95% bootstrap interval)", context),
            "data": {"values": rows}, "height": 380, "width": "container",
            "layer": [{"mark": {"type": "line", "point": {"filled": True, "size": 70}},
                       "encoding": {"x": x, "y": y, "tooltip": tooltip}},
                      {"mark": "rule", "encoding": {"x": x, "y": {"field": "low", "type": "quantitative"},
                                                    "y2": {"field": "high"}}}]}


STAGE_COLORS = {"retrieval miss": RED, "ranking miss": "#ef6c00", "generation miss": "#f9a825", "ok": GREEN,
                "unlabeled": "#9e9e9e", "failed": "#424242", NOT_ATTRIBUTED: "#cfd8dc"}


def stage_bars(bars: dict[str, StageCounts]) -> go.Figure:
    """Questions per failure stage: one horizontal stacked bar per label (a campaign, or A and B), untitled."""
    figure = go.Figure()
    for stage in STAGES:
        counts = [bar.counts.get(stage, 0) for bar in bars.values()]
        if any(counts):
            figure.add_bar(name=stage, y=[chart_text(label) for label in bars], x=counts, orientation="h", text=counts,
                           marker_color=STAGE_COLORS[stage], hovertemplate=f"{stage}: %{{x}}<extra></extra>")
    figure.update_layout(barmode="stack", height=150 + 45 * len(bars), xaxis_title="questions",
                         yaxis={"autorange": "reversed", "automargin": True}, margin={"t": 50},
                         legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "traceorder": "normal"})
    return figure


def stages_figure(comparison: Comparison, context: ExportContext) -> go.Figure:
    """The failure stages of the common questions in A and in B (the sums of the transition table)."""
    a, b = side_counts(comparison.transitions)
    figure = titled(stage_bars({"A": a, "B": b}), "Failure stage of each common question, in A and in B", context)
    # The title block takes the top margin: the legend goes under the bars.
    figure.update_layout(height=figure.layout.margin.t + 200, legend={"y": -0.35, "yanchor": "top"})
    return figure


def stage_bars_spec(bars: dict[str, StageCounts]) -> Spec:
    """Questions per failure stage for the dashboard (Vega-Lite): one stacked horizontal bar per label, untitled."""
    rows = [{"bar": label, "stage": stage, "questions": counts.counts.get(stage, 0), "order": position}
            for label, counts in bars.items() for position, stage in enumerate(STAGES) if counts.counts.get(stage, 0)]
    present = [stage for stage in STAGES if any(row["stage"] == stage for row in rows)]
    # "fit-x": the width fits the page, the height is the bars' own (legend, axis and title added around them).
    return {"data": {"values": rows}, "height": 40 * len(bars), "width": "container",
            "autosize": {"type": "fit-x", "contains": "padding"},
            "mark": "bar",
            "encoding": {"y": {"field": "bar", "type": "nominal", "sort": list(bars), "title": None},
                         "tooltip": [{"field": "bar", "title": "of"}, {"field": "stage"}, {"field": "questions"}],
                         "x": {"field": "questions", "type": "quantitative", "stack": "zero"},
                         "color": {"field": "stage", "type": "nominal", "sort": present, "legend": {"orient": "top"},
                                   "scale": {"domain": present, "range": [STAGE_COLORS[s] for s in present]}},
                         "order": {"field": "order", "type": "quantitative"}}}


def stages_spec(comparison: Comparison, context: ExportContext) -> Spec:
    """The failure stages of the common questions in A and in B, for the dashboard (Vega-Lite)."""
    a, b = side_counts(comparison.transitions)
    return {**stage_bars_spec({"A": a, "B": b}),
            "title": spec_title("Failure stage of each common question, in A and in B", context)}
