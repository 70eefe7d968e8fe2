"""The BM25 index read back from bm25s's arrays: the same scores as bm25s's own, bit for bit, without importing it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import bm25s
import numpy as np
import pytest

from evalcore.errors import EvalError
from evalcore.targets.bm25 import Best, Bm25Index, best_library
from tests.conftest import require_c

ROOT = Path(__file__).resolve().parent.parent
WORDS = ["the", "a", "retour", "été", "café", "北京", "天安门", "退货", "3.14", "kestrel", "r5", "x" * 40, "élève",
         "消费者", "gdpr", "eu", "days"]


def corpus(rng: random.Random, size: int) -> list[list[str]]:
    """Chunks of a few words with a skewed vocabulary (common words in most chunks), some of them empty."""
    vocabulary = WORDS + [f"w{i}" for i in range(rng.randint(5, 400))]
    return [[vocabulary[min(int(rng.paretovariate(0.8)) - 1, len(vocabulary) - 1)] if rng.random() < 0.5
             else rng.choice(vocabulary) for _ in range(rng.choice([0, 1, 3, 12, 60]))] for _ in range(size)]


def queries(rng: random.Random, docs: list[list[str]]) -> list[list[str]]:
    """Queries mixing indexed words, repeated words and words no chunk has."""
    known = sorted({word for doc in docs for word in doc}) or ["none"]
    return [[rng.choice(known) if rng.random() < 0.8 else f"unknown{rng.randint(0, 9)}"
             for _ in range(rng.randint(1, 9))] for _ in range(25)] + [[known[0]] * 4, ["unknown"]]


def same_bits(ours: np.ndarray, theirs: np.ndarray) -> bool:
    theirs = np.asarray(theirs)
    return ours.dtype == theirs.dtype and ours.shape == theirs.shape and ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
@pytest.mark.parametrize("seed", range(6))
def test_scores_equal_bm25s_bit_for_bit_in_memory_and_saved(tmp_path: Path, method: str, seed: int) -> None:
    rng = random.Random(f"{method}-{seed}")
    docs = corpus(rng, rng.choice([1, 7, 120, 900]))
    if not any(docs):
        docs.append(["the"])
    model = bm25s.BM25(method=method, csc_backend="scipy" if seed % 2 else "numpy")
    model.index(docs, show_progress=False)
    model.save(str(tmp_path / "bm25"), show_progress=False)
    kept = Bm25Index.of(model.vocab_dict, model.scores, model.nonoccurrence_array)
    loaded = Bm25Index.load(tmp_path / "bm25")
    for query in queries(rng, docs):
        theirs = model.get_scores(query)
        assert same_bits(kept.scores(query), theirs), query
        assert same_bits(loaded.scores(query), theirs), query


def test_a_column_naming_a_chunk_twice_is_summed_as_bm25s_sums_it() -> None:
    # bm25s never writes one, but an index that does is still read as bm25s reads it.
    vocab = {"a": 0, "b": 1}
    data = np.array([0.5, 0.25, 1.0, 0.125, 2.0], dtype=np.float32)
    scores = {"data": data, "indices": np.array([2, 2, 0, 1, 0], dtype=np.int32),
              "indptr": np.array([0, 3, 5], dtype=np.int32), "num_docs": 3}
    index = Bm25Index.of(vocab, scores)
    assert index.scores(["a", "b", "a"]).tolist() == [4.0, 0.125, 1.5]
    theirs = bm25s.BM25._compute_relevance_from_scores(data, scores["indptr"], scores["indices"], 3,
                                                       np.array([0, 1, 0], dtype=np.int32), np.dtype(np.float32))
    assert same_bits(index.scores(["a", "b", "a"]), theirs)


def test_arrays_that_do_not_fit_together_are_refused() -> None:
    good = {"data": np.ones(2, dtype=np.float32), "indices": np.array([0, 1], dtype=np.int32),
            "indptr": np.array([0, 1, 2], dtype=np.int32), "num_docs": 2}
    Bm25Index.of({"a": 0, "b": 1}, good)
    assert Bm25Index.of({"a": 0, "": 2}, good).vocab == {"a": 0}   # bm25s's empty token has no column
    for vocab, change in (({"a": 0}, {"num_docs": 1}), ({"a": 0}, {"indices": np.array([0, -1], dtype=np.int32)}),
                          ({"a": 0}, {"indptr": np.array([0, 1, 3], dtype=np.int32)}),
                          ({"a": 0}, {"data": np.ones(3, dtype=np.float32)})):
        with pytest.raises(EvalError, match="BM25 index"):
            Bm25Index.of(vocab, {**good, **change})


def test_a_process_that_only_queries_a_cached_index_imports_neither_bm25s_nor_scipy(tmp_path: Path) -> None:
    # The index is built (bm25s) in one process, then a fresh one loads it from the cache and retrieves: the same
    # ranked chunks and scores, without bm25s or scipy in its modules.
    code = """
