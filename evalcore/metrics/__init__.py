"""Measures of retrieval, generation, graded retrieval, suite cases and judges, with their registry."""

from typing import TYPE_CHECKING

# Eager: the function has its module's name, which importing the module would otherwise bind here instead.
from evalcore.metrics.document_retrieval import document_retrieval
from evalcore.runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.metrics.bleu_rouge import GENERATION_MEASURES, generation_scores
    from evalcore.metrics.expected_answer import coverage, important_words, sources_found
    from evalcore.metrics.graded import GRADED_MEASURES
    from evalcore.metrics.registry import (
        MEASURES,
        PANELS,
        SCALES,
        Inputs,
        Measure,
        Scores,
        abstention_measures,
        aggregate,
        display_order,
        graded_retrieval_scores,
        higher_is_better,
        in_words,
        judge_abstention,
        judged_by,
        panels,
        question_columns,
        scale_of,
        score_question,
        signature,
        tolerance_of,
        verdict_basis,
    )
    from evalcore.metrics.retrieval import RETRIEVAL_MEASURES, retrieval_scores
    from evalcore.metrics.similarity import AnswerEmbedding, answer_similarity, cosine

__all__ = [
    "GENERATION_MEASURES",
    "GRADED_MEASURES",
    "MEASURES",
    "PANELS",
    "RETRIEVAL_MEASURES",
    "SCALES",
    "AnswerEmbedding",
    "Inputs",
    "Measure",
    "Scores",
    "abstention_measures",
    "aggregate",
    "answer_similarity",
    "cosine",
    "coverage",
    "display_order",
    "document_retrieval",
    "generation_scores",
    "graded_retrieval_scores",
    "higher_is_better",
    "important_words",
    "in_words",
    "judge_abstention",
    "judged_by",
    "panels",
    "question_columns",
    "retrieval_scores",
    "scale_of",
    "score_question",
    "signature",
    "sources_found",
    "tolerance_of",
    "verdict_basis",
]
# Imported on first use: a light module of this package does not load its heavy siblings (evalcore.runtime.lazy).
__getattr__ = lazy_exports(__name__, {
    "bleu_rouge": ("GENERATION_MEASURES", "generation_scores"),
    "graded": ("GRADED_MEASURES",),
    "registry": (
        "MEASURES", "PANELS", "SCALES", "Inputs", "Measure", "Scores", "abstention_measures", "aggregate",
        "display_order", "graded_retrieval_scores", "higher_is_better", "in_words", "judge_abstention", "judged_by",
        "panels", "question_columns", "scale_of", "score_question", "signature", "tolerance_of", "verdict_basis",
    ),
    "retrieval": ("RETRIEVAL_MEASURES", "retrieval_scores"),
    "similarity": ("AnswerEmbedding", "answer_similarity", "cosine"),
    "expected_answer": ("coverage", "important_words", "sources_found"),
})
