"""An OpenAI-compatible chat completions endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp server)."""

from __future__ import annotations

import json
import os
import threading
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
    notice,
    overflowed,
    refuse_long_reply,
)
from evalcore.models.http import check_reachable, new_client, post_json

# How a reply of a given shape (a JSON schema) is asked for (the structured_output keys): "auto" asks each of
# FORMATS in turn, or one of them always. auto's order: OpenAI's structured output (the schema enforced), JSON
# mode with the schema in the prompt (and in response_format's `schema`, which llama.cpp's servers turn into a
# grammar), then plain text with the schema in the prompt. A refusal that names the format gives way to the next.
FORMATS = ("json_schema", "json_object", "none")
# What each endpoint (base URL, model) accepts, learnt under auto: asked in that format from then on.
_ACCEPTED: dict[tuple[str, str], str] = {}
_ACCEPTED_LOCK = threading.Lock()
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
                 key_header: str = "authorization", structured_output: str = "auto") -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model or deployment
        self.api_key_env = api_key_env
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.max_reply_chars = max_reply_chars  # None: no limit
        self.cache = cache
        self.deployment, self.api_version, self.key_header = deployment, api_version, key_header
        self.structured_output = structured_output
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
        if schema is None:
            return self._cached(params, messages)
        formats = self._formats()
        for form in formats:
            asked, shaped = shaped_request(form, params, messages, schema)
            try:
                return self._cached(asked, shaped)
            except ModelError as error:
                if form == formats[-1] or not refuses_format(error.status, error.body, form):
                    raise
                self._learn(form, error)
        raise AssertionError("unreachable: the last format's error is raised")

    def _cached(self, params: dict[str, Any], messages: list[Message]) -> ChatReply:
        return cached_chat(self.cache, self.name, "chat/completions", params, messages,
                           lambda: self._complete(messages, dict(params)))

    def _formats(self) -> tuple[str, ...]:
        """The formats a structured reply is asked in, in turn: the one set, or under auto from what the endpoint
        is known to accept."""
        if self.structured_output != "auto":
            return (self.structured_output,)
        with _ACCEPTED_LOCK:
            known = _ACCEPTED.get((self.base_url, self.model), FORMATS[0])
        return FORMATS[FORMATS.index(known):]

    def _learn(self, form: str, error: ModelError) -> None:
        """Remember that this endpoint refused `form`, and say so once (the first call to find it out)."""
        following = FORMATS[FORMATS.index(form) + 1]
        with _ACCEPTED_LOCK:
            known = _ACCEPTED.get((self.base_url, self.model), FORMATS[0])
            first = FORMATS.index(known) <= FORMATS.index(form)
            if first:
                _ACCEPTED[(self.base_url, self.model)] = following
        if first:
            body = " ".join(error.body.split())[:160]
            notice(f"{self.name} refused structured output as {form} (HTTP {error.status}: {body}); it is asked "
                   f"{ASKED_AS[following]} from now on (structured_output = \"auto\"; set it to "
                   f"\"{following}\" to ask so at once)")

    def _complete(self, messages: list[Message], params: dict[str, Any]) -> ChatReply:
        # Reasoning models reject max_tokens (wanting max_completion_tokens) or any sampling setting, and
        # some servers reject structured output: each rejection adjusts one parameter, a bounded number of times.
        form = params.get("response_format", {}).get("type", "none")
        while True:
            try:
                return post_json(self._client, self.url,
                                 {"model": self.model, "messages": messages, **params}, headers=self._headers(),
                                 timeout=self.timeout, retries=self.retries, backoff=self.backoff,
                                 parse=self._parse_chat, max_reply_chars=self.max_reply_chars,
                                 refused=lambda status, body: refuses_format(status, body, form))
            except ModelError as error:
                if error.status in (400, 413, 422) and overflowed(error.body):
                    raise ContextOverflow(error.message, status=error.status, body=error.body,
                                          where=error.where) from None
                if not (error.status in (400, 422) and _drop_sampling(params, error.body)):
                    raise

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
        usage = data.get("usage")
        prompt, completion = usage_tokens(usage)
        return ChatReply(content, prompt, completion, False, min(cached_tokens(usage), prompt))


def usage_tokens(usage: Any) -> tuple[int, int]:
    """Prompt and completion tokens of a reply's `usage` (0 where absent)."""
    usage = usage if isinstance(usage, dict) else {}
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def cached_tokens(usage: Any) -> int:
    """The prompt tokens the provider served from its prompt cache (`usage.prompt_tokens_details.cached_tokens`,
    as OpenAI and Azure OpenAI report them); 0 when it says nothing."""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return int(cached) if isinstance(cached, (int, float)) and cached > 0 else 0


# How each format after the first is asked, as the campaign's log says it.
ASKED_AS = {"json_object": "as json_object with the schema in the prompt",
            "none": "in plain text with the schema in the prompt"}
SCHEMA_INSTRUCTION = "Reply with one JSON object that follows this JSON schema, and nothing else:\n"


def refuses_format(status: int | None, body: str, form: str) -> bool:
    """Whether an error reply refuses the request's structured-output format: any error status (400, 422, 500
    alike: servers differ) whose body names response_format, the format or structured output."""
    if form == "none" or status is None or status < 400:
        return False
    lowered = body.lower()
    return any(word in lowered for word in ("response_format", form, "structured output"))


def shaped_request(form: str, params: dict[str, Any], messages: list[Message],
                   schema: dict[str, Any]) -> tuple[dict[str, Any], list[Message]]:
    """The parameters and messages of a request asking for a reply of `schema` in format `form` (see FORMATS)."""
    if form == "json_schema":
        strict = {"name": "reply", "strict": True, "schema": _strict(schema)}
        return params | {"response_format": {"type": "json_schema", "json_schema": strict}}, messages
    described = with_schema(messages, schema)
    if form == "json_object":
        return params | {"response_format": {"type": "json_object", "schema": schema}}, described
    return params, described


def with_schema(messages: list[Message], schema: dict[str, Any]) -> list[Message]:
    """The messages with the schema stated at the end of the system message (one is added when there is none)."""
    stated = SCHEMA_INSTRUCTION + json.dumps(schema, ensure_ascii=False)
    if messages and messages[0].get("role") == "system":
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{stated}"}, *messages[1:]]
    return [{"role": "system", "content": stated}, *messages]


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
