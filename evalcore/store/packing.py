"""A question's result packed in binary (schema version 28 on): its ranked list, measures, pass/fail marks and, when
that is smaller, its answer compressed, in one `results.packed` value.

Each part is a section: a tag byte, its length (a varint) and its bytes, so that a reader skips what it does not
need. A row written before keeps its JSON columns (`packed` NULL) and reads as it did; a packed row leaves those
columns empty (`retrieved` "", `measures` and `results` "{}", `answer` NULL when the answer is packed).

- Ranked list (`R`): the passage ids, then each stage's scores, then the final scores. Integers (ids, a stage's scores
  in millionths as deltas from the one before) are stored in byte planes: the lowest byte of every value, then the
  next byte of every value..., as many planes as the largest value needs, so 30 passage ids below 65,536 take 60
  bytes and are packed and read by slicing, not value by value. A stage whose every score is the final score rounded
  to some digits is that number of digits. The final scores, when each is the float32 value that a stage's scores
  divided by their largest give, give or take a few float32 steps (BM25's normalised score), are those steps, four
  bits each; else float32 or float64 bytes. Every form is checked to read back to the last bit when written.
- Measures (`M`) and marks (`K`): each entry a measure's code (evalcore.store.measure_codes; 255 and the name for any
  other) and its value: a float as its 8 bytes (a whole number from 0 to 255 as one byte), None, booleans, integers,
  `pass`/`fail` (a JudgeResult's too), other text, else JSON.
- Answer (`A`): the number of the store's passage dictionary and the answer's UTF-8 deflated with it (zlib, raw).
"""

from __future__ import annotations

import functools
import json
import math
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate
from operator import add, sub
from typing import Any, NamedTuple, cast

from evalcore.store.measure_codes import CODED_NAMES

FORMAT = 1  # the first byte of a packed value
_DOUBLE = struct.Struct("<d")
_INDEX = {name: n for n, name in enumerate(CODED_NAMES)}
_OTHER_NAME = 255
_LITTLE = sys.byteorder == "little"


