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
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalcore.errors import EvalError

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
        vocab = self.vocab
        return [vocab[token] for token in tokens if token in vocab]

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """The raw BM25 score of every chunk for these query tokens (zeros when none is in the vocabulary)."""
        scores = np.zeros(self.num_docs, dtype=self.data.dtype)
        ids = self.term_ids(tokens)
        data, indices, indptr = self.data, self.indices, self.indptr
        dense, frequent = self._dense, self.num_docs * DENSE_SHARE
        rows = DENSE_BYTES // max(scores.nbytes, 1)
        for term in ids:
            start, end = int(indptr[term]), int(indptr[term + 1])
            if not self.once:
                np.add.at(scores, indices[start:end], data[start:end])
            elif end - start > frequent and (term in dense or len(dense) < rows):
                row = dense.get(term)  # a row's zeros leave a score as it is (never -0.0: sums start at +0.0)
                if row is None:
                    row = np.zeros(self.num_docs, dtype=data.dtype)
                    row[indices[start:end]] = data[start:end]
                    dense[term] = row
                scores += row
            else:  # each chunk once: an indexed += adds each score once, in float32, as np.add.at (slower)
                scores[indices[start:end]] += data[start:end]
        if self.nonoccurrence is not None:
            scores += self.nonoccurrence[np.asarray(ids, dtype=np.int64)].sum()
        return scores



def _rising(indices: np.ndarray, indptr: np.ndarray) -> bool:
    """Whether the rows of every column strictly rise (so no column names a chunk twice)."""
    if indices.size < 2:
        return True
    rises = indices[1:] > indices[:-1]
    # The step from a column's last row to the next column's first one may fall.
    boundaries = indptr[1:-1].astype(np.int64) - 1
    rises[boundaries[(boundaries >= 0) & (boundaries < rises.size)]] = True
    return bool(rises.all())
