"""The compiled byte scan of TREC files: the same columns as the numpy scan, bit for bit, on
random files of every id shape and score notation; the same refusals on files of another
shape (the loader itself: tests/test_compiled.py)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from evalcore.errors import EvalError
from evalcore.metrics import trec_scan
from evalcore.metrics.trec_files import read_qrels, read_run
from tests.conftest import require_c

SOURCE = Path(trec_scan.__file__).with_suffix(".c")
RUN = (6, 0, 2, {4: pa.float64()})
QRELS = (4, 0, 2, {3: pa.int64()})
ID_BYTES = "abcdefghijklmnopqrstuvwxyz0123456789-_.:/~!\"$%&'()*+,;<=>?@[\\]^`{|}\x7f"


def _both(path: Path, shape: tuple, monkeypatch: pytest.MonkeyPatch) -> tuple[trec_scan.Columns | None, ...]:
    """The scan of `path` through C, then through numpy."""
    require_c(trec_scan._library())
    through_c = trec_scan.scan(path, *shape)
    with monkeypatch.context() as patch:
        patch.setenv("EVALCORE_COMPILED", "0")
        through_numpy = trec_scan.scan(path, *shape)
    return through_c, through_numpy


def _assert_same(ours: trec_scan.Columns, theirs: trec_scan.Columns) -> None:
    assert ours.ids.keys() == theirs.ids.keys()
    for field, ids in ours.ids.items():
        other = theirs.ids[field]
        assert len(ids) == len(other)
        assert ids.to_pylist() == other.to_pylist()
        rows, heads = ids.heads()
        other_rows, other_heads = other.heads()
        assert rows.tolist() == other_rows.tolist()
        assert heads.equals(other_heads)
        if field == 2:
            keys, exact = ids.keys()
            other_keys, other_exact = other.keys()
            assert keys.dtype == other_keys.dtype == np.uint64
            assert np.array_equal(keys, other_keys)
            assert exact == other_exact
    for field, values in ours.numbers.items():
        other = theirs.numbers[field]
        assert values.dtype == other.dtype
        assert np.array_equal(values.view(np.uint64 if values.dtype == np.float64 else np.int64),
                              other.view(np.uint64 if other.dtype == np.float64 else np.int64))  # -0.0 too


def _assert_read_the_same(path: Path, shape: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """A well-formed file is read by the C scan, to the numpy scan's columns; where the numpy scan leaves it to
    pyarrow's readers (a label written `+3`, which pyarrow's cast refuses), to theirs."""
    through_c, through_numpy = _both(path, shape, monkeypatch)
    assert through_c is not None
    if through_numpy is not None:
        _assert_same(through_c, through_numpy)
        return
    assert shape == QRELS
    judged = read_qrels(path)
    monkeypatch.setenv("EVALCORE_COMPILED", "0")
    general = read_qrels(path)
    assert judged.qid.to_pylist() == general.qid.to_pylist()
    assert judged.docid.to_pylist() == general.docid.to_pylist()
    assert judged.label.tolist() == general.label.tolist()
    assert np.array_equal(judged.docid.keys()[0], general.docid.keys()[0])  # keys of spans = keys of strings
    monkeypatch.delenv("EVALCORE_COMPILED")


def _random_id(rng: random.Random) -> str:
    alphabet = ID_BYTES[: rng.choice([3, 12, len(ID_BYTES)])]
    length = rng.choice([1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 33, 64, 200])
    return "".join(rng.choice(alphabet) for _ in range(length))


def _random_score(rng: random.Random) -> str:
    value = rng.choice([float(rng.randint(-5, 5)), rng.uniform(-1e6, 1e6), rng.uniform(0, 1), 0.0,
                        rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30), float(np.float32(rng.uniform(-20, 20)))])
    return rng.choice([repr(value), f"{value:e}", f"{value:.3f}", f"{value:+.6g}", f"{value:.20f}", f"{value:.17g}",
                       f"{value:E}", f"{abs(value):.0f}.", f"-{abs(value):.4f}", "-0", "-0.0", "+0", "1.5e-300",
                       f"{rng.randint(0, 99999999999999999)}.{rng.randint(0, 99999)}", ".5", "7e22",
                       "9007199254740993"])


def _write_run(path: Path, rng: random.Random, lines: int) -> None:
    queries = [_random_id(rng) for _ in range(rng.randint(1, 12))]
    rows = [f"{rng.choice(queries)} Q0 {_random_id(rng)} {n} {_random_score(rng)} t{rng.randint(0, 3)}"
            for n in range(lines)]
    if rng.random() < 0.5:
        rows.sort()  # sorted files have long runs of one query; shuffled ones change query at most lines
    path.write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize("seed", range(40))
def test_random_runs_read_the_same_through_c_and_numpy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "run"
    _write_run(path, rng, rng.choice([1, 2, 17, 300, 3000]))
    _assert_read_the_same(path, RUN, monkeypatch)


@pytest.mark.parametrize("seed", range(10))
def test_random_qrels_and_ids_at_the_end_of_the_file_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   seed: int) -> None:
    """The id as the last field (a three-field file): short ids in the last bytes of the map are read without
    reading past it."""
    rng = random.Random(100 + seed)
    labels = ["0", "1", "2", "-1", "+3", "12", "007", str(2**62), "-" + str(2**60)]
    qrels, tail = tmp_path / "qrels", tmp_path / "tail"
    qrels.write_text("".join(f"q{rng.randint(0, 9)} 0 {_random_id(rng)} {rng.choice(labels)}\n"
                             for _ in range(rng.randint(1, 500))))
    tail.write_text("".join(f"q{n // 3} 0 {_random_id(rng)[: rng.randint(1, 9)]}\n" for n in range(rng.randint(1, 50))))
    for path, shape in ((qrels, QRELS), (tail, (3, 0, 2, {}))):
        _assert_read_the_same(path, shape, monkeypatch)


FOREIGN_SHAPES = {
    "a tab": "q1 Q0 d1 1 2.0 t\nq1\tQ0 d2 2 1.0 t\n",
    "a carriage return": "q1 Q0 d1 1 2.0 t\r\nq1 Q0 d2 2 1.0 t\r\n",
    "a doubled space": "q1 Q0 d1 1 2.0 t\nq1 Q0  d2 2 1.0 t\n",
    "a leading space": " q1 Q0 d1 1 2.0 t\n",
    "a blank line": "q1 Q0 d1 1 2.0 t\n\nq1 Q0 d2 2 1.0 t\n",
    "a comment": "q1 Q0 d1 1 2.0 t\n# q1 Q0 d2 2 1.0 t\n",
    "no final newline": "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t",
    "a field too many": "q1 Q0 d1 1 2.0 t extra\n",
    "a field too few": "q1 Q0 d1 1 2.0\n",
    "non-ASCII bytes": "q1 Q0 d\u00e9 1 2.0 t\n",
    "a control byte": "q1 Q0 d\x01x 1 2.0 t\n",
    "a trailing space": "q1 Q0 d1 1 2.0 t \n",
    "an id of 65536 bytes": f"q1 Q0 {'d' * 65536} 1 2.0 t\n",
}
FOREIGN_SCORES = ["nan", "NaN", "inf", "-Infinity", "1e400", "1e-400", "0x1p3", "1_0", "1e", "e5", "--1", "1.2.3",
                  "+", ".", "1,5", "\u0661"]


@pytest.mark.parametrize("name", sorted(FOREIGN_SHAPES))
def test_files_of_another_shape_are_left_to_the_general_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                name: str) -> None:
    path = tmp_path / "run"
    path.write_bytes(FOREIGN_SHAPES[name].encode())
    assert _both(path, RUN, monkeypatch) == (None, None)


@pytest.mark.parametrize("score", FOREIGN_SCORES)
def test_scores_the_c_scan_does_not_parse_read_as_the_numpy_path_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, score: str) -> None:
    """A NaN, an infinity, a value out of range or no number: the C scan leaves the file to the other readers, and
    reading the run gives what it gives without C (the same values, or the same error naming the line)."""
    path = tmp_path / "run"
    path.write_text(f"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 {score} t\n")
    require_c(trec_scan._library())
    assert trec_scan.scan(path, *RUN) is None

    def read() -> object:
        try:
            ranking = read_run(path)
        except EvalError as error:
            return str(error)
        return ranking.qid.to_pylist(), ranking.docid.to_pylist(), ranking.score.tobytes()

    through_c = read()
    monkeypatch.setenv("EVALCORE_COMPILED", "0")
    assert read() == through_c


def test_labels_the_c_scan_does_not_parse_read_as_without_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "qrels"
    for label in ["1.0", str(2**63), "9" * 19, "x", "-", "1e3"]:
        path.write_text(f"q1 0 d1 1\nq1 0 d2 {label}\n")
        assert trec_scan.scan(path, *QRELS) is None, label
        outcomes = []
        for switch in ("1", "0"):
            monkeypatch.setenv("EVALCORE_COMPILED", switch)
            try:
                judged = read_qrels(path)
                outcomes.append((judged.docid.to_pylist(), judged.label.tolist()))
            except EvalError as error:
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1], label


def test_a_file_whose_first_block_holds_few_long_lines_grows_the_arrays(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines are estimated from the first block's; when later lines are shorter the C scan stops, its arrays grow
    and it goes on from where it stood, the query runs and the longest id included."""
    rng = random.Random(8)
    long_lines = [f"q{n // 40} Q0 {'x' * 3000}{n} {n} {rng.uniform(0, 9)!r} t\n" for n in range(200)]
    short_lines = [f"q{n // 40} Q0 d{rng.randint(0, 99)} {n} {rng.randint(0, 9)}.5 t\n" for n in range(200, 90_000)]
    path = tmp_path / "run"
    path.write_text("".join(long_lines + short_lines))
    assert path.stat().st_size > 2 * trec_scan.SCAN_BLOCK
    grown: list[int] = []
    original = trec_scan._Output.grow
    monkeypatch.setattr(trec_scan._Output, "grow", lambda self, capacity: (grown.append(capacity),
                                                                          original(self, capacity)))
    through_c, through_numpy = _both(path, RUN, monkeypatch)
    assert grown, "the arrays never grew"
    assert through_c is not None
    assert through_numpy is not None
    _assert_same(through_c, through_numpy)
    assert len(through_c.ids[2]) == 90_000
    assert through_c.ids[0].heads()[0].size == 2250


