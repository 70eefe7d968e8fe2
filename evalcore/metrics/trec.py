"""Per-query retrieval measures of a TREC run against qrels, as `trec_eval -q` computes them.

Files are read by `evalcore.metrics.trec_files`; here query ids become integer codes (only the
first id of each run of equal ids is encoded), document ids are compared through 64-bit keys
(`trec_scan.Ids.keys`: exact for ids of at most 8 bytes, otherwise every match is checked on
the bytes), each run row gets its qrels label in one pass of C (`trec_label.c`, a small table
per query; numpy's sorted and hashed arrays where it cannot be built, the same labels), and
every query is scored at once with numpy. Run files are usually written grouped
by query and sorted by score, so the costly steps are skipped when they cannot change a value:
no sort unless the rows are out of order, and equal scores are put in trec_eval's docid order
only where that moves a label.
"""

from __future__ import annotations

import ctypes
from collections.abc import Collection
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import EvalError
from evalcore.metrics import trec_scan
from evalcore.metrics.retrieval import GRADED_NDCG_MEASURES, batch_scores, graded_ndcg
from evalcore.metrics.trec_files import Judgements, Ranking, row_place
from evalcore.metrics.trec_scan import Ids, Spans, as_numpy, from_numpy
from evalcore.runtime import compiled

BUCKET_BITS = 22
HASH_BLOCK = 1 << 20
# An odd 64-bit constant (2^64 / golden ratio): multiplying query codes by it spreads them over
# all bits before they are mixed with document keys.
_SPREAD = np.uint64(0x9E3779B97F4A7C15)


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


