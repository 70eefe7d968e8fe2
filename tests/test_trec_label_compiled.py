"""The compiled labelling pass of TREC scoring (`trec_label.c`): the same labels and values as the numpy path on
random files of every id shape (repeated documents, scattered queries, ties, keys shared by different ids, ids read
as spans of the file or as pyarrow strings), what it says of repeated documents, and the same refusal of a qrels
file that judges a pair twice."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from evalcore.errors import EvalError
from evalcore.metrics import trec, trec_scan
from evalcore.metrics.trec_files import read_qrels, read_run
from tests.conftest import require_c

LENGTHS = [(1, 3, 8), (9, 12, 16), (17, 30), (2, 8, 9, 24, 40)]


def _random_id(rng: random.Random, lengths: tuple[int, ...]) -> str:
    alphabet = "abcdefghij0123456789-_:/"[: rng.choice([3, 24])]
    return "".join(rng.choice(alphabet) for _ in range(rng.choice(lengths)))


def _write(folder: Path, rng: random.Random, separator: str = " ", repeats: bool = True,
           scattered: bool = True) -> tuple[Path, Path]:
    """Qrels and a run with ids of a random shape; the run with ties, repeated documents and its lines shuffled
    (a query's rows scattered) when asked."""
    docs = sorted({_random_id(rng, rng.choice(LENGTHS)) for _ in range(rng.randint(5, 200))})
    queries = sorted({_random_id(rng, (1, 4, 12)) for _ in range(rng.randint(1, 80))})
    qrels_lines, run_lines = [], []
    for query in queries:
        if rng.random() < 0.85:
            judged = rng.sample(docs, rng.randint(1, min(25, len(docs))))
            qrels_lines += [f"{query} 0 {doc} {rng.choice([-1, 0, 1, 2, 3])}" for doc in judged]
        if rng.random() < 0.9:
            ranked = rng.sample(docs, rng.randint(1, min(40, len(docs))))
            if repeats and rng.random() < 0.3:
                ranked += rng.choices(ranked, k=rng.randint(1, 3))
            run_lines += [f"{query}{separator}Q0{separator}{doc}{separator}{rank}{separator}"
                          f"{float(rng.randint(0, 4))}{separator}t" for rank, doc in enumerate(ranked)]
    if scattered and rng.random() < 0.5:
        rng.shuffle(run_lines)
    rng.shuffle(qrels_lines)
    (folder / "qrels").write_text("\n".join(qrels_lines) + "\n")
    (folder / "run").write_text("\n".join(run_lines) + "\n")
    return folder / "qrels", folder / "run"


def _through_both(qrels_path: Path, run_path: Path, monkeypatch: pytest.MonkeyPatch, level: int = 1,
                  max_docs: int | None = None) -> tuple[trec.TrecScores, trec.TrecScores]:
    require_c(trec._label_library())
    options = trec.TrecOptions(False, level, max_docs)
    through_c = trec.evaluate(read_qrels(qrels_path), read_run(run_path), options, graded=("ndcg_graded@3",))
    with monkeypatch.context() as patch:
        patch.setattr(trec, "_label_library", lambda: None)
        through_numpy = trec.evaluate(read_qrels(qrels_path), read_run(run_path), options, graded=("ndcg_graded@3",))
    return through_c, through_numpy


def _assert_same(ours: trec.TrecScores, theirs: trec.TrecScores) -> None:
    assert ours.qids == theirs.qids
    assert ours.unjudged == theirs.unjudged
    assert ours.values.keys() == theirs.values.keys()
    for name, column in ours.values.items():
        assert np.array_equal(column.view(np.uint64), theirs.values[name].view(np.uint64)), name  # to the bit


@pytest.mark.parametrize("separator", [" ", "\t"])  # spans of the file (the byte scan) or pyarrow's strings
@pytest.mark.parametrize("seed", range(12))
def test_random_files_score_the_same_through_c_and_numpy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         seed: int, separator: str) -> None:
    rng = random.Random(seed)
    qrels_path, run_path = _write(tmp_path, rng, separator)
    level, max_docs = rng.choice([0, 1, 2]), rng.choice([None, 3, 10])
    _assert_same(*_through_both(qrels_path, run_path, monkeypatch, level, max_docs))


def test_keys_shared_by_different_ids_are_settled_on_the_bytes(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """With keys that say only an id's length, nearly every id shares its key with others, within a query's judged
    documents and its ranked ones: the labels must still be those of the ids themselves."""
    qrels_path, run_path = _write(tmp_path, random.Random(7))
    expected = trec.evaluate(read_qrels(qrels_path), read_run(run_path))
    monkeypatch.setattr(trec_scan.Ids, "keys", lambda ids: (ids.flat_spans().lengths.astype("uint64"), False))
    shared = trec.evaluate(read_qrels(qrels_path), read_run(run_path))
    _assert_same(shared, expected)


def _report(qrels_text: str, run_text: str, folder: Path) -> tuple[np.ndarray, bool | None]:
    require_c(trec._label_library())
    (folder / "qrels").write_text(qrels_text)
    (folder / "run").write_text(run_text)
    qrels, run = read_qrels(folder / "qrels"), read_run(folder / "run")
    run_q, rel_q, qids = trec._query_codes(run.qid, qrels.qid)
    (run_d, run_exact), (rel_d, rel_exact) = run.docid.keys(), qrels.docid.keys()
    found = trec._labels_compiled(run_q, run_d, run.docid, qrels, rel_q, rel_d, 1, run_exact and rel_exact,
                                  len(qids))
    assert found is not None
    return found


@pytest.mark.parametrize("doc", ["d", "clueweb09-en0000-00-00001"])
def test_the_pass_says_whether_a_document_is_ranked_twice(tmp_path: Path, doc: str) -> None:
    qrels = f"1 0 {doc} 2\n1 0 e 0\n2 0 {doc} 1\n"
    label, repeats = _report(qrels, f"1 Q0 {doc} 1 3 t\n1 Q0 e 2 2 t\n1 Q0 f 3 1 t\n2 Q0 {doc} 1 1 t\n", tmp_path)
    assert label.tolist() == [2, 0, np.iinfo(label.dtype).min, 1]
    assert repeats is False
    # The same document twice for query 1 (once for each query is no repeat).
    assert _report(qrels, f"1 Q0 {doc} 1 3 t\n1 Q0 e 2 2 t\n1 Q0 {doc} 3 1 t\n2 Q0 {doc} 1 1 t\n", tmp_path)[1]
    # Query 1's rows are not all together: the pass cannot tell, the caller looks.
    assert _report(qrels, f"1 Q0 {doc} 1 3 t\n2 Q0 {doc} 1 1 t\n1 Q0 e 2 2 t\n", tmp_path)[1] is None


@pytest.mark.parametrize("doc", ["d", "clueweb09-en0000-00-00001"])
def test_a_pair_judged_twice_is_named_at_the_same_line_by_both_paths(tmp_path: Path, doc: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "qrels").write_text(f"1 0 a 1\n2 0 {doc} 1\n1 0 b 0\n2 0 x 0\n2 0 {doc} 0\n1 0 a 1\n2 0 {doc} 2\n")
    (tmp_path / "run").write_text(f"1 Q0 a 1 2 t\n2 Q0 {doc} 1 1 t\n")
    messages = []
    for library in (trec._label_library, lambda: None):
        monkeypatch.setattr(trec, "_label_library", library)
        with pytest.raises(EvalError) as caught:
            trec.evaluate(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"))
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "qrels:5" in messages[0]
    assert f"document {doc}, first at {tmp_path / 'qrels'}:2" in messages[0]
