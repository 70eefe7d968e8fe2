"""The dashboard's Vega-Lite charts draw the numbers of the Plotly figures the exports are made of."""

from __future__ import annotations

import numpy as np

from evalcore.compare import sweep_results
from evalcore.compare.charts import (
    STAGE_COLORS,
    delta_figure,
    delta_spec,
    scatter_figure,
    scatter_spec,
    series_figure,
    series_spec,
    stage_bars_spec,
    stages_spec,
)
from evalcore.compare.exports import comparison_context, sweep_context
from evalcore.compare.records import Paired
from evalcore.diagnosis import StageCounts
from tests.test_compare import A_ROWS, B_ROWS
from tests.test_compare_report import DAY, HOSTILE, SOURCES, dated, hostile_pair


def test_the_delta_spec_draws_the_figures_points_intervals_and_marks() -> None:
    a, b, comparison = hostile_pair()
    context = comparison_context(comparison, a, b, SOURCES, DAY)
    spec, [trace] = delta_spec(comparison, context), delta_figure(comparison, context).data
    rows = spec["data"]["values"]
    # The figure lists the measures bottom up, the spec top down.
    assert [r["measure"] for r in rows] == list(trace.y)[::-1]
    assert np.allclose([r["delta"] for r in rows], list(trace.x)[::-1])
    assert np.allclose([r["high"] - r["delta"] for r in rows], list(trace.error_x.array)[::-1])
    assert np.allclose([r["delta"] - r["low"] for r in rows], list(trace.error_x.arrayminus)[::-1])
    assert [r["label"] for r in rows] == list(trace.text)[::-1]
    colors = dict(zip(spec["layer"][2]["encoding"]["color"]["scale"]["domain"],
                      spec["layer"][2]["encoding"]["color"]["scale"]["range"], strict=True))
    assert [colors[r["direction"]] for r in rows] == list(trace.marker.color)[::-1]
    # Stored text stays text: the title lines name the campaigns as they are (Vega-Lite draws no markup).
    assert any(HOSTILE in line for line in spec["title"]["subtitle"])


def test_the_scatter_spec_has_each_distinct_point_once_with_its_count() -> None:
    a, b, comparison = hostile_pair()
    context = comparison_context(comparison, a, b, SOURCES, DAY)
    measure = next(iter(comparison.paired))
    values = comparison.paired[measure]
    spec = scatter_spec(values, measure, context)
    rows = spec["data"]["values"]
    [trace] = scatter_figure(values, measure, context).data
    assert [(r["a"], r["b"]) for r in rows] == list(zip(trace.x, trace.y, strict=True))
    assert [r["count"] for r in rows] == [row[0] for row in trace.customdata]
    assert sum(r["count"] for r in rows) == len(values.qids)
    # The text layer labels the stacked points only (the figure's text, without its empty labels).
    values = Paired(np.array(["q1", "q2", "q3", "q4"]), np.array([0.0, 0.0, 0.5, 1.0]), np.array([0.0, 0.0, 0.5, 0.5]))
    spec, [trace] = scatter_spec(values, measure, context), scatter_figure(values, measure, context).data
    rows = spec["data"]["values"]
    [labels] = [layer["data"]["values"] for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert [(r["a"], r["b"], r["label"]) for r in labels] == [
        (x, y, text) for x, y, text in zip(trace.x, trace.y, trace.text, strict=True) if text]
    assert labels and all(int(r["label"]) == next(p["count"] for p in rows if (p["a"], p["b"]) == (r["a"], r["b"]))
                          for r in labels)


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
