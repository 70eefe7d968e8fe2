"""Per-query retrieval measures of a TREC run against qrels, as `trec_eval -q` computes them.

Files are read by `evalcore.metrics.trec_files`; here ids become integers and every query is
scored at once with numpy.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import EvalError
from evalcore.metrics.retrieval import batch_scores
from evalcore.metrics.trec_files import Judgements, Ranking, row_place

PACKED_BYTES = 8


class TrecScores(NamedTuple):
    """Per-query values, queries sorted by id as trec_eval prints them."""

    qids: list[str]
    values: dict[str, np.ndarray]
    unjudged: int  # run queries without any qrels line, skipped as trec_eval skips them


def _query_codes(first: pa.Array, second: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Shared integer codes for the query ids of both files (first-appearance order), and the ids."""
    encoded = pc.dictionary_encode(pa.concat_arrays([first, second]))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return codes[: len(first)], codes[len(first) :], encoded.dictionary


def _packed(values: pa.Array) -> np.ndarray | None:
    """Ids of up to 8 bytes as big-endian integers: exact, and ordered as strcmp orders the ids."""
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False)
    if lengths.size == 0 or lengths.max() > PACKED_BYTES:
        return None
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1, offset=values.offset * 4)
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    if data.size and data.min() == 0:
        return None  # a NUL byte would collide with the zero padding
    data = np.concatenate((data, np.zeros(PACKED_BYTES, dtype=np.uint8)))
    starts = (offsets[:-1] - offsets[0]).astype(np.int64)
    packed = np.zeros(len(values), dtype=np.uint64)
    for position in range(PACKED_BYTES):
        byte = data[starts + position].astype(np.uint64)
        byte[lengths <= position] = 0
        packed = (packed << np.uint64(8)) | byte
    return packed


def _doc_keys(first: pa.Array, second: pa.Array) -> tuple[np.ndarray, np.ndarray, bool]:
    """Integers standing for the document ids of both files (equal ids, equal integers), and
    whether the integers also keep the ids' strcmp order (true for packed ids)."""
    both = pa.concat_arrays([first, second])
    keys = _packed(both)
    ordered = keys is not None
    if keys is None:  # long ids: a hash table of the distinct ids (order is settled later, on ties)
        keys = pc.dictionary_encode(both).indices.to_numpy(zero_copy_only=False).astype(np.uint64)
    return keys[: len(first)], keys[len(first) :], ordered


class _Encoded(NamedTuple):
    run_q: np.ndarray
    run_d: np.ndarray  # uint64 document keys
    score: np.ndarray
    label: np.ndarray  # label of each run row, 0 when unjudged
    num_rel: np.ndarray  # per query code
    judged: np.ndarray  # per query code: has at least one qrels row
    qids: pa.Array
    tie_names: pa.Array | None  # run document ids when run_d does not keep their order


def _labels(run_q: np.ndarray, run_d: np.ndarray, qrels: Judgements, rel_q: np.ndarray, rel_d: np.ndarray) -> np.ndarray:
    """The qrels label of every run row (0 when unjudged), by exact (query, document) lookup."""
    judged_docs = pd.Index(np.unique(rel_d))
    # Dense codes for judged documents only: a run document nobody judged has no label at all.
    run_code = judged_docs.get_indexer(run_d)
    known = np.flatnonzero(run_code >= 0)
    width = len(judged_docs)
    judged_keys = pd.Index(rel_q * width + judged_docs.get_indexer(rel_d))
    if not judged_keys.is_unique:
        row = int(np.flatnonzero(judged_keys.duplicated())[0])
        first = int(np.flatnonzero(judged_keys == judged_keys[row])[0])
        raise EvalError(
            "a document is judged twice for the same query (trec_eval refuses it too)",
            where=row_place(qrels.source, row),
            found=f"query {qrels.qid[row]} document {qrels.docid[row]}, first at {row_place(qrels.source, first)}",
            fix="keep one line per (query, document)",
        )
    slot = judged_keys.get_indexer(run_q[known] * width + run_code[known])
    label = np.zeros(run_q.size, dtype=np.int64)
    label[known[slot >= 0]] = qrels.label[slot[slot >= 0]]
    return label


def _encode(qrels: Judgements, run: Ranking) -> _Encoded:
    run_q, rel_q, qids = _query_codes(run.qid, qrels.qid)
    run_d, rel_d, ordered = _doc_keys(run.docid, qrels.docid)
    label = _labels(run_q, run_d, qrels, rel_q, rel_d)
    num_rel = np.bincount(rel_q, weights=qrels.label >= 1, minlength=len(qids)).astype(np.int64)
    judged = np.bincount(rel_q, minlength=len(qids)) > 0
    return _Encoded(run_q, run_d, run.score, label, num_rel, judged, qids, None if ordered else run.docid)


