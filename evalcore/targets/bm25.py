"""A BM25 index as a query reads it: the term-by-chunk score matrix bm25s builds and saves, scored here.

bm25s builds the index (each term's column of precomputed per-chunk scores, in compressed sparse
column form) and saves it as numpy arrays beside its vocabulary and parameters. A query needs only
those arrays: its raw BM25 score for a chunk is the sum, over the query's terms found in the
vocabulary (repeats included, in query order), of that term's precomputed score for the chunk,
plus the terms' non-occurrence scores for the variants that have them (BM25L, BM25+). Reading the
saved arrays here spares every process that only queries an index the import of bm25s, which
brings in scipy's sparse matrices (0.3-0.4 s). The sums are the same float32 additions in the same
order (term after term), so the scores equal bm25s's `get_scores` bit for bit (the
tests check it).

BM25 retrieval alone reads only a query's best chunks: a C loop (`bm25.c`, `Bm25Index.best`) sums the same
single-precision scores, finds the top one and picks the best chunks in one call, without numpy's temporary arrays
or the Python loop over the query's terms; where it is not built, numpy's scores and retrieval's selection give the
same chunks and scores.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from evalcore.errors import EvalError
from evalcore.runtime import compiled

# bm25s's file names inside a saved index.
PARAMS, VOCAB = "params.index.json", "vocab.index.json"
DATA, INDICES, INDPTR, NONOCCURRENCE = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy",
                                        "nonoccurrence_array.index.npy")
# The variants whose scores add each query term's score in the chunks that lack it.
WITH_NONOCCURRENCE = frozenset({"bm25l", "bm25+"})
# A term found in more than this share of the chunks ("the", "de", "的") is added as a whole row of scores, zeros
# included: one contiguous add instead of an indexed one over thousands of rows (4-5x faster per query on a
# three-language corpus of 20,000 chunks, for about 130 rows of 4 bytes per chunk).
DENSE_SHARE = 1 / 16
# At most this many bytes of such rows per index (a row is 4 bytes per chunk: a corpus of millions of chunks keeps a
# few rows, the others added by index as before).
DENSE_BYTES = 32 << 20
BEST = Path(__file__).with_suffix(".c")


class Best(NamedTuple):
    """A query's best chunks, best first: their rows, normalised scores (raw / the query's top raw score), and raw and
    normalised scores rounded to 6 decimals."""

    rows: list[int]
    norms: list[float]
    raws_rounded: list[float]
    norms_rounded: list[float]


@dataclass(frozen=True)
class Bm25Index:
    """Each term's id (`vocab`), and the per-chunk scores of each term's column (`data[indptr[t]:indptr[t + 1]]` for
    the chunks `indices[...]`) of `num_docs` chunks; `nonoccurrence` the per-term score added to every chunk when the
    variant has one."""

    vocab: dict[str, int]
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    num_docs: int
    nonoccurrence: np.ndarray | None = None
    once: bool = False  # every column names each chunk at most once (its rows strictly rise, as bm25s writes them)
    # The frequent terms' whole rows (see DENSE_SHARE), made the first time a query names them.
    _dense: dict[int, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    _bounds: list[int] = field(init=False, compare=False, repr=False)  # indptr as Python integers
    # The arrays as the compiled loop reads them, and their addresses with the numbers of columns and chunks, in one
    # argument; None when it cannot read them (scores in another precision than single, a non-occurrence score,
    # columns out of order).
    _compiled: tuple[tuple[np.ndarray, ...], ctypes.Array[ctypes.c_int64]] | None = field(
        init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_bounds", self.indptr.tolist())
        object.__setattr__(self, "_compiled", self._laid_out())

    def _laid_out(self) -> tuple[tuple[np.ndarray, ...], ctypes.Array[ctypes.c_int64]] | None:
        if self.data.dtype != np.float32 or self.nonoccurrence is not None or self.num_docs >= 2**31 \
                or int(self.indptr[0]) != 0 or bool(np.any(np.diff(self.indptr) < 0)):
            return None
        arrays = (np.ascontiguousarray(self.data), np.ascontiguousarray(self.indices, dtype=np.int32),
                  np.ascontiguousarray(self.indptr, dtype=np.int64))
        return arrays, (ctypes.c_int64 * 5)(*(array.ctypes.data for array in arrays), self.indptr.size - 1,
                                            self.num_docs)

    @classmethod
    def of(cls, vocab: dict[str, int], scores: dict[str, Any], nonoccurrence: np.ndarray | None = None) -> Bm25Index:
        """From an index's vocabulary and score arrays (a bm25s model's `vocab_dict` and `scores`)."""
        data, indices, indptr = (np.asarray(scores[name]) for name in ("data", "indices", "indptr"))
        num_docs = int(scores["num_docs"])
        if (indptr.ndim != 1 or indptr.size < 1 or data.shape != indices.shape or data.ndim != 1
                or int(indptr[-1]) != data.size
                or (indices.size and not 0 <= int(indices.min()) <= int(indices.max()) < num_docs)
                or (nonoccurrence is not None and nonoccurrence.shape != (indptr.size - 1,))):
            raise EvalError("the BM25 index's arrays do not fit together", where="bm25",
                            expected="a column per vocabulary term, rows under the chunk count")
        # bm25s gives the empty token an id past the columns (a query naming it is an error there): it matches nothing.
        columns = indptr.size - 1
        vocab = {term: int(term_id) for term, term_id in vocab.items() if 0 <= term_id < columns}
        return cls(vocab, data, indices, indptr, num_docs, nonoccurrence, _rising(indices, indptr))

    @classmethod
    def load(cls, folder: Path) -> Bm25Index:
        """A saved index (bm25s's `save` layout)."""
        params = json.loads((folder / PARAMS).read_text(encoding="utf-8"))
        vocab = json.loads((folder / VOCAB).read_text(encoding="utf-8"))
        scores = {name: np.load(folder / file) for name, file in (("data", DATA), ("indices", INDICES),
                                                                 ("indptr", INDPTR))}
        scores["data"] = scores["data"].astype(params.get("dtype", "float32"), copy=False)
        scores["num_docs"] = params["num_docs"]
        nonoccurrence = np.load(folder / NONOCCURRENCE) if params.get("method") in WITH_NONOCCURRENCE else None
        return cls.of(vocab, scores, nonoccurrence)

    def term_ids(self, tokens: Sequence[str]) -> list[int]:
        """The ids of the tokens in the vocabulary, in order (repeats kept, unknown tokens left out)."""
        return [term for term in map(self.vocab.get, tokens) if term is not None]  # one look-up a token

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """The raw BM25 score of every chunk for these query tokens (zeros when none is in the vocabulary)."""
        ids = self.term_ids(tokens)
        data, indices, bounds = self.data, self.indices, self._bounds
        scores: np.ndarray | None = None
        for term in ids:
            start, end = bounds[term], bounds[term + 1]
            row = self._row(term, end - start) if self.once else None
            if row is not None and scores is None:
                scores = row.copy()  # what adding it to zeros gives: a row holds no -0.0
                continue
            if scores is None:
                scores = np.zeros(self.num_docs, dtype=data.dtype)
            if row is not None:
                scores += row  # a row's zeros leave a score as it is (never -0.0: sums start at +0.0)
            elif not self.once:
                np.add.at(scores, indices[start:end], data[start:end])
            else:  # each chunk once: an indexed += adds each score once, in float32, as np.add.at (slower); indexing by
                # the platform's integers (bm25s saves 32-bit rows) is 3-4x faster than by 32-bit ones, cast included
                scores[indices[start:end].astype(np.intp)] += data[start:end]
        if scores is None:
            scores = np.zeros(self.num_docs, dtype=data.dtype)
        if self.nonoccurrence is not None:
            scores += self.nonoccurrence[np.asarray(ids, dtype=np.int64)].sum()
        return scores

    def best(self, ids: Sequence[int], threshold: float, k: int) -> Best | None:
        """The best `k` chunks for the query's term ids (`term_ids`) by the compiled loop (`bm25.c`): those with a
        positive raw score (`scores`) whose normalised score is at least `threshold`, by (-normalised score, row);
        None where there is no compiled loop, and `scores` with retrieval's selection give the same."""
        library = best_library()
        if library is None or self._compiled is None or k < 1:
            return None
        count = len(ids)
        io, scores = (ctypes.c_int64 * (count + k))(*ids), (ctypes.c_double * (3 * k))()
        found = library.evalcore_bm25_best(self._compiled[1], io, count, threshold, k, scores)
        if found < 0:  # no memory for the scores: numpy's path will fail as clearly
            return None
        return Best(io[count:count + found], scores[:found], scores[k:k + found], scores[2 * k:2 * k + found])

    def _row(self, term: int, size: int) -> np.ndarray | None:
        """The whole row of a frequent term (see DENSE_SHARE), made the first time a query names it; None for
        another term, or once the rows kept are DENSE_BYTES."""
        row = self._dense.get(term)
        if row is not None or size <= self.num_docs * DENSE_SHARE \
                or len(self._dense) >= DENSE_BYTES // max(self.num_docs * self.data.itemsize, 1):
            return row
        start, end = self._bounds[term], self._bounds[term + 1]
        row = np.zeros(self.num_docs, dtype=self.data.dtype)
        row[self.indices[start:end]] = self.data[start:end]
        row += 0.0  # -0.0 to +0.0, as adding it to zeros makes it
        self._dense[term] = row
        return row


def _best_signatures() -> compiled.Signatures:
    integer = ctypes.c_int64
    return {"evalcore_bm25_best": (integer, [ctypes.POINTER(integer), ctypes.POINTER(integer), integer,
                                             ctypes.c_double, integer, ctypes.POINTER(ctypes.c_double)])}


# The compiled BM25 retrieval, its argument types declared (once per process); None where numpy scores.
best_library = compiled.loader(BEST, _best_signatures)


def _rising(indices: np.ndarray, indptr: np.ndarray) -> bool:
    """Whether the rows of every column strictly rise (so no column names a chunk twice)."""
    if indices.size < 2:
        return True
    rises = indices[1:] > indices[:-1]
    # The step from a column's last row to the next column's first one may fall.
    boundaries = indptr[1:-1].astype(np.int64) - 1
    rises[boundaries[(boundaries >= 0) & (boundaries < rises.size)]] = True
    return bool(rises.all())
