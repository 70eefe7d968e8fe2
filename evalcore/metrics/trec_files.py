"""TREC qrels and run files (and a dataset's qrels.parquet) read into columns.

A well-formed file (one space between fields, plain ASCII, no comment or blank line) is read by
`trec_scan.scan`, a numpy byte scan of a memory map that keeps ids as spans of the file. A file
with one consistent separator and no empty field otherwise goes through pyarrow's multithreaded
CSV reader; anything else (mixed spaces and tabs, a doubled separator, fields after a run's
tag, a bad line) goes through a line-by-line reader that splits on whitespace, as trec_eval
does, and names the file and line of the first problem. Every reader skips blank lines and
comment lines (first field starting with `#`), as trec_eval does; a value the byte scan cannot
parse (a NaN score, a label that is no integer) sends the file to the others, which name it.
"""

from __future__ import annotations

import itertools
import mmap
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from evalcore.datasets import LABEL_COLUMNS
from evalcore.errors import EvalError
from evalcore.metrics import trec_scan
from evalcore.metrics.trec_scan import Ids

QRELS_COLUMNS = ("qid", "iter", "docid", "rel")
RUN_COLUMNS = ("qid", "q0", "docid", "rank", "score", "tag")


class Judgements(NamedTuple):
    """Qrels as columns: query id, document id, integer label, and the file read."""

    qid: Ids
    docid: Ids
    label: np.ndarray
    source: str = ""  # the qrels path, so a problem found later can still name file and line


class ExtraFields(NamedTuple):
    """How many lines had fields after the last expected one (ignored, as trec_eval does), and the first."""

    lines: int
    first: str  # file:line


class Ranking(NamedTuple):
    """A run as columns: query id, document id, score."""

    qid: Ids
    docid: Ids
    score: np.ndarray
    extra: ExtraFields | None = None  # lines with fields after the run tag (ignored)


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


class _Layout(NamedTuple):
    """What a byte scan of the file found (see `_scan`)."""

    regular: bool  # one separator, never doubled, never at a line's start or end
    comments: bool  # some line starts with #


SCAN_BLOCK = 1 << 20


def _contains(path: Path, byte: bytes) -> bool:
    """Whether the file holds `byte` anywhere (memchr over a memory map: fast on large files)."""
    if path.stat().st_size == 0:
        return False
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return data.find(byte) >= 0


def _scan(path: Path, separator: str) -> _Layout:
    """Whether pyarrow's reader sees the same fields as a whitespace split, checked on the bytes.

    An empty field (a doubled separator, one at a line's start or end) would shift the columns
    and the other separator would hide a field boundary. Single bytes are looked for with
    memchr; pairs with numpy, over cache-sized blocks, which costs a fraction of reading the
    unused columns to look for empty ones.
    """
    if _contains(path, b"\t" if separator == " " else b" "):
        return _Layout(False, False)
    ends = [ord("\n")] + ([ord("\r")] if _contains(path, b"\r") else [])
    hashed = _contains(path, b"#")
    sep = ord(separator)
    # Byte 0 of the buffer holds the previous block's last byte (a newline before the first).
    # Every array is allocated once: fresh megabytes per block cost page faults.
    chunk = np.empty(SCAN_BLOCK + 1, dtype=np.uint8)
    is_sep, is_end, around = (np.empty(SCAN_BLOCK + 1, dtype=bool) for _ in range(3))
    chunk[0] = ord("\n")
    comments = False
    with path.open("rb", buffering=0) as handle:
        if handle.read(3) != b"\xef\xbb\xbf":
            handle.seek(0)
        while size := handle.readinto(memoryview(chunk)[1:]):  # type: ignore[arg-type]
            width = size + 1
            block, sep_, end_, near = chunk[:width], is_sep[:width], is_end[:width], around[:width]
            np.equal(block, sep, out=sep_)
            np.equal(block, ends[0], out=end_)
            for byte in ends[1:]:
                end_ |= block == byte
            np.logical_or(sep_, end_, out=near)
            if (sep_[1:] & near[:-1]).any() or (sep_[:-1] & near[1:]).any():
                return _Layout(False, comments)
            comments = comments or (hashed and bool((end_[:-1] & (block[1:] == ord("#"))).any()))
            chunk[0] = block[-1]
    return _Layout(bool(chunk[0] != sep), comments)


