"""Failure attribution: per question, the stage that failed (retrieval, ranking, generation), and how stages moved."""

from evalcore.diagnosis.stages import (
    NOT_ATTRIBUTED,
    STAGES,
    Evidence,
    GenerationMarks,
    Stage,
    StageCounts,
    attribute,
)
from evalcore.diagnosis.transitions import Transition, side_counts, transitions

__all__ = ["NOT_ATTRIBUTED", "STAGES", "Evidence", "GenerationMarks", "Stage", "StageCounts", "Transition",
           "attribute", "side_counts", "transitions"]
