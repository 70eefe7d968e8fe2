"""The registry of measures: every fact about a measure lives on its `Measure`, and faces ask here.

A measure's name, formula, panel, display order, direction, whether it is pass/fail, its
priority when a per-question verdict is decided, whether it needs a reference answer, and the
settings its signature records. Judge measures are built from the judge prompt files.
Signatures record the settings a value was computed with (`signature(name, **used)`), as
sacreBLEU's do, so a stored value always says how it was made.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from evalcore import __version__
from evalcore.errors import EvalError
from evalcore.judges import JUDGES, JudgeResult, load_prompt
from evalcore.metrics.abstention import REFUSALS_VERSION, abstention_scores
from evalcore.metrics.generation import generation_scores
from evalcore.metrics.graded import GRADED_MEASURES, DocId, GradedScale, graded_values
from evalcore.metrics.retrieval import retrieval_scores
from evalcore.metrics.similarity import AnswerEmbedding, answer_similarity
from evalcore.metrics.suite import coverage, sources_found
from evalcore.text import TOKENIZER

# Panels in display order: (family, title).
PANELS = (("retrieval", "Retrieval"), ("generation", "Generation"), ("graded", "Graded document retrieval"),
          ("suite", "Coverage and sources"), ("abstention", "Abstention"), ("judge", "Judges"))
OTHER_PANEL = "Other"
# What a measure's values are, in display order, with how a chart titles them: a chart draws each scale on its own
# axis (a count of +4 documents would flatten a precision change of -0.096 to the zero line).
SCALES = (("share", "0-1 measures"), ("score", "0-100 scores"), ("label", "relevance labels"),
          ("likert", "judge scores (1-5)"), ("count", "counts (no better or worse)"))
# The smallest difference of a question's value that changes its verdict, by scale: below it a question is "same"
# (a ROUGE-L of 0.3333 against 0.3273 is one word of noise, not a worse answer). Whole-number scales: any change.
TOLERANCES = {"share": 0.01, "score": 1.0, "label": 0.0, "likert": 0.0, "count": 0.0}


@dataclass(frozen=True)
class Measure:
    """A registered measure; `settings` are the defaults its signature records."""

    name: str
    doc: str
    family: str  # the panel it is shown in: one of PANELS
    higher_is_better: bool = True
    binary: bool = False  # values are pass/fail as 1/0 (McNemar applies in comparisons)
    # Rank among the measures that decide a per-question verdict: the lowest present in both campaigns decides.
    verdict_priority: int | None = None
    needs_reference: bool = False  # absent on a question without an expected or reference answer
    settings: tuple[tuple[str, str], ...] = field(default=())
    order: int = 0  # display position, set by the registry
    scale: str = "share"  # one of SCALES: what the values are (counts are neither better nor worse)

    def result(self, value: float | None, mark: float) -> JudgeResult:
        """Pass when the value reaches the pass mark in the measure's direction (at most it, when lower is better);
        unknown when there is no value."""
        if value is None:
            return JudgeResult.UNKNOWN
        passed = value >= mark if self.higher_is_better else value <= mark
        return JudgeResult.PASS if passed else JudgeResult.FAIL

    @property
    def tolerance(self) -> float:
        """The smallest meaningful difference of one question's value (a verdict's default tolerance)."""
        return 0.0 if self.binary else TOLERANCES[self.scale]

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
_GRADED_NDCG_DOCS = {
    f"ndcg_graded@{k}": f"DCG@{k} / IDCG@{k}, DCG = sum_{{i<={k}}} label_i / log2(i+1), IDCG from all judged "
    f"labels of the query (Jarvelin & Kekalainen 2002; trec_eval ndcg_cut_{k}). TREC files (score -m)."
    for k in (3, 10)
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
    "total_ground_truth_documents": "labeled documents of the question.",
}
# 1/0 per question, present only on the questions each applies to.
_ABSTENTION_DOCS = {
    "correct_abstention": "1 when the answer to an unanswerable question declines, else 0; the mean is the "
    "correct abstention rate (negative rejection rate, Chen et al. 2024, RGB).",
    "hallucination": "1 when an unanswerable question gets an answer instead of a refusal, else 0; the mean is "
    "the hallucination rate (1 - correct_abstention on the same questions).",
    "false_abstention": "1 when the answer to an answerable question declines, else 0; the mean is the false "
    "abstention (over-refusal) rate (Feng et al. 2024, Don't Hallucinate, Abstain).",
}
# The measures where less is better (every other is better higher): the one place a direction is declared.
LOWER_IS_BETTER = frozenset({"hallucination", "false_abstention", "graded.holes", "graded.holes_ratio"})
_GRADED_SCALES = {"xdcg@3": "score", "top1_relevance": "label", "top3_max_relevance": "label", "holes": "count",
                  "total_retrieved_documents": "count", "total_ground_truth_documents": "count"}
# A question's verdict in a comparison: the AI score, else coverage, else sources found (the suite
# order); dataset campaigns have none of these, so ranking and then answer overlap decide.
_VERDICT_ORDER = ("judge.score", "coverage", "sources_found", "ndcg@10", "rougel")


def _judge_measure(name: str) -> Measure:
    """A judge's measure, from its prompt file: scale, inputs, and the first sentence of its instructions."""
    prompt = load_prompt(name)
    if prompt.output == "claims":
        return Measure(f"judge.{name}", f"supported claims / claims (LLM judge, prompt v{prompt.version}): the answer "
                       "split into claims, each checked against the passages it was built from; absent when the "
                       "answer makes no claim (faithfulness, Es et al. 2023, RAGAS).", "judge",
                       settings=(("prompt", "none"), ("model", "none")))
    label = prompt.output == "label"
    first = prompt.system.split(". ")[0].rstrip(".") + "."
    doc = f"{'pass/fail as 1/0' if label else '1-5'} (LLM judge, prompt v{prompt.version}): {first}"
    return Measure(f"judge.{name}", doc, "judge", binary=label, needs_reference="expected" in prompt.requires,
                   settings=(("prompt", "none"), ("model", "none")), scale="share" if label else "likert")