@pytest.mark.parametrize("reach", [32, 64, 1 << 30])  # fields of up to 31 bytes
def test_fields_as_strings_and_numbers_are_their_bytes_wherever_they_lie_in_the_file(
        reach: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A string view reaches its bytes through buffers of 2 x VIEW_REACH bytes that start every VIEW_REACH bytes:
    # with a small reach, fields across the whole data (inline ones, long ones, ones past a buffer's start) must
    # come back as their own bytes.
    monkeypatch.setattr(trec_scan, "VIEW_REACH", reach)
    rng = random.Random(reach)
    data = np.frombuffer(bytes(rng.choice(b"0123456789abcdefXYZ-_.") for _ in range(5000)), dtype=np.uint8)
    lengths = np.array([rng.choice([1, 4, 5, 8, 9, 12, 13, 16, 17, 31]) for _ in range(600)], dtype=np.int32)
    starts = np.array([rng.randrange(0, data.size - length + 1) for length in lengths.tolist()], dtype=np.int64)
    spans = trec_scan.Spans(data, starts, lengths)
    rows = np.array(rng.sample(range(lengths.size), 400), dtype=np.int64)
    raw = data.tobytes()
    expected = [raw[start : start + length].decode() for start, length in zip(starts[rows].tolist(),
                                                                                 lengths[rows].tolist(), strict=True)]
    trec_scan._views(spans).validate(full=True)  # every view within the buffer it names
    got = trec_scan.strings(spans, rows)
    assert got.type == pa.string()
    assert got.to_pylist() == expected
    digits = np.frombuffer(bytes(rng.choice(b"0123456789") for _ in range(5000)), dtype=np.uint8)
    numbers = trec_scan.numbers(trec_scan.Spans(digits, starts, np.minimum(lengths, 18)), pa.int64())
    assert numbers.tolist() == [int(digits[start : start + min(length, 18)].tobytes())
                                for start, length in zip(starts.tolist(), lengths.tolist(), strict=True)]