import json, sys
from evalcore.datasets import DEFAULT_DATASET, load_dataset
from evalcore.targets import RagTarget, TargetConfig
dataset = load_dataset(DEFAULT_DATASET)
target = RagTarget(TargetConfig.of(retriever="bm25"), cache_dir=sys.argv[1])
target.prepare(dataset.passages)
hits = [[(item.pid, item.score) for item in target.answer(q.text).retrieved] for q in dataset.questions[:20]]
print(json.dumps([hits, "bm25s" in sys.modules, "scipy" in sys.modules]))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                                      env=env, check=True, cwd=ROOT).stdout) for _ in range(2)]
    built, cached = runs
    assert built[1] is True
    assert cached[1] is False
    assert cached[2] is False
    assert cached[0] == built[0]
    assert any(built[0])


def test_an_index_this_reader_cannot_read_is_read_through_bm25s(tmp_path: Path, monkeypatch) -> None:
    # A later bm25s may lay its files out otherwise: the knowledge base then loads the index through bm25s, with the
    # same scores.
    from evalcore.targets import knowledge

    docs = corpus(random.Random(7), 200)
    model = bm25s.BM25()
    model.index(docs, show_progress=False)
    model.save(str(tmp_path / "bm25"), show_progress=False)
    direct = knowledge._load_bm25(tmp_path / "bm25")

    def unreadable(folder: Path) -> Bm25Index:
        raise KeyError("num_docs")

    monkeypatch.setattr(Bm25Index, "load", unreadable)
    through_bm25s = knowledge._load_bm25(tmp_path / "bm25")
    for query in queries(random.Random(8), docs):
        assert same_bits(through_bm25s.scores(query), direct.scores(query))
        assert same_bits(direct.scores(query), model.get_scores(query))


def test_columns_naming_a_chunk_twice_are_summed_as_before() -> None:
    """An index whose columns name a chunk more than once (not as bm25s writes them) adds every entry, as np.add.at
    does; one whose rows rise in every column takes the quicker indexed sum, with the same scores."""
    import numpy as np

    from evalcore.targets.bm25 import Bm25Index

    rng = np.random.default_rng(3)
    columns = [np.sort(rng.choice(50, size=rng.integers(1, 20), replace=False)) for _ in range(30)]
    indptr = np.cumsum([0, *(len(c) for c in columns)])
    indices = np.concatenate(columns).astype(np.int32)
    data = rng.random(indices.size, dtype=np.float32)
    vocab = {f"t{i}": i for i in range(30)}
    rising = Bm25Index.of(vocab, {"data": data, "indices": indices, "indptr": indptr, "num_docs": 50})
    assert rising.once
    query = ["t3", "t7", "t3", "t29", "t0", "nothing"]
    expected = np.zeros(50, dtype=np.float32)
    for term in (3, 7, 3, 29, 0):
        np.add.at(expected, indices[indptr[term]:indptr[term + 1]], data[indptr[term]:indptr[term + 1]])
    assert rising.scores(query).tobytes() == expected.tobytes()
    repeated = indices.copy()
    repeated[indptr[3] + 1] = repeated[indptr[3]]  # column 3 names its first chunk twice
    twice = Bm25Index.of(vocab, {"data": data, "indices": repeated, "indptr": indptr, "num_docs": 50})
    assert not twice.once
    expected = np.zeros(50, dtype=np.float32)
    for term in (3, 7, 3, 29, 0):
        np.add.at(expected, repeated[indptr[term]:indptr[term + 1]], data[indptr[term]:indptr[term + 1]])
    assert twice.scores(query).tobytes() == expected.tobytes()


