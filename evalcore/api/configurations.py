"""Saved target configurations as the API names them: knowledge_base_id, chat_id, rerank_id, agent_id."""

from __future__ import annotations

from evalcore.access.principals import Principal
from evalcore.api.error_envelope import ApiError, shown
from evalcore.store import NotFound, Store
from evalcore.targets import TargetConfig
from evalcore.targets.default_models import CHAT_ROLE, RERANK_ROLE, with_default_models
from evalcore.targets.saved_targets import get_target
from evalcore.targets.target_config import GENERATION, PROMPTS, RERANK

# What chat_id and rerank_id select: the generation (resp. rerank) settings of a saved target
# configuration, laid over the base configuration. Our "models" are configurations, so an id names a
# registered object, and an unknown id is a clear 422.
OVERLAYS = (("chat_id", (GENERATION, PROMPTS)), ("rerank_id", (RERANK,)))


def saved_target(store: Store, principal: Principal, target_id: str, field: str) -> TargetConfig:
    """The tenant's saved configuration; 422 naming the field when unknown (or another tenant's)."""
    try:
        return get_target(store, target_id, principal=principal)
    except NotFound:
        raise ApiError(422, f"{field}: no saved target configuration {shown(target_id)}", field=field) from None


def resolve_target(store: Store, principal: Principal, knowledge_base_id: str | None, chat_id: str | None,
                   rerank_id: str | None) -> tuple[TargetConfig, dict[str, str]]:
    """The configuration of an evaluation task: a copy of knowledge_base_id (or the defaults), then overlays,
    then the operator's default chat and rerank models where no id chose one; and what each role got."""
    config = (saved_target(store, principal, knowledge_base_id, "knowledge_base_id") if knowledge_base_id
              else TargetConfig())
    for ident, (field, groups) in zip((chat_id, rerank_id), OVERLAYS, strict=True):
        if ident:
            config = config.overlay(saved_target(store, principal, ident, field), *groups)
    return with_default_models(config, {CHAT_ROLE: chat_id, RERANK_ROLE: rerank_id})