def _rank_order(encoded: _Encoded) -> np.ndarray | None:
    """Row order by query, score descending, docid descending (trec_eval); None if already so."""
    run_q, score = encoded.run_q, encoded.score
    grouped = (run_q[1:] > run_q[:-1]) | ((run_q[1:] == run_q[:-1]) & (score[1:] <= score[:-1]))
    order = np.arange(run_q.size) if grouped.all() else np.lexsort((-score, run_q))
    sorted_q, sorted_s = run_q[order], score[order]
    tie = (sorted_q[1:] == sorted_q[:-1]) & (sorted_s[1:] == sorted_s[:-1])
    if tie.any():
        _break_ties(order, tie, encoded)
    return None if grouped.all() and not tie.any() else order


def _break_ties(order: np.ndarray, tie: np.ndarray, encoded: _Encoded) -> None:
    """Within each run of equal (query, score) rows, put documents in descending id order."""
    group = np.cumsum(np.concatenate(([True], ~tie)))
    tied = np.flatnonzero(np.concatenate(([False], tie)) | np.concatenate((tie, [False])))
    rows = order[tied]
    if encoded.tie_names is None:
        inside = np.lexsort((~encoded.run_d[rows], group[tied]))
    else:
        table = pa.table({"group": group[tied], "doc": encoded.tie_names.take(pa.array(rows))})
        inside = pc.sort_indices(table, sort_keys=[("group", "ascending"), ("doc", "descending")]).to_numpy()
    order[tied] = rows[inside]


def _first_occurrences(run_q: np.ndarray, run_d: np.ndarray) -> np.ndarray:
    """Mask of rows that are the first of their (query, document) pair."""
    mixed = run_d ^ (run_q.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    ordered = np.sort(mixed)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    keep = np.ones(run_q.size, dtype=bool)
    if repeated.size == 0:
        return keep
    suspects = np.flatnonzero(np.isin(mixed, repeated))
    seen: set[tuple[int, int]] = set()
    # The mixed value can collide, so suspects are settled on the exact pair (they are few).
    for row, pair in zip(suspects.tolist(), zip(run_q[suspects].tolist(), run_d[suspects].tolist())):
        keep[row] = pair not in seen
        seen.add(pair)
    return keep


def ranked_flags(encoded: _Encoded) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query code, document key, label) per run row in rank order, duplicates dropped."""
    run_q, run_d, label = encoded.run_q, encoded.run_d, encoded.label
    order = _rank_order(encoded)
    if order is not None:
        run_q, run_d, label = run_q[order], run_d[order], label[order]
    keep = _first_occurrences(run_q, run_d)
    return run_q[keep], run_d[keep], label[keep]


def evaluate(qrels: Judgements, run: Ranking, *, complete: bool = False) -> TrecScores:
    """Per-query measures for queries in both files (`complete`: every judged query, like -c)."""
    encoded = _encode(qrels, run)
    run_q, _, label = ranked_flags(encoded)
    counts = np.bincount(run_q, minlength=len(encoded.qids))
    offsets = np.concatenate(([0], np.cumsum(counts)))
    values = batch_scores(offsets, label >= 1, encoded.num_rel)
    wanted = encoded.judged if complete else encoded.judged & (counts > 0)
    names = np.array(encoded.qids.to_pylist(), dtype=object)
    selected = np.flatnonzero(wanted)
    selected = selected[np.argsort(names[selected].astype(str), kind="stable")]
    unjudged = int(np.count_nonzero((counts > 0) & ~encoded.judged))
    return TrecScores(list(names[selected]), {name: column[selected] for name, column in values.items()}, unjudged)


def judgements_by_query(qrels: Judgements) -> dict[str, dict[str, int]]:
    """Qrels as {qid: {docid: label}} (for the per-query graded measures)."""
    grouped: dict[str, dict[str, int]] = {}
    for qid, docid, label in zip(qrels.qid.to_pylist(), qrels.docid.to_pylist(), qrels.label.tolist()):
        grouped.setdefault(qid, {})[docid] = label
    return grouped


def rankings_by_query(run: Ranking) -> dict[str, list[tuple[str, float]]]:
    """A run as {qid: [(docid, score), ...]} ordered as trec_eval ranks (score, then docid, descending)."""
    grouped: dict[str, list[tuple[str, float]]] = {}
    for qid, docid, score in zip(run.qid.to_pylist(), run.docid.to_pylist(), run.score.tolist()):
        grouped.setdefault(qid, []).append((docid, score))
    for ranking in grouped.values():
        ranking.sort(key=lambda pair: (pair[1], pair[0]), reverse=True)
    return grouped
