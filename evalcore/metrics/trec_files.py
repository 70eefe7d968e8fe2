"""TREC qrels and run files (and a dataset's qrels.parquet) read into columns.

Reading uses pyarrow's multithreaded CSV reader when the file has one consistent separator and
no empty field; anything else (mixed spaces and tabs, a doubled separator, a bad line) goes
through a line-by-line reader that splits on whitespace, as trec_eval does, and names the file
and line of the first problem.
"""

from __future__ import annotations

import itertools
import mmap
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from evalcore.datasets import LABEL_COLUMNS
from evalcore.errors import EvalError

QRELS_COLUMNS = ("qid", "iter", "docid", "rel")
RUN_COLUMNS = ("qid", "q0", "docid", "rank", "score", "tag")


class Judgements(NamedTuple):
    """Qrels as columns: query id, document id (strings), integer label, and the file read."""

    qid: pa.Array
    docid: pa.Array
    label: np.ndarray
    source: str = ""  # the qrels path, so a problem found later can still name file and line


class Ranking(NamedTuple):
    """A run as columns: query id, document id (strings), score."""

    qid: pa.Array
    docid: pa.Array
    score: np.ndarray


# Plain ASCII numbers as trec_eval's atol/atof read them (no `1_0`, no other scripts' digits).
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?inf(?:inity)?", re.IGNORECASE)
INT64_LIMIT = 2**63


def _open_check(path: Path) -> None:
    if not path.exists():
        raise EvalError("file not found", where=str(path), fix="check the path")
    if not path.is_file():
        raise EvalError("not a file", where=str(path), fix="give the path of a file")


def _separator(path: Path) -> str:
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                return "\t" if b"\t" in raw else " "
    return " "


def _contains(path: Path, byte: bytes) -> bool:
    """Whether the file holds `byte` anywhere (memchr over a memory map: fast on large files)."""
    if path.stat().st_size == 0:
        return False
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return data.find(byte) >= 0


def _filled(column: pa.ChunkedArray) -> bool:
    """No empty field (a doubled or dangling separator) and no NaN in the column."""
    if len(column) == 0:
        return True
    if pa.types.is_floating(column.type):
        return not pc.any(pc.is_nan(column)).as_py()
    if pa.types.is_integer(column.type):
        return True
    return bool(pc.min(pc.binary_length(column)).as_py())


def _fast_read(path: Path, names: tuple[str, ...], types: dict[str, pa.DataType]) -> pa.Table | None:
    """pyarrow's reader for well-formed files; None when the file needs the careful reader."""
    separator = _separator(path)
    # With both tabs and spaces, only a whitespace split reads the fields as trec_eval does.
    if _contains(path, b" " if separator == "\t" else b"\t"):
        return None
    # Every column is read (unused ones as raw bytes, cheap) so that an empty field anywhere,
    # which would shift the others, sends the file to the careful reader.
    every = {name: types.get(name, pa.binary()) for name in names}
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=list(names)),
            parse_options=pacsv.ParseOptions(delimiter=separator, quote_char=False),
            convert_options=pacsv.ConvertOptions(column_types=every, null_values=[], strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    if not all(_filled(table[name]) for name in names):
        return None
    return table.select(list(types))


def _careful_read(path: Path, names: tuple[str, ...], types: dict[str, pa.DataType]) -> pa.Table:
    """Whitespace-separated fields line by line; EvalError naming the first bad line."""
    columns: dict[str, list[object]] = {name: [] for name in types}
    kinds = {name: names.index(name) for name in types}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            fields = (raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw).split()
            if not fields:
                continue
            where = f"{path}:{number}"
            if len(fields) != len(names):
                raise EvalError(
                    "wrong number of fields", where=where,
                    found=str(len(fields)), expected=f"{len(names)}: {' '.join(names)}",
                )
            for name, index in kinds.items():
                columns[name].append(_convert(fields[index], types[name], where, name))
    return pa.table({name: pa.array(values, type=types[name]) for name, values in columns.items()})


def _convert(field: bytes, kind: pa.DataType, where: str, name: str) -> object:
    try:
        text = field.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EvalError("not UTF-8 text", where=where, found=str(error)) from None
    if kind == pa.string():
        return text
    if kind == pa.int64():
        if _INTEGER.fullmatch(text) and abs(int(text)) < INT64_LIMIT:
            return int(text)
        raise EvalError(f"column {name} is not an integer", where=where, found=repr(text))
    if _DECIMAL.fullmatch(text):
        return float(text)
    raise EvalError(f"column {name} is not a number", where=where, found=repr(text),
                    expected="a decimal number such as 12.5 or 1.3e-05 (not nan)")


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
    return Judgements(
        table["qid"].combine_chunks(), table["docid"].combine_chunks(), table["rel"].to_numpy(), str(path)
    )


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
    return Judgements(qid, pid, labels, str(path))


def _ints(table: pa.Table, column: str, path: Path) -> np.ndarray:
    """A column as int64; EvalError naming the first row that holds no integer (as the dataset loader)."""
    raw = table[column].to_pandas()
    values = pd.to_numeric(raw, errors="coerce")
    if values.dtype.kind in "iu":
        return values.to_numpy(dtype=np.int64)
    numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(numbers) | (numbers != np.round(numbers)) | (np.abs(numbers) >= INT64_LIMIT)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise EvalError(f"column {column} must hold integers", where=f"{path} row {row}",
                        found=repr(table[column][row].as_py()), expected="an integer")
    return numbers.astype(np.int64)


def read_run(path: str | Path) -> Ranking:
    """A TREC run file (`qid Q0 docid rank score tag`); the rank column is ignored as in trec_eval."""
    types = {"qid": pa.string(), "docid": pa.string(), "score": pa.float64()}
    table = _read(Path(path), RUN_COLUMNS, types)
    return Ranking(table["qid"].combine_chunks(), table["docid"].combine_chunks(), table["score"].to_numpy())


def integer_ids(run: Ranking) -> Ranking:
    """The run with ids made of digits written as integers (`007` -> `7`): a dataset's Parquet
    ids are integers, so zero-padded run ids must meet them."""
    def strip(values: pa.Array) -> pa.Array:
        return pc.replace_substring_regex(values, pattern=r"^(-?)0+([0-9]+)$", replacement=r"\1\2")

    return run._replace(qid=strip(run.qid), docid=strip(run.docid))


def row_place(source: str, row: int) -> str:
    """`file:line` of a qrels row (blank lines are skipped by both readers), `file row N` for Parquet."""
    if not source:
        return f"qrels row {row}"
    path = Path(source)
    if path.suffix == ".parquet" or not path.is_file():
        return f"{source} row {row}"
    with path.open("rb") as handle:
        filled = (number for number, raw in enumerate(handle, start=1) if raw.strip())
        return f"{source}:{next(itertools.islice(filled, row, None), row + 1)}"
