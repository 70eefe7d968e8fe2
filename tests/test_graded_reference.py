"""Graded document retrieval against azure-ai-evaluation's DocumentRetrievalEvaluator, frozen on 200 random cases.

The package pins pandas below 3 (this project pins 3), so its outputs are frozen in
tests/fixtures/graded_reference.json by tests/fixtures/make_graded_reference.py. Every label
range is covered; each documented difference (docs/measures.md, "Agreement with the evaluator")
is asserted as the exact relation it is, so any other difference fails.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalcore.metrics.document_retrieval import document_retrieval
from evalcore.metrics.graded import GRADED_MEASURES, THRESHOLD_NAMES

CASES = json.loads((Path(__file__).parent / "fixtures" / "graded_reference.json").read_text(encoding="utf-8"))
SAME = ("ndcg@3", "fidelity", "holes", "holes_ratio", "total_retrieved_documents", "total_ground_truth_documents")


def ours(case: dict[str, Any], thresholds: dict[str, float] | None = None) -> dict[str, object]:
    record = {name: case[name] for name in ("retrieval_ground_truth", "retrieved_documents")}
    return document_retrieval(record | {"ground_truth_label_min": case["label_min"],
                                        "ground_truth_label_max": case["label_max"]}, thresholds)


def package_of(case: dict[str, Any]) -> dict[str, Any]:
    """The package's output on the case's labels, on a scale moved to start at 0."""
    return case["package_shifted"] if case["label_min"] else case["package"]


def expected(case: dict[str, Any]) -> dict[str, float]:
    """The package's values, moved by the documented differences: gains from the scale's minimum, XDCG on 0-100."""
    low, high = case["label_min"], case["label_max"]
    package = package_of(case)
    values = {name: package[name] for name in SAME}
    values["xdcg@3"] = package["xdcg@3"] * 4 / (high - low)  # the package's factor 25 is 100/4 whatever the scale
    values |= {name: package[name] + low for name in ("top1_relevance", "top3_max_relevance")}
    if high - low >= 10:  # the package orders its fidelity weights by the label as text ("10" < "2")
        del values["fidelity"]
    return values


@pytest.mark.parametrize("case", CASES, ids=[f"{c['label_min']}-{c['label_max']}#{n}" for n, c in enumerate(CASES)])
def test_values_agree_with_the_package(case: dict[str, Any]) -> None:
    mine, theirs = ours(case), expected(case)
    for name, value in theirs.items():
        if mine[name] is None:  # undefined here (nothing relevant, nothing retrieved); the package says 0
            assert package_of(case)[name] == 0 or math.isnan(package_of(case)[name]), name
        else:
            assert mine[name] == pytest.approx(value, abs=1e-9), name


def test_every_label_range_is_covered_with_undefined_values() -> None:
    ranges = {(c["label_min"], c["label_max"]) for c in CASES}
    assert {(0, 1), (0, 4), (1, 5), (0, 10), (2, 6)} <= ranges
    assert len(CASES) == 200
    assert sum(ours(c)["ndcg@3"] is None for c in CASES) >= 10
    assert sum(not c["retrieved_documents"] for c in CASES) >= 5


def test_results_agree_under_the_package_thresholds() -> None:
    """With the package's own pass marks, every defined value passes or fails as the package says."""
    for case in (c for c in CASES if c["label_min"] == 0 and c["label_max"] == 4):
        package = case["package"]
        marks = {name: package[f"{measure}_threshold"] for name, measure in THRESHOLD_NAMES.items()}
        mine = ours(case, marks)
        for name in GRADED_MEASURES:
            assert mine[f"{name}_threshold"] == package[f"{name}_threshold"]
            assert mine[f"{name}_higher_is_better"] == package[f"{name}_higher_is_better"]
            if mine[name] is not None:
                assert mine[f"{name}_result"] == package[f"{name}_result"], name
