"""Test sets generated from a corpus: questions of four kinds written by a model from the passages, with reference
answers and graded labels, checked by a critic and for near-duplicates, reviewed by people, measured, and written as
a dataset with its provenance."""

from typing import TYPE_CHECKING

from evalcore.runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.testsets.generation_job import (
        MODEL_KEYS,
        TESTSET,
        TESTSET_JOB,
        GenerationRequest,
        generate_testset,
        max_questions,
        measure_testset,
        start_testset,
    )
    from evalcore.testsets.output import (
        PROVENANCE_FILE,
        Provenance,
        add_review,
        kept_questions,
        read_provenance,
        review_question,
    )
    from evalcore.testsets.quality import QualityReport
    from evalcore.testsets.testset_records import LANGUAGES, Candidate, Decision, Kind, Review

__all__ = [
    "LANGUAGES", "MODEL_KEYS", "PROVENANCE_FILE", "TESTSET", "TESTSET_JOB", "Candidate", "Decision",
    "GenerationRequest", "Kind", "Provenance", "QualityReport", "Review", "add_review", "generate_testset",
    "kept_questions", "max_questions", "measure_testset", "read_provenance", "review_question", "start_testset",
]
__getattr__ = lazy_exports(__name__, {
    "generation_job": ("MODEL_KEYS", "TESTSET", "TESTSET_JOB", "GenerationRequest", "generate_testset", "max_questions",
                   "start_testset", "measure_testset"),
    "output": ("PROVENANCE_FILE", "Provenance", "add_review", "kept_questions", "read_provenance", "review_question"),
    "quality": ("QualityReport",),
    "testset_records": ("LANGUAGES", "Candidate", "Decision", "Kind", "Review"),
})
