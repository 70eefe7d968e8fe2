"""Id columns of TREC files without a Python string per row, and the byte scan that reads them.

A well-formed run or qrels file (every line the same number of fields, one space between
them, plain ASCII, no comment or blank line, a newline at the end) is read straight from a
memory map, in one pass of compiled C (`trec_scan.c`) or, where it cannot be built, with numpy
a few megabytes at a time: the positions of the separators give every field's start and length;
the numbers are parsed by pyarrow from string views over the bytes (in C, correctly rounded as
pyarrow does); ids stay spans of the file until a few of them are needed as strings (ties,
error messages). Both paths read a file to the same values, bit for bit.

Ids are compared through 64-bit keys computed from their bytes eight at a time. A key is a
bijective mix of the id's first 8 bytes, further mixed with the rest for a longer id: ids of at
most 8 bytes (without NUL) never share a key, and `Ids.exact` says so; otherwise callers check
every match found through keys on the bytes (`Ids.same`), so that a collision is never taken
for an equal id.
"""

from __future__ import annotations

import ctypes
import mmap
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.runtime import compiled

WORD = 8
SCAN_BLOCK = 1 << 19
LONGEST_FIELD = 1 << 16  # a longer field sends the file to the general readers
# Masks keeping the low n bytes of a word, n = 0..8.
LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(WORD + 1)], dtype=np.uint64)
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15))
_SHIFTS = (np.uint64(30), np.uint64(27), np.uint64(31))


_NUMPY_TYPES = {"bool": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
                "uint32": np.uint32, "uint64": np.uint64, "float": np.float32, "double": np.float64}


def as_numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A pyarrow array of numbers or booleans without nulls as numpy, read from its buffers:
    pyarrow's own conversion (to_numpy, np.asarray) imports pandas, a third of a second."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    kind = _NUMPY_TYPES.get(str(values.type))
    if kind is None or values.null_count:
        converted: np.ndarray = values.to_numpy(zero_copy_only=False)
        return converted
    if kind is np.uint8:  # booleans: one bit each
        bits = np.frombuffer(values.buffers()[1], dtype=np.uint8)
        unpacked = np.unpackbits(bits, bitorder="little")[values.offset : values.offset + len(values)]
        return unpacked.view(bool)
    width = np.dtype(kind).itemsize
    return np.frombuffer(values.buffers()[1], dtype=kind, count=len(values), offset=values.offset * width)


def from_numpy(values: np.ndarray) -> pa.Array:
    """An int64 numpy array as pyarrow's, without the conversion that imports pandas."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), values.size, [None, pa.py_buffer(values)])


class Spans(NamedTuple):
    """Fields of a file: `data[starts[i] : starts[i] + lengths[i]]` is row i's."""

    data: np.ndarray  # uint8
    starts: np.ndarray  # int64
    lengths: np.ndarray  # int64 or int32