def _no_nan(column: pa.ChunkedArray) -> bool:
    """No NaN in the column (pyarrow reads `nan`, trec_eval's callers never mean it)."""
    return not pa.types.is_floating(column.type) or not pc.any(pc.is_nan(column)).as_py()


def _skip_comment(row: pacsv.InvalidRow) -> str:
    """pyarrow's hook for a line with another number of fields: a comment is skipped, anything
    else sends the file to the careful reader."""
    return "skip" if row.text.lstrip("\ufeff \t").startswith("#") else "error"


def _fast_read(path: Path, names: tuple[str, ...], types: dict[str, pa.DataType]) -> pa.Table | None:
    """pyarrow's reader for well-formed files; None when the file needs the careful reader."""
    separator = _separator(path)
    layout = _scan(path, separator)
    if not layout.regular:
        return None
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=list(names)),
            parse_options=pacsv.ParseOptions(delimiter=separator, quote_char=False, invalid_row_handler=_skip_comment),
            convert_options=pacsv.ConvertOptions(
                column_types=types, include_columns=list(types), null_values=[], strings_can_be_null=False
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    if layout.comments:  # a comment with as many fields as a data line was parsed as one
        table = table.filter(pc.invert(pc.starts_with(table[names[0]], "#")))
    # The scan rules out empty fields, so only a NaN score is left for the careful reader to name.
    return table if all(_no_nan(table[name]) for name in types) else None


def _fields(raw: bytes, number: int) -> list[bytes]:
    """The whitespace-separated fields of line `number` (a byte-order mark on line 1 is skipped)."""
    return (raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw).split()


def _is_data(fields: list[bytes]) -> bool:
    """Whether a line holds data: blank lines and comments (first field starting with #) do not."""
    return bool(fields) and not fields[0].startswith(b"#")


def _careful_read(
    path: Path, names: tuple[str, ...], types: dict[str, pa.DataType], extra_allowed: bool
) -> tuple[pa.Table, ExtraFields | None]:
    """Whitespace-separated fields line by line; EvalError naming the first bad line. Fields after
    the last name are counted and ignored when `extra_allowed` (a run's, as trec_eval does)."""
    columns: dict[str, list[object]] = {name: [] for name in types}
    kinds = {name: names.index(name) for name in types}
    extra, first = 0, ""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            fields = _fields(raw, number)
            if not _is_data(fields):
                continue
            where = f"{path}:{number}"
            if len(fields) < len(names) or (len(fields) > len(names) and not extra_allowed):
                raise EvalError(
                    "wrong number of fields", where=where,
                    found=str(len(fields)), expected=f"{len(names)}: {' '.join(names)}",
                )
            if len(fields) > len(names):
                extra, first = extra + 1, first or where
            for name, index in kinds.items():
                columns[name].append(_convert(fields[index], types[name], where, name))
    table = pa.table({name: pa.array(values, type=types[name]) for name, values in columns.items()})
    return table, ExtraFields(extra, first) if extra else None


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


def _read(
    path: Path, names: tuple[str, ...], types: dict[str, pa.DataType], extra_allowed: bool = False
) -> tuple[pa.Table, ExtraFields | None]:
    _open_check(path)
    table = _fast_read(path, names, types)
    return (table, None) if table is not None else _careful_read(path, names, types, extra_allowed)


def read_qrels(path: str | Path) -> Judgements:
    """TREC qrels (`qid 0 docid rel`) or a dataset's qrels.parquet (qid, pid, optional label)."""
    path = Path(path)
    if path.suffix == ".parquet":
        return _read_parquet_qrels(path)
    _open_check(path)
    scanned = trec_scan.scan(path, len(QRELS_COLUMNS), 0, 2, {3: pa.int64()})
    if scanned is not None:
        return Judgements(scanned.ids[0], scanned.ids[2], scanned.numbers[3], str(path))
    types = {"qid": pa.string(), "docid": pa.string(), "rel": pa.int64()}
    table, _ = _read(path, QRELS_COLUMNS, types)
    return Judgements(Ids(table["qid"]), Ids(table["docid"]), table["rel"].to_numpy(), str(path))


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
    qid = pa.chunked_array([pa.array(_ints(table, "qid", path).astype(str))])
    pid = pa.chunked_array([pa.array(_ints(table, "pid", path).astype(str))])
    return Judgements(Ids(qid), Ids(pid), labels, str(path))


def _ints(table: pa.Table, column: str, path: Path) -> np.ndarray:
    """A column as int64; EvalError naming the first row that holds no integer (as the dataset loader)."""
    import pandas as pd  # only Parquet qrels need it, and importing it costs a third of a second

    raw = table[column].to_pandas()
    values = pd.to_numeric(raw, errors="coerce")
    if values.dtype.kind in "iu":
        ints: np.ndarray = values.to_numpy(dtype=np.int64)
        return ints
    numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(numbers) | (numbers != np.round(numbers)) | (np.abs(numbers) >= INT64_LIMIT)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise EvalError(f"column {column} must hold integers", where=f"{path} row {row}",
                        found=repr(table[column][row].as_py()), expected="an integer")
    converted: np.ndarray = numbers.astype(np.int64)
    return converted


def read_run(path: str | Path) -> Ranking:
    """A TREC run file (`qid Q0 docid rank score tag`); the rank column and any field after the
    tag are ignored, as in trec_eval (`Ranking.extra` counts the lines that had some)."""
    path = Path(path)
    _open_check(path)
    scanned = trec_scan.scan(path, len(RUN_COLUMNS), 0, 2, {4: pa.float64()})
    if scanned is not None and not np.isnan(scanned.numbers[4]).any():  # NaN: the careful reader names its line
        return Ranking(scanned.ids[0], scanned.ids[2], scanned.numbers[4])
    types = {"qid": pa.string(), "docid": pa.string(), "score": pa.float64()}
    table, extra = _read(path, RUN_COLUMNS, types, extra_allowed=True)
    # Columns stay in pyarrow's chunks: joining them would copy hundreds of megabytes.
    return Ranking(Ids(table["qid"]), Ids(table["docid"]), table["score"].to_numpy(), extra)


def integer_ids(run: Ranking) -> Ranking:
    """The run with ids made of digits written as integers (`007` -> `7`): a dataset's Parquet
    ids are integers, so zero-padded run ids must meet them."""
    def strip(values: pa.ChunkedArray) -> pa.ChunkedArray:
        return pc.replace_substring_regex(values, pattern=r"^(-?)0+([0-9]+)$", replacement=r"\1\2")

    return run._replace(qid=Ids(strip(run.qid.arrow())), docid=Ids(strip(run.docid.arrow())))


def read_pair(qrels: Path, run: Path) -> tuple[Judgements, Ranking]:
    """The qrels and the run to score against them; against a dataset's qrels.parquet, the run's ids as integers."""
    ranking = read_run(run)
    return read_qrels(qrels), integer_ids(ranking) if qrels.suffix == ".parquet" else ranking


def row_place(source: str, row: int) -> str:
    """`file:line` of a qrels row (blank and comment lines are skipped by both readers), `file row N`
    for Parquet."""
    if not source:
        return f"qrels row {row}"
    path = Path(source)
    if path.suffix == ".parquet" or not path.is_file():
        return f"{source} row {row}"
    with path.open("rb") as handle:
        filled = (number for number, raw in enumerate(handle, start=1) if _is_data(_fields(raw, number)))
        return f"{source}:{next(itertools.islice(filled, row, None), row + 1)}"
