"""An OpenAI-compatible chat completions endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp server)."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from evalcore.errors import EvalError
from evalcore.models.chat import (
    CallCache,
    ChatReply,
    ContextOverflow,
    Message,
    ModelError,
    cached_chat,
    departures,
    overflowed,
    refuse_long_reply,
)
from evalcore.models.http import check_reachable, new_client, post_json

# Endpoints (base URL, model) that refused structured output: asked without it from then on.
_UNSTRUCTURED: set[tuple[str, str]] = set()
# Sampling parameters a reasoning model may refuse: each one it names is dropped and the call sent again.
_DROPPABLE = ("temperature", "top_p", "top_k", "frequency_penalty")


def frequency_penalty(repeat_penalty: float) -> float:
    """OpenAI's frequency_penalty for a llama.cpp repeat_penalty: repeat_penalty − 1, within OpenAI's [−2, 2].

    Both are neutral at their default (1 and 0) and discourage repetition above it; they are not the
    same penalty (llama.cpp divides a repeated token's logit, OpenAI subtracts the penalty times the
    token's count so far), so the mapping keeps the direction and the neutral point, not the strength.
    Rounded to 6 decimals so that 1.1 gives 0.1, not 0.10000000000000009.
    """
    return round(min(max(repeat_penalty - 1.0, -2.0), 2.0), 6)


def endpoint_url(base_url: str, path: str, *, deployment: str = "", api_version: str = "") -> str:
    """`path` under the base URL, its query string kept after it; Azure's deployment path and api-version when given.

    `https://R.openai.azure.com` with deployment `gpt4o` and api_version `2024-10-21` gives
    `https://R.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21`.
    """
    parts = urlsplit(base_url)
    prefix = parts.path.rstrip("/")
    if deployment:
        prefix += f"/openai/deployments/{quote(deployment, safe='')}"
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
             if not (api_version and k == "api-version")]
    query += [("api-version", api_version)] if api_version else []
    return urlunsplit((parts.scheme, parts.netloc, f"{prefix}/{path}", urlencode(query), ""))


class OpenAIChatModel:
    """An OpenAI-compatible chat completions endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp).

    Azure OpenAI: `deployment` and `api_version` shape the URL (see endpoint_url) and
    key_header="api-key" sends the key as `api-key: KEY` instead of `Authorization: Bearer KEY`.
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "", timeout: float = 60.0,
                 retries: int = 3, backoff: float = 0.5, cache: CallCache | None = None,
                 max_reply_chars: int | None = None, deployment: str = "", api_version: str = "",
                 key_header: str = "authorization") -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model or deployment
        self.api_key_env = api_key_env
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.max_reply_chars = max_reply_chars  # None: no limit
        self.cache = cache
        self.deployment, self.api_version, self.key_header = deployment, api_version, key_header
        self.url = endpoint_url(self.base_url, "chat/completions", deployment=deployment, api_version=api_version)
        self.name = f"openai:{self.model}@{self.base_url}" + (f"|deployment:{deployment}" if deployment else "")
        self._client = new_client()

    def check(self) -> None:
        """Fail fast: the key variable is set and the server answers HTTP at all."""
        url = endpoint_url(self.base_url, "models", api_version=self.api_version)
        check_reachable(self._client, url, self._headers(), self.timeout, "base_url")

    def chat(self, messages: list[Message], *, temperature: float | None = None, max_tokens: int | None = None,
             top_p: float | None = None, repeat_penalty: float | None = None,
             schema: dict[str, Any] | None = None, top_k: int | None = None) -> ChatReply:
        """One completion, from the cache when the same call was made before (see `frequency_penalty`).

        top_k is no OpenAI parameter: it goes as an extra body field, which vLLM, llama.cpp's server and
        others read; a server that refuses it is asked again without it.
        """
        params: dict[str, Any] = {k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens))
                                  if v is not None}
        sampling = departures(top_p, repeat_penalty, top_k)
        params |= {name: sampling[name] for name in ("top_p", "top_k") if name in sampling}
        if "repeat_penalty" in sampling:
            params["frequency_penalty"] = frequency_penalty(sampling["repeat_penalty"])
        if schema is not None and (self.base_url, self.model) not in _UNSTRUCTURED:
            params["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "reply", "strict": True, "schema": _strict(schema)}}
        return cached_chat(self.cache, self.name, "chat/completions", params, messages,
                           lambda: self._complete(messages, dict(params)))

    def _complete(self, messages: list[Message], params: dict[str, Any]) -> ChatReply:
        # Reasoning models reject max_tokens (wanting max_completion_tokens) or any sampling setting, and
        # some servers reject structured output: each rejection adjusts one parameter, a bounded number of times.
        while True:
            try:
                return post_json(self._client, self.url,
                                 {"model": self.model, "messages": messages, **params}, headers=self._headers(),
                                 timeout=self.timeout, retries=self.retries, backoff=self.backoff,
                                 parse=self._parse_chat, max_reply_chars=self.max_reply_chars)
            except ModelError as error:
                if error.status in (400, 413, 422) and overflowed(error.body):
                    raise ContextOverflow(error.message, status=error.status, body=error.body,
                                          where=error.where) from None
                if not (error.status in (400, 422) and self._drop_rejected(params, error.body)):
                    raise

    def _drop_rejected(self, params: dict[str, Any], body: str) -> bool:
        """Adjust the parameter the server complained about; False when there is nothing to adjust."""
        if "response_format" in params and any(word in body for word in ("response_format", "json_schema")):
            del params["response_format"]
            _UNSTRUCTURED.add((self.base_url, self.model))  # asked once per endpoint, not on every call
            return True
        return _drop_sampling(params, body)

    def _headers(self) -> dict[str, str]:
        if not self.api_key_env:
            return {}
        key = os.environ.get(self.api_key_env)
        if not key:
            raise EvalError(f"environment variable {self.api_key_env} is not set", where="api_key_env",
                            fix=f"export {self.api_key_env}=... or set api_key_env = \"\" for servers without keys")
        return {"api-key": key} if self.key_header == "api-key" else {"Authorization": f"Bearer {key}"}

    def _parse_chat(self, data: Any) -> ChatReply:
        content = data["choices"][0]["message"]["content"]
        if not isinstance(content, str):
            raise TypeError("message content is not text")
        # Before the reply is cached: a reply over the limit is never stored.
        refuse_long_reply(content, self.max_reply_chars, "the model's reply")
        usage = data.get("usage") or {}
        return ChatReply(content, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), False)


def _drop_sampling(params: dict[str, Any], body: str) -> bool:
    """Adjust the sampling parameter a reasoning model complained about; False when none applies."""
    if "max_tokens" in params and "max_tokens" in body:
        params["max_completion_tokens"] = params.pop("max_tokens")
        return True
    if "max_completion_tokens" in params and "max_completion_tokens" in body:
        del params["max_completion_tokens"]
        return True
    for name in _DROPPABLE:
        if name in params and name in body:
            del params[name]
            return True
    return False


def _strict(schema: Any) -> Any:
    """The schema without length and number bounds, which OpenAI's strict mode refuses (the prompt still asks)."""
    if isinstance(schema, dict):
        return {k: _strict(v) for k, v in schema.items() if k not in ("maxLength", "minLength", "maxItems", "minimum")}
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema
