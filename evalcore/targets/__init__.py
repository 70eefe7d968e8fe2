"""Targets: the system under test (our RAG pipeline, an HTTP agent, or a results file)."""

from __future__ import annotations

from pathlib import Path

from evalcore.models import CallCache
from evalcore.targets.base import Retrieved, Target, TargetAnswer
from evalcore.targets.config import TargetConfig
from evalcore.targets.external import HttpAgentTarget, ResultsFileTarget
from evalcore.targets.rag import RagTarget


def build_target(config: TargetConfig, *, cache: CallCache | None = None, cache_dir: Path | None = None) -> Target:
    """The target a configuration describes; model calls go through `cache` when given."""
    if config.kind == "http_agent":
        return HttpAgentTarget(config)
    if config.kind == "results_file":
        return ResultsFileTarget(config)
    return RagTarget(config, cache=cache, cache_dir=cache_dir)


__all__ = [
    "HttpAgentTarget",
    "RagTarget",
    "ResultsFileTarget",
    "Retrieved",
    "Target",
    "TargetAnswer",
    "TargetConfig",
    "build_target",
]
