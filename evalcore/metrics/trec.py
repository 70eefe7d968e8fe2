"""Per-query retrieval measures of a TREC run against qrels, as `trec_eval -q` computes them.

Files are read by `evalcore.metrics.trec_files`; here ids become integers and every query is
scored at once with numpy. Run files are usually written grouped by query and sorted by score,
so the costly steps are skipped when they cannot change a value: no sort unless the rows are out
of order, and equal scores are put in trec_eval's docid order only where that moves a label.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import EvalError
from evalcore.metrics.retrieval import GRADED_NDCG_MEASURES, batch_scores, graded_ndcg
from evalcore.metrics.trec_files import Judgements, Ranking, row_place

PACKED_BYTES = 8
BUCKET_BITS = 24
HASH_BLOCK = 1 << 20
# An odd 64-bit constant (2^64 / golden ratio): multiplying query codes by it spreads them over
# all bits before they are mixed with document keys.
_SPREAD = np.uint64(0x9E3779B97F4A7C15)
# Masks keeping the low n bytes of a word, n = 0..8 (a table lookup: numpy's shift of a scalar by
# an array of counts is several times slower).
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(PACKED_BYTES + 1)], dtype=np.uint64)


class TrecScores(NamedTuple):
    """Per-query values, queries sorted by id as trec_eval prints them."""

    qids: list[str]
    values: dict[str, np.ndarray]
    unjudged: int  # run queries without any qrels line, skipped as trec_eval skips them


class TrecOptions(NamedTuple):
    """trec_eval's settings: -c (`complete`), -l (`relevance_level`), -M (`max_docs`)."""

    complete: bool = False
    relevance_level: int = 1
    max_docs: int | None = None


DEFAULT_OPTIONS = TrecOptions()


def _heads(values: pa.ChunkedArray) -> tuple[np.ndarray, pa.ChunkedArray]:
    """Row numbers and values of the rows whose value differs from the previous row's (and row
    0): the starts of runs of equal values. Chunk by chunk, so that no chunk is copied."""
    rows, firsts, before, offset = [], [], None, 0
    for chunk in values.chunks:
        if len(chunk):
            changed = pc.not_equal(chunk.slice(1), chunk.slice(0, len(chunk) - 1)).to_numpy(zero_copy_only=False)
            local = np.flatnonzero(np.concatenate(([before is None or before != chunk[0]], changed)))
            rows.append(local + offset)
            firsts.append(chunk.take(pa.array(local)))
            before, offset = chunk[len(chunk) - 1], offset + len(chunk)
    return np.concatenate(rows or [np.zeros(0, dtype=np.int64)]), pa.chunked_array(firsts, type=values.type)