def _registry() -> dict[str, Measure]:
    measures = [Measure(n, d, "retrieval", settings=_RANKED) for n, d in _RETRIEVAL_DOCS.items()]
    measures += [Measure(n, d, "retrieval", settings=(("gain", "label"), ("dup", "first")))
                 for n, d in _GRADED_NDCG_DOCS.items()]
    for name, doc in _GENERATION_DOCS.items():
        extra = (("smooth", "none"),) if name.startswith("bleu") else (("refs", "max"),)
        measures.append(Measure(name, doc, "generation", needs_reference=True, settings=_TEXT + extra))
    measures.append(Measure(
        "answer_similarity", "max over the references of cos(e(answer), e(reference)), e a multilingual "
        "sentence embedding (Risch et al. 2021, semantic answer similarity); off unless answer_similarity_model "
        "is set.", "generation", needs_reference=True, settings=(("model", "none"), ("refs", "max")),
    ))
    measures.append(Measure(
        "coverage", "share of the expected answer's important words (no stopword; a digit, 2+ Han "
        "characters or 3+ letters) found in the answer, case and accents ignored.",
        "suite", needs_reference=True, settings=_TEXT + (("stop", "en,fr,zh"),),
    ))
    measures.append(Measure(
        "sources_found", "1 when every expected source is contained in a retrieved title or file "
        "name or equals its id, case and accents ignored, else 0.", "suite", binary=True,
        settings=(("match", "fold"),),
    ))
    measures += [Measure(name, doc + " Refusal: evalcore.metrics.abstention.", "abstention", binary=True,
                         settings=(("refusals", REFUSALS_VERSION), ("match", "fold")))
                 for name, doc in _ABSTENTION_DOCS.items()]
    for name in GRADED_MEASURES:
        measures.append(Measure(
            f"graded.{name}", _GRADED_DOCS[name] + " Graded document retrieval.", "graded",
            settings=(("scale", "0-4"),),
            scale=_GRADED_SCALES.get(name, "share"),
        ))
    measures += [_judge_measure(name) for name in JUDGES]
    return {m.name: _finish(m, order) for order, m in enumerate(measures)}


def _finish(measure: Measure, order: int) -> Measure:
    priority = _VERDICT_ORDER.index(measure.name) if measure.name in _VERDICT_ORDER else None
    return replace(measure, verdict_priority=priority, order=order,
                   higher_is_better=measure.name not in LOWER_IS_BETTER)


MEASURES: dict[str, Measure] = _registry()


# Settings a signature names only when a computation departs from the default: the depth of the ranked list
# scored (trec_eval -M) and which queries count (-c: every judged query, not only those in the run). Leaving
# them out at their defaults keeps the signatures stored before they existed equal to today's.
DEPARTURES = ("depth", "queries")