# --- small integers -------------------------------------------------------------------------------------------
def varint(value: int) -> bytes:
    """A non-negative integer in 7-bit groups, lowest first."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at `at` and where it ends."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _zigzag(value: int) -> int:
    return value * 2 if value >= 0 else -value * 2 - 1


def _unzigzag(value: int) -> int:
    return value >> 1 if not value & 1 else -(value >> 1) - 1


def planes(values: Sequence[int]) -> bytes:
    """Non-negative integers below 2**32 as byte planes: the count of planes, then each plane (lowest byte first)."""
    top = max(values, default=0)
    count = max(1, (top.bit_length() + 7) // 8)
    data = array("I", values)
    if not _LITTLE:
        data.byteswap()
    raw = data.tobytes()
    return bytes((count,)) + b"".join(raw[plane::4] for plane in range(count))


def read_planes(data: bytes, at: int, n: int) -> tuple[list[int], int]:
    """n integers written by `planes` at `at`, and where they end."""
    count = data[at]
    at += 1
    raw = bytearray(4 * n)
    for plane in range(count):
        raw[plane::4] = data[at:at + n]
        at += n
    values = array("I")
    values.frombytes(bytes(raw))
    if not _LITTLE:
        values.byteswap()
    return values.tolist(), at


def _floats(typecode: str, values: Sequence[float]) -> bytes:
    data = array(typecode, values)
    if not _LITTLE:
        data.byteswap()
    return data.tobytes()


def _read_floats(typecode: str, data: bytes) -> list[float]:
    values = array(typecode)
    values.frombytes(data)
    if not _LITTLE:
        values.byteswap()
    return cast(list[float], values.tolist())


def _same_floats(got: list[float], want: list[float]) -> bool:
    """Whether every value equals the wanted one to the last bit (a zero's sign included; NaN never): lists of floats,
    their types checked once by the packer."""
    if got != want:
        return False
    return 0.0 not in want or all(math.copysign(1.0, value) == math.copysign(1.0, zero)
                                  for value, zero in zip(got, want, strict=True) if zero == 0.0)


# --- a ranked list --------------------------------------------------------------------------------------------
class Ranked(NamedTuple):
    """A ranked list as stored: passage keys, final scores, and each stage's scores by name (None where a passage has
    no score at that stage)."""

    keys: list[int]
    scores: list[Any]
    stages: dict[str, list[Any]]


STAGE_DIGITS = 6  # the retrievers round each stage's scores to this many digits (evalcore.targets.retrievers)
MICROS_LIMIT = 2**31 // 10**6  # scores a 4-byte integer of millionths holds: below 2,147 in size
_STEPS = 7  # the most float32 steps a final score may be from its prediction
_BELOW_MICROS_LIMIT = float(MICROS_LIMIT).__gt__  # whether a size is below it (False for NaN)
_MILLION = 1e6


def _text(value: str) -> bytes:
    data = value.encode("utf-8")
    return varint(len(data)) + data


def _read_text(data: bytes, at: int) -> tuple[str, int]:
    size, at = read_varint(data, at)
    return data[at:at + size].decode("utf-8"), at + size


def _json(value: Any) -> bytes:
    return _text(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True))


def _is_floats(values: Sequence[object]) -> bool:
    return bool(values) and set(map(type, values)) == {float}


def _micros(values: list[float]) -> bytes | None:
    """A stage's scores of at most six decimal digits as millionths: the first, then how much each is below the one
    before, in byte planes (BM25's scores come in falling order; a list that rises anywhere is not written so)."""
    if not all(map(_BELOW_MICROS_LIMIT, map(abs, values))):  # NaN is not below it
        return None
    micros = list(map(round, map(_MILLION.__mul__, values)))  # each value * 1e6, rounded half to even
    if micros[0] < 0 or not _same_floats(list(map(_MILLION.__rtruediv__, micros)), values):  # each micros / 1e6
        return None
    falls = list(map(sub, micros, micros[1:]))
    if falls and min(falls) < 0:
        return None
    return varint(micros[0]) + planes(falls)


def _read_micros(data: bytes, at: int, n: int) -> tuple[list[float], int]:
    first, at = read_varint(data, at)
    falls, at = read_planes(data, at, n - 1)
    micros = list(accumulate(falls, sub, initial=first))
    return [value / 1e6 for value in micros], at


def _single(values: list[float]) -> bytes | None:
    """float32 bytes of values (floats) that are float32 numbers to the last bit."""
    packed = _floats("f", values)
    return packed if _same_floats(_read_floats("f", packed), values) else None


def _predicted(stage: list[float]) -> array[int] | None:
    """The float32 bits of a stage's scores divided by the largest, the prediction of normalised final scores."""
    single = array("f", stage)
    top = max(single)
    if not top > 0 or not all(map(math.isfinite, single)):
        return None
    return array("i", array("f", map(top.__rtruediv__, single)).tobytes())


def _steps(exact: bytes, stage: list[float]) -> bytes | None:
    """The final scores (their float32 bytes) as float32 steps from a stage's prediction, four bits each; None when
    they are not."""
    predicted = _predicted(stage)
    if predicted is None:
        return None
    steps = list(map(sub, array("i", exact), predicted))
    if min(steps) < -_STEPS - 1 or max(steps) > _STEPS:
        return None
    steps.append(0)
    # Two steps a byte, each plus 8 in four bits: low + 8 + (high + 8) * 16.
    return bytes(map(add, map((136).__add__, steps[0::2]), map((16).__mul__, steps[1::2])))


def _read_steps(data: bytes, stage: list[float], n: int) -> list[float]:
    predicted = _predicted(stage)
    assert predicted is not None  # written only where there was one
    steps = [step for byte in data for step in _STEP_PAIRS[byte]][:n]
    return array("f", array("i", map(add, predicted, steps)).tobytes()).tolist()


_STEP_PAIRS = [((byte & 15) - 8, (byte >> 4) - 8) for byte in range(256)]


def _stage(values: list[Any], rounded: list[float] | None) -> bytes:
    """One stage's scores: their digits ("N") when they are the final scores rounded, millionths ("M"), float32
    ("F"), float64 ("D"), else JSON ("J", None where a passage has no score at that stage)."""
    if _is_floats(values):
        if rounded is not None and _same_floats(values, rounded):
            return b"N" + bytes((STAGE_DIGITS,))
        if (micros := _micros(values)) is not None:
            return b"M" + micros
        if (single := _single(values)) is not None:
            return b"F" + single
        return b"D" + _floats("d", values)
    return b"J" + _json(values)


def _final(scores: list[Any], finite: bool, single: bytes | None, stages: list[tuple[str, list[Any]]],
           kinds: list[bytes]) -> bytes:
    """The final scores (`finite`: finite floats, their float32 bytes `single` when they are float32 numbers; else
    written as JSON): float32 steps from the first stage written in full's prediction ("P" and the stage's place),
    float32 ("F"), float64 ("D"), else JSON ("J")."""
    if not finite:
        return b"J" + _json(scores)
    for place, ((_, values), kind) in enumerate(zip(stages, kinds, strict=True)):
        if kind[:1] in (b"M", b"F", b"D"):
            steps = None if single is None else _steps(single, values)
            if steps is not None:
                return b"P" + bytes((place,)) + steps
            break
    return b"F" + single if single is not None else b"D" + _floats("d", scores)


def _rounded(scores: list[float], single: bytes | None) -> list[float]:
    """round(score, STAGE_DIGITS) of each score, as Python rounds it. For finite float32 scores (`single`, their
    float32 bytes) without a call per score: such a score times 10**6 is exact in double precision, so rounding it to
    a whole number (half to even) rounds the decimal as round does, and dividing by 10**6 gives the double nearest
    the rounded decimal, which is what round returns; a zero keeps the score's sign, as round's does."""
    if single is None:
        return [round(score, STAGE_DIGITS) for score in scores]
    rounded = list(map(_MILLION.__rtruediv__, map(round, map(_MILLION.__mul__, scores))))
    if 0.0 in rounded:
        return [math.copysign(0.0, score) if value == 0.0 else value for value, score in zip(rounded, scores,
                                                                                            strict=True)]
    return rounded


def pack_ranked(ranked: Ranked) -> bytes:
    """A ranked list's bytes: count, keys (byte planes), stages (count, then name and scores each), final scores.
    The keys are the store's passage ids (not negative)."""
    keys, scores = ranked.keys, ranked.scores
    stages = list(ranked.stages.items())
    floats = _is_floats(scores)  # each property of the scores checked once
    finite = floats and all(map(math.isfinite, scores))
    single = _single(scores) if finite else None
    rounded = _rounded(scores, single) if floats else None
    kinds = [_stage(values, rounded) for _, values in stages]
    body = b"".join(_text(name) + kind for (name, _), kind in zip(stages, kinds, strict=True))
    return (varint(len(keys)) + planes(keys) + varint(len(stages)) + body
            + _final(scores, finite, single, stages, kinds))


def ranked_keys(data: bytes) -> list[int]:
    """The passage keys of a packed ranked list (its scores are not read)."""
    n, at = read_varint(data, 0)
    keys, _ = read_planes(data, at, n)
    return keys


def unpack_ranked(data: bytes) -> Ranked:
    """A ranked list back from pack_ranked's bytes."""
    n, at = read_varint(data, 0)
    keys, at = read_planes(data, at, n)
    count, at = read_varint(data, at)
    stages: list[tuple[str, Any]] = []
    for _ in range(count):
        name, at = _read_text(data, at)
        kind = data[at:at + 1]
        at += 1
        if kind == b"N":
            values: Any = data[at]
            at += 1
        elif kind == b"M":
            values, at = _read_micros(data, at, n)
        elif kind in (b"F", b"D"):
            width = 4 if kind == b"F" else 8
            values, at = _read_floats(kind.decode().lower(), data[at:at + width * n]), at + width * n
        else:
            size, at = read_varint(data, at)
            values, at = json.loads(data[at:at + size]), at + size
        stages.append((name, values))
    kind = data[at:at + 1]
    if kind == b"P":
        scores = _read_steps(data[at + 2:], stages[data[at + 1]][1], n)
    elif kind in (b"F", b"D"):
        scores = _read_floats(kind.decode().lower(), data[at + 1:])
    else:
        scores = json.loads(_read_text(data, at + 1)[0])
    return Ranked(keys, scores,
                  {name: [round(score, values) for score in scores] if isinstance(values, int) else values
                   for name, values in stages})


# --- measures and marks ---------------------------------------------------------------------------------------
# Tags: a value with bytes after the header (float16, float64, an integer, text, JSON) or a constant (none).
_HALF, _DOUBLE_TAG, _INT, _STR, _JSON, _NONE, _FALSE, _TRUE, _PASS, _FAIL, _INT32, _INT8 = range(12)
_CONSTANTS: dict[int, Any] = {_NONE: None, _FALSE: False, _TRUE: True, _PASS: "pass", _FAIL: "fail"}
_WORDS = {"pass": _PASS, "fail": _FAIL}
# The values of a fixed size: float16, float64, integers of 4 bytes and of 1.
_FORMATS = {_HALF: "e", _DOUBLE_TAG: "d", _INT32: "i", _INT8: "b"}
_HALF_STRUCT = struct.Struct("<e")
_INT32_STRUCT = struct.Struct("<i")
_LAYOUTS: dict[bytes, tuple[tuple[str, ...], struct.Struct, list[Any] | None] | None] = {}
_TAKE = object()  # a layout's slot read from the bytes rather than a constant


def _is_half(value: float) -> bool:
    """Whether a float is a float16 number: a whole number up to 2,048 in size, or 1,024ths below 2."""
    return (value.is_integer() and -2048.0 <= value <= 2048.0) or ((value * 1024.0).is_integer() and -2.0 < value < 2.0)


def pack_values(values: Mapping[str, Any]) -> bytes:
    """A row's values by measure (measures, or pass/fail marks) as bytes: their count, each one's code, each one's
    tag, the names of those without a code, then the values' bytes.

    A campaign's rows name the same measures: the count, codes and names are made once for those names. A row of
    floats (most measures) is packed by one struct for its pattern of float16 and float64 values."""
    names = tuple(values)
    head = _HEADS.get(names)
    if head is None:
        head = _head(names)
        if len(_HEADS) > 4096:
            _HEADS.clear()
        _HEADS[names] = head
    items = list(values.values())
    if set(map(type, items)) == {float}:
        tags = bytes([_HALF if _is_half(value) else _DOUBLE_TAG for value in items])
        return head[0] + tags + head[1] + _float_struct(tags).pack(*items)
    tagged, payload = bytearray(), bytearray()
    for value in items:
        tag, data = _tagged(value)
        tagged.append(tag)
        payload += data
    return head[0] + tagged + head[1] + payload


_HEADS: dict[tuple[str, ...], tuple[bytes, bytes]] = {}


def _head(names: tuple[str, ...]) -> tuple[bytes, bytes]:
    """The count and codes of these names, and the names without a code."""
    codes = bytes(_INDEX.get(name, _OTHER_NAME) for name in names)
    return varint(len(names)) + codes, b"".join(_text(name) for name in names if name not in _INDEX)


@functools.lru_cache(maxsize=256)
def _float_struct(tags: bytes) -> struct.Struct:
    """The struct of a row of floats with these tags (float16 or float64 each)."""
    return struct.Struct("<" + "".join(_FORMATS[tag] for tag in tags))


def _tagged(value: Any) -> tuple[int, bytes]:
    """A value's tag and bytes; a text enum's value (a JudgeResult mark) as its text."""
    kind = type(value)
    if kind is not str and isinstance(value, str):  # written as JSON text before: 7 bytes a `pass` mark, not none
        value, kind = str.__str__(value), str
    if kind is float:
        return (_HALF, _HALF_STRUCT.pack(value)) if _is_half(value) else (_DOUBLE_TAG, _DOUBLE.pack(value))
    if kind is str and value in _WORDS:
        return _WORDS[value], b""
    if value is None:
        return _NONE, b""
    if kind is bool:
        return (_TRUE if value else _FALSE), b""
    if kind is int:
        if -128 <= value < 128:
            return _INT8, bytes((value & 0xFF,))
        if -2**31 <= value < 2**31:
            return _INT32, _INT32_STRUCT.pack(value)
        return _INT, varint(_zigzag(value))
    if kind is str:
        return _STR, _text(value)
    return _JSON, _json(value)


def _layout(data: bytes, at: int, n: int) -> tuple[list[str], int]:
    """The names of a packed row's values and where their bytes start."""
    names = []
    for code in data[at:at + n]:
        if code == _OTHER_NAME:
            names.append("")
        else:
            names.append(CODED_NAMES[code])
    at += 2 * n
    for place, code in enumerate(data[at - 2 * n:at - n]):
        if code == _OTHER_NAME:
            names[place], at = _read_text(data, at)
    return names, at


def unpack_values(data: bytes) -> dict[str, Any]:
    """A row's values by measure name back from pack_values's bytes.

    Rows of a campaign share a few layouts (the same measures with the same kinds of value): a layout of fixed-size
    values is read once into a struct, and each row's values taken from its bytes in one call."""
    if not data:
        return {}
    n, at = read_varint(data, 0)
    key = data[:at + 2 * n]
    layout = _LAYOUTS.get(key, _TAKE)
    if layout is _TAKE:
        layout = _read_layout(data, at, n)
        if len(_LAYOUTS) > 4096:
            _LAYOUTS.clear()
        _LAYOUTS[key] = layout
    if layout is None:  # values of variable size
        return _slow_values(data, at, n)
    names, reader, slots = cast(tuple[tuple[str, ...], struct.Struct, list[Any] | None], layout)
    start = len(data) - reader.size
    if slots is None:
        return dict(zip(names, reader.unpack_from(data, start), strict=True))
    taken = iter(reader.unpack_from(data, start))
    return dict(zip(names, [next(taken) if slot is _TAKE else slot for slot in slots], strict=True))


def _read_layout(data: bytes, at: int, n: int) -> tuple[tuple[str, ...], struct.Struct, list[Any] | None] | None:
    tags = data[at + n:at + 2 * n]
    if not all(tag in _FORMATS or tag in _CONSTANTS for tag in tags) or _OTHER_NAME in data[at:at + n]:
        return None
    names, _ = _layout(data, at, n)
    reader = struct.Struct("<" + "".join(_FORMATS.get(tag, "") for tag in tags))
    slots = None if all(tag in _FORMATS for tag in tags) else [_TAKE if tag in _FORMATS else _CONSTANTS[tag]
                                                                  for tag in tags]
    return tuple(names), reader, slots


def _slow_values(data: bytes, at: int, n: int) -> dict[str, Any]:
    names, end = _layout(data, at, n)
    tags = data[at + n:at + 2 * n]
    values: dict[str, Any] = {}
    at = end
    for name, tag in zip(names, tags, strict=True):
        if tag == _HALF:
            values[name] = _HALF_STRUCT.unpack_from(data, at)[0]
            at += 2
        elif tag == _DOUBLE_TAG:
            values[name] = _DOUBLE.unpack_from(data, at)[0]
            at += 8
        elif tag == _INT32:
            values[name] = _INT32_STRUCT.unpack_from(data, at)[0]
            at += 4
        elif tag == _INT8:
            values[name] = data[at] - 256 if data[at] >= 128 else data[at]
            at += 1
        elif tag in _CONSTANTS:
            values[name] = _CONSTANTS[tag]
        elif tag == _INT:
            number, at = read_varint(data, at)
            values[name] = _unzigzag(number)
        elif tag == _STR:
            values[name], at = _read_text(data, at)
        else:
            text, at = _read_text(data, at)
            values[name] = json.loads(text)
    return values


# --- a packed row ---------------------------------------------------------------------------------------------
ANSWER, RANKED, MEASURES, MARKS = b"A", b"R", b"M", b"K"


def packed_answer(dictionary_number: int, deflated: bytes) -> bytes:
    """The answer's section: the dictionary's number, then the text deflated with it."""
    return varint(dictionary_number) + deflated


def pack_row(sections: Iterable[tuple[bytes, bytes]]) -> bytes:
    """A packed value from its sections (tag, bytes)."""
    return bytes((FORMAT,)) + b"".join(tag + varint(len(data)) + data for tag, data in sections)


def sections(packed: bytes | memoryview) -> dict[bytes, bytes]:
    """A packed value's sections by tag."""
    data = packed if type(packed) is bytes else bytes(packed)
    out: dict[bytes, bytes] = {}
    at, end = 1, len(data)
    while at < end:
        tag, size = data[at:at + 1], data[at + 1]
        if size < 0x80:  # a section under 128 bytes: its size in one byte (read_varint's call costs more than its work)
            at += 2
        else:
            size, at = read_varint(data, at + 1)
        out[tag] = data[at:at + size]
        at += size
    return out


def answer_parts(section: bytes) -> tuple[int, bytes]:
    """The answer section's dictionary number and deflated text."""
    number, at = read_varint(section, 0)
    return number, section[at:]


# An answer is short: a window as large as the dictionary (8 KiB) and a small hash table make the compressor copied for
# each answer four times cheaper to copy than zlib's defaults, for 1% more bytes (about 25 us an answer of 290 bytes).
ANSWER_LEVEL, ANSWER_WBITS, ANSWER_MEMORY = 3, 13, 4


@functools.lru_cache(maxsize=4)
def _primed(dictionary: bytes) -> Any:
    """A raw deflate compressor that has read this dictionary and nothing else (copied for each answer)."""
    return zlib.compressobj(ANSWER_LEVEL, zlib.DEFLATED, -ANSWER_WBITS, ANSWER_MEMORY, zdict=dictionary)


def deflate(text: str, dictionary: bytes) -> bytes:
    """A text's UTF-8 deflated (raw) with this dictionary."""
    packer = _primed(dictionary).copy()
    packed: bytes = packer.compress(text.encode("utf-8")) + packer.flush()
    return packed


def inflate(deflated: bytes, dictionary: bytes) -> str:
    """A text deflated (raw) with this dictionary, back."""
    unpacker = zlib.decompressobj(-ANSWER_WBITS, zdict=dictionary)
    return (unpacker.decompress(deflated) + unpacker.flush()).decode("utf-8")


def packed_ids(packed: bytes | memoryview) -> list[int]:
    """The passage ids a packed row's ranked list names (none without one)."""
    ranked = sections(packed).get(RANKED)
    return ranked_keys(ranked) if ranked is not None else []
