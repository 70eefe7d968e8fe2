"""evalcore: the engine of the RAG evaluation workbench (datasets, measures, targets, campaigns).

The names below are the public API a notebook or a script uses (docs/python-api.md); every module
stays importable, but only these are the documented surface. They load on first use, so that
`import evalcore` (and the command line's start) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it.
_PUBLIC = {
    **dict.fromkeys(("load_dataset", "load_suite", "configuration", "run", "run_sweep", "rejudge", "campaign",
                     "list_campaigns", "comparison", "sweep", "score_trec", "score_texts", "import_traces", "traces",
                     "judge_traces", "traces_timeline", "compare_traces"),
                    "evalcore.notebook.functions"),
    **dict.fromkeys(("CampaignView", "ComparisonView", "SweepView", "RunHandle", "Chart", "to_arrow"),
                    "evalcore.notebook.views"),
    "TargetConfig": "evalcore.targets.target_config",
    "EvalError": "evalcore.errors",
    "Check": "evalcore.gates.checks",
    "Exit": "evalcore.gates.exits",
}
__all__ = ["CampaignView", "Chart", "Check", "ComparisonView", "EvalError", "Exit", "RunHandle", "SweepView",
           "TargetConfig", "__version__", "campaign", "compare_traces", "comparison", "configuration",
           "import_traces", "judge_traces", "list_campaigns", "load_dataset", "load_suite", "rejudge", "run",
           "run_sweep", "score_texts", "score_trec", "sweep", "to_arrow", "traces", "traces_timeline"]

if TYPE_CHECKING:
    from evalcore.errors import EvalError
    from evalcore.gates.checks import Check
    from evalcore.gates.exits import Exit
    from evalcore.notebook.functions import (
        campaign,
        compare_traces,
        comparison,
        configuration,
        import_traces,
        judge_traces,
        list_campaigns,
        load_dataset,
        load_suite,
        rejudge,
        run,
        run_sweep,
        score_texts,
        score_trec,
        sweep,
        traces,
        traces_timeline,
    )
    from evalcore.notebook.views import CampaignView, Chart, ComparisonView, RunHandle, SweepView, to_arrow
    from evalcore.targets.target_config import TargetConfig


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'evalcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