def test_frequent_terms_added_as_whole_rows_give_the_same_bits() -> None:
    """A term found in many chunks is added as a whole row (zeros where it is absent); interleaved in query order with
    terms added by index, repeats and negative scores included, the sums are np.add.at's bit for bit."""
    from evalcore.targets.bm25 import DENSE_SHARE

    rng = np.random.default_rng(11)
    size = 400
    columns = [np.sort(rng.choice(size, size=int(rng.choice([3, 30, 200, 390])), replace=False)) for _ in range(40)]
    indptr = np.cumsum([0, *(len(c) for c in columns)])
    indices = np.concatenate(columns).astype(np.int32)
    data = (rng.standard_normal(indices.size) * 3).astype(np.float32)
    index = Bm25Index.of({f"t{i}": i for i in range(40)}, {"data": data, "indices": indices, "indptr": indptr,
                                                          "num_docs": size})
    for _ in range(50):
        terms = rng.integers(0, 40, size=int(rng.integers(1, 12))).tolist()
        expected = np.zeros(size, dtype=np.float32)
        for term in terms:
            np.add.at(expected, indices[indptr[term]:indptr[term + 1]], data[indptr[term]:indptr[term + 1]])
        assert same_bits(index.scores([f"t{term}" for term in terms]), expected), terms
    frequent = {term for term in range(40) if len(columns[term]) > size * DENSE_SHARE}
    assert index._dense  # the whole-row path was taken
    assert set(index._dense) <= frequent  # for frequent terms only


def test_whole_rows_stop_at_their_memory_budget_with_the_same_bits(monkeypatch) -> None:
    """Past DENSE_BYTES of rows, frequent terms are added by index again: the same sums, and no more rows kept."""
    from evalcore.targets import bm25

    rng = np.random.default_rng(5)
    size = 300
    columns = [np.sort(rng.choice(size, size=250, replace=False)) for _ in range(12)]
    indptr = np.cumsum([0, *(len(c) for c in columns)])
    indices = np.concatenate(columns).astype(np.int32)
    data = rng.random(indices.size, dtype=np.float32)
    monkeypatch.setattr(bm25, "DENSE_BYTES", 2 * size * 4)  # two rows
    index = Bm25Index.of({f"t{i}": i for i in range(12)}, {"data": data, "indices": indices, "indptr": indptr,
                                                          "num_docs": size})
    for _ in range(20):
        terms = rng.integers(0, 12, size=6).tolist()
        expected = np.zeros(size, dtype=np.float32)
        for term in terms:
            np.add.at(expected, indices[indptr[term]:indptr[term + 1]], data[indptr[term]:indptr[term + 1]])
        assert same_bits(index.scores([f"t{term}" for term in terms]), expected), terms
    assert len(index._dense) == 2


def numpy_best(index: Bm25Index, query: list[str], threshold: float, k: int) -> Best:
    """The best chunks as retrieval finds them without the compiled loop: every chunk's scores, then the selection."""
    from evalcore.targets.retrievers import _bm25_top, _rounded

    raw = index.scores(query)
    top = float(raw.max())
    rows = _bm25_top(raw, top, threshold, k)
    values = raw[rows]
    norm = values / top
    return Best(rows.tolist(), norm.tolist(), _rounded(values), _rounded(norm))


