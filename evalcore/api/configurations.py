"""Saved target configurations as the API names them: knowledge_base_id, chat_id, rerank_id, agent_id."""

from __future__ import annotations

from dataclasses import replace

from evalcore.api.errors import ApiError, shown
from evalcore.store import NotFound, Store
from evalcore.targets import TargetConfig
from evalcore.targets.saved import get_target

# What seed 000's chat_id and rerank_id select: the generation (resp. rerank) settings of a saved
# target configuration, laid over the base configuration. Our "models" are configurations, so an id
# names a registered object as in the seed, and an unknown id is a clear 422.
GENERATION_KEYS = ("generator", "base_url", "model", "api_key_env", "timeout", "retries", "retry_backoff",
                   "system_prompt", "prompt_template", "context_template", "context_top_k",
                   "extractive_sentences", "temperature", "max_tokens", "fallback_answer")
RERANK_KEYS = ("reranker", "rerank_model", "rerank_url", "rerank_api_key_env", "rerank_top_k", "rerank_threshold")


def saved_target(store: Store, tenant: str, target_id: str, field: str) -> TargetConfig:
    """The tenant's saved configuration; 422 naming the field when unknown (or another tenant's)."""
    try:
        return get_target(store, target_id, tenant)
    except NotFound:
        raise ApiError(422, f"{field}: no saved target configuration {shown(target_id)}", field=field) from None


def resolve_target(store: Store, tenant: str, knowledge_base_id: str | None, chat_id: str | None,
                   rerank_id: str | None) -> TargetConfig:
    """The configuration of a seed 000 task: a copy of knowledge_base_id (or the defaults), then overlays."""
    config = saved_target(store, tenant, knowledge_base_id, "knowledge_base_id") if knowledge_base_id else TargetConfig()
    for ident, field, keys in ((chat_id, "chat_id", GENERATION_KEYS), (rerank_id, "rerank_id", RERANK_KEYS)):
        if ident:
            source = saved_target(store, tenant, ident, field)
            config = replace(config, **{key: getattr(source, key) for key in keys})
    return config