def signature(name: str, **settings: object) -> str:
    """`name|key:value|...|version:X`, defaults overridden by `settings` (unknown keys rejected)."""
    measure = MEASURES.get(name)
    if measure is None:
        raise EvalError("unknown measure", found=name, expected=", ".join(MEASURES))
    values = dict(measure.settings)
    ranked = "rel" in values or "scale" in values or name.startswith("ndcg_graded@")
    unknown = sorted(set(settings) - set(values) - (set(DEPARTURES) if ranked else set()))
    if unknown:
        raise EvalError(f"unknown setting for {name}", found=", ".join(unknown), expected=", ".join(values))
    values.update({key: str(value) for key, value in settings.items()})  # departures go after the defaults
    return "|".join([name, *(f"{key}:{value}" for key, value in values.items()), f"version:{__version__}"])


def display_order(name: str) -> tuple[int, str]:
    """Sort key: registry order, then unregistered names (e.g. `judge.X:pass`, a rubric's `judge.X`) by name."""
    measure = MEASURES.get(name.split(":")[0])
    return (measure.order if measure else len(MEASURES), name)


def family(name: str) -> str | None:
    """The panel family of a measure name; a judge the registry does not know (a rubric's) is a judge."""
    measure = MEASURES.get(name.split(":")[0])
    return measure.family if measure else "judge" if name.startswith("judge.") else None


def panels(names: Iterable[str]) -> list[tuple[str, list[str]]]:
    """The names grouped into panels (title, names in display order); empty panels left out."""
    titles = dict(PANELS)
    grouped: dict[str, list[str]] = {title: [] for _, title in PANELS}
    grouped[OTHER_PANEL] = []
    for name in sorted(names, key=display_order):
        kind = family(name)
        grouped[titles[kind] if kind else OTHER_PANEL].append(name)
    return [(title, members) for title, members in grouped.items() if members]


def scale_of(name: str) -> str:
    """The scale of a measure's values (`judge.X:pass` rates and unregistered names: 0-1)."""
    measure = MEASURES.get(name)
    return measure.scale if measure else "share"


def tolerance_of(name: str) -> float:
    """The default smallest meaningful difference of a measure (unregistered names: that of 0-1 measures)."""
    measure = MEASURES.get(name)
    return measure.tolerance if measure else TOLERANCES["share"]


def higher_is_better(name: str) -> bool:
    """The measure's direction (a judge's pass rate `judge.X:pass` and unregistered names: higher)."""
    measure = MEASURES.get(name.split(":")[0])
    return measure.higher_is_better if measure else True


def verdict_basis() -> tuple[str, ...]:
    """Measures that can decide a per-question verdict, by priority."""
    ranked = sorted((m for m in MEASURES.values() if m.verdict_priority is not None),
                    key=lambda m: m.verdict_priority or 0)
    return tuple(m.name for m in ranked)


class Scores(NamedTuple):
    """The measures of one question, the signature each was computed with, and pass/fail where a mark applies."""

    values: dict[str, float]
    signatures: dict[str, str]
    results: dict[str, JudgeResult]  # measure -> pass, fail or unknown (graded retrieval)


def score_question(
    *,
    relevant: Mapping[int, int] | None,
    ranked: Sequence[int | None],
    answer: str | None,
    references: Sequence[str],
    expected_answer: str | None,
    expected_sources: Sequence[str] | None,
    retrieved_sources: Sequence[Mapping[str, object]],
    graded: GradedScale | None = None,
    answerable: bool | None = None,
    fallback_answer: str = "",
    similarity: AnswerEmbedding | None = None,
) -> Scores:
    """Every measure that applies to one question, absent ones left out, with their signatures.

    `references` are every reference answer (generation measures take the best; coverage too when
    there is no single expected answer); `retrieved_sources` are the sources the answer drew on;
    `graded` adds the graded retrieval measures on that label scale; `answerable` (None: unknown)
    adds the abstention measures, a refusal being recognised by its phrasing or `fallback_answer`;
    `similarity` adds the semantic answer similarity with that embedding model. An unanswerable question has no
    reference to score against, whatever its expected answer says.
    """
    if answerable is False:
        references, expected_answer = (), None
    values: dict[str, float] = abstention_scores(answer, answerable, fallback_answer)
    if relevant:
        values.update(retrieval_scores(relevant, ranked))
    if answer is not None and references:
        values.update(generation_scores(answer, list(references)))
    expected = [expected_answer] if expected_answer else list(references)
    shares = [share for text in expected if answer is not None and (share := coverage(answer, text)) is not None]
    if shares:
        values["coverage"] = max(shares)
    found = sources_found(list(expected_sources or ()), retrieved_sources)
    if found is not None:
        values["sources_found"] = 1.0 if found else 0.0
    signatures = {name: _default_signature(name) for name in values}
    if similarity is not None and answer is not None and (
            value := answer_similarity(answer, expected, similarity.embed)) is not None:
        values["answer_similarity"] = value
        signatures["answer_similarity"] = signature("answer_similarity", model=similarity.model)
    results: dict[str, JudgeResult] = {}
    if graded is not None and relevant:
        _add_graded(values, signatures, results, relevant, ranked, graded)
    return Scores(values, signatures, results)


