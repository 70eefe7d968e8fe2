"""The delta chart's readability in the commonest comparison: a top-k change (embedding_top_k 3 → 10).

    python bench/chart_readability.py [--questions 40] [--width 940]

Two campaigns run on the sample dataset (keyword retrieval, extractive answers, embedding_top_k 3 and 10) and
are compared. The dashboard's delta chart (one Vega-Lite chart per scale) is laid out by Vega itself
(vl-convert, no browser) at the width the Compare page gives it in a 1400-pixel window, and each 0-1 measure
is measured in pixels: its 95% interval's width, and whether its label is apart (its box, at 0.6 em a
character, overlaps no other label and no other measure's point) and tells its value (not a rounded "+0.000"
when the difference is not 0). A measure is readable when its interval is at least 20 px wide, or when it is
labelled apart. The reference, laid out in the same run from the same comparison, is the chart as it was:
every measure on one axis, counts included, labels to three decimals, rows of 26 px (as the page drew them).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd
import vl_convert

from evalcore.campaigns import get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.compare import Comparison, compare_campaigns
from evalcore.compare.charts import (
    delta_panel,
    delta_points,
    delta_specs,
    detects_text,
    needs_text,
    ordered,
    point_class,
)
from evalcore.compare.export_context import comparison_context, source_names
from evalcore.metrics import scale_of
from evalcore.targets import TargetConfig

VISIBLE = 20  # pixels
OLD_ROW_PX = 26


def top_k_comparison(db: str, questions: int) -> tuple[Comparison, Any]:
    """Two campaigns differing in embedding_top_k (3, then 10) on the sample dataset, compared; and their context."""
    manager = get_manager(db)
    ids = [manager.launch(LaunchRequest(dataset="default", limit=questions, name=f"keyword top {k}",
                          config=TargetConfig.from_dict({"retriever": "bm25", "embedding_top_k": k}))) for k in (3, 10)]
    campaigns = [manager.wait(campaign_id, timeout=600) for campaign_id in ids]
    comparison = compare_campaigns(manager.store, *ids)
    context = comparison_context(comparison, *campaigns, source_names(manager.store, campaigns))
    manager.close()
    return comparison, context


def single_axis(comparison: Comparison) -> dict[str, Any]:
    """The reference: the chart as it was, every measure on one axis (unchanged ones too), labels to 3 decimals."""
    points = pd.DataFrame([{
        "scale": "every measure", "measure": m.measure, "delta": m.delta,
        "low": m.delta if m.ci_low is None else m.ci_low, "high": m.delta if m.ci_high is None else m.ci_high,
        "label": f"{m.delta:+.3f}{' *' if m.significant else ''}", "n": m.n, "p": m.p_value, "test": m.test,
        "detects": detects_text(m), "needs": needs_text(m), "direction": point_class(m)} for m in ordered(comparison)])
    return {**delta_panel(points), "height": OLD_ROW_PX * len(points)}


def marks(spec: dict[str, Any], width: int) -> dict[str, dict[str, Any]]:
    """Vega's layout of one panel at `width` px: per measure, its interval's pixel ends, its point and the zero's x."""
    laid = json.loads(json.dumps(spec, default=float).replace('"container"', str(width)))
    graph = vl_convert.vegalite_to_scenegraph(laid)["scenegraph"]
    layers: dict[str, list[dict[str, Any]]] = {}
    walk(graph, layers)
    rows, points, texts = spec["data"]["values"], layers["layer_2_marks"], layers["layer_3_marks"]
    boxes = [label_box(text) for text in texts]
    return {row["measure"]: {"interval": abs(rule["x2"] - rule["x"]), "label": row["label"],
                             "tells": row["delta"] == 0 or any(c in "123456789" for c in row["label"].split("e")[0]),
                             "apart": not any(overlaps(boxes[i], box) for j, box in enumerate(boxes) if j != i)
                             and not any(overlaps(boxes[i], point_box(p)) for j, p in enumerate(points) if j != i)}
            for i, (row, rule) in enumerate(zip(rows, layers["layer_1_marks"], strict=True))}


