"""Graded document retrieval: NDCG@3, XDCG@3, fidelity, top relevance, holes.

Labels live on a scale [label_min, label_max] (default 0..4). Gains are taken relative to
label_min so that the lowest label ("irrelevant") is worth nothing on any scale; on 0..4 every
formula is the one of the project's definition verbatim. Unlabeled retrieved documents ("holes")
count as label_min. Names and output fields are those azure-ai-evaluation's DocumentRetrievalEvaluator
documents; where its values differ (scales not starting at 0 or not ending at 4, undefined values),
docs/measures.md gives each case and why.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Hashable, Mapping, Sequence
from itertools import repeat
from typing import Any, NamedTuple, TypeVar

from evalcore.errors import EvalError
from evalcore.metrics.measure import Inputs, Measure
from evalcore.store.measure_codes import CODED_HEAD, named

GRADED_MEASURES = (
    "ndcg@3", "xdcg@3", "fidelity", "top1_relevance", "top3_max_relevance",
    "holes", "holes_ratio", "total_retrieved_documents", "total_ground_truth_documents",
)
# Names stored before the documented ones were used; they are read back under the new name.
RENAMED = {"total_groundtruth_documents": "total_ground_truth_documents"}
# The evaluator's documented threshold names (holes and holes_ratio have none there: `holes_threshold`).
THRESHOLD_NAMES = {
    "ndcg_threshold": "ndcg@3", "xdcg_threshold": "xdcg@3", "fidelity_threshold": "fidelity",
    "top1_relevance_threshold": "top1_relevance", "top3_max_relevance_threshold": "top3_max_relevance",
    "total_retrieved_documents_threshold": "total_retrieved_documents",
    "total_ground_truth_documents_threshold": "total_ground_truth_documents",
    "holes_threshold": "holes", "holes_ratio_threshold": "holes_ratio",
}
XDCG_DECAY = 0.6
CUT = 3
_XDCG_WEIGHTS = [XDCG_DECAY**i for i in range(CUT)]
_XDCG_TOTAL = sum(_XDCG_WEIGHTS)
DocId = TypeVar("DocId", bound=Hashable)


class GradedScale(NamedTuple):
    """The label scale of a dataset's graded qrels and the pass marks in use (defaults for the rest)."""

    label_min: int
    label_max: int
    thresholds: Mapping[str, float] = {}

    @property
    def text(self) -> str:
        """The scale as signatures record it, e.g. `0-3`."""
        return f"{self.label_min}-{self.label_max}"

    def marks(self) -> dict[str, float]:
        """Every measure's pass mark on this scale: the configured ones (by any accepted name), defaults for the
        rest."""
        configured = {threshold_measure(name): value for name, value in self.thresholds.items()}
        return default_thresholds(self.label_min, self.label_max) | configured


def default_thresholds(label_min: int, label_max: int) -> dict[str, float]:
    """Pass marks that mean something on the configured scale (a top-1 pass mark of 50 on a 0..4 scale would
    never pass).

    Top-1 and top-3 relevance pass at the label three quarters up the scale, rounded up (3 on 0..4,
    4 on 1..5); the totals pass when there is at least one document (a sanity check, not a quality mark).
    """
    good = label_min + math.ceil(0.75 * (label_max - label_min))
    return {
        "ndcg@3": 0.5, "xdcg@3": 50.0, "fidelity": 0.5,
        "top1_relevance": good, "top3_max_relevance": good,
        "holes": 0, "holes_ratio": 0.0,
        "total_retrieved_documents": 1, "total_ground_truth_documents": 1,
    }


def _measure_named(name: str) -> str:
    return THRESHOLD_NAMES.get(name) or RENAMED.get(name, name)


def is_threshold_name(name: str) -> bool:
    """Whether the name sets a graded threshold: `ndcg_threshold` (the evaluator's name), `ndcg@3`, or an old name."""
    return _measure_named(name) in GRADED_MEASURES


def threshold_measure(name: str) -> str:
    """The graded measure a threshold name sets (see is_threshold_name); EvalError for an unknown name."""
    if not is_threshold_name(name):
        raise EvalError("unknown graded retrieval threshold", found=name,
                        expected=", ".join(THRESHOLD_NAMES), fix="or name the measure itself, e.g. ndcg@3")
    return _measure_named(name)


def current_name(name: str) -> str:
    """A stored measure name (`graded.total_groundtruth_documents`), or a signature starting with one, under its
    documented name."""
    measure, bar, settings = name.partition("|")
    head, dot, tail = measure.rpartition(".")
    return head + dot + RENAMED.get(tail, tail) + bar + settings


