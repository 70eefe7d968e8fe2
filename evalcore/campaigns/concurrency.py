"""How many questions a campaign keeps in flight when none is asked for: by where the work is done."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalcore.targets import TargetConfig

DEFAULT_REMOTE_CONCURRENCY = 8


def local_concurrency() -> int:
    """Questions in flight for work done on this machine: one core is left to the rest."""
    return max((os.cpu_count() or 1) - 1, 1)


def remote_concurrency() -> int:
    """Questions in flight when the work is remote calls (EVALCORE_REMOTE_CONCURRENCY, default 8)."""
    text = os.environ.get("EVALCORE_REMOTE_CONCURRENCY", "")
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_REMOTE_CONCURRENCY


def is_remote(config: TargetConfig) -> bool:
    """Whether answering a question mostly waits on a remote service."""
    return (
        config.kind == "http_agent"
        or (config.kind == "rag" and config.generation.generator == "openai")
        or config.rerank.reranker == "http"
        or (config.rerank.reranker == "llm" and bool(config.rerank.rerank_url))
    )


def uses_local_model(config: TargetConfig) -> bool:
    """Whether answering runs the in-process model, which answers one call at a time."""
    return config.kind == "rag" and (config.generation.generator == "local"
                                     or (config.rerank.reranker == "llm" and not config.rerank.rerank_url))


def default_concurrency(config: TargetConfig) -> int:
    """Questions in flight when none is asked for.

    The local model serialises its calls: more questions in flight would only queue for it and
    count the wait in their response time.
    """
    if uses_local_model(config):
        return 1
    return remote_concurrency() if is_remote(config) else local_concurrency()