def _query_codes(first: pa.ChunkedArray, second: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Shared int32 codes for the query ids of both files (first-appearance order), and the ids.

    Files list a query's lines together, so only the first id of each run of equal ids is
    hashed (100,000 instead of 10 million for a deep run); the others repeat its code.
    """
    (first_rows, first_ids), (second_rows, second_ids) = _heads(first), _heads(second)
    encoded = pc.dictionary_encode(pa.chunked_array(first_ids.chunks + second_ids.chunks, type=first.type)
                                   .combine_chunks())
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    split = [codes[: len(first_rows)], codes[len(first_rows) :]]
    repeated = [
        np.repeat(code, np.diff(np.append(rows, len(values))))
        for code, rows, values in zip(split, (first_rows, second_rows), (first, second), strict=False)
    ]
    return repeated[0], repeated[1], encoded.dictionary


def _packed_chunk(values: pa.Array, lengths: np.ndarray) -> np.ndarray | None:
    """The ids of one chunk as integers: their bytes read as a little-endian word (see `_packed`);
    None when an id holds a NUL byte (`a` plus NUL would read as `a`)."""
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1, offset=values.offset * 4)
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    if data.size and data.min() == 0:
        return None
    starts = offsets[:-1] - offsets[0]
    # Read 8 bytes at every id's start in one gather (a view with a 1-byte stride over the data),
    # then keep each id's own bytes: the low `length` bytes of the word. The last ids, whose
    # word would run past the data, are read from a short zero-padded copy.
    body = max(data.size - PACKED_BYTES + 1, 0)
    inside = int(np.searchsorted(starts, body))
    words = np.empty(len(values), dtype=np.uint64)
    words[:inside] = np.ndarray((body,), dtype="<u8", buffer=data, strides=(1,))[starts[:inside]]
    tail = np.concatenate((data[body:], np.zeros(PACKED_BYTES, dtype=np.uint8)))
    words[inside:] = np.ndarray((tail.size - PACKED_BYTES + 1,), dtype="<u8", buffer=tail, strides=(1,))[
        starts[inside:] - body
    ]
    words &= _LOW_BYTES[lengths]
    return words


def _packed(values: pa.ChunkedArray) -> np.ndarray | None:
    """Ids of 1 to 8 bytes as integers (equal ids, equal integers); None when some id is longer
    (or holds a NUL byte)."""
    lengths = pc.binary_length(values).to_numpy()
    if lengths.size == 0 or lengths.max() > PACKED_BYTES or lengths.min() == 0:
        return None
    words, start = np.empty(len(values), dtype=np.uint64), 0
    for chunk in values.chunks:  # straight into one array: a concatenation would copy it all
        packed = _packed_chunk(chunk, lengths[start : start + len(chunk)])
        if packed is None:
            return None
        words[start : start + len(chunk)] = packed
        start += len(chunk)
    return words


def _doc_keys(first: pa.ChunkedArray, second: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Integers standing for the document ids of both files: equal ids, equal integers."""
    packed = (_packed(first), _packed(second))
    if packed[0] is not None and packed[1] is not None:
        return packed[0], packed[1]
    # Long ids: a hash table of the distinct ids (slower, needed for ids over 8 bytes or with NUL).
    keys = pc.dictionary_encode(pa.chunked_array(first.chunks + second.chunks).combine_chunks()).indices
    keys = keys.to_numpy(zero_copy_only=False).astype(np.uint64)
    return keys[: len(first)], keys[len(first) :]


class _Encoded(NamedTuple):
    run_q: np.ndarray
    run_d: np.ndarray  # uint64 document keys
    score: np.ndarray
    label: np.ndarray  # qrels label of each run row, its type's minimum when unjudged
    rel_q: np.ndarray  # query code of each qrels row
    qids: pa.Array
    docid: pa.ChunkedArray  # the run's document ids, for trec_eval's tie order


def _buckets(keys: np.ndarray, out: np.ndarray) -> np.ndarray:
    """A 24-bit hash of each key (its top bits after multiplying by an odd constant), into `out`."""
    np.multiply(keys, _SPREAD, out=out)
    out >>= np.uint64(64 - BUCKET_BITS)
    return out


def _maybe_judged(run_d: np.ndarray, rel_d: np.ndarray) -> np.ndarray:
    """Rows whose document may be judged: a bitmap of hashed judged documents rules out most
    of a deep run for the price of one lookup per row, so the exact hash lookup sees few rows.
    The run is hashed a block at a time into one small buffer (fresh memory is costly)."""
    bitmap = np.zeros(1 << BUCKET_BITS, dtype=bool)
    bitmap[_buckets(rel_d, np.empty(rel_d.size, dtype=np.uint64))] = True
    found = np.empty(run_d.size, dtype=bool)
    buffer = np.empty(min(HASH_BLOCK, run_d.size), dtype=np.uint64)
    for start in range(0, run_d.size, HASH_BLOCK):
        part = run_d[start : start + HASH_BLOCK]
        np.take(bitmap, _buckets(part, buffer[: part.size]), out=found[start : start + part.size])
    return np.flatnonzero(found)


def _labels(run_q: np.ndarray, run_d: np.ndarray, qrels: Judgements, rel_q: np.ndarray, rel_d: np.ndarray,
            level: int) -> np.ndarray:
    """The qrels label of every run row (the type's minimum when unjudged), by exact (query,
    document) lookup."""
    ordered = np.sort(rel_d)  # np.unique hashes, slower here than sorting
    judged_docs = pd.Index(ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))])
    # Dense codes for judged documents only: a run document nobody judged has no label at all.
    candidates = _maybe_judged(run_d, rel_d)
    run_code = judged_docs.get_indexer(run_d[candidates])
    known = candidates[run_code >= 0]
    run_code = run_code[run_code >= 0]
    width = len(judged_docs)
    judged_keys = pd.Index(rel_q.astype(np.int64) * width + judged_docs.get_indexer(rel_d))
    if not judged_keys.is_unique:
        row = int(np.flatnonzero(judged_keys.duplicated())[0])
        first = int(np.flatnonzero(judged_keys == judged_keys[row])[0])
        raise EvalError(
            "a document is judged twice for the same query (trec_eval refuses it too)",
            where=row_place(qrels.source, row),
            found=f"query {qrels.qid[row]} document {qrels.docid[row]}, first at {row_place(qrels.source, first)}",
            fix="keep one line per (query, document)",
        )
    slot = judged_keys.get_indexer(run_q[known].astype(np.int64) * width + run_code)
    # An unjudged row gets the minimum of the type, which is below every label and relevance
    # level: trec_eval never counts an unjudged document as relevant (even with -l 0), and its
    # gain is 0.
    kind = _label_type(qrels.label, level)
    label = np.full(run_q.size, np.iinfo(kind).min, dtype=kind)
    label[known[slot >= 0]] = qrels.label[slot[slot >= 0]]
    return label


