"""Measures of retrieval, generation, graded retrieval, suite cases and judges, with their registry."""

from typing import TYPE_CHECKING

from evalcore.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.metrics.generation import GENERATION_MEASURES, generation_scores
    from evalcore.metrics.graded import GRADED_MEASURES, graded_retrieval_scores
    from evalcore.metrics.registry import (
        MEASURES,
        PANELS,
        Measure,
        Scores,
        aggregate,
        display_order,
        judge_abstention,
        panels,
        score_question,
        signature,
        verdict_basis,
    )
    from evalcore.metrics.retrieval import RETRIEVAL_MEASURES, retrieval_scores
    from evalcore.metrics.suite import coverage, important_words, sources_found

__all__ = [
    "GENERATION_MEASURES",
    "GRADED_MEASURES",
    "MEASURES",
    "PANELS",
    "RETRIEVAL_MEASURES",
    "Measure",
    "Scores",
    "aggregate",
    "coverage",
    "display_order",
    "generation_scores",
    "graded_retrieval_scores",
    "important_words",
    "judge_abstention",
    "panels",
    "retrieval_scores",
    "score_question",
    "signature",
    "sources_found",
    "verdict_basis",
]
# Imported on first use: a light module of this package does not load its heavy siblings (evalcore.lazy).
__getattr__ = lazy_exports(__name__, {
    "generation": ("GENERATION_MEASURES", "generation_scores",),
    "graded": ("GRADED_MEASURES", "graded_retrieval_scores",),
    "registry": ("MEASURES", "PANELS", "Measure", "Scores", "aggregate", "display_order", "judge_abstention", "panels", "score_question", "signature", "verdict_basis",),
    "retrieval": ("RETRIEVAL_MEASURES", "retrieval_scores",),
    "suite": ("coverage", "important_words", "sources_found",),
})