def _words(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The 8 bytes at each position as a little-endian word (zeros past the end of `data`)."""
    body = max(data.size - WORD + 1, 0)
    # Fancy indexing of a view with a 1-byte stride (np.take on it is many times slower).
    view = np.ndarray((body,), dtype="<u8", buffer=data, strides=(1,))
    if not positions.size or int(positions.max()) < body:
        words: np.ndarray = view[positions]
        return words
    late = positions >= body
    words = view[np.where(late, 0, positions)] if body else np.zeros(positions.size, dtype=np.uint64)
    tail = np.concatenate((data[body:], np.zeros(WORD, dtype=np.uint8)))
    # A position past the end (a short field's unused word) reads zeros: its mask drops it.
    words[late] = np.ndarray((tail.size - WORD + 1,), dtype="<u8", buffer=tail, strides=(1,))[
        np.minimum(positions[late] - body, tail.size - WORD)
    ]
    return words


def _masks(skip: int, keep: int, lengths: np.ndarray) -> np.ndarray:
    """Per field of these lengths, the mask of its bytes skip .. skip+keep-1 in a word read at
    byte `skip` (a table lookup: np.clip is many times slower on a few thousand values)."""
    table = LOW_BYTES[np.minimum(np.maximum(np.arange(skip + keep + 1) - skip, 0), keep)]
    masks: np.ndarray = table[np.minimum(lengths, skip + keep)]
    return masks


def _word(spans: Spans, index: int) -> np.ndarray:
    """Word `index` of every field (bytes 8*index .. 8*index+7), bytes past the field's end zeroed."""
    word = _words(spans.data, spans.starts + WORD * index if index else spans.starts)
    word &= _masks(WORD * index, WORD, spans.lengths)
    return word


def _mix(key: np.ndarray) -> np.ndarray:
    """A bijection of 64-bit words (splitmix64's finaliser), in place."""
    key ^= key >> _SHIFTS[0]
    key *= _MIX[0]
    key ^= key >> _SHIFTS[1]
    key *= _MIX[1]
    key ^= key >> _SHIFTS[2]
    return key


def keys(spans: Spans) -> np.ndarray:
    """A key per field: equal fields, equal keys. A field of at most 8 bytes is its own key
    (exact without NUL); a longer one gets a hash of its length and its first, middle and last
    8 bytes, which covers every byte of a field of up to 24. A field's key depends on its bytes
    alone, never on the other fields it is read with."""
    longest = int(spans.lengths.max()) if spans.lengths.size else 0
    every = longest > WORD and int(spans.lengths.min()) > WORD  # no field is its own key
    key = np.empty(0, dtype=np.uint64) if every else _word(spans, 0)
    if longest > WORD:
        rows = None if every else np.flatnonzero(spans.lengths > WORD)
        starts, lengths = (spans.starts, spans.lengths) if rows is None else (spans.starts[rows], spans.lengths[rows])
        view = np.ndarray((max(spans.data.size - WORD + 1, 0),), dtype="<u8", buffer=spans.data, strides=(1,))
        ends = starts + lengths - WORD  # every word read lies inside its field: no mask
        longer = view[starts] if rows is None else key[rows]
        longer *= _MIX[0]
        longer ^= view[ends] * _MIX[1]
        longer += lengths.astype(np.uint64)
        # The middle word for every long field, whatever the others' lengths: a key must depend on its
        # field alone, or the same id would get two keys in two files (or two blocks of one).
        middle = starts + (lengths - WORD) // 2
        longer ^= view[middle] * _MIX[2]
        _mix(longer)
        if rows is None:
            key = longer
        else:
            key[rows] = longer
    return key


def _exact(spans: Spans, clean: bool) -> bool:
    """Whether keys of these fields are exact: every field 1 to 8 bytes, none with a NUL byte."""
    if not spans.lengths.size:
        return True
    if int(spans.lengths.max()) > WORD or int(spans.lengths.min()) < 1:
        return False
    return clean or bool(spans.data.size == 0 or spans.data.min() > 0)


def changes(spans: Spans) -> np.ndarray:
    """Whether each row's field differs from the previous row's (row 0: True)."""
    differs = np.empty(spans.starts.size, dtype=bool)
    if not differs.size:
        return differs
    differs[0] = True
    np.not_equal(spans.lengths[1:], spans.lengths[:-1], out=differs[1:])
    for index in range(max(-(-int(spans.lengths.max()) // WORD), 1)):
        word = _word(spans, index)
        differs[1:] |= word[1:] != word[:-1]
    return differs


def strings(spans: Spans, rows: np.ndarray) -> pa.Array:
    """The fields of these rows as a pyarrow string array (their bytes copied)."""
    picked = Spans(spans.data, spans.starts[rows], spans.lengths[rows])
    total = int(picked.lengths.sum(dtype=np.int64))
    return _views(picked).cast(pa.string() if total < 2**31 else pa.large_string())


# A string view names its bytes by a buffer index and a 32-bit offset: buffer k is the data from byte
# k * VIEW_REACH on, 2 * VIEW_REACH bytes long, so a field (under LONGEST_FIELD bytes) lies whole in the buffer
# its start falls in, whatever the size of the file.
VIEW_REACH = 1 << 30


def _views(spans: Spans) -> pa.Array:
    """The fields as a pyarrow string_view array over the spans' data (no bytes copied)."""
    lengths = spans.lengths
    first = _words(spans.data, spans.starts)
    # A view is 16 bytes: the length (int32), then the bytes inline (up to 12, zero-padded), or a
    # 4-byte prefix, the buffer's index and the offset in it.
    views = np.empty((lengths.size, 2), dtype=np.uint64)
    low = views[:, 0]
    np.bitwise_and(first, _masks(0, 4, lengths), out=low)
    low <<= np.uint64(32)
    low |= lengths.astype(np.uint64)
    high = views[:, 1]
    np.right_shift(first, np.uint64(32), out=high)
    high &= _masks(4, 4, lengths)
    if (lengths > 8).any():
        second = _words(spans.data, spans.starts + WORD)
        second &= _masks(WORD, 4, lengths)
        second <<= np.uint64(32)
        high |= second
        far = np.flatnonzero(lengths > 12)
        if far.size:
            buffer, offset = np.divmod(spans.starts[far], VIEW_REACH)
            high[far] = (offset.astype(np.uint64) << np.uint64(32)) | buffer.astype(np.uint64)
    data = spans.data
    buffers = [pa.py_buffer(data[start : start + 2 * VIEW_REACH]) for start in range(0, max(data.size, 1), VIEW_REACH)]
    return pa.Array.from_buffers(pa.string_view(), lengths.size, [None, pa.py_buffer(views), *buffers])


def numbers(spans: Spans, kind: pa.DataType) -> np.ndarray:
    """The fields parsed as numbers of `kind` by pyarrow, from string views over the bytes;
    pa.ArrowInvalid when one is not a number."""
    lengths = spans.lengths
    if kind == pa.int64() and lengths.size and int(lengths.max()) == 1:  # one-digit labels
        digits: np.ndarray = spans.data[spans.starts].astype(np.int64) - ord("0")
        if digits.min() >= 0 and digits.max() <= 9:
            return digits
    array = _views(spans)
    return as_numpy(array.cast(kind))


class Ids:
    """A column of ids: pyarrow strings; spans of a file with their keys; or runs of equal ids
    (the first row of each run and its id), as a file's query column is read. The runs' ids may
    be spans of the file, made strings when first asked for (a shuffled run has a run per row)."""

    def __init__(self, arrow: pa.ChunkedArray | None = None, spans: Spans | None = None,
                 spans_keys: tuple[np.ndarray, bool] | None = None,
                 runs: tuple[np.ndarray, pa.Array | Spans, int] | None = None) -> None:
        self._arrow, self._spans = arrow, spans
        self._runs: tuple[np.ndarray, pa.Array, int] | None = None
        self._head_spans: Spans | None = None
        if runs is not None:
            rows, values, count = runs
            if isinstance(values, Spans):
                self._head_spans = Spans(values.data, np.ascontiguousarray(values.starts, dtype=np.int64),
                                         np.ascontiguousarray(values.lengths, dtype=np.int32))
                self._runs = (rows, pa.nulls(0, pa.string()), count)  # made from the spans when asked for
            else:
                self._runs = (rows, values, count)
        self._keys = spans_keys

    def _run_values(self) -> pa.Array:
        assert self._runs is not None
        if self._head_spans is not None:
            spans, self._head_spans = self._head_spans, None
            self._runs = (self._runs[0], strings(spans, np.arange(spans.starts.size)), self._runs[2])
        return self._runs[1]

    def head_spans(self) -> tuple[np.ndarray, Spans] | None:
        """`heads` with the ids as spans of the file (starts int64, lengths int32) while they are not yet strings."""
        if self._runs is None or self._head_spans is None:
            return None
        return self._runs[0], self._head_spans

    def __len__(self) -> int:
        if self._runs is not None:
            return self._runs[2]
        if self._spans is not None:
            return len(self._spans.starts)
        return len(self._arrow) if self._arrow is not None else 0

    def arrow(self) -> pa.ChunkedArray:
        """Every id as pyarrow strings (built once when the column is spans or runs)."""
        if self._arrow is None:
            self._arrow = pa.chunked_array([self.take(np.arange(len(self)))])
        return self._arrow

    def to_pylist(self) -> list[str]:
        return list(self.arrow().to_pylist())

    def __getitem__(self, row: int) -> str:
        return str(self.take(np.array([row]))[0].as_py())

    def take(self, rows: np.ndarray) -> pa.Array:
        """The ids of these rows as a pyarrow string array."""
        rows = np.asarray(rows, dtype=np.int64)
        if self._arrow is not None:
            return self._arrow.take(from_numpy(rows)).combine_chunks()
        if self._runs is not None:
            starts, values = self._runs[0], self._run_values()
            return values.take(from_numpy(np.searchsorted(starts, rows, side="right") - 1))
        assert self._spans is not None
        return strings(self._spans, rows)

    def heads(self) -> tuple[np.ndarray, pa.Array]:
        """Rows whose id differs from the previous row's (and row 0), and those ids."""
        if self._runs is not None:
            return self._runs[0], self._run_values()
        if self._spans is not None:
            rows = np.flatnonzero(changes(self._spans))
        else:
            parts = [np.flatnonzero(changes(spans)) + start for spans, start in _chunk_spans(self.arrow())]
            rows = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return rows, self.take(rows)

    def keys(self) -> tuple[np.ndarray, bool]:
        """(a uint64 key per row, exact): equal ids have equal keys; unless `exact`, different
        ids may share one (see `same`)."""
        if self._keys is None:
            if self._spans is not None:
                self._keys = (keys(self._spans), _exact(self._spans, False))
            else:
                parts = _chunk_spans(self.arrow())
                found = [keys(spans) for spans, _ in parts]
                self._keys = (np.concatenate(found) if found else np.zeros(0, dtype=np.uint64),
                              all(_exact(spans, False) for spans, _ in parts))
        return self._keys

    def flat_spans(self) -> Spans | None:
        """Every id as a span of one buffer, starts as int64 and lengths as int32 (the compiled passes' form);
        None for a column of runs, or one too large for a single buffer."""
        if self._spans is not None:
            spans = self._spans
        elif self._arrow is not None:
            try:
                parts = _chunk_spans(pa.chunked_array([self._arrow.combine_chunks()]))
            except pa.ArrowInvalid:  # over 2 GiB of ids in a 32-bit offsets column: no one buffer
                return None
            if not parts:
                return Spans(np.zeros(1, dtype=np.uint8), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32))
            spans = parts[0][0]
        else:
            return None
        return Spans(spans.data, np.ascontiguousarray(spans.starts, dtype=np.int64),
                     np.ascontiguousarray(spans.lengths, dtype=np.int32))

    def same(self, rows: np.ndarray, other: Ids, other_rows: np.ndarray) -> np.ndarray:
        """Whether the id of each of `rows` equals `other`'s id at the matching row, on the bytes."""
        if not rows.size:
            return np.zeros(0, dtype=bool)
        if self._spans is not None and other._spans is not None:  # compared a word at a time
            ours = Spans(self._spans.data, self._spans.starts[rows], self._spans.lengths[rows])
            theirs = Spans(other._spans.data, other._spans.starts[other_rows], other._spans.lengths[other_rows])
            equal: np.ndarray = ours.lengths == theirs.lengths
            for index in range(-(-int(ours.lengths.max()) // WORD)):
                equal &= _word(ours, index) == _word(theirs, index)
            return equal
        return as_numpy(pc.equal(self.take(rows), other.take(other_rows)))


def _chunk_spans(values: pa.ChunkedArray) -> list[tuple[Spans, int]]:
    """Each non-empty chunk of a string column as spans of its data buffer, with its first row."""
    out, start = [], 0
    for chunk in values.chunks:
        if len(chunk):
            wide = chunk.type == pa.large_string()
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64 if wide else np.int32, count=len(chunk) + 1,
                                    offset=chunk.offset * (8 if wide else 4)).astype(np.int64)
            buffer = chunk.buffers()[2]
            data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, dtype=np.uint8)
            out.append((Spans(data, offsets[:-1], np.diff(offsets)), start))
        start += len(chunk)
    return out


class _Grown:
    """A numpy array filled block by block, grown when a block would not fit."""

    def __init__(self, size: int, dtype: type[np.generic]) -> None:
        self.values, self.filled = np.empty(size, dtype=dtype), 0

    def add(self, part: np.ndarray) -> None:
        if self.filled + part.size > self.values.size:
            self.values = np.resize(self.values, max(2 * self.values.size, self.filled + part.size))
        self.values[self.filled : self.filled + part.size] = part
        self.filled += part.size

    def done(self) -> np.ndarray:
        return self.values[: self.filled]


def _field(block: np.ndarray, grid: np.ndarray, line_starts: np.ndarray, index: int) -> Spans:
    """Field `index` of every line of a block (`grid`: each line's separator positions)."""
    start = line_starts if index == 0 else grid[:, index - 1] + 1
    return Spans(block, start, grid[:, index] - start)


class Columns(NamedTuple):
    """What `scan` read: per wanted field, Ids (query and document ids) or numbers."""

    ids: dict[int, Ids]
    numbers: dict[int, np.ndarray]


def scan(path: Path, count: int, grouped: int, ids: int, parsed: dict[int, pa.DataType]) -> Columns | None:
    """The fields of a well-formed file: field `grouped` as runs of equal ids, field `ids` as
    spans with keys, the `parsed` fields as numbers. None when some line is not `count` fields
    of printable ASCII separated by single spaces ending with a newline (a comment, a blank
    line, a tab, a carriage return, no newline at the end): the general readers take the file."""
    size = path.stat().st_size
    if size == 0 or size >= 2**62:
        return None
    with path.open("rb") as handle:
        memory = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    if memory[size - 1] != ord("\n"):
        return None
    data = np.frombuffer(memory, dtype=np.uint8)
    library = _library() if len(parsed) <= 1 and set(parsed.values()) <= set(_KINDS) else None
    if library is not None:
        return _scan_compiled(library, data, count, grouped, ids, parsed)
    first_end = memory.rfind(b"\n", 0, SCAN_BLOCK) + 1 if size > SCAN_BLOCK else size
    estimate = int(size / max(first_end, 1) * max(memory[:first_end].count(b"\n"), 1) * 1.05) + 16
    starts, lengths, id_keys = _Grown(estimate, np.int64), _Grown(estimate, np.int32), _Grown(estimate, np.uint64)
    values = {index: _Grown(estimate, np.float64 if kind == pa.float64() else np.int64)
              for index, kind in parsed.items()}
    group_rows, group_starts, group_lengths = _Grown(1024, np.int64), _Grown(1024, np.int64), _Grown(1024, np.int32)
    near = np.empty(SCAN_BLOCK, dtype=bool)
    begin, row, longest, shortest, previous = 0, 0, 0, LONGEST_FIELD, b""
    while begin < size:
        end = size if size - begin <= SCAN_BLOCK else memory.rfind(b"\n", begin, begin + SCAN_BLOCK) + 1
        if end <= begin:  # a line longer than a block
            return None
        block = data[begin:end]
        separators = near[: block.size]
        np.less_equal(block, ord(" "), out=separators)
        positions = np.flatnonzero(separators)
        lines = positions.size // count
        if positions.size != lines * count or positions[0] == 0 or int(block.max()) >= 0x80:
            return None
        if int((positions[1:] - positions[:-1]).min(initial=2)) < 2:  # an empty field: doubled separator, blank line
            return None
        grid = positions.reshape(lines, count)
        if not (block[grid[:, -1]] == ord("\n")).all():
            return None
        np.equal(block, ord(" "), out=separators)
        if np.count_nonzero(separators) != lines * (count - 1):  # tabs, carriage returns, control bytes
            return None
        line_starts = np.empty(lines, dtype=np.int64)
        line_starts[0] = 0
        np.add(grid[:-1, -1], 1, out=line_starts[1:])
        if (block[line_starts] == ord("#")).any():  # a comment line (with as many fields as data)
            return None
        queries = _field(block, grid, line_starts, grouped)
        heads = changes(queries)
        first = bytes(block[queries.starts[0] : queries.starts[0] + queries.lengths[0]])
        heads[0] = first != previous
        head_rows = np.flatnonzero(heads)
        group_rows.add(head_rows + row)
        group_starts.add(queries.starts[head_rows] + begin)
        group_lengths.add(queries.lengths[head_rows])
        last = lines - 1
        previous = bytes(block[queries.starts[last] : queries.starts[last] + queries.lengths[last]])
        documents = _field(block, grid, line_starts, ids)
        longest, shortest = max(longest, int(documents.lengths.max())), min(shortest, int(documents.lengths.min()))
        if longest >= LONGEST_FIELD:
            return None
        id_keys.add(keys(documents))
        starts.add(documents.starts + begin)
        lengths.add(documents.lengths)
        try:
            for index, kind in parsed.items():
                values[index].add(numbers(_field(block, grid, line_starts, index), kind))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        begin, row = end, row + lines
    head_spans = Spans(data, group_starts.done(), group_lengths.done())
    query_ids = Ids(runs=(group_rows.done(), head_spans, row))
    document_ids = Ids(spans=Spans(data, starts.done(), lengths.done()),
                       spans_keys=(id_keys.done(), longest <= WORD and shortest >= 1))
    return Columns({grouped: query_ids, ids: document_ids}, {index: grown.done() for index, grown in values.items()})


_KINDS = {pa.int64(): (0, np.dtype(np.int64)), pa.float64(): (1, np.dtype(np.float64))}  # the C scan's number kinds
_POINTER, _INT64, _INT32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
_DONE, _FULL = 0, 2  # the C scan's answers (1: not a well-formed file)


def _library() -> ctypes.CDLL | None:
    """The compiled scan, its argument types declared (once per process)."""
    return compiled.load(Path(__file__).with_suffix(".c"), {
        "evalcore_scan": (ctypes.c_int, [_POINTER, _INT64, _INT32, _INT32, _INT32, _INT32, _INT32, _INT64,
                                         *[_POINTER] * 8])})


class _Output:
    """The arrays the C scan fills, grown (copied into larger ones) when it stops FULL."""

    def __init__(self, capacity: int, number: np.dtype) -> None:
        self.arrays = [np.empty(capacity, kind) for kind in (np.int64, np.int32, np.uint64, number, np.int64,
                                                              np.int64, np.int32)]

    def grow(self, capacity: int) -> None:
        for index, old in enumerate(self.arrays):
            self.arrays[index] = np.empty(capacity, old.dtype)
            self.arrays[index][: old.size] = old

    def pointers(self) -> list[int]:
        return [array.ctypes.data for array in self.arrays]


def _scan_compiled(library: ctypes.CDLL, data: np.ndarray, count: int, grouped: int, ids: int,
                   parsed: dict[int, pa.DataType]) -> Columns | None:
    """`scan` in one pass of C over the whole map (ctypes lets other threads run meanwhile)."""
    index, kind = next(iter(parsed.items()), (-1, pa.int64()))
    code, number = _KINDS[kind]
    sample = bytes(data[:SCAN_BLOCK])
    # Lines estimated from the first block's; the pages of entries never written are never touched.
    capacity = int(data.size / max(len(sample), 1) * max(sample.count(b"\n"), 1) * 1.05) + 16
    output = _Output(capacity, number)
    state = np.array([0, 0, 0, LONGEST_FIELD, 0, 0, -1], dtype=np.int64)
    while (status := library.evalcore_scan(data.ctypes.data, data.size, count, grouped, ids, index, code,
                                           capacity, *output.pointers(), state.ctypes.data)) == _FULL:
        capacity = int(capacity * max(data.size / max(int(state[4]), 1), 1.0) * 1.05) + 16
        output.grow(capacity)
    if status != _DONE:
        return None
    rows, groups, longest, shortest = (int(value) for value in state[:4])
    starts, lengths, id_keys, numbers, group_rows, group_starts, group_lengths = output.arrays
    # Copied when far fewer than the arrays hold (a run grouped by query), so that the rest is freed.
    def kept(array: np.ndarray) -> np.ndarray:
        return array[:groups].copy() if groups < capacity // 2 else array[:groups]

    query_ids = Ids(runs=(kept(group_rows), Spans(data, kept(group_starts), kept(group_lengths)), rows))
    document_ids = Ids(spans=Spans(data, starts[:rows], lengths[:rows]),
                       spans_keys=(id_keys[:rows], longest <= WORD and shortest >= 1))
    return Columns({grouped: query_ids, ids: document_ids}, {index: numbers[:rows]} if parsed else {})
