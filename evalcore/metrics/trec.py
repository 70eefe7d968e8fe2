"""TREC qrels and run files in, per-query retrieval measures out, as `trec_eval -q` computes them.

Reading uses pyarrow's multithreaded CSV reader when the file has one consistent separator;
anything else (mixed spaces and tabs, a bad line) goes through a line-by-line reader that
names the file and line of the first problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from evalcore.dataset import LABEL_COLUMNS
from evalcore.errors import EvalError
from evalcore.metrics.retrieval import batch_scores

QRELS_COLUMNS = ("qid", "iter", "docid", "rel")
RUN_COLUMNS = ("qid", "q0", "docid", "rank", "score", "tag")
PACKED_BYTES = 8


class Judgements(NamedTuple):
    """Qrels as columns: query id, document id (strings), integer label."""

    qid: pa.Array
    docid: pa.Array
    label: np.ndarray


class Ranking(NamedTuple):
    """A run as columns: query id, document id (strings), score."""

    qid: pa.Array
    docid: pa.Array
    score: np.ndarray


class TrecScores(NamedTuple):
    """Per-query values, queries sorted by id as trec_eval prints them."""

    qids: list[str]
    values: dict[str, np.ndarray]
    unjudged: int  # run queries without any qrels line, skipped as trec_eval skips them


def _open_check(path: Path) -> None:
    if not path.is_file():
        raise EvalError("file not found", where=str(path), fix="check the path")


def _separator(path: Path) -> str:
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                return "\t" if b"\t" in raw else " "
    return " "


def _fast_read(path: Path, names: tuple[str, ...], types: dict[str, pa.DataType]) -> pa.Table | None:
    """pyarrow's reader for well-formed files; None when the file needs the careful reader."""
    try:
        return pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=list(names)),
            parse_options=pacsv.ParseOptions(delimiter=_separator(path), quote_char=False),
            convert_options=pacsv.ConvertOptions(column_types=types, include_columns=list(types)),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None


def _careful_read(path: Path, names: tuple[str, ...], types: dict[str, pa.DataType]) -> pa.Table:
    """Whitespace-separated fields line by line; EvalError naming the first bad line."""
    columns: dict[str, list[object]] = {name: [] for name in types}
    kinds = {name: names.index(name) for name in types}
    with path.open("r", encoding="utf-8", errors="strict") as handle:
        try:
            for number, line in enumerate(handle, start=1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) != len(names):
                    raise EvalError(
                        "wrong number of fields", where=f"{path}:{number}",
                        found=str(len(fields)), expected=f"{len(names)}: {' '.join(names)}",
                    )
                for name, index in kinds.items():
                    columns[name].append(_convert(fields[index], types[name], f"{path}:{number}", name))
        except UnicodeDecodeError as error:
            raise EvalError("not UTF-8 text", where=str(path), found=str(error)) from None
    return pa.table({name: pa.array(values, type=types[name]) for name, values in columns.items()})


def _convert(field: str, kind: pa.DataType, where: str, name: str) -> object:
    if kind == pa.string():
        return field
    try:
        return int(field) if kind == pa.int64() else float(field)
    except ValueError:
        raise EvalError(f"column {name} is not a number", where=where, found=repr(field)) from None


def _read(path: Path, names: tuple[str, ...], types: dict[str, pa.DataType]) -> pa.Table:
    _open_check(path)
    table = _fast_read(path, names, types)
    return table if table is not None else _careful_read(path, names, types)


def read_qrels(path: str | Path) -> Judgements:
    """TREC qrels (`qid 0 docid rel`) or a dataset's qrels.parquet (qid, pid, optional label)."""
    path = Path(path)
    if path.suffix == ".parquet":
        return _read_parquet_qrels(path)
    types = {"qid": pa.string(), "docid": pa.string(), "rel": pa.int64()}
    table = _read(path, QRELS_COLUMNS, types)
    return Judgements(table["qid"].combine_chunks(), table["docid"].combine_chunks(), table["rel"].to_numpy())


def _read_parquet_qrels(path: Path) -> Judgements:
    _open_check(path)
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise EvalError("not a Parquet file", where=str(path), found=str(error)) from None
    missing = [name for name in ("qid", "pid") if name not in table.column_names]
    if missing:
        raise EvalError("missing column", where=str(path), found=", ".join(missing), expected="qid, pid")
    label_name = next((name for name in LABEL_COLUMNS if name in table.column_names), None)
    labels = np.ones(table.num_rows, dtype=np.int64) if label_name is None else _ints(table, label_name, path)
    # Ids may be stored as int64 or as strings of digits: both become the same decimal string.
    qid = pa.array(_ints(table, "qid", path).astype(str))
    pid = pa.array(_ints(table, "pid", path).astype(str))
    return Judgements(qid, pid, labels)


def _ints(table: pa.Table, column: str, path: Path) -> np.ndarray:
    try:
        return pd.to_numeric(table[column].to_pandas(), errors="raise").astype(np.int64).to_numpy()
    except (ValueError, TypeError):
        raise EvalError(f"column {column} must hold integers", where=str(path)) from None


def read_run(path: str | Path) -> Ranking:
    """A TREC run file (`qid Q0 docid rank score tag`); the rank column is ignored as in trec_eval."""
    types = {"qid": pa.string(), "docid": pa.string(), "score": pa.float64()}
    table = _read(Path(path), RUN_COLUMNS, types)
    return Ranking(table["qid"].combine_chunks(), table["docid"].combine_chunks(), table["score"].to_numpy())


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
        raise EvalError(
            "a document is judged twice for the same query", where="qrels",
            found=f"query {qrels.qid[row]} document {qrels.docid[row]}", fix="keep one line per (query, document)",
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
