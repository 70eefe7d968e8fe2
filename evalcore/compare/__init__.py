"""Comparisons: two campaigns question by question, or a sweep of N, with paired statistics and power."""

from evalcore.compare.comparison import (
    compare_campaigns,
    compare_results,
    compare_with_previous,
    question_key,
    row_values,
)
from evalcore.compare.deltas import CampaignHeader, Change, Comparison, MeasureDelta, Paired, QuestionDiff
from evalcore.compare.saved import results_version
from evalcore.compare.sweep import Sweep, SweepRow, compare_sweep, sweep_results

__all__ = ["CampaignHeader", "Change", "Comparison", "MeasureDelta", "Paired", "QuestionDiff", "Sweep", "SweepRow",
           "compare_campaigns", "compare_results", "compare_sweep", "compare_with_previous", "question_key",
           "results_version", "row_values",
           "sweep_results"]