def stored_values(text: str | dict[str, Any]) -> dict[str, Any]:
    """Values by measure from their stored JSON (measures, results, signatures), coded names read back
    (evalcore.store.measure_codes) and old names under the documented ones; a dict is a value stored_column gave,
    decoded and renamed already."""
    if isinstance(text, dict):
        return text
    values: dict[str, Any] = named(json.loads(text))
    if not any(old in text for old in RENAMED):  # the common case costs one scan of the text
        return values
    return _documented(values)


def stored_column(texts: Sequence[str | None]) -> list[dict[str, Any] | None]:
    """stored_values of many rows' texts (None stays None), decoded in one call: a call per row takes twice as long."""
    joined = "[" + ",".join(text or "null" for text in texts) + "]"
    values: list[dict[str, Any] | None] = json.loads(joined)
    if CODED_HEAD in joined:  # each row's dict replaced in its place: the coded one freed at once
        for n, value in enumerate(values):
            if value:
                values[n] = named(value)
    if not any(old in joined for old in RENAMED):
        return values
    return [None if value is None else _documented(value) for value in values]


def _documented(values: dict[str, Any]) -> dict[str, Any]:
    """Stored values under the measures' documented names (their signatures too)."""
    return {current_name(name): current_name(v) if isinstance(v, str) else v for name, v in values.items()}


def _check(labels: Mapping[DocId, int], label_min: int, label_max: int) -> None:
    if label_min >= label_max:
        raise EvalError("label range is empty", found=f"{label_min}..{label_max}", expected="label_min < label_max")
    given = labels.values()
    if not given or (set(map(type, given)) == {int} and label_min <= min(given) and max(given) <= label_max):
        return  # the usual labels, checked in C
    fractional = [doc for doc, label in labels.items() if not _is_integer(label)]
    if fractional:
        raise EvalError("relevance label is not an integer", where=f"document {fractional[0]}",
                        found=repr(labels[fractional[0]]), expected=f"an integer in {label_min}..{label_max}")
    outside = [doc for doc, label in labels.items() if not label_min <= label <= label_max]
    if outside:
        raise EvalError(
            "relevance label outside the scale", where=f"document {outside[0]}",
            found=str(labels[outside[0]]), expected=f"an integer in {label_min}..{label_max}",
            fix="set label_min/label_max to the scale your labels use",
        )


def _is_integer(value: object) -> bool:
    """An int, or a float without a fraction (a bool is no label)."""
    if type(value) is int:  # the usual label, without the slower abstract-class check
        return True
    if isinstance(value, bool):
        return False
    return isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer())


def _check_retrieved(retrieved: Sequence[tuple[DocId, float]]) -> None:
    for position, item in enumerate(retrieved):
        if type(item) is tuple and len(item) == 2 and type(item[1]) is float and not math.isnan(item[1]):
            continue  # the usual pair, without the slower abstract-class check
        pair = isinstance(item, (tuple, list)) and len(item) == 2
        if not pair or isinstance(item[1], bool) or not isinstance(item[1], numbers.Real) or math.isnan(item[1]):
            raise EvalError("a retrieved item is not a (document id, score) pair with a numeric score",
                            where=f"retrieved[{position}]", found=repr(item), expected="(id, score), score not NaN")


def _order(retrieved: Sequence[tuple[DocId, float]]) -> list[DocId]:
    """Document ids by score descending, ties in input order, repeats kept at their first place."""
    _check_retrieved(retrieved)
    ranked = sorted(range(len(retrieved)), key=lambda i: -retrieved[i][1])
    return list(dict.fromkeys(retrieved[i][0] for i in ranked))


def _ndcg(found: list[int], every: list[int], label_min: int) -> float | None:
    def dcg(grades: list[int]) -> float:
        return sum((2.0 ** (g - label_min) - 1) / math.log2(i + 2) for i, g in enumerate(grades[:CUT]))

    ideal = dcg(sorted(every, reverse=True))
    return dcg(found) / ideal if ideal > 0 else None


def _xdcg(found: list[int], label_min: int, label_max: int) -> float:
    gained = sum((g - label_min) * w for g, w in zip(found[:CUT], _XDCG_WEIGHTS, strict=False))
    return 100.0 / (label_max - label_min) * gained / _XDCG_TOTAL


def _weight(grades: list[int], label_min: int) -> float:
    return sum(2.0 ** (g - label_min + 1) - 1 for g in grades if g > label_min)