def _label_type(labels: np.ndarray, level: int) -> type[np.signedinteger]:
    """The narrowest integer type holding every label and the relevance level above its own
    minimum (labels are mostly 0..4: one byte a row instead of eight, for a deep run)."""
    low, high = (min(int(labels.min()), level), int(labels.max())) if labels.size else (level, level)
    for kind in (np.int8, np.int16, np.int32):
        if np.iinfo(kind).min < low and high <= np.iinfo(kind).max:
            return kind
    return np.int64


def _encode(qrels: Judgements, run: Ranking, level: int) -> _Encoded:
    run_q, rel_q, qids = _query_codes(run.qid, qrels.qid)
    run_d, rel_d = _doc_keys(run.docid, qrels.docid)
    label = _labels(run_q, run_d, qrels, rel_q, rel_d, level)
    return _Encoded(run_q, run_d, run.score, label, rel_q, qids, run.docid)


def _rank_order(encoded: _Encoded) -> np.ndarray | None:
    """Row order by query, score descending, docid descending (trec_eval); None if already so.

    A file in order but for ties gets its few reordered rows written into `encoded` in place
    instead: a permutation of every row would copy the whole run three times.
    """
    run_q, score = encoded.run_q, encoded.score
    grouped = (run_q[1:] > run_q[:-1]) | ((run_q[1:] == run_q[:-1]) & (score[1:] <= score[:-1]))
    order = None if grouped.all() else np.lexsort((-score, run_q))
    sorted_q, sorted_s = (run_q, score) if order is None else (run_q[order], score[order])
    tie = (sorted_q[1:] == sorted_q[:-1]) & (sorted_s[1:] == sorted_s[:-1])
    if not tie.any():
        return order
    positions, moved = _tie_order(order, tie, encoded)
    if order is not None:
        order[positions] = moved
    else:
        encoded.run_d[positions], encoded.label[positions] = encoded.run_d[moved], encoded.label[moved]
    return order


def _tie_order(order: np.ndarray | None, tie: np.ndarray, encoded: _Encoded) -> tuple[np.ndarray, np.ndarray]:
    """(positions, rows): within each run of equal (query, score) rows, documents in descending
    id order; position p of `order` (None: the file's order) must hold row r.

    Only runs whose rows carry different labels are sorted: in the others every order gives
    the same labels at the same ranks, so the same values (duplicates share their label too).
    """
    linked = np.concatenate(([False], tie))  # the row ties with the one before it
    positions = np.flatnonzero(linked | np.concatenate((tie, [False])))
    opens = ~linked[positions]
    starts = np.flatnonzero(opens)
    rows = positions if order is None else order[positions]
    labels = encoded.label[rows]
    mixed = np.minimum.reduceat(labels, starts) != np.maximum.reduceat(labels, starts)
    run = np.cumsum(opens) - 1
    inside = mixed[run]
    positions, rows = positions[inside], rows[inside]
    table = pa.table({"run": run[inside], "doc": encoded.docid.take(pa.array(rows))})
    # pyarrow compares strings bytewise, as trec_eval's strcmp.
    sort = pc.sort_indices(table, sort_keys=[("run", "ascending"), ("doc", "descending")]).to_numpy()
    return positions, rows[sort]


def _mixed(run_q: np.ndarray, run_d: np.ndarray) -> np.ndarray:
    """One integer per (query, document) pair; different pairs rarely share one."""
    mixed = run_q.astype(np.uint64)
    mixed *= _SPREAD
    mixed ^= run_d
    return mixed


def _first_occurrences(run_q: np.ndarray, run_d: np.ndarray) -> np.ndarray:
    """Mask of rows that are the first of their (query, document) pair."""
    ordered = _mixed(run_q, run_d)
    ordered.sort()  # in place: a second copy of a deep run costs more than recomputing below
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    keep = np.ones(run_q.size, dtype=bool)
    if repeated.size == 0:
        return keep
    suspects = np.flatnonzero(np.isin(_mixed(run_q, run_d), repeated))
    seen: set[tuple[int, int]] = set()
    # The mixed value can collide, so suspects are settled on the exact pair (they are few).
    for row, pair in zip(suspects.tolist(), zip(run_q[suspects].tolist(), run_d[suspects].tolist(), strict=False),
                         strict=False):
        keep[row] = pair not in seen
        seen.add(pair)
    return keep


