"""Measures of retrieval, generation and suite cases, with their registry (DESIGN section 3)."""

from evalcore.metrics.generation import GENERATION_MEASURES, generation_scores
from evalcore.metrics.graded import GRADED_MEASURES, graded_retrieval_scores
from evalcore.metrics.registry import MEASURES, Measure, aggregate, score_question, signature
from evalcore.metrics.retrieval import RETRIEVAL_MEASURES, retrieval_scores
from evalcore.metrics.suite import coverage, important_words, sources_found

__all__ = [
    "GENERATION_MEASURES",
    "GRADED_MEASURES",
    "MEASURES",
    "RETRIEVAL_MEASURES",
    "Measure",
    "aggregate",
    "coverage",
    "generation_scores",
    "graded_retrieval_scores",
    "important_words",
    "retrieval_scores",
    "score_question",
    "signature",
    "sources_found",
]
