"""Failure attribution: per question, the stage that failed (retrieval, ranking, generation), and how stages moved."""

from evalcore.diagnosis.stages import (
    NOT_ATTRIBUTED,
    STAGES,
    Evidence,
    GenerationMarks,
    Stage,
    StageCounts,
    attribute,
    relevance,
)
from evalcore.diagnosis.transitions import Transition, side_counts, transitions

__all__ = ["NOT_ATTRIBUTED", "STAGES", "Evidence", "GenerationMarks", "Stage", "StageCounts", "Transition",
           "attribute", "relevance", "side_counts", "transitions"]