def _within_depth(run_q: np.ndarray, max_docs: int) -> np.ndarray:
    """Mask of rows among the first `max_docs` of their query (rows grouped by query, in rank order)."""
    starts = np.flatnonzero(np.concatenate(([True], run_q[1:] != run_q[:-1])))
    lengths = np.diff(np.append(starts, run_q.size))
    return np.arange(run_q.size) - np.repeat(starts, lengths) < max_docs


def ranked_labels(encoded: _Encoded, max_docs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(query code, label) per run row in rank order, duplicates dropped, at most `max_docs` per query."""
    run_q, run_d, label = encoded.run_q, encoded.run_d, encoded.label
    order = _rank_order(encoded)
    if order is not None:
        run_q, run_d, label = run_q[order], run_d[order], label[order]
    keep = _first_occurrences(run_q, run_d)
    if not keep.all():
        run_q, label = run_q[keep], label[keep]
    if max_docs is not None:
        depth = _within_depth(run_q, max_docs)
        run_q, label = run_q[depth], label[depth]
    return run_q, label


def _graded(offsets: np.ndarray, label: np.ndarray, qrels: Judgements, rel_q: np.ndarray,
            names: Collection[str]) -> dict[str, np.ndarray]:
    """The requested ndcg_graded@k columns: gains are the labels, ideal from all judged labels."""
    cuts = {name: int(name.split("@")[1]) for name in GRADED_NDCG_MEASURES if name in names}
    if not cuts:
        return {}
    queries = offsets.size - 1
    # The ideal ranking of each query: its judged labels, highest first.
    order = np.lexsort((-qrels.label, rel_q))
    ideal_q, ideal_label = rel_q[order], qrels.label[order]
    ideal_offsets = np.concatenate(([0], np.cumsum(np.bincount(ideal_q, minlength=queries))))
    return {name: graded_ndcg(offsets, label, ideal_offsets, ideal_label, cut) for name, cut in cuts.items()}


def evaluate(qrels: Judgements, run: Ranking, options: TrecOptions = DEFAULT_OPTIONS,
             graded: Collection[str] = ()) -> TrecScores:
    """Per-query binary measures (and the `graded` ndcg_graded@k) for the queries in both files
    (every judged query with `options.complete`, like -c)."""
    encoded = _encode(qrels, run, options.relevance_level)
    queries = len(encoded.qids)
    run_q, label = ranked_labels(encoded, options.max_docs)
    counts = np.bincount(run_q, minlength=queries)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    num_rel = np.bincount(encoded.rel_q, weights=qrels.label >= options.relevance_level, minlength=queries)
    values = batch_scores(offsets, label >= options.relevance_level, num_rel.astype(np.int64))
    values |= _graded(offsets, label, qrels, encoded.rel_q, graded)
    judged = np.bincount(encoded.rel_q, minlength=queries) > 0
    wanted = judged if options.complete else judged & (counts > 0)
    names = np.array(encoded.qids.to_pylist(), dtype=object)
    selected = np.flatnonzero(wanted)
    selected = selected[np.argsort(names[selected].astype(str), kind="stable")]
    unjudged = int(np.count_nonzero((counts > 0) & ~judged))
    return TrecScores(list(names[selected]), {name: column[selected] for name, column in values.items()}, unjudged)


def judgements_by_query(qrels: Judgements) -> dict[str, dict[str, int]]:
    """Qrels as {qid: {docid: label}} (for the per-query graded measures)."""
    grouped: dict[str, dict[str, int]] = {}
    for qid, docid, label in zip(qrels.qid.to_pylist(), qrels.docid.to_pylist(), qrels.label.tolist(), strict=False):
        grouped.setdefault(qid, {})[docid] = label
    return grouped


def rankings_by_query(run: Ranking, max_docs: int | None = None) -> dict[str, list[tuple[str, float]]]:
    """A run as {qid: [(docid, score), ...]} ordered as trec_eval ranks (score, then docid,
    descending), repeated documents dropped after their first rank, at most `max_docs` each."""
    grouped: dict[str, list[tuple[str, float]]] = {}
    for qid, docid, score in zip(run.qid.to_pylist(), run.docid.to_pylist(), run.score.tolist(), strict=False):
        grouped.setdefault(qid, []).append((docid, score))
    for qid, ranking in grouped.items():
        ranking.sort(key=lambda pair: (pair[1], pair[0]), reverse=True)
        firsts: dict[str, float] = {}
        for docid, score in ranking:
            firsts.setdefault(docid, score)
        grouped[qid] = list(firsts.items())[:max_docs]
    return grouped
