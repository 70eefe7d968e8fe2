"""The registry of measures: canonical names, formulas, settings and signature strings."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evalcore import __version__
from evalcore.errors import EvalError
from evalcore.metrics.generation import generation_scores
from evalcore.metrics.graded import GRADED_MEASURES, LOWER_IS_BETTER
from evalcore.metrics.retrieval import retrieval_scores
from evalcore.metrics.suite import coverage, sources_found
from evalcore.text import TOKENIZER


@dataclass(frozen=True)
class Measure:
    """A registered measure; `settings` are the defaults its signature records."""

    name: str
    doc: str
    group: str  # "retrieval" | "generation" | "suite" | "judge"
    higher_is_better: bool = True
    settings: tuple[tuple[str, str], ...] = field(default=())

    @property
    def signature(self) -> str:
        """The signature with default settings, e.g. `bleu4|tok:default|smooth:none|version:0.1.0`."""
        return signature(self.name)


_RANKED = (("rel", ">=1"), ("dup", "first"), ("miss", "kept"))
_TEXT = (("tok", TOKENIZER),)
_RETRIEVAL_DOCS = {
    "precision": "relevant retrieved / n, 0 when n = 0 (trec_eval set_P).",
    "recall": "relevant retrieved / |R| (trec_eval set_recall).",
    "ndcg@3": "DCG@3 / IDCG@3, DCG = sum_{i<=3} rel_i / log2(i+1), binary rel, IDCG over min(3, |R|) "
    "ideal ranks (Jarvelin & Kekalainen 2002; trec_eval ndcg_cut_3).",
    "ndcg@10": "DCG@10 / IDCG@10 as ndcg@3 with k = 10 (trec_eval ndcg_cut_10).",
    "mrr": "1 / rank of the first relevant document, 0 if none (Voorhees 1999; trec_eval recip_rank).",
    "map": "(1/|R|) * sum over relevant ranks i of (relevant in top i) / i (trec_eval map).",
}
_GENERATION_DOCS = {
    "bleu1": "BLEU with N = 1: BP * p1, clipped against all references, BP = exp(1 - r/c) if c < r "
    "with r the closest reference length (Papineni et al. 2002; sacreBLEU).",
    "bleu2": "BLEU with N = 2: BP * (p1 p2)^(1/2); 0 without smoothing if an order has no match.",
    "bleu4": "BLEU with N = 4: BP * (p1 p2 p3 p4)^(1/4); 0 without smoothing if an order has no match.",
    "rouge1": "ROUGE-1 F1 = 2PR/(P+R) over clipped unigram overlap, best reference (Lin 2004; rouge-score).",
    "rouge2": "ROUGE-2 F1 over clipped bigram overlap, best reference (Lin 2004; rouge-score).",
    "rougel": "ROUGE-L F1 with P = LCS/|hyp|, R = LCS/|ref| over whole sequences, best reference "
    "(Lin 2004; rouge-score rougeL).",
}
_GRADED_DOCS = {
    "ndcg@3": "sum_{i<=3} (2^(l_i-min) - 1)/log2(i+1) over the same for the ideal order of all labels.",
    "xdcg@3": "100/(max-min) * sum_{i<=3} (l_i-min) 0.6^(i-1) / sum_{i<=3} 0.6^(i-1).",
    "fidelity": "W(retrieved) / W(labeled), W = sum over labels above min of 2^(l-min+1) - 1.",
    "top1_relevance": "label of the first retrieved document (min when unlabeled).",
    "top3_max_relevance": "highest label among the first three retrieved documents.",
    "holes": "retrieved documents without a label.",
    "holes_ratio": "holes / retrieved documents.",
    "total_retrieved_documents": "distinct retrieved documents.",
    "total_groundtruth_documents": "labeled documents of the question.",
}
_JUDGE_DOCS = {
    "judge.score": "1-5 agreement with the expected answer, with a one-sentence reason (LLM judge).",
    "judge.groundedness": "1-5: is the answer supported by the retrieved context (LLM judge).",
    "judge.groundedness_pro": "pass/fail as 1/0: is every claim of the answer in the context (LLM judge).",
    "judge.relevance": "1-5: does the answer address the question (LLM judge).",
    "judge.retrieval": "1-5: are the retrieved passages relevant and well ordered (LLM judge).",
    "judge.completeness": "1-5: does the answer cover the expected answer (LLM judge).",
}


def _registry() -> dict[str, Measure]:
    measures = [Measure(n, d, "retrieval", settings=_RANKED) for n, d in _RETRIEVAL_DOCS.items()]
    for name, doc in _GENERATION_DOCS.items():
        extra = (("smooth", "none"),) if name.startswith("bleu") else (("refs", "max"),)
        measures.append(Measure(name, doc, "generation", settings=_TEXT + extra))
    measures.append(Measure(
        "coverage", "share of the expected answer's important words (no stopword; a digit, 2+ Han "
        "characters or 3+ letters) found in the answer, case and accents ignored (seed 003).",
        "suite", settings=_TEXT + (("stop", "en,fr,zh"),),
    ))
    measures.append(Measure(
        "sources_found", "1 when every expected source is contained in a retrieved title or file "
        "name or equals its id, case and accents ignored, else 0 (seed 003).", "suite",
        settings=(("match", "fold"),),
    ))
    for name in GRADED_MEASURES:
        measures.append(Measure(
            f"graded.{name}", _GRADED_DOCS[name] + " Seed 004 (document retrieval).", "retrieval",
            higher_is_better=name not in LOWER_IS_BETTER, settings=(("scale", "0-4"),),
        ))
    for name, doc in _JUDGE_DOCS.items():
        measures.append(Measure(name, doc, "judge", settings=(("prompt", "none"), ("model", "none"))))
    return {measure.name: measure for measure in measures}


MEASURES: dict[str, Measure] = _registry()


def signature(name: str, **settings: object) -> str:
    """`name|key:value|...|version:X`, defaults overridden by `settings` (unknown keys rejected)."""
    measure = MEASURES.get(name)
    if measure is None:
        raise EvalError("unknown measure", found=name, expected=", ".join(MEASURES))
    values = dict(measure.settings)
    unknown = sorted(set(settings) - set(values))
    if unknown:
        raise EvalError(f"unknown setting for {name}", found=", ".join(unknown), expected=", ".join(values))
    values.update({key: str(value) for key, value in settings.items()})
    return "|".join([name, *(f"{key}:{value}" for key, value in values.items()), f"version:{__version__}"])


def score_question(
    *,
    relevant: Mapping[int, int] | None,
    ranked: Sequence[int | None],
    answer: str | None,
    references: Sequence[str],
    expected_answer: str | None,
    expected_sources: Sequence[str] | None,
    retrieved_sources: Sequence[Mapping[str, object]],
) -> dict[str, float]:
    """Every measure that applies to one question (DESIGN section 3), absent ones left out."""
    scores: dict[str, float] = {}
    if relevant:
        scores.update(retrieval_scores(relevant, ranked))
    if answer is not None and references:
        scores.update(generation_scores(answer, list(references)))
    if answer is not None and expected_answer:
        share = coverage(answer, expected_answer)
        if share is not None:
            scores["coverage"] = share
    found = sources_found(list(expected_sources or ()), retrieved_sources)
    if found is not None:
        scores["sources_found"] = 1.0 if found else 0.0
    return scores


def aggregate(values: Sequence[float | None]) -> tuple[float | None, int]:
    """Mean over the present values (None and NaN are absent) and how many there were."""
    present = [float(v) for v in values if v is not None and not math.isnan(v)]
    return (math.fsum(present) / len(present), len(present)) if present else (None, 0)