def judge_abstention(scores: Scores, *, answer: str | None, answerable: bool | None, refused: bool) -> None:
    """The abstention measures as the refusal judge read the answer (declined or not), replacing the phrasing list's."""
    reading = abstention_measures(answer, answerable, refused=refused)
    scores.values.update(reading.values)
    scores.signatures.update(reading.signatures)


def abstention_measures(answer: str | None, answerable: bool | None, fallback_answer: str = "",
                        refused: bool | None = None) -> Scores:
    """The abstention measures that apply, with their signatures (`match:judge` when the refusal judge's reading
    is given)."""
    values = abstention_scores(answer, answerable, fallback_answer, refused_by_judge=refused)
    signatures = {name: _default_signature(name) if refused is None else signature(name, match="judge")
                  for name in values}
    return Scores(values, signatures, {})


def _add_graded(values: dict[str, float], signatures: dict[str, str], results: dict[str, JudgeResult],
                labels: Mapping[int, int], ranked: Sequence[int | None], scale: GradedScale) -> None:
    """Graded retrieval measures of the ranked list, on the dataset's scale (each miss is a hole of its own)."""
    documents: list[int | str] = [pid if pid is not None else f"unmapped {rank}" for rank, pid in enumerate(ranked)]
    graded: dict[int | str, int] = {pid: label for pid, label in labels.items()}
    # Scores that keep the target's order: the measures re-sort by score.
    found = graded_values(graded, [(doc, float(-rank)) for rank, doc in enumerate(documents)], scale.label_min,
                          scale.label_max)
    marks = scale.marks()
    for name, value in found.items():
        if value is not None:
            values[f"graded.{name}"] = float(value)
            signatures[f"graded.{name}"] = _scale_signature(f"graded.{name}", scale.text)
        results[f"graded.{name}"] = MEASURES[f"graded.{name}"].result(value, marks[name])


def graded_retrieval_scores(labels: Mapping[DocId, int], retrieved: Sequence[tuple[DocId, float]],
                            label_min: int = 0, label_max: int = 4,
                            thresholds: Mapping[str, float] | None = None) -> dict[str, object]:
    """Graded retrieval measures with `<name>_threshold`, `<name>_higher_is_better`, `<name>_result`.

    `labels`: document id -> integer label; `retrieved`: (document id, score) pairs; `thresholds`
    by measure or documented threshold name (`ndcg_threshold`). A value that is undefined (nothing
    retrieved, nothing labeled above label_min) is None and its result is "unknown".
    """
    found = graded_values(labels, retrieved, label_min, label_max)
    marks = GradedScale(label_min, label_max, thresholds or {}).marks()
    result: dict[str, object] = {}
    for name, value in found.items():
        measure = MEASURES[f"graded.{name}"]
        result[name] = value
        result[f"{name}_threshold"] = marks[name]
        result[f"{name}_higher_is_better"] = measure.higher_is_better
        result[f"{name}_result"] = str(measure.result(value, marks[name]))
    return result


_SIGNATURES: dict[str, str] = {}


@functools.lru_cache(maxsize=1 << 10)
def _scale_signature(name: str, scale: str) -> str:
    """The signature of a graded measure on a label scale (the same for every question of a campaign)."""
    return signature(name, scale=scale)


def _default_signature(name: str) -> str:
    """The signature of a measure computed with its registered settings (campaigns use them all)."""
    if name not in _SIGNATURES:
        _SIGNATURES[name] = signature(name)
    return _SIGNATURES[name]


def aggregate(values: Sequence[float | None]) -> tuple[float | None, int]:
    """Mean over the present values (None and NaN are absent) and how many there were."""
    present = [float(v) for v in values if v is not None and not math.isnan(v)]
    return (math.fsum(present) / len(present), len(present)) if present else (None, 0)
