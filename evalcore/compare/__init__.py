"""Comparisons: two campaigns question by question, or a sweep of N, with paired statistics."""

from evalcore.compare.comparison import (
    CampaignHeader,
    Comparison,
    MeasureDelta,
    QuestionDiff,
    compare_campaigns,
    compare_results,
    question_key,
    row_values,
)
from evalcore.compare.sweep import Sweep, SweepRow, compare_sweep, sweep_results

__all__ = ["CampaignHeader", "Comparison", "MeasureDelta", "QuestionDiff", "Sweep", "SweepRow", "compare_campaigns",
           "compare_results", "compare_sweep", "question_key", "row_values", "sweep_results"]
