"""The delta chart's readability in the commonest comparison: a top-k change (embedding_top_k 3 → 10).

    python bench/chart_readability.py [--questions 40] [--width 940] [--generator realistic_dataset.py
                                       --generated-questions 200 --generated-passages 2000]

Two campaigns run on the sample dataset (keyword retrieval, extractive answers, embedding_top_k 3 and 10) and
are compared; with `--generator`, the same on a dataset that generator script writes into a temporary folder
(`SCRIPT OUT --questions N --passages P`). The dashboard's delta chart (one Vega-Lite chart per panel) is laid
out by Vega itself (vl-convert, no browser) at the width the Compare page gives it in a 1400-pixel window, and
each 0-1 measure is measured in pixels: its 95% interval's width, and whether its label is apart (its box, at
0.6 em a character, overlaps no other label and no other measure's point) and tells its value (a digit that is
not 0, and no exponent: "+1.87e-05" does not). A measure is readable when its interval is at least 20 px wide,
or when it is labelled apart. The reference, laid out in the same run from the same comparison, is the chart
before small changes got their own panel: one panel per scale, labels to three significant digits.
"""

from __future__ import annotations

import argparse
import json
import subprocess
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
    point_class,
    scale_groups,
)
from evalcore.compare.export_context import comparison_context, source_names
from evalcore.metrics import scale_of
from evalcore.targets import TargetConfig

VISIBLE = 20  # pixels


def top_k_comparison(db: str, questions: int, dataset: str = "default") -> tuple[Comparison, Any]:
    """Two campaigns differing in embedding_top_k (3, then 10) on the dataset, compared; and their context."""
    manager = get_manager(db)
    ids = [manager.launch(LaunchRequest(dataset=dataset, limit=questions, name=f"keyword top {k}",
                          config=TargetConfig.from_dict({"retriever": "bm25", "embedding_top_k": k}))) for k in (3, 10)]
    campaigns = [manager.wait(campaign_id, timeout=600) for campaign_id in ids]
    comparison = compare_campaigns(manager.store, *ids)
    context = comparison_context(comparison, *campaigns, source_names(manager.store, campaigns))
    manager.close()
    return comparison, context


def by_scale(comparison: Comparison) -> list[dict[str, Any]]:
    """The reference: the chart before small changes had their own panel (one panel per scale, "+.3g" labels)."""
    points = pd.DataFrame([{
        "scale": title, "measure": m.measure, "delta": m.delta,
        "low": m.delta if m.ci_low is None else m.ci_low, "high": m.delta if m.ci_high is None else m.ci_high,
        "label": f"{m.delta:+.3g}{' *' if m.significant else ''}", "n": m.n, "p": m.p_value, "test": m.test,
        "detects": detects_text(m), "needs": needs_text(m), "direction": point_class(m)}
        for title, members in scale_groups(comparison) for m in members])
    return [delta_panel(points[points["scale"] == group]) for group in dict.fromkeys(points["scale"])]


def marks(spec: dict[str, Any], width: int) -> dict[str, dict[str, Any]]:
    """Vega's layout of one panel at `width` px: per measure, its interval's pixel ends, its point and the zero's x."""
    laid = json.loads(json.dumps(spec, default=float).replace('"container"', str(width)))
    graph = vl_convert.vegalite_to_scenegraph(laid)["scenegraph"]
    layers: dict[str, list[dict[str, Any]]] = {}
    walk(graph, layers)
    rows, points, texts = spec["data"]["values"], layers["layer_2_marks"], layers["layer_3_marks"]
    boxes = [label_box(text) for text in texts]
    return {row["measure"]: {"interval": abs(rule["x2"] - rule["x"]), "label": row["label"],
                             "tells": row["delta"] == 0 or ("e" not in row["label"]
                                                            and any(c in "123456789" for c in row["label"])),
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
    return f"{mark['interval']:11.1f} {mark['label']:>11} {apart:>8} {'yes' if readable(mark) else 'no':>8}"


def report(title: str, comparison: Comparison, context: Any, width: int) -> None:
    """The table of every 0-1 measure drawn, before and after, and the counts of readable ones."""
    before: dict[str, dict[str, Any]] = {}
    for panel in by_scale(comparison):
        before.update(marks(panel, width))
    after: dict[str, dict[str, Any]] = {}
    for panel in delta_specs(comparison, context):
        after.update(marks(panel, width))
    shares = [name for name in before if scale_of(name) == "share"]
    print(f"\n{title}, chart {width} px wide")
    header = f"{'interval px':>11} {'label':>11} {'label is':>8} {'readable':>8}"
    print(f"{'':38} | {'before (a panel per scale)':^41} | {'after (small changes apart)':^41}")
    print(f"{'measure':28} {'B − A':>9} | {header} | {header}")
    deltas = {m.measure: m.delta for m in comparison.measures}
    for name in shares:
        print(f"{name:28} {deltas[name]:+9.4f} | {cells(before[name])} | {cells(after[name])}")
    print(f"0-1 measures drawn: {len(shares)}; readable (interval >= {VISIBLE} px, or labelled apart with its value, "
          f"no exponent): before {sum(readable(before[n]) for n in shares)}/{len(shares)}, "
          f"after {sum(readable(after[n]) for n in shares)}/{len(shares)}")
    print(f"panels after: {[panel['data']['values'][0]['scale'] for panel in delta_specs(comparison, context)]}; "
          f"{len(delta_points(comparison))} measures drawn of {len(comparison.measures)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--width", type=int, default=940, help="the chart's width in px (the Compare page's at 1400)")
    parser.add_argument("--generator", type=Path, help="a dataset generator script: OUT --questions N --passages P")
    parser.add_argument("--generated-questions", type=int, default=200)
    parser.add_argument("--generated-passages", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        comparison, context = top_k_comparison(str(Path(home) / "evalcore.db"), args.questions)
        report(f"A top-k change (embedding_top_k 3 → 10) on the sample, {args.questions} questions", comparison,
               context, args.width)
        if args.generator:
            folder = Path(home) / "generated"
            subprocess.run([sys.executable, str(args.generator), str(folder), "--questions",
                            str(args.generated_questions), "--passages", str(args.generated_passages)], check=True,
                           stdout=subprocess.DEVNULL)
            comparison, context = top_k_comparison(str(Path(home) / "generated.db"), args.generated_questions,
                                                   str(folder))
            report(f"The same on the generated dataset ({args.generated_questions} questions, "
                   f"{args.generated_passages} passages)", comparison, context, args.width)


if __name__ == "__main__":
    main()