def _values(
    labels: Mapping[DocId, int], order: list[DocId], label_min: int, label_max: int
) -> dict[str, float | None]:
    found = list(map(int, map(labels.get, order, repeat(label_min))))
    every = list(map(int, labels.values()))
    holes = len(order) - sum(map(labels.__contains__, order))
    total_weight = _weight(every, label_min)
    return {
        "ndcg@3": _ndcg(found, every, label_min),
        "xdcg@3": _xdcg(found, label_min, label_max),
        "fidelity": _weight(found, label_min) / total_weight if total_weight > 0 else None,
        "top1_relevance": found[0] if found else None,
        "top3_max_relevance": max(found[:CUT]) if found else None,
        "holes": holes,
        "holes_ratio": holes / len(order) if order else None,
        "total_retrieved_documents": len(order),
        "total_ground_truth_documents": len(labels),
    }


def graded_values(labels: Mapping[DocId, int], retrieved: Sequence[tuple[DocId, float]], label_min: int = 0,
                  label_max: int = 4) -> dict[str, float | None]:
    """Each graded measure of one query: `labels` document id -> integer label, `retrieved` (document id, score)
    pairs. A value that is undefined (nothing retrieved, nothing labeled above label_min) is None. Their pass
    marks and directions are the registry's (`evalcore.metrics.registry.graded_retrieval_scores`)."""
    _check(labels, label_min, label_max)
    return _values(labels, _order(retrieved), label_min, label_max)


def _of_question(inputs: Inputs) -> dict[str, float | None]:
    """The graded measures of the ranked list the target returned, in its order (each miss a hole of its own)."""
    scale = inputs.graded or GradedScale(0, 4)
    ranked = inputs.ranked
    documents: Sequence[int | str] = ranked if None not in ranked else [  # type: ignore[assignment]  # no None
        pid if pid is not None else f"unmapped {rank}" for rank, pid in enumerate(ranked)]
    labels: Mapping[int | str, int] = inputs.relevant or {}  # type: ignore[assignment]  # ids are ints
    _check(labels, scale.label_min, scale.label_max)
    # The target's order as it is: what `graded_values` gives for scores falling with the rank (a stable sort by
    # score keeps it), without building and sorting the pairs.
    return _values(labels, list(dict.fromkeys(documents)), scale.label_min, scale.label_max)


def _measures_of_question(inputs: Inputs) -> dict[str, float | None]:
    """The graded measures of the question's ranked list by their registered names, as floats."""
    return {_REGISTERED[name]: None if found is None else float(found) for name, found in _of_question(inputs).items()}


_REGISTERED = {name: f"graded.{name}" for name in GRADED_MEASURES}
_DEFAULT_SCALE = GradedScale(0, 4)
# The pass marks of the last scale asked for (a campaign's questions share one): its object and its marks.
_last_marks: tuple[object, dict[str, float]] = (None, {})


def _marks(inputs: Inputs) -> dict[str, float]:
    global _last_marks
    scale = inputs.graded or _DEFAULT_SCALE
    seen, marks = _last_marks
    if seen is not scale:
        marks = scale.marks()
        _last_marks = (scale, marks)
    return marks


def _scale(inputs: Inputs) -> dict[str, str]:
    return {"scale": (inputs.graded or _DEFAULT_SCALE).text}


def _declare(name: str, doc: str, higher_is_better: bool = True, scale: str = "share") -> Measure:
    """A graded measure of a question's ranked list on the dataset's label scale, with its pass/fail per question."""
    return Measure(f"graded.{name}", doc + " Graded document retrieval.", "graded", higher_is_better=higher_is_better,
                   needs=("relevant", "graded"), settings=(("scale", "0-4"),), scale=scale, departs=True,
                   together=_measures_of_question, signed=_scale, mark=lambda inputs: inputs.shared(_marks)[name],
                   checked="azure-ai-evaluation DocumentRetrievalEvaluator, values frozen on 200 random queries")


DECLARED = (
    _declare("ndcg@3", "sum_{i<=3} (2^(l_i-min) - 1)/log2(i+1) over the same for the ideal order of all labels."),
    _declare("xdcg@3", "100/(max-min) * sum_{i<=3} (l_i-min) 0.6^(i-1) / sum_{i<=3} 0.6^(i-1).", scale="score"),
    _declare("fidelity", "W(retrieved) / W(labeled), W = sum over labels above min of 2^(l-min+1) - 1."),
    _declare("top1_relevance", "label of the first retrieved document (min when unlabeled).", scale="label"),
    _declare("top3_max_relevance", "highest label among the first three retrieved documents.", scale="label"),
    _declare("holes", "retrieved documents without a label.", higher_is_better=False, scale="count"),
    _declare("holes_ratio", "holes / retrieved documents.", higher_is_better=False),
    _declare("total_retrieved_documents", "distinct retrieved documents.", scale="count"),
    _declare("total_ground_truth_documents", "labeled documents of the question.", scale="count"),
)
