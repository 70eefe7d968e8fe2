"""Targets: the system under test (our RAG pipeline, an HTTP agent, or a results file)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.models import CallCache
    from evalcore.targets.base import Chat, Retrieved, Round, Target, TargetAnswer
    from evalcore.targets.external import HttpAgentTarget, ResultsFileTarget
    from evalcore.targets.rag import RagTarget
    from evalcore.targets.target_config import TargetConfig


def build_target(config: TargetConfig, *, cache: CallCache | None = None, cache_dir: Path | None = None) -> Target:
    """The target a configuration describes; model calls go through `cache` when given."""
    from evalcore.targets.external import HttpAgentTarget, ResultsFileTarget
    from evalcore.targets.rag import RagTarget

    if config.kind == "http_agent":
        return HttpAgentTarget(config, cache)
    if config.kind == "results_file":
        return ResultsFileTarget(config)
    return RagTarget(config, cache=cache, cache_dir=cache_dir)


__all__ = [
    "Chat",
    "HttpAgentTarget",
    "RagTarget",
    "ResultsFileTarget",
    "Retrieved",
    "Round",
    "Target",
    "TargetAnswer",
    "TargetConfig",
    "build_target",
]
# Imported on first use: the records that hold a Retrieved need not load the pipeline (evalcore.runtime.lazy).
__getattr__ = lazy_exports(__name__, {
    "base": ("Chat", "Retrieved", "Round", "Target", "TargetAnswer"),
    "target_config": ("TargetConfig",),
    "external": ("HttpAgentTarget", "ResultsFileTarget"),
    "rag": ("RagTarget",),
})
