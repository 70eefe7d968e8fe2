"""Graded document retrieval on the input and output that azure-ai-evaluation's DocumentRetrievalEvaluator documents.

Input, one object per query: `retrieval_ground_truth: [{document_id, query_relevance_label}]`,
`retrieved_documents: [{document_id, relevance_score}]` and, optionally, the label scale
`ground_truth_label_min` / `ground_truth_label_max` (default 0 and 4). Output: each measure
(`ndcg@3`, `xdcg@3`, `fidelity`, `top1_relevance`, `top3_max_relevance`, `holes`, `holes_ratio`,
`total_retrieved_documents`, `total_ground_truth_documents`) with `<name>_result`,
`<name>_threshold` and `<name>_higher_is_better`, computed by `graded_retrieval_scores`.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import cast

from evalcore.errors import EvalError
from evalcore.metrics.graded import GRADED_MEASURES

INPUT_FIELDS = ("retrieval_ground_truth", "retrieved_documents", "ground_truth_label_min", "ground_truth_label_max")


def document_retrieval(record: object, thresholds: Mapping[str, float] | None = None,
                       where: str = "input") -> dict[str, object]:
    """The documented output fields for one query given in the documented input shape; EvalError naming the field."""
    if not isinstance(record, Mapping):
        raise EvalError("a query is not a JSON object", where=where, found=type(record).__name__,
                        expected=f"an object with {', '.join(INPUT_FIELDS[:2])}")
    unknown = sorted(set(record) - set(INPUT_FIELDS) - {"id"})
    if unknown:
        raise EvalError("unknown field", where=where, found=", ".join(unknown), expected=", ".join(INPUT_FIELDS))
    # Labels reach graded_retrieval_scores as given: it refuses a fractional one, naming the document.
    labels = cast(dict[str | int, int], dict(_items(record, "retrieval_ground_truth", "query_relevance_label", where)))
    retrieved = _items(record, "retrieved_documents", "relevance_score", where)
    low, high = (_bound(record, name, default, where) for name, default in
                 (("ground_truth_label_min", 0), ("ground_truth_label_max", 4)))
    # The registry (every measure's module, numpy) loads here, not with the package: `evalcore.metrics` imports this.
    from evalcore.metrics.registry import graded_retrieval_scores

    try:
        return graded_retrieval_scores(labels, retrieved, low, high, thresholds)
    except EvalError as error:
        raise EvalError(error.message, where=f"{where}: {error.where or 'retrieval_ground_truth'}", found=error.found,
                        expected=error.expected, fix=error.fix) from None


def _items(record: Mapping[str, object], field: str, value_key: str, where: str) -> list[tuple[str | int, float]]:
    """(document_id, value) pairs of a list field, each document once; EvalError naming the item."""
    items = record.get(field, [] if field == "retrieved_documents" else None)
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise EvalError("missing or not a list", where=f"{where}: {field}", found=repr(items),
                        expected=f'a list of {{"document_id", "{value_key}"}}')
    pairs: list[tuple[str | int, float]] = []
    for position, item in enumerate(items):
        place = f"{where}: {field}[{position}]"
        doc = item.get("document_id") if isinstance(item, Mapping) else None
        value = item.get(value_key) if isinstance(item, Mapping) else None
        if not isinstance(doc, (str, int)) or isinstance(doc, bool) or not _number(value):
            raise EvalError("not a document with its value", where=place, found=repr(item),
                            expected=f'{{"document_id": a string or an integer, "{value_key}": a number}}')
        pairs.append((doc, cast(float, value)))
    _unique([doc for doc, _ in pairs], field, where)
    return pairs


def _number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)


def _unique(ids: list[str | int], field: str, where: str) -> None:
    seen: set[str | int] = set()
    for position, doc in enumerate(ids):
        if doc in seen:
            raise EvalError("a document is listed twice", where=f"{where}: {field}[{position}]", found=repr(doc),
                            expected="each document_id once (the evaluator's input lists unique documents)")
        seen.add(doc)


def _bound(record: Mapping[str, object], name: str, default: int, where: str) -> int:
    value = record.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise EvalError("the label scale is not an integer", where=f"{where}: {name}", found=repr(value),
                        expected="an integer")
    return value


def read_cases(path: Path) -> list[object]:
    """The queries of a file: a JSON list, one JSON object, or JSON lines; EvalError naming the file and line."""
    if not path.is_file():
        raise EvalError("file not found", where=str(path), fix="check the path")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise EvalError("not UTF-8 text", where=str(path)) from None
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        return [_line(line, number, path) for number, line in enumerate(text.split("\n"), start=1) if line.strip()]
    return whole if isinstance(whole, list) else [whole]


def _line(line: str, number: int, path: Path) -> object:
    try:
        return json.loads(line)
    except json.JSONDecodeError as error:
        raise EvalError(f"not JSON ({error.msg})", where=f"{path}:{number}",
                        expected="a JSON list of queries, one JSON object, or one JSON object per line") from None


SHAPES = ("documented", "package")  # the evaluator's documented output keys; azure-ai-evaluation 1.18's own output


def package_shape(output: Mapping[str, object]) -> dict[str, object]:
    """`document_retrieval`'s output as azure-ai-evaluation 1.18's DocumentRetrievalEvaluator returns it: the
    summary under `document_retrieval*` (nDCG@3 with its `_score`, `_passed`, `_result`, `_reason`, `_status` and
    `_threshold`), every measure under `document_retrieval_properties` (values, then each one's `_result`,
    `_passed`, `_threshold`, `_higher_is_better`). `_passed` is null where the result is unknown."""
    summary = GRADED_MEASURES[0]  # nDCG@3: the package's summary score
    properties: dict[str, object] = {name: output[name] for name in GRADED_MEASURES}
    for name in GRADED_MEASURES:
        result = output[f"{name}_result"]
        properties |= {f"{name}_result": result, f"{name}_passed": _passed(result),
                       f"{name}_threshold": output[f"{name}_threshold"],
                       f"{name}_higher_is_better": output[f"{name}_higher_is_better"]}
    return {"document_retrieval": output[summary], "document_retrieval_score": output[summary],
            "document_retrieval_passed": _passed(output[f"{summary}_result"]),
            "document_retrieval_result": output[f"{summary}_result"], "document_retrieval_reason": None,
            "document_retrieval_status": "completed", "document_retrieval_threshold": output[f"{summary}_threshold"],
            "document_retrieval_properties": properties}


def _passed(result: object) -> bool | None:
    return {"pass": True, "fail": False}.get(str(result))
