"""Comparisons: two campaigns question by question, or a sweep of N, with paired statistics and power."""

from typing import TYPE_CHECKING

from evalcore.runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.campaigns.records import results_version
    from evalcore.compare.campaign_pairs import compare_campaigns, compare_with_previous
    from evalcore.compare.comparison import (
        compare_results,
        question_key,
        row_values,
    )
    from evalcore.compare.deltas import CampaignHeader, Change, Comparison, MeasureDelta, Paired, QuestionDiff
    from evalcore.compare.sweep import Sweep, SweepRow, compare_sweep, sweep_results

__all__ = ["CampaignHeader", "Change", "Comparison", "MeasureDelta", "Paired", "QuestionDiff", "Sweep", "SweepRow",
           "compare_campaigns", "compare_results", "compare_sweep", "compare_with_previous", "question_key",
           "results_version", "row_values",
           "sweep_results"]
# Imported on first use: a light module of this package does not load its heavy siblings (evalcore.runtime.lazy).
__getattr__ = lazy_exports(__name__, {
    "comparison": ("compare_results", "question_key", "row_values"),
    "deltas": ("CampaignHeader", "Change", "Comparison", "MeasureDelta", "Paired", "QuestionDiff"),
    "saved_comparisons": ("results_version",),
    "campaign_pairs": ("compare_campaigns", "compare_with_previous"),
    "sweep": ("Sweep", "SweepRow", "compare_sweep", "sweep_results"),
})
