"""The dashboard's Vega-Lite charts draw the numbers of the Plotly figures the exports are made of."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from evalcore.compare import compare_results, sweep_results
from evalcore.compare.charts import (
    DIRECTION_COLORS,
    NEUTRAL,
    STAGE_COLORS,
    delta_figure,
    delta_label,
    delta_specs,
    scatter_figure,
    scatter_spec,
    series_figure,
    series_spec,
    stage_bars_spec,
    stages_spec,
    unchanged_line,
)
from evalcore.compare.deltas import Paired
from evalcore.compare.export_context import comparison_context, sweep_context
from evalcore.diagnosis import StageCounts
from evalcore.language.text import counted
from tests.test_compare import A_ROWS, B_ROWS, row
from tests.test_compare_report import DAY, HOSTILE, SOURCES, dated, hostile_pair


def top_k_rows(k: int) -> list:
    """Ten questions retrieved at top-k: precision falls and recall rises with k, counts grow, ranking unchanged."""
    rows = []
    for qid in range(1, 11):
        hits = 2 + (qid % 3 == 0 and k > 3)  # a third of the questions find one more relevant document
        rows.append(row(qid, f"question {qid}", {
            "precision": hits / k, "recall": hits / 3, "mrr": 1.0, "map": 0.5, "graded.holes_ratio": (k - hits) / k,
            "graded.xdcg@3": 50.0 + (k > 3) * qid, "graded.holes": float(k - hits),
            "graded.total_retrieved_documents": float(k), "graded.total_groundtruth_documents": 3.0}))
    return rows


def top_k_change() -> tuple:
    """A comparison of top-k 3 (A) against top-k 10 (B) on the same questions."""
    a = dated("A", 1.0, name="top-k 3")
    b = replace(dated("B", 2.0, name="top-k 10"), config={**a.config, "top_k": 10})
    return a, b, compare_results(a, top_k_rows(3), b, top_k_rows(10), resamples=500)


def test_the_delta_spec_draws_the_figures_points_intervals_and_marks() -> None:
    a, b, comparison = hostile_pair()
    context = comparison_context(comparison, a, b, SOURCES, DAY)
    specs, traces = delta_specs(comparison, context), delta_figure(comparison, context).data
    assert len(specs) == len(traces)  # one panel per scale in both forms
    for panel, trace in zip(specs, traces, strict=True):
        rows = panel["data"]["values"]
        # The figure lists the measures bottom up, the spec top down.
        assert [r["measure"] for r in rows] == list(trace.y)[::-1]
        assert np.allclose([r["delta"] for r in rows], list(trace.x)[::-1])
        assert np.allclose([r["high"] - r["delta"] for r in rows], list(trace.error_x.array)[::-1])
        assert np.allclose([r["delta"] - r["low"] for r in rows], list(trace.error_x.arrayminus)[::-1])
        assert [r["label"] for r in rows] == list(trace.text)[::-1]
        colors = dict(zip(panel["layer"][2]["encoding"]["color"]["scale"]["domain"],
                          panel["layer"][2]["encoding"]["color"]["scale"]["range"], strict=True))
        assert [colors[r["direction"]] for r in rows] == list(trace.marker.color)[::-1]
    # Stored text stays text: the title lines name the campaigns as they are (Vega-Lite draws no markup).
    assert any(HOSTILE in line for line in specs[0]["title"]["subtitle"])


def test_a_top_k_change_draws_each_scale_on_its_own_axis_with_counts_neutral() -> None:
    a, b, comparison = top_k_change()
    context = comparison_context(comparison, a, b, SOURCES, DAY)
    specs, figure = delta_specs(comparison, context), delta_figure(comparison, context)
    panels = {panel["data"]["values"][0]["scale"]: [r["measure"] for r in panel["data"]["values"]] for panel in specs}
    assert panels == {"0-1 measures": ["precision", "recall", "graded.holes_ratio"],
                      "0-100 scores": ["graded.xdcg@3"],
                      "counts (no better or worse)": ["graded.holes", "graded.total_retrieved_documents"]}
    assert [panel["title"]["text"] for panel in specs[1:]] == ["B − A: 0-100 scores",
                                                               "B − A: counts (no better or worse)"]
    # Each panel has its own x axis in the figure too, so precision's −0.1 is not flattened by a count's +7.
    assert [trace.xaxis for trace in figure.data] == ["x", "x2", "x3"]
    assert [a.text for a in figure.layout.annotations][:3] == list(panels)
    counts = specs[2]["data"]["values"]
    assert {r["direction"] for r in counts} == {NEUTRAL}
    assert all(r["label"].endswith(" *") for r in counts)
    assert DIRECTION_COLORS[NEUTRAL] not in (DIRECTION_COLORS["better"], DIRECTION_COLORS["worse"])
    precision = specs[0]["data"]["values"][0]
    assert precision["direction"] == "worse"
    assert precision["label"] == "-0.437 *"
    # Measures with the same value on every question are not drawn, and are named under the chart.
    assert unchanged_line(comparison) == ("Not drawn, the same in A and B on every question: mrr, map, "
                                          "graded.total_groundtruth_documents.")
    assert figure.layout.annotations[-1].text.replace("<br>", " ") == unchanged_line(comparison)


def test_tiny_changes_get_an_axis_of_their_own_and_labels_without_exponents() -> None:
    """A top-k change moves precision by tenths and BLEU by hundred-thousandths: on one axis BLEU's interval would
    be a pixel under its point, labelled +1.87e-05."""
    def rows(k: int) -> list:
        return [row(qid, f"question {qid}", {"precision": (2 + (qid % 3 == 0 and k > 3)) / k,
                                             "bleu4": 0.3 + (k > 3) * (qid % 2) * 3.74e-05, "rougel": 0.5})
                for qid in range(1, 11)]
    a, b = dated("A", 1.0, name="top-k 3"), dated("B", 2.0, name="top-k 10")
    comparison = compare_results(a, rows(3), b, rows(10), resamples=500)
    context = comparison_context(comparison, a, b, SOURCES, DAY)
    specs, figure = delta_specs(comparison, context), delta_figure(comparison, context)
    panels = {panel["data"]["values"][0]["scale"]: panel["data"]["values"] for panel in specs}
    assert {name: [r["measure"] for r in values] for name, values in panels.items()} == {
        "0-1 measures": ["precision"], "0-1 measures, small changes (an axis of their own)": ["bleu4"]}
    bleu = panels["0-1 measures, small changes (an axis of their own)"][0]
    assert bleu["label"].removesuffix(" *") == "+0.0000187"
    assert "e" not in bleu["label"]
    assert [trace.xaxis for trace in figure.data] == ["x", "x2"]  # the exports split it alike
    assert [delta_label(v) for v in (1.87e-05, -0.437, 0.5, 12345.0, 0.0)] == [
        "+0.0000187", "-0.437", "+0.5", "+12,345", "+0"]


def test_the_scatter_spec_has_each_distinct_point_once_with_its_count() -> None:
    a, b, comparison = hostile_pair()
    context = comparison_context(comparison, a, b, SOURCES, DAY)
    measure = next(iter(comparison.paired))
    values = comparison.paired[measure]
    spec = scatter_spec(values, measure, context)
    rows = spec["data"]["values"]
    [trace] = scatter_figure(values, measure, context).data
    assert [(r["a"], r["b"]) for r in rows] == list(zip(trace.x, trace.y, strict=True))
    assert [counted(r["count"], "question") for r in rows] == [row[0] for row in trace.customdata]
    assert sum(r["count"] for r in rows) == len(values.qids)
    # The text layer labels the stacked points only (the figure's text, without its empty labels).
    values = Paired(np.array(["q1", "q2", "q3", "q4"]), np.array([0.0, 0.0, 0.5, 1.0]), np.array([0.0, 0.0, 0.5, 0.5]))
    spec, [trace] = scatter_spec(values, measure, context), scatter_figure(values, measure, context).data
    rows = spec["data"]["values"]
    [labels] = [layer["data"]["values"] for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert [(r["a"], r["b"], r["label"]) for r in labels] == [
        (x, y, text) for x, y, text in zip(trace.x, trace.y, trace.text, strict=True) if text]
    assert labels
    assert (all(int(r["label"]) == next(p["count"] for p in rows if (p["a"], p["b"]) == (r["a"], r["b"]))
                          for r in labels))


def test_the_series_spec_and_the_stage_bars() -> None:
    a, b, _ = hostile_pair()
    sweep = sweep_results([(a, A_ROWS), (b, B_ROWS)], resamples=200)
    measure = next(iter(sweep.series))
    context = sweep_context(sweep, [a, b], SOURCES, DAY)
    rows = series_spec(sweep, measure, context)["data"]["values"]
    [trace] = series_figure(sweep, measure, context).data
    assert np.allclose([r["mean"] for r in rows], list(trace.y))
    counts = StageCounts.of([("ok", 3), ("retrieval miss", 2), (None, 1)])
    spec = stage_bars_spec({"questions": counts})
    assert [(r["stage"], r["questions"]) for r in spec["data"]["values"]] == [("retrieval miss", 2), ("ok", 3),
                                                                               ("not attributed", 1)]
    assert spec["encoding"]["color"]["scale"]["range"] == [STAGE_COLORS[s] for s in ("retrieval miss", "ok",
                                                                                     "not attributed")]
    _, _, comparison = hostile_pair()
    assert stages_spec(comparison, comparison_context(comparison, a, dated("B", 2.0), SOURCES, DAY))["title"]["text"] \
        .startswith("Failure stage")