def _query_codes(first: Ids, second: Ids) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Shared int32 codes for the query ids of both files (first-appearance order), and the ids.

    Files list a query's lines together, so only the first id of each run of equal ids is
    encoded (100,000 instead of 10 million for a deep run); the others repeat its code.
    """
    compiled_codes = _head_codes(first, second)
    if compiled_codes is not None:
        (first_rows, second_rows), codes, dictionary = compiled_codes
    else:
        (first_rows, first_ids), (second_rows, second_ids) = first.heads(), second.heads()
        joined = pa.concat_arrays([first_ids.cast(pa.string()), second_ids.cast(pa.string())])
        encoded = pc.dictionary_encode(joined)
        codes, dictionary = as_numpy(encoded.indices), encoded.dictionary
    split = [codes[: len(first_rows)], codes[len(first_rows) :]]
    repeated = [
        np.repeat(code, np.diff(np.append(rows, len(values))))
        for code, rows, values in zip(split, (first_rows, second_rows), (first, second), strict=False)
    ]
    return repeated[0], repeated[1], dictionary


def _head_codes(first: Ids, second: Ids) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray, pa.Array] | None:
    """((head rows of both), codes of their ids, the ids by code) as `_query_codes` makes them with pyarrow,
    from the ids' bytes in one pass of C (`trec_label.c`) without a string per head (a shuffled run has a
    head per row); None where the pass cannot run."""
    first_heads, second_heads = first.head_spans(), second.head_spans()
    library = _label_library()
    if library is None or first_heads is None or second_heads is None:
        return None
    (first_rows, first_spans), (second_rows, second_spans) = first_heads, second_heads
    total = first_rows.size + second_rows.size
    if total >= 2**31:
        return None
    codes, firsts = np.empty(total, dtype=np.int32), np.empty(max(total, 1), dtype=np.int64)
    distinct = library.evalcore_codes(first_rows.size, *_span_pointers(first_spans), second_rows.size,
                                      *_span_pointers(second_spans), codes.ctypes.data, firsts.ctypes.data)
    if distinct < 0:
        return None
    firsts = firsts[:distinct]
    split = int(np.searchsorted(firsts, first_rows.size))  # codes first seen in `first` come before the others
    ids = [trec_scan.strings(first_spans, firsts[:split]).cast(pa.string()),
           trec_scan.strings(second_spans, firsts[split:] - first_rows.size).cast(pa.string())]
    return (first_rows, second_rows), codes, pa.concat_arrays(ids)


class _Collision(Exception):
    """Two different judged (query, document) pairs share a key: encode the documents exactly."""


class _Encoded(NamedTuple):
    run_q: np.ndarray
    run_d: np.ndarray  # uint64 document keys (equal ids, equal keys)
    score: np.ndarray
    label: np.ndarray  # qrels label of each run row, its type's minimum when unjudged
    rel_q: np.ndarray  # query code of each qrels row
    qids: pa.Array
    docid: Ids  # the run's document ids, for trec_eval's tie order and to settle shared keys
    exact: bool  # different documents never share a key
    pairs: np.ndarray | None  # the mixed (query, document) pair of each run row, in the file's order (None: not made)
    repeats: bool | None = None  # whether the run ranks a document twice for a query (None: not known)


def _buckets(keys: np.ndarray, out: np.ndarray) -> np.ndarray:
    """A BUCKET_BITS-bit hash of each key (its top bits after multiplying by an odd constant), into `out`."""
    np.multiply(keys, _SPREAD, out=out)
    out >>= np.uint64(64 - BUCKET_BITS)
    return out


class _PairTable(NamedTuple):
    """Judged (query, document) pairs by mixed key: a table of 2^22 buckets holding the qrels
    row of the one pair in the bucket (-1: none, -2: several), and the pairs of shared buckets
    sorted by key (`order`: their qrels rows)."""

    buckets: np.ndarray
    order: np.ndarray
    ordered: np.ndarray


def _pair_table(rel_pair: np.ndarray) -> _PairTable:
    bucket = _buckets(rel_pair, np.empty(rel_pair.size, dtype=np.uint64))
    table = np.full(1 << BUCKET_BITS, -1, dtype=np.int32)
    rows = np.arange(rel_pair.size, dtype=np.int32)
    table[bucket] = rows
    table[bucket[table[bucket] != rows]] = -2  # a bucket kept another row: several pairs share it
    shared = np.flatnonzero(table[bucket] == -2)
    order = shared[np.argsort(rel_pair[shared], kind="stable")]  # equal pairs in line order, for the message
    return _PairTable(table, order, rel_pair[order])


def _judged_rows(run_pair: np.ndarray, rel_pair: np.ndarray, table: _PairTable) -> tuple[np.ndarray, np.ndarray]:
    """(run rows, qrels rows) whose mixed pairs are equal: one table lookup per run row, a
    block at a time into one small buffer (fresh memory is costly), a binary search for the
    few rows that land in a shared bucket."""
    rows, judged = [], []
    buffer = np.empty(min(HASH_BLOCK, run_pair.size), dtype=np.uint64)
    for start in range(0, run_pair.size, HASH_BLOCK):
        part = run_pair[start : start + HASH_BLOCK]
        slot = table.buckets[_buckets(part, buffer[: part.size])]
        direct = np.flatnonzero(slot >= 0)
        found = direct[rel_pair[slot[direct]] == part[direct]]
        rows.append(found + start)
        judged.append(slot[found].astype(np.int64))
        crowded = np.flatnonzero(slot == -2)
        if crowded.size:
            place = np.minimum(np.searchsorted(table.ordered, part[crowded]), table.ordered.size - 1)
            hit = table.ordered[place] == part[crowded]
            rows.append(crowded[hit] + start)
            judged.append(table.order[place[hit]])
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(rows), np.concatenate(judged)


def _labels(run_q: np.ndarray, run_d: np.ndarray, run_ids: Ids, qrels: Judgements, rel_q: np.ndarray,
            rel_d: np.ndarray, level: int, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """The qrels label of every run row (the type's minimum when unjudged), by exact (query,
    document) lookup: pairs are found through their keys, then checked on the ids themselves;
    and the mixed pair of every run row."""
    spread = _spread(int(max(run_q.max(initial=0), rel_q.max(initial=0))) + 1)
    rel_pair = _mixed(rel_q, rel_d, spread)
    table = _pair_table(rel_pair)
    repeated = np.flatnonzero(table.ordered[1:] == table.ordered[:-1])
    if repeated.size:
        _judged_twice(qrels, rel_q, rel_d, table.order, repeated, exact)
    run_pair = _mixed(run_q, run_d, spread)
    rows, judged = _judged_rows(run_pair, rel_pair, table)
    # The same mixed pair can stand for another pair: keep the rows whose query and document agree.
    same = (run_q[rows] == rel_q[judged]) & (run_d[rows] == rel_d[judged])
    rows, judged = rows[same], judged[same]
    if not exact:
        same = run_ids.same(rows, qrels.docid, judged)
        rows, judged = rows[same], judged[same]
    # An unjudged row gets the minimum of the type, which is below every label and relevance
    # level: trec_eval never counts an unjudged document as relevant (even with -l 0), and its
    # gain is 0.
    kind = _label_type(qrels.label, level)
    label = np.full(run_q.size, np.iinfo(kind).min, dtype=kind)
    label[rows] = qrels.label[judged]
    return label, run_pair


def _judged_twice(qrels: Judgements, rel_q: np.ndarray, rel_d: np.ndarray, order: np.ndarray,
                  repeated: np.ndarray, exact: bool) -> None:
    """EvalError naming the first qrels line that judges a (query, document) pair again; _Collision
    when the rows sharing a mixed pair are different pairs after all."""
    pairs = [(order[index], order[index + 1]) for index in repeated.tolist()]
    firsts, seconds = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
    same = (rel_q[firsts] == rel_q[seconds]) & (rel_d[firsts] == rel_d[seconds])
    if same.any() and not exact:
        same[same] = qrels.docid.same(firsts[same], qrels.docid, seconds[same])
    if not same.all():
        raise _Collision
    # The mixed pairs are sorted stably: of each pair of rows, the first is the earlier line.
    row = int(seconds.min())
    raise _judged_again(qrels, row, int(firsts[seconds == row][0]))


def _judged_again(qrels: Judgements, row: int, first: int) -> EvalError:
    """The error for qrels row `row`, which judges the (query, document) pair of row `first` again."""
    return EvalError(
        "a document is judged twice for the same query (trec_eval refuses it too)",
        where=row_place(qrels.source, row),
        found=f"query {qrels.qid[row]} document {qrels.docid[row]}, first at {row_place(qrels.source, first)}",
        fix="keep one line per (query, document)",
    )


def _label_type(labels: np.ndarray, level: int) -> type[np.signedinteger]:
    """The narrowest integer type holding every label and the relevance level above its own
    minimum (labels are mostly 0..4: one byte a row instead of eight, for a deep run)."""
    low, high = (min(int(labels.min()), level), int(labels.max())) if labels.size else (level, level)
    for kind in (np.int8, np.int16, np.int32):
        if np.iinfo(kind).min < low and high <= np.iinfo(kind).max:
            return kind
    return np.int64


def _exact_keys(first: Ids, second: Ids) -> tuple[np.ndarray, np.ndarray]:
    """Codes of a hash table of the distinct document ids of both files (slow, never shared)."""
    joined = pa.chunked_array(first.arrow().chunks + second.arrow().chunks, type=pa.string()).combine_chunks()
    codes = as_numpy(pc.dictionary_encode(joined).indices).astype(np.uint64)
    return codes[: len(first)], codes[len(first) :]


_POINTER, _INT64, _INT32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
_TWICE_ROW, _TWICE_FIRST, _REPEATS, _SCATTERED = range(4)  # trec_label.c's report


def _label_library() -> ctypes.CDLL | None:
    """The compiled labelling pass, its argument types declared (once per process)."""
    return compiled.load(Path(__file__).with_name("trec_label.c"), {
        "evalcore_label": (ctypes.c_int, [_INT64, *[_POINTER] * 5, _INT64, *[_POINTER] * 6, _INT32, _INT32,
                                          _POINTER, _INT64, _POINTER]),
        "evalcore_rank_order": (ctypes.c_int, [_INT64, _POINTER, _POINTER, _INT32, _POINTER]),
        "evalcore_codes": (ctypes.c_int64, [_INT64, *[_POINTER] * 3, _INT64, *[_POINTER] * 5])})


def _span_pointers(spans: Spans | None) -> list[int | None]:
    if spans is None:
        return [None, None, None]
    return [spans.data.ctypes.data, spans.starts.ctypes.data, spans.lengths.ctypes.data]


def _labels_compiled(run_q: np.ndarray, run_d: np.ndarray, run_ids: Ids, qrels: Judgements, rel_q: np.ndarray,
                     rel_d: np.ndarray, level: int, exact: bool, queries: int) -> tuple[np.ndarray, bool | None] | None:
    """`_labels`' labels in one pass of C (`trec_label.c`), and whether the run ranks a document twice for a
    query (None: its queries' rows are not all together, so the pass could not tell); None where the pass
    cannot run (no compiler, ids without spans, 2^31 judgements or more)."""
    library = _label_library()
    if library is None or rel_q.size >= 2**31 or queries >= 2**31:
        return None
    run_spans, rel_spans = (None, None) if exact else (run_ids.flat_spans(), qrels.docid.flat_spans())
    if not exact and (run_spans is None or rel_spans is None):
        return None
    kind = _label_type(qrels.label, level)
    label = np.empty(run_q.size, dtype=kind)
    report = np.full(4, -1, dtype=np.int64)
    run_q32, rel_q32 = np.ascontiguousarray(run_q, dtype=np.int32), np.ascontiguousarray(rel_q, dtype=np.int32)
    run_keys, rel_keys = np.ascontiguousarray(run_d, dtype=np.uint64), np.ascontiguousarray(rel_d, dtype=np.uint64)
    rel_label = np.ascontiguousarray(qrels.label, dtype=np.int64)
    status = library.evalcore_label(run_q.size, run_q32.ctypes.data, run_keys.ctypes.data, *_span_pointers(run_spans),
                                    rel_q.size, rel_q32.ctypes.data, rel_keys.ctypes.data, *_span_pointers(rel_spans),
                                    rel_label.ctypes.data, queries, label.itemsize, label.ctypes.data,
                                    int(np.iinfo(kind).min), report.ctypes.data)
    if status != 0:  # out of memory: the numpy path says so in its own way
        return None
    if report[_TWICE_ROW] >= 0:
        raise _judged_again(qrels, int(report[_TWICE_ROW]), int(report[_TWICE_FIRST]))
    return label, None if report[_SCATTERED] else bool(report[_REPEATS])


def _encode(qrels: Judgements, run: Ranking, level: int) -> _Encoded:
    run_q, rel_q, qids = _query_codes(run.qid, qrels.qid)
    (run_d, run_exact), (rel_d, rel_exact) = run.docid.keys(), qrels.docid.keys()
    exact = run_exact and rel_exact
    found = _labels_compiled(run_q, run_d, run.docid, qrels, rel_q, rel_d, level, exact, len(qids))
    if found is not None:
        return _Encoded(run_q, run_d, run.score, found[0], rel_q, qids, run.docid, exact, None, found[1])
    try:
        label, pairs = _labels(run_q, run_d, run.docid, qrels, rel_q, rel_d, level, exact)
    except _Collision:
        (run_d, rel_d), exact = _exact_keys(run.docid, qrels.docid), True
        label, pairs = _labels(run_q, run_d, run.docid, qrels, rel_q, rel_d, level, exact)
    return _Encoded(run_q, run_d, run.score, label, rel_q, qids, run.docid, exact, pairs)


class _Ranked(NamedTuple):
    """Where each rank-order row comes from: `order` (None: the file's order), then the tie
    rows moved in place, position `positions[i]` holding file row `moved[i]`."""

    order: np.ndarray | None
    positions: np.ndarray
    moved: np.ndarray

    def rows(self, ranked: np.ndarray) -> np.ndarray:
        """The file rows of these rank-order rows."""
        if self.order is not None:
            rows: np.ndarray = self.order[ranked]
            return rows
        slot = np.minimum(np.searchsorted(self.positions, ranked), max(self.positions.size - 1, 0))
        inside = self.positions[slot] == ranked if self.positions.size else np.zeros(ranked.size, dtype=bool)
        return np.where(inside, self.moved[slot] if self.positions.size else ranked, ranked)


def _rank_order(encoded: _Encoded) -> tuple[_Ranked, _Encoded]:
    """Row order by query, score descending, docid descending (trec_eval); None if already so.

    A file in order but for ties gets its few reordered rows written into a copy of the keys
    and into the labels instead (returned): a permutation of every row would copy the whole
    run three times.
    """
    run_q, score = encoded.run_q, encoded.score
    grouped = (run_q[1:] > run_q[:-1]) | ((run_q[1:] == run_q[:-1]) & (score[1:] <= score[:-1]))
    order = None if grouped.all() else _sorted_rows(run_q, score, len(encoded.qids))
    sorted_q, sorted_s = (run_q, score) if order is None else (run_q[order], score[order])
    tie = (sorted_q[1:] == sorted_q[:-1]) & (sorted_s[1:] == sorted_s[:-1])
    nothing = np.zeros(0, dtype=np.int64)
    if not tie.any():
        return _Ranked(order, nothing, nothing), encoded
    positions, moved = _tie_order(order, tie, encoded)
    if order is not None:
        order[positions] = moved
        return _Ranked(order, nothing, nothing), encoded
    encoded.label[positions] = encoded.label[moved]
    if encoded.repeats is not False:  # the keys are needed to find repeated documents (they stay the column's own)
        encoded = encoded._replace(run_d=encoded.run_d.copy())
        encoded.run_d[positions] = encoded.run_d[moved]
    return _Ranked(None, positions, moved), encoded


def _sorted_rows(run_q: np.ndarray, score: np.ndarray, queries: int) -> np.ndarray:
    """Rows by query code, then score descending, ties in the file's order: `np.lexsort((-score, run_q))`,
    computed by `trec_label.c` as a counting sort by query and a sort within each query's rows where it is built."""
    library = _label_library()
    if library is not None and queries < 2**31:
        order = np.empty(run_q.size, dtype=np.int64)
        codes, values = np.ascontiguousarray(run_q, dtype=np.int32), np.ascontiguousarray(score, dtype=np.float64)
        if library.evalcore_rank_order(run_q.size, codes.ctypes.data, values.ctypes.data, queries,
                                       order.ctypes.data) == 0:
            return order
    return np.lexsort((-score, run_q))


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
    table = pa.table({"run": from_numpy(run[inside]), "doc": encoded.docid.take(rows)})
    # pyarrow compares strings bytewise, as trec_eval's strcmp.
    sort = as_numpy(pc.sort_indices(table, sort_keys=[("run", "ascending"), ("doc", "descending")]))
    return positions, rows[sort]


def _spread(queries: int) -> np.ndarray:
    """Each query code times an odd constant, spread over all bits (a table: one lookup per row
    instead of a conversion and a multiplication)."""
    spread = np.arange(queries, dtype=np.uint64)
    spread *= _SPREAD
    return spread


def _mixed(run_q: np.ndarray, run_d: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """One integer per (query, document) pair; different pairs rarely share one."""
    mixed: np.ndarray = spread[run_q]
    mixed ^= run_d
    return mixed


def _first_occurrences(run_q: np.ndarray, run_d: np.ndarray, encoded: _Encoded, ranked: _Ranked) -> np.ndarray:
    """Mask of rows (in rank order) that are the first of their (query, document) pair."""
    pairs, mixed = encoded.pairs, None
    if pairs is None:
        pairs = mixed = _mixed(run_q, run_d, _spread(int(run_q.max(initial=0)) + 1))
    # The file's order holds the same pairs as the rank order (ties move within a query).
    ordered = np.sort(pairs)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    keep = np.ones(run_q.size, dtype=bool)
    if repeated.size == 0:
        return keep
    if mixed is None:
        mixed = _mixed(run_q, run_d, _spread(int(run_q.max()) + 1))
    suspects = np.flatnonzero(np.isin(mixed, repeated))
    seen: set[tuple[int, object]] = set()
    # The mixed value can collide, so suspects are settled on the exact pair (they are few).
    if encoded.exact:
        documents: list[object] = run_d[suspects].tolist()
    else:
        documents = encoded.docid.take(ranked.rows(suspects)).to_pylist()
    for row, pair in zip(suspects.tolist(), zip(run_q[suspects].tolist(), documents, strict=False), strict=False):
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
    ranked, encoded = _rank_order(encoded)
    run_q, label = encoded.run_q, encoded.label
    if ranked.order is not None:
        run_q, label = run_q[ranked.order], label[ranked.order]
    if encoded.repeats is not False:  # no document ranked twice for a query: every row is its pair's first
        run_d = encoded.run_d if ranked.order is None else encoded.run_d[ranked.order]
        keep = _first_occurrences(run_q, run_d, encoded, ranked)
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
