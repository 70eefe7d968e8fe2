"""The notebook face: a small public API over the engine, re-exported at the package's top (`evalcore.run`)."""

from evalcore.notebook.functions import (
    campaign,
    comparison,
    configuration,
    list_campaigns,
    load_dataset,
    load_suite,
    run,
    run_sweep,
    score_texts,
    score_trec,
    sweep,
)
from evalcore.notebook.views import CampaignView, Chart, ComparisonView, RunHandle, SweepView, to_arrow

__all__ = ["CampaignView", "Chart", "ComparisonView", "RunHandle", "SweepView", "campaign", "comparison",
           "configuration", "list_campaigns", "load_dataset", "load_suite", "run", "run_sweep", "score_texts",
           "score_trec", "sweep", "to_arrow"]