# Thresholds: none, the default, one whose single-precision value is under it (0.7 + 1e-12 rounds down: numpy
# compares in single precision), the top score only.
THRESHOLDS = (0.0, 0.3, 0.7 + 1e-12, 1.0)


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_best_chunks_are_numpys(method: str, seed: int) -> None:
    # Ranked rows, normalised scores and both rounded stage scores equal, bit for bit, to numpy's scores and
    # selection: ties (repeated chunks), negative scores (robertson), queries matching nothing, every threshold, k.
    require_c(best_library())
    rng = random.Random(f"best-{method}-{seed}")
    docs = corpus(rng, rng.choice([7, 120, 900]))
    docs += [list(doc) for doc in rng.sample(docs, min(len(docs), 20))]  # the same words: tied scores
    if not any(docs):
        docs.append(["the"])
    model = bm25s.BM25(method=method)
    model.index(docs, show_progress=False)
    index = Bm25Index.of(model.vocab_dict, model.scores, model.nonoccurrence_array)
    kept = 0
    for query in queries(rng, docs):
        for threshold in THRESHOLDS:
            for k in (1, 3, 30, 1000):
                best = index.best(index.term_ids(query), threshold, k)
                assert best == numpy_best(index, query, threshold, k), (query, threshold, k)
                kept += len(best.rows) if best else 0
    assert kept  # chunks were kept, not only empty lists compared


def test_the_compiled_best_chunks_of_columns_naming_a_chunk_twice_are_numpys() -> None:
    require_c(best_library())
    rng = np.random.default_rng(8)
    columns = [rng.choice(40, size=int(rng.integers(1, 30))) for _ in range(20)]  # repeats, in any order
    indptr = np.cumsum([0, *(len(c) for c in columns)])
    indices = np.concatenate(columns).astype(np.int32)
    data = rng.random(indices.size, dtype=np.float32)
    index = Bm25Index.of({f"t{i}": i for i in range(20)}, {"data": data, "indices": indices, "indptr": indptr,
                                                          "num_docs": 40})
    assert not index.once
    for _ in range(40):
        query = [f"t{term}" for term in rng.integers(0, 20, size=int(rng.integers(1, 8)))]
        for threshold in THRESHOLDS:
            assert index.best(index.term_ids(query), threshold, 10) == numpy_best(index, query, threshold, 10)


def test_variants_with_a_non_occurrence_score_are_left_to_numpy() -> None:
    # BM25L and BM25+ add each query term's score to the chunks that lack it: the compiled loop does not, numpy does.
    docs = corpus(random.Random(4), 50)
    model = bm25s.BM25(method="bm25l")
    model.index(docs, show_progress=False)
    index = Bm25Index.of(model.vocab_dict, model.scores, model.nonoccurrence_array)
    assert index.best(index.term_ids(docs[0] or ["the"]), 0.3, 10) is None


def test_a_normalised_score_at_the_thresholds_single_precision_value_is_kept_as_numpy_keeps_it() -> None:
    # float32(0.7) is under 0.7: numpy compares the float32 scores with the threshold in single precision and keeps
    # the chunk scoring it; a comparison in double precision would drop it.
    require_c(best_library())
    data = np.array([1.0, 0.7, 0.5], dtype=np.float32)
    index = Bm25Index.of({"a": 0}, {"data": data, "indices": np.array([0, 1, 2], dtype=np.int32),
                                    "indptr": np.array([0, 3], dtype=np.int64), "num_docs": 3})
    assert numpy_best(index, ["a"], 0.7, 5).rows == [0, 1]
    assert index.best(index.term_ids(["a"]), 0.7, 5) == numpy_best(index, ["a"], 0.7, 5)


def test_an_id_that_is_no_column_matches_nothing_in_the_compiled_loop() -> None:
    # Ids come from the vocabulary; one from elsewhere is never read past the arrays' ends.
    require_c(best_library())
    index = Bm25Index.of({"a": 0}, {"data": np.array([1.0, 0.5], dtype=np.float32),
                                    "indices": np.array([0, 1], dtype=np.int32),
                                    "indptr": np.array([0, 2], dtype=np.int64), "num_docs": 2})
    assert index.best([0, 1, -1, 1 << 40], 0.0, 5) == index.best([0], 0.0, 5)
    assert index.best([1, -1], 0.0, 5) == Best([], [], [], [])
