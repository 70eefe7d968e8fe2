"""Retrieval over a knowledge base: BM25, vector (cosine), or hybrid (RRF or weighted sum).

Score scales, so that thresholds mean the same on every corpus and query:
- BM25 raw scores are unbounded, so each is divided by the query's top BM25 score
  (`bm25_norm` in 0..1, 1 for the best chunk); `keyword_threshold` applies to it.
- vector scores are cosine similarities of normalised embeddings (-1..1); `vector_threshold`
  applies to them.
Each side keeps the chunks over its threshold, then its best `embedding_top_k`. Hybrid fuses
the two kept lists: RRF sums 1/(rrf_k + rank); weighted sums fusion_weight * cosine +
(1 - fusion_weight) * bm25_norm, with both scores known for every chunk. Ties rank by row.
The vector side may embed another text than BM25 searches (`vector_query`: a HyDE passage).
"""

from __future__ import annotations

from itertools import repeat

import numpy as np

from evalcore.targets.base import Hit, Retrieved
from evalcore.targets.bm25 import Best
from evalcore.targets.knowledge import KnowledgeBase, embed_query
from evalcore.targets.target_config import TargetConfig


def bm25_scores(kb: KnowledgeBase, query: str) -> np.ndarray:
    """Raw BM25 of every chunk for the query's default-tokenizer tokens (0 when none match)."""
    from evalcore.language.text import tokens_once

    query_tokens = list(tokens_once(query))
    if not query_tokens:
        return np.zeros(len(kb.chunks), dtype=np.float32)
    return np.asarray(kb.bm25.scores(query_tokens), dtype=np.float32)


def top_rows(scores: np.ndarray, keep: np.ndarray, k: int) -> np.ndarray:
    """Rows where `keep` holds, best `k` by (-score, row)."""
    rows = np.flatnonzero(keep)
    if len(rows) > k:
        # argpartition may cut inside a tie: keep everything tied with the k-th score.
        kth = -np.partition(-scores[rows], k - 1)[k - 1]
        rows = rows[scores[rows] >= kth]
    order = np.lexsort((rows, -scores[rows]))
    return rows[order][:k]


# The k best BM25 rows by normalised score are among the rows whose raw score is at least the
# k-th largest raw score times this: dividing by the top score is monotone, and float32 rounding
# can only merge scores closer than 2^-23 relative into a tie.
ROUNDING_MARGIN = 1 - 2**-20


def _candidates(raw: np.ndarray, top: float, k: int, least: float) -> np.ndarray:
    """Rows that can be among the k best: the positive rows whose raw score is at least the k-th
    largest less the rounding margin, and at least `least` (no row under it can be kept). The rows
    above a share of the top score are found first (counted for each share over `least`, the rows
    listed once: listing many is slow), and only they are partitioned (partitioning every row is slow)."""
    for level in [top * share for share in (0.5, 0.25, 0.125) if top * share > least]:
        above = raw >= level
        if np.count_nonzero(above) >= k:
            break
    else:
        level, above = least, (raw >= least if least > 0 else raw > 0)
    rows = np.flatnonzero(above)
    if rows.size <= k:
        return rows
    values = raw[rows]
    floor = float(np.partition(values, values.size - k)[values.size - k]) * ROUNDING_MARGIN
    return rows[values >= floor] if floor >= level or level <= least else np.flatnonzero(raw >= floor)


def _bm25_top(raw: np.ndarray, top: float, threshold: float, k: int) -> np.ndarray:
    """top_rows(raw / top, (raw > 0) & (raw / top >= threshold), k), without dividing, masking
    and sorting every row of the corpus: only the few rows that can make the top k (see
    `_candidates`: none under the threshold times the top, less the rounding margin) are
    normalised and ranked."""
    if top <= 0:
        return np.zeros(0, dtype=np.int64)
    rows = _candidates(raw, top, k, top * threshold * ROUNDING_MARGIN)
    values = raw[rows]
    norm = values / top
    keep = (values > 0) & (norm >= threshold)
    rows, norm = rows[keep], norm[keep]
    best: np.ndarray = rows[np.lexsort((rows, -norm))[:k]]
    return best


def _normalised(raw: np.ndarray, top: float) -> np.ndarray:
    return raw / top if top > 0 else np.zeros_like(raw)


def search(kb: KnowledgeBase, config: TargetConfig, query: str, vector_query: str | None = None) -> list[Hit]:
    """The ranked chunks for a query under the configured retriever (the vector side embeds `vector_query` when
    given)."""
    if config.retrieval.retriever == "bm25":
        return _bm25_hits(kb, _bm25_best(kb, config, query))
    stages: dict[str, np.ndarray] = {}
    kept: dict[str, np.ndarray] = {}
    if config.retrieval.retriever == "hybrid":
        raw = bm25_scores(kb, query)
        top = float(raw.max()) if len(raw) else 0.0
        stages["bm25"] = raw
        kept["bm25"] = _bm25_top(raw, top, config.retrieval.keyword_threshold, config.retrieval.embedding_top_k)
        stages["bm25_norm"] = _normalised(raw, top)  # the weighted fusion reads the normalised scores of many rows
    if config.retrieval.retriever in ("vector", "hybrid"):
        model = config.retrieval.embedding_model
        cosine = kb.embeddings[model] @ embed_query(model, vector_query or query)
        stages["vector"] = cosine
        kept["vector"] = top_rows(cosine, cosine >= config.retrieval.vector_threshold, config.retrieval.embedding_top_k)
    if config.retrieval.retriever == "vector":
        rows = kept["vector"]
        at_rows = {"vector": stages["vector"][rows]}
        final = at_rows["vector"]
    else:
        rows, fused = _fuse(config, stages, kept, len(kb.chunks))
        stages[config.retrieval.fusion] = fused
        at_rows = {name: values[rows] for name, values in stages.items()}
        final = at_rows[config.retrieval.fusion]
    return _hits(kb, rows, final, at_rows)


