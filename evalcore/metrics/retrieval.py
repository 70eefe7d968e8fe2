"""Binary retrieval measures as trec_eval defines them, vectorised over many queries at once.

Every query is a slice of one flat array of relevance flags in rank order, so 100,000 queries
cost a handful of numpy passes instead of a Python loop per query. The single question of a
campaign (`retrieval_scores`) takes a scalar path instead, which does the same float operations in
the same order on the same discounts (numpy's, tabulated once), so it gives the same bits: a test
checks it against `batch_scores` on many random queries, and the oracle tests cover both.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from itertools import compress
from typing import TypeVar

import numpy as np

from evalcore.datasets.relevance import relevant_ids
from evalcore.errors import EvalError
from evalcore.metrics.measure import Inputs, Measure

RETRIEVAL_MEASURES = ("precision", "recall", "ndcg@3", "ndcg@10", "mrr", "map")
NDCG_CUTS = (3, 10)
# nDCG with the qrels labels as gains (trec_eval's ndcg_cut on graded qrels), for TREC files.
GRADED_NDCG_MEASURES = ("ndcg_graded@3", "ndcg_graded@10")
DocId = TypeVar("DocId", bound=Hashable)


def relevant_set(relevant: Mapping[DocId, int] | Collection[DocId]) -> set[DocId]:
    """The relevant ids: a mapping keeps ids with label >= 1, any other collection is the set."""
    if isinstance(relevant, Mapping):
        return relevant_ids(relevant)
    return set(relevant)


def relevance_flags(relevant: set[DocId], ranked: Sequence[DocId | None]) -> list[bool]:
    """Relevance per rank after collapsing duplicates to their first rank; None is a miss."""
    if None not in ranked:  # the usual list: every id at its first rank, in one pass in C
        return list(map(relevant.__contains__, dict.fromkeys(ranked)))
    seen: set[DocId] = set()
    flags = []
    for doc in ranked:
        if doc is None:
            flags.append(False)
        elif doc not in seen:
            seen.add(doc)
            flags.append(doc in relevant)
    return flags


def retrieval_scores(
    relevant: Mapping[DocId, int] | Collection[DocId], ranked: Sequence[DocId | None]
) -> dict[str, float]:
    """precision, recall, ndcg@3, ndcg@10, mrr, map of one ranked list (misses kept at rank)."""
    for name, value in (("relevant", relevant), ("ranked", ranked)):
        if isinstance(value, (str, bytes)):  # would be read as one document per character
            raise EvalError(f"{name} must be a collection of document ids, not a string", found=repr(value),
                            fix=f"wrap a single id in a list: [{value!r}]")
    wanted = relevant_set(relevant)
    return _one_query(relevance_flags(wanted, ranked), len(wanted))


def _one_query(flags: Sequence[bool], num_rel: int) -> dict[str, float]:
    """batch_scores of one query, in Python floats: each sum accumulated in rank order from 0.0 as numpy's
    bincount does, each discount numpy's own (`_discounts`)."""
    ranks = list(compress(range(1, len(flags) + 1), flags))
    found = len(ranks)
    values = {"precision": found / len(flags) if flags else 0.0, "recall": found / num_rel if num_rel else 0.0}
    discounts = _discounts(len(flags))
    for cut in NDCG_CUTS:
        dcg = 0.0
        for rank in ranks:
            if rank <= cut:
                dcg += discounts[rank]
        ideal = _ideal_table(cut)[min(num_rel, cut)]
        values[f"ndcg@{cut}"] = dcg / ideal if ideal > 0 else 0.0
    values["mrr"] = 1.0 / ranks[0] if ranks else 0.0
    precision_at_hits = 0.0
    for count, rank in enumerate(ranks, 1):
        precision_at_hits += count / rank
    values["map"] = precision_at_hits / num_rel if num_rel else 0.0
    return values  # built in RETRIEVAL_MEASURES' order


_DISCOUNTS: list[float] = [0.0]   # index = rank (1-based): 1 / log2(rank + 1), as batch_scores computes it
_IDEAL: dict[int, list[float]] = {}


def _discounts(ranks: int) -> list[float]:
    """The discounts of ranks 1..ranks at least (numpy's log2, as batch_scores takes them), tabulated once."""
    if len(_DISCOUNTS) <= ranks:
        size = max(ranks, 2 * len(_DISCOUNTS), 64)
        _DISCOUNTS[1:] = (1.0 / np.log2(np.arange(1, size + 1) + 1.0)).tolist()
    return _DISCOUNTS


def _ideal_table(cut: int) -> list[float]:
    """IDCG@cut by the number of relevant documents, 0..cut (`_ideal_dcg`'s table)."""
    table = _IDEAL.get(cut)
    if table is None:
        table = _IDEAL[cut] = _ideal_dcg(np.arange(cut + 1), cut).tolist()
    return table


def _ideal_dcg(num_rel: np.ndarray, cut: int) -> np.ndarray:
    """IDCG@cut for binary relevance: the discounts of the first min(cut, |R|) ranks."""
    table = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(2, cut + 2)))))
    ideal: np.ndarray = table[np.minimum(num_rel, cut)]
    return ideal


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (as trec_eval reports it)."""
    out = np.zeros(numerator.shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _hits(offsets: np.ndarray, flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(query, 1-based rank) of every True flag. Only the hits are located (a binary search in
    the sorted offsets), so no array as long as the whole run is built."""
    hits = np.flatnonzero(flags)
    group = np.searchsorted(offsets, hits, side="right") - 1
    return group, hits - offsets[group] + 1


