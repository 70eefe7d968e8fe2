"""TREC scoring's compiled rank order and query codes (`trec_label.c`): the order numpy's lexsort gives (query,
then score descending, ties in the file's order, NaN last, -0 equal to 0) and the codes pyarrow's dictionary_encode
gives, on runs grouped by query in rank order, grouped out of order and shuffled."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from evalcore.metrics import trec
from evalcore.metrics.trec_files import read_qrels, read_run
from tests.conftest import require_c


@pytest.mark.parametrize("seed", range(6))
def test_the_rank_order_is_lexsorts(seed: int) -> None:
    require_c(trec._label_library())
    rng = np.random.default_rng(seed)
    queries = int(rng.integers(1, 300))
    rows = int(rng.integers(0, 5000))
    run_q = rng.integers(0, queries, rows).astype(np.int32)
    if seed % 3 == 0:
        run_q.sort(kind="stable")  # grouped by query, scores in any order
    score = rng.choice(np.array([0.0, -0.0, 1.5, 2.0, -3.25, np.inf, -np.inf, np.nan, 7.0]), rows)
    spread = rng.random(rows) < 0.4
    score[spread] = rng.normal(size=int(spread.sum()))  # the rest tie often
    found = trec._sorted_rows(run_q, score, queries)
    expected = np.lexsort((-score, run_q))
    assert found.tolist() == expected.tolist()


def test_a_query_with_hundreds_of_rows_keeps_ties_in_file_order() -> None:
    require_c(trec._label_library())
    rng = np.random.default_rng(7)
    run_q = np.zeros(1000, dtype=np.int32)
    score = rng.integers(0, 20, 1000).astype(np.float64)
    assert trec._sorted_rows(run_q, score, 1).tolist() == np.lexsort((-score, run_q)).tolist()


def _ids(rng: random.Random, count: int) -> list[str]:
    """`count` distinct ids of 1 to 31 characters (from a few letters: many share their first bytes)."""
    made: dict[str, None] = {}
    while len(made) < count:
        made["".join(rng.choice("ab1-_") for _ in range(rng.choice([1, 3, 8, 9, 15, 31])))] = None
    return list(made)


@pytest.mark.parametrize("order", ["ranked", "grouped", "shuffled"])
def test_query_codes_are_dictionary_encodes(tmp_path: Path, order: str) -> None:
    require_c(trec._label_library())
    rng = random.Random(order)
    queries, docs = _ids(rng, 120), _ids(rng, 60)
    lines = [(query, doc, rank, float(rng.randint(0, 3))) for query in queries for rank, doc in
             enumerate(rng.sample(docs, rng.randint(1, 20)))]
    if order == "grouped":
        blocks: dict[str, list[tuple[str, str, int, float]]] = {}
        for line in lines:
            blocks.setdefault(line[0], []).append(line)
        lines = [line for block in blocks.values() for line in rng.sample(block, len(block))]
    elif order == "shuffled":
        rng.shuffle(lines)
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} {r} {s} t\n" for q, d, r, s in lines))
    judged = rng.sample(queries + [f"only-{n}" for n in range(20)], 100)  # some queries judged and never ranked
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} 1\n" for q in judged for d in rng.sample(docs, 3)))
    run, qrels = read_run(tmp_path / "run"), read_qrels(tmp_path / "qrels")
    found = trec._head_codes(run.qid, qrels.qid)
    assert found is not None
    (run_rows, rel_rows), codes, dictionary = found
    heads = pa.concat_arrays([run.qid.take(run_rows).cast(pa.string()), qrels.qid.take(rel_rows).cast(pa.string())])
    encoded = pc.dictionary_encode(heads)
    assert codes.tolist() == encoded.indices.to_pylist()
    assert dictionary.to_pylist() == encoded.dictionary.to_pylist()


def test_scores_are_the_same_without_the_compiled_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_c(trec._label_library())
    rng = random.Random(3)
    queries, docs = _ids(rng, 60), _ids(rng, 40)
    lines = [f"{q} Q0 {d} {r} {rng.randint(0, 3)} t\n" for q in queries
             for r, d in enumerate(rng.sample(docs, rng.randint(1, 25)))]
    rng.shuffle(lines)
    (tmp_path / "run").write_text("".join(lines))
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {rng.randint(0, 2)}\n" for q in queries
                                            for d in rng.sample(docs, 5)))
    compiled = trec.evaluate(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"))
    monkeypatch.setattr(trec, "_sorted_rows", lambda run_q, score, queries: np.lexsort((-score, run_q)))
    monkeypatch.setattr(trec, "_head_codes", lambda first, second: None)
    plain = trec.evaluate(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"))
    assert compiled.qids == plain.qids
    for name, values in plain.values.items():
        assert compiled.values[name].tobytes() == values.tobytes(), name