Box = tuple[float, float, float, float]  # left, top, right, bottom


def label_box(item: dict[str, Any]) -> Box:
    """A text mark's box (centred on x, baseline at y + dy), 0.6 em a character."""
    size, width = item.get("fontSize", 11), 0.6 * item.get("fontSize", 11) * len(str(item["text"]))
    bottom = item["y"] + item.get("dy", 0)
    return (item["x"] - width / 2, bottom - size, item["x"] + width / 2, bottom)


def point_box(item: dict[str, Any]) -> Box:
    """A filled point's box (its size is its area in px²)."""
    radius = (item.get("size", 90) ** 0.5) / 2
    return (item["x"] - radius, item["y"] - radius, item["x"] + radius, item["y"] + radius)


def overlaps(a: Box, b: Box) -> bool:
    """Two boxes share some area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def walk(node: Any, layers: dict[str, list[dict[str, Any]]]) -> None:
    """Collect the items of each mark of a scenegraph by the end of its name (`layer_1_marks`: the intervals)."""
    if isinstance(node, list):
        for child in node:
            walk(child, layers)
    elif isinstance(node, dict):
        name = node.get("name") or ""
        if node.get("role") == "mark" and "layer_" in name:
            layers["layer_" + name.split("layer_")[-1]] = node.get("items", [])
        for key in ("items",):
            walk(node.get(key, []), layers)


def readable(mark: dict[str, Any] | None) -> bool:
    """An interval at least VISIBLE px wide, or a label apart from the others that tells the value."""
    return mark is not None and (mark["interval"] >= VISIBLE or (mark["apart"] and mark["tells"]))


def cells(mark: dict[str, Any]) -> str:
    """A measure's columns: interval px, label, apart, readable."""
    apart = "apart" if mark["apart"] else "overlaps"
    return f"{mark['interval']:11.1f} {mark['label']:>10} {apart:>8} {'yes' if readable(mark) else 'no':>8}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--width", type=int, default=940, help="the chart's width in px (the Compare page's at 1400)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        comparison, context = top_k_comparison(str(Path(home) / "evalcore.db"), args.questions)
    before = marks(single_axis(comparison), args.width)
    after: dict[str, dict[str, Any]] = {}
    for panel in delta_specs(comparison, context):
        after.update(marks(panel, args.width))
    shares = [m.measure for m in ordered(comparison) if scale_of(m.measure) == "share" and m.measure in before]
    print(f"A top-k change (embedding_top_k 3 → 10), {args.questions} questions, chart {args.width} px wide")
    header = f"{'interval px':>11} {'label':>10} {'label is':>8} {'readable':>8}"
    print(f"{'':38} | {'before (one axis)':^40} | {'after (by scale)':^40}")
    print(f"{'measure':28} {'B − A':>9} | {header} | {header}")
    deltas = {m.measure: m.delta for m in comparison.measures}
    for name in shares:
        new = after.get(name)
        print(f"{name:28} {deltas[name]:+9.4f} | {cells(before[name])} | "
              f"{cells(new) if new else '(not drawn: the same on every question)'}")
    changed = [name for name in shares if name in after]
    print(f"0-1 measures that changed on some question: {len(changed)}; readable (interval >= {VISIBLE} px, or "
          f"labelled apart with its value): before {sum(readable(before[n]) for n in changed)}/{len(changed)}, "
          f"after {sum(readable(after[n]) for n in changed)}/{len(changed)}")
    print(f"panels after: {[panel['data']['values'][0]['scale'] for panel in delta_specs(comparison, context)]}; "
          f"{len(delta_points(comparison))} measures drawn of {len(comparison.measures)}")


if __name__ == "__main__":
    main()
