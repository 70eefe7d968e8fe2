"""Retrieval over a knowledge base: BM25, vector (cosine), or hybrid (RRF or weighted sum).

Score scales, so that thresholds mean the same on every corpus and query:
- BM25 raw scores are unbounded, so each is divided by the query's top BM25 score
  (`bm25_norm` in 0..1, 1 for the best chunk); `keyword_threshold` applies to it.
- vector scores are cosine similarities of normalised embeddings (-1..1); `vector_threshold`
  applies to them.
Each side keeps the chunks over its threshold, then its best `embedding_top_k`. Hybrid fuses
the two kept lists: RRF sums 1/(rrf_k + rank); weighted sums fusion_weight * cosine +
(1 - fusion_weight) * bm25_norm, with both scores known for every chunk. Ties rank by row.
"""

from __future__ import annotations

import numpy as np

from evalcore.targets.base import Hit, Retrieved
from evalcore.targets.config import TargetConfig
from evalcore.targets.knowledge import KnowledgeBase, embed_query


def bm25_scores(kb: KnowledgeBase, query: str) -> np.ndarray:
    """Raw BM25 of every chunk for the query's default-tokenizer tokens (0 when none match)."""
    from evalcore.text import tokens

    query_tokens = list(tokens(query))
    if not query_tokens:
        return np.zeros(len(kb.chunks), dtype=np.float32)
    return np.asarray(kb.bm25.get_scores(query_tokens), dtype=np.float32)


def top_rows(scores: np.ndarray, keep: np.ndarray, k: int) -> np.ndarray:
    """Rows where `keep` holds, best `k` by (-score, row)."""
    rows = np.flatnonzero(keep)
    if len(rows) > k:
        # argpartition may cut inside a tie: keep everything tied with the k-th score.
        kth = -np.partition(-scores[rows], k - 1)[k - 1]
        rows = rows[scores[rows] >= kth]
    order = np.lexsort((rows, -scores[rows]))
    return rows[order][:k]


def search(kb: KnowledgeBase, config: TargetConfig, query: str) -> list[Hit]:
    """The ranked chunks for a query under the configured retriever."""
    stages: dict[str, np.ndarray] = {}
    kept: dict[str, np.ndarray] = {}
    if config.retriever in ("bm25", "hybrid"):
        raw = bm25_scores(kb, query)
        top = float(raw.max()) if len(raw) else 0.0
        norm = raw / top if top > 0 else np.zeros_like(raw)
        stages |= {"bm25": raw, "bm25_norm": norm}
        kept["bm25"] = top_rows(norm, (raw > 0) & (norm >= config.keyword_threshold), config.embedding_top_k)
    if config.retriever in ("vector", "hybrid"):
        cosine = kb.embeddings[config.embedding_model] @ embed_query(config.embedding_model, query)
        stages["vector"] = cosine
        kept["vector"] = top_rows(cosine, cosine >= config.vector_threshold, config.embedding_top_k)
    if config.retriever == "bm25":
        rows, final = kept["bm25"], stages["bm25_norm"]
    elif config.retriever == "vector":
        rows, final = kept["vector"], stages["vector"]
    else:
        rows, final = _fuse(config, stages, kept, len(kb.chunks))
        stages[config.fusion] = final
    return [_hit(kb, int(row), float(final[row]), stages) for row in rows]


def _fuse(config: TargetConfig, stages: dict[str, np.ndarray], kept: dict[str, np.ndarray],
          size: int) -> tuple[np.ndarray, np.ndarray]:
    """Fused scores over the union of both kept lists, best embedding_top_k of them."""
    union = np.zeros(size, dtype=bool)
    fused = np.zeros(size, dtype=np.float64)
    for rows in kept.values():
        union[rows] = True
    if config.fusion == "rrf":
        for rows in kept.values():
            fused[rows] += 1.0 / (config.rrf_k + np.arange(1, len(rows) + 1))
    else:
        weight = config.fusion_weight
        fused[union] = weight * stages["vector"][union] + (1 - weight) * stages["bm25_norm"][union]
    return top_rows(fused, union, config.embedding_top_k), fused


def _hit(kb: KnowledgeBase, row: int, score: float, stages: dict[str, np.ndarray]) -> Hit:
    chunk = kb.chunks[row]
    scores = {name: round(float(values[row]), 6) for name, values in stages.items()}
    return Hit(row, Retrieved(chunk.pid, chunk.title, chunk.text, score, scores))