def _bm25_best(kb: KnowledgeBase, config: TargetConfig, query: str) -> Best:
    """BM25 retrieval alone: the kept chunks, best first, by the compiled loop (`Bm25Index.best`) where there is one,
    else from every chunk's scores (`bm25_scores`, `_bm25_top`): the same rows and scores either way."""
    from evalcore.language.text import known_numbers, tokens_once

    threshold, k = config.retrieval.keyword_threshold, config.retrieval.embedding_top_k
    ids = known_numbers(query, kb.bm25.vocab)  # a dataset's question, its terms numbered with the whole dataset's
    best = kb.bm25.best(kb.bm25.term_ids(tokens_once(query)) if ids is None else ids, threshold, k)
    if best is not None:
        return best
    raw = bm25_scores(kb, query)
    top = float(raw.max()) if len(raw) else 0.0
    rows = _bm25_top(raw, top, threshold, k)
    values = raw[rows]
    norm = _normalised(values, top)
    return Best(rows.tolist(), norm.tolist(), _rounded(values), _rounded(norm))


def _bm25_hits(kb: KnowledgeBase, best: Best) -> list[Hit]:
    """The hits of BM25 retrieval alone: its raw and normalised scores, ranked by the normalised one. The records are
    made from columns by C loops (map, zip: zip hands its tuple back for the next record once tuple.__new__ has
    copied it); only the stage dicts are written out one by one (quicker than zipped by name)."""
    if not best.rows:
        return []
    pids, titles, texts, _, files = zip(*map(kb.chunks.__getitem__, best.rows), strict=True)
    stages = [{"bm25": bm25, "bm25_norm": rounded} for bm25, rounded in zip(best.raws_rounded, best.norms_rounded,
                                                                              strict=True)]
    make = tuple.__new__  # as in `_hits`: the tuples made directly
    items = map(make, repeat(Retrieved), zip(pids, titles, texts, best.norms, stages, repeat(""), files, strict=False))
    return list(map(make, repeat(Hit), zip(best.rows, items, strict=True)))


def _rounded(values: np.ndarray) -> list[float]:
    """round(value, 6) of each value, as Python rounds it, a whole column at a time for single-precision values:
    such a value times 10**6 is exact in double precision (24 + 14 significant bits), so `rint` rounds it half to
    even as Python does, and dividing by 10**6 gives the double nearest the rounded decimal, which is what Python
    returns (the tests check both on millions of values)."""
    if values.dtype != np.float32:
        return [round(value, 6) for value in values.tolist()]
    rounded: list[float] = (np.rint(values.astype(np.float64) * 1e6) / 1e6).tolist()
    return rounded


def _fuse(config: TargetConfig, stages: dict[str, np.ndarray], kept: dict[str, np.ndarray],
          size: int) -> tuple[np.ndarray, np.ndarray]:
    """Fused scores over the union of both kept lists, best embedding_top_k of them."""
    union = np.zeros(size, dtype=bool)
    fused = np.zeros(size, dtype=np.float64)
    for rows in kept.values():
        union[rows] = True
    if config.retrieval.fusion == "rrf":
        for rows in kept.values():
            fused[rows] += 1.0 / (config.retrieval.rrf_k + np.arange(1, len(rows) + 1))
    else:
        weight = config.retrieval.fusion_weight
        fused[union] = weight * stages["vector"][union] + (1 - weight) * stages["bm25_norm"][union]
    return top_rows(fused, union, config.retrieval.embedding_top_k), fused


def _hits(kb: KnowledgeBase, rows: np.ndarray, final: np.ndarray, at_rows: dict[str, np.ndarray]) -> list[Hit]:
    """A hit per returned row. Only these rows' stage scores are converted and rounded, a column
    at a time (`tolist` converts a whole column in one call)."""
    names = list(at_rows)
    columns = [[round(value, 6) for value in at_rows[name].tolist()] for name in names]
    chunks, make = kb.chunks, tuple.__new__  # the tuples made directly: a named tuple's own __new__ is slower
    return [make(Hit, (row, make(Retrieved, (chunk.pid, chunk.title, chunk.text, score,
                                             dict(zip(names, values, strict=True)), "", chunk.file_name))))
            for row, score, values in zip(rows.tolist(), final.tolist(), zip(*columns, strict=True), strict=True)
            for chunk in (chunks[row],)]