def batch_scores(offsets: np.ndarray, flags: np.ndarray, num_rel: np.ndarray) -> dict[str, np.ndarray]:
    """The six measures per query.

    `flags[offsets[q]:offsets[q+1]]` are query q's results in rank order (deduplicated, misses
    included as False); `num_rel[q]` is |R|. Definitions and trec_eval equivalents: docs/measures.md.
    """
    queries = offsets.size - 1
    retrieved = np.diff(offsets)
    hit_group, hit_rank = _hits(offsets, flags)
    found = np.bincount(hit_group, minlength=queries).astype(np.float64)
    # Rank of each hit among the hits of its query = the hit's position minus the query's first.
    first_hit = np.searchsorted(hit_group, np.arange(queries))
    hits_so_far = np.arange(hit_group.size) - first_hit[hit_group] + 1
    values = {
        "precision": _divide(found, retrieved.astype(np.float64)),
        "recall": _divide(found, num_rel.astype(np.float64)),
    }
    discount = 1.0 / np.log2(hit_rank + 1.0)
    for cut in NDCG_CUTS:
        top = hit_rank <= cut
        dcg = np.bincount(hit_group[top], weights=discount[top], minlength=queries)
        values[f"ndcg@{cut}"] = _divide(dcg, _ideal_dcg(num_rel, cut))
    has_hit = first_hit < np.append(first_hit[1:], hit_group.size)
    mrr = np.zeros(queries)
    mrr[has_hit] = 1.0 / hit_rank[first_hit[has_hit]]
    values["mrr"] = mrr
    precision_at_hits = np.bincount(hit_group, weights=hits_so_far / hit_rank, minlength=queries)
    values["map"] = _divide(precision_at_hits, num_rel.astype(np.float64))
    return {name: values[name] for name in RETRIEVAL_MEASURES}


def _graded_dcg(offsets: np.ndarray, gains: np.ndarray, cut: int) -> np.ndarray:
    """sum over ranks i <= cut of gain_i / log2(i + 1), per query (only positive gains count)."""
    group, rank = _hits(offsets, gains > 0)
    top = rank <= cut
    weights = gains[gains > 0][top] / np.log2(rank[top] + 1.0)
    return np.bincount(group[top], weights=weights, minlength=offsets.size - 1)


def graded_ndcg(offsets: np.ndarray, gains: np.ndarray, ideal_offsets: np.ndarray, ideal_gains: np.ndarray,
                cut: int) -> np.ndarray:
    """nDCG@cut with the labels as gains, per query, as trec_eval's ndcg_cut.

    `gains[offsets[q]:offsets[q+1]]` are query q's labels in rank order; `ideal_gains` over
    `ideal_offsets` are all its judged labels, highest first (the ideal ranking).
    """
    return _divide(_graded_dcg(offsets, gains, cut), _graded_dcg(ideal_offsets, ideal_gains, cut))


def _of_question(inputs: Inputs) -> dict[str, float]:
    """The six measures of the question's ranked list, computed once for all six."""
    return retrieval_scores(inputs.relevant or {}, inputs.ranked)


def _declare(name: str, doc: str, trec_eval: str, verdict_priority: int | None = None,
             api_field: str | None = None, column: bool = False) -> Measure:
    """A binary retrieval measure of a question's ranked list (relevant: label >= 1; duplicates at their first rank;
    a chunk that maps to no passage a miss at its rank)."""
    return Measure(name, doc, "retrieval", needs=("relevant",), settings=(("rel", ">=1"), ("dup", "first"),
                   ("miss", "kept")), departs=True, verdict_priority=verdict_priority,
                   together=_of_question, api_field=api_field or name, column=column,
                   checked=f"pytrec_eval {trec_eval}")


def _graded_ndcg(cut: int) -> Measure:
    """nDCG with the labels as gains: TREC files only (`score -m`), never a campaign's question."""
    return Measure(f"ndcg_graded@{cut}", f"DCG@{cut} / IDCG@{cut}, DCG = sum_{{i<={cut}}} label_i / log2(i+1), IDCG "
                   f"from all judged labels of the query (Jarvelin & Kekalainen 2002; trec_eval ndcg_cut_{cut}). "
                   "TREC files (score -m).", "retrieval", settings=(("gain", "label"), ("dup", "first")),
                   departs=True, checked=f"pytrec_eval ndcg_cut_{cut} on graded qrels")


DECLARED = (
    _declare("precision", "relevant retrieved / n, 0 when n = 0 (trec_eval set_P).", "set_P"),
    _declare("recall", "relevant retrieved / |R| (trec_eval set_recall).", "set_recall", column=True),
    _declare("ndcg@3", "DCG@3 / IDCG@3, DCG = sum_{i<=3} rel_i / log2(i+1), binary rel, IDCG over min(3, |R|) "
             "ideal ranks (Jarvelin & Kekalainen 2002; trec_eval ndcg_cut_3).", "ndcg_cut_3", api_field="ndcg3"),
    # A retrieval-side change is judged by it first (the first retrieval measure of the verdict order).
    _declare("ndcg@10", "DCG@10 / IDCG@10 as ndcg@3 with k = 10 (trec_eval ndcg_cut_10).", "ndcg_cut_10",
             verdict_priority=3, api_field="ndcg10"),
    _declare("mrr", "1 / rank of the first relevant document, 0 if none (Voorhees 1999; trec_eval recip_rank).",
             "recip_rank", column=True),
    _declare("map", "(1/|R|) * sum over relevant ranks i of (relevant in top i) / i (trec_eval map).", "map"),
    *(_graded_ndcg(cut) for cut in NDCG_CUTS),
)
