"""The operator's default chat and rerank models: what an evaluation task without chat_id or rerank_id gets.

Set in the server's environment (docs/settings.md): `EVALCORE_DEFAULT_CHAT_MODEL` turns the
default chat model on (with `EVALCORE_DEFAULT_CHAT_BASE_URL`, `EVALCORE_DEFAULT_CHAT_API_KEY_ENV`),
`EVALCORE_DEFAULT_RERANK_URL` the default rerank model (with `EVALCORE_DEFAULT_RERANK_MODEL`,
`EVALCORE_DEFAULT_RERANK_API_KEY_ENV` and `EVALCORE_DEFAULT_RERANKER`: http, a /rerank API, or llm,
an OpenAI-compatible chat model). A default fills only a configuration without a model of its
own (the extractive generator, no reranker); each use is said in words, stored with the campaign.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalcore.errors import EvalError
from evalcore.targets.target_config import Generation, TargetConfig

CHAT_ROLE, RERANK_ROLE = "chat", "rerank"


@dataclass(frozen=True)
class DefaultModel:
    """One role's default: the configuration keys it sets, and how it reads in a task's params."""

    keys: dict[str, Any]
    label: str


def default_models(environ: Mapping[str, str] | None = None) -> dict[str, DefaultModel]:
    """The defaults the operator configured, by role (none when their variables are unset)."""
    env = os.environ if environ is None else environ
    found: dict[str, DefaultModel] = {}
    if model := env.get("EVALCORE_DEFAULT_CHAT_MODEL", "").strip():
        url = env.get("EVALCORE_DEFAULT_CHAT_BASE_URL", "").strip() or Generation.base_url
        keys = {"generator": "openai", "model": model, "base_url": url,
                "api_key_env": env.get("EVALCORE_DEFAULT_CHAT_API_KEY_ENV", Generation.api_key_env).strip()}
        found[CHAT_ROLE] = DefaultModel(keys, f"the default chat model: {model} at {url}")
    if url := env.get("EVALCORE_DEFAULT_RERANK_URL", "").strip():
        model = env.get("EVALCORE_DEFAULT_RERANK_MODEL", "").strip()
        keys = {"reranker": env.get("EVALCORE_DEFAULT_RERANKER", "http").strip(), "rerank_url": url,
                "rerank_model": model, "rerank_api_key_env": env.get("EVALCORE_DEFAULT_RERANK_API_KEY_ENV", "").strip()}
        found[RERANK_ROLE] = DefaultModel(keys, f"the default rerank model: {model or keys['reranker']} at {url}")
    return found


def with_default_models(config: TargetConfig, chosen: Mapping[str, str | None],
                        environ: Mapping[str, str] | None = None) -> tuple[TargetConfig, dict[str, str]]:
    """The configuration with the operator's default for each role not chosen by id, and what each role got.

    `chosen`: role -> the saved configuration's id that set it (None: not chosen). EvalError naming
    the variables when a default makes an invalid configuration.
    """
    defaults = default_models(environ)
    used: dict[str, str] = {}
    keys: dict[str, Any] = {}
    for role, ident in chosen.items():
        own = config.generation.generator != "extractive" if role == CHAT_ROLE else config.rerank.reranker != "none"
        if ident:
            used[role] = f"{role}_id {ident}"
        elif own:
            used[role] = f"the configuration's own {role} model"
        elif role in defaults:
            keys |= defaults[role].keys
            used[role] = defaults[role].label
        else:
            variable = "EVALCORE_DEFAULT_CHAT_MODEL" if role == CHAT_ROLE else "EVALCORE_DEFAULT_RERANK_URL"
            none = "the extractive generator" if role == CHAT_ROLE else "no reranker"
            used[role] = f"no default {role} model configured ({variable}): {none}"
    if not keys:
        return config, used
    try:
        return TargetConfig.from_dict({**config.to_dict(), **keys}), used
    except EvalError as error:
        raise EvalError("the operator's default models make an invalid configuration", where="EVALCORE_DEFAULT_*",
                        problems=error.problems, fix="correct the server's EVALCORE_DEFAULT_ settings") from None
