"""Chat models as campaigns see them: the protocol, one reply, the content-addressed call cache."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple, Protocol

from evalcore.errors import EvalError

log = logging.getLogger("evalcore.models")
# {"role": "system" | "user" | "assistant", "content": text}
Message = dict[str, str]
# The sampling settings that leave a model's output distribution as it is: a backend is sent a
# setting only when it departs from these, so requests (and cache keys) made before the settings
# existed stay byte-identical and their cached replies still serve.
NEUTRAL_TOP_P = 1.0
NEUTRAL_TOP_K = 0  # off: every token may be sampled
NEUTRAL_REPEAT_PENALTY = 1.0


class ChatReply(NamedTuple):
    """One completion; token counts are the model's own (also when served from the cache)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool  # served from the call cache (evalcore's own), not asked
    # Of the prompt tokens, those the provider read from its prompt cache (usage.prompt_tokens_details.cached_tokens),
    # priced at the cached-input price.
    cached_prompt_tokens: int = 0


class CallCache(Protocol):
    """Content-addressed store of model replies (the campaign store implements it)."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, value: dict[str, Any]) -> None: ...


class ChatModel(Protocol):
    """Anything that answers chat messages."""

    name: str

    def chat(self, messages: list[Message], *, temperature: float | None = None, max_tokens: int | None = None,
             top_p: float | None = None, repeat_penalty: float | None = None,
             schema: dict[str, Any] | None = None, top_k: int | None = None) -> ChatReply:
        """One reply; with `schema` (a JSON schema) the reply is asked in that shape where the backend can.

        `top_p` (nucleus sampling), `top_k` (sampling among the k likeliest tokens; 0 = off) and
        `repeat_penalty` (llama.cpp's: 1 = off, above 1 discourages repeating tokens) are sent only
        when they depart from NEUTRAL_TOP_P, NEUTRAL_TOP_K and NEUTRAL_REPEAT_PENALTY.
        """
        ...


def departures(top_p: float | None, repeat_penalty: float | None, top_k: int | None = None) -> dict[str, float]:
    """The sampling settings that depart from neutral, by their llama.cpp names (None = not set)."""
    settings = {"top_p": (top_p, NEUTRAL_TOP_P), "repeat_penalty": (repeat_penalty, NEUTRAL_REPEAT_PENALTY),
                "top_k": (top_k, NEUTRAL_TOP_K)}
    return {name: value for name, (value, neutral) in settings.items() if value is not None and value != neutral}


class ModelError(EvalError):
    """A model or remote service failed after its retries (or refused the request)."""

    def __init__(self, message: str, *, status: int | None = None, body: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.status = status
        self.body = body


class ContextOverflow(ModelError):
    """The messages do not fit the model's context window (the caller may shorten them and ask again)."""


# How servers say a prompt is over the window: OpenAI's error code, vLLM's and llama.cpp's wording.
OVERFLOW_WORDS = ("context_length_exceeded", "maximum context length", "context window", "exceed_context_size")


def overflowed(text: str) -> bool:
    """Whether an error text says the prompt did not fit the context window."""
    lowered = text.lower()
    return any(word in lowered for word in OVERFLOW_WORDS)


class ReplyTooLarge(ModelError):
    """A reply longer than the target's max_reply_chars: refused, not retried, never scored nor cached."""

    def __init__(self, message: str, **kwargs: Any) -> None:
        kwargs.setdefault("fix", "raise max_reply_chars in the target configuration, or ask for shorter answers "
                                 "(max_tokens, the prompt)")
        super().__init__(message, **kwargs)


def refuse_long_reply(text: str | None, max_reply_chars: int | None, what: str = "the answer") -> None:
    """ReplyTooLarge naming the limit and the size when the text is longer than max_reply_chars."""
    if text is not None and max_reply_chars is not None and len(text) > max_reply_chars:
        raise ReplyTooLarge(f"{what} has {len(text):,} characters, over max_reply_chars = {max_reply_chars:,}")


def cache_key(model: str, endpoint: str, params: dict[str, Any], messages: list[Message]) -> str:
    """sha256 of the canonical JSON of everything that determines a reply."""
    payload = {"model": model, "endpoint": endpoint, "params": params, "messages": messages}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    # surrogatepass: a lone surrogate (possible in a Python str) hashes instead of raising.
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def cached_chat(cache: CallCache | None, model: str, endpoint: str, params: dict[str, Any], messages: list[Message],
                call: Callable[[], ChatReply]) -> ChatReply:
    """Serve a call from the cache, or make it and remember the reply; either way it counts on the meter."""
    key = cache_key(model, endpoint, params, messages)
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        reply = ChatReply(hit["text"], hit["prompt_tokens"], hit["completion_tokens"], True,
                          hit.get("cached_prompt_tokens", 0))
    else:
        reply = call()
        if cache is not None:
            cache.put(key, {"text": reply.text, "prompt_tokens": reply.prompt_tokens,
                            "completion_tokens": reply.completion_tokens,
                            "cached_prompt_tokens": reply.cached_prompt_tokens})
    meter = _METER.get()
    if meter is not None:
        meter.add(reply, model)
    return reply


class Meter:
    """Tokens of every model call made while it is current, per role ("generator", "query", "rerank") and model.

    Calls count as they return, so a question that fails after some calls succeeded keeps their
    tokens; a cached reply counts its original tokens, as the target's own accounting does.
    """

    def __init__(self) -> None:
        self.role = "generator"
        # (role, model) -> [prompt, completion, cached prompt]
        self.tokens: dict[tuple[str, str], list[int]] = {}
        self._lock = threading.Lock()

    def add(self, reply: ChatReply, model: str) -> None:
        """Count one reply of this model under the current role."""
        with self._lock:
            counts = self.tokens.setdefault((self.role, model), [0, 0, 0])
            counts[0] += reply.prompt_tokens
            counts[1] += reply.completion_tokens
            counts[2] += reply.cached_prompt_tokens

    def total(self) -> tuple[int, int]:
        """Prompt and completion tokens of every call counted."""
        with self._lock:
            return sum(c[0] for c in self.tokens.values()), sum(c[1] for c in self.tokens.values())

    @contextmanager
    def counting(self, role: str) -> Iterator[None]:
        """Count the calls made inside the block under `role`."""
        previous, self.role = self.role, role
        try:
            yield
        finally:
            self.role = previous


_METER: ContextVar[Meter | None] = ContextVar("evalcore_meter", default=None)


@contextmanager
def metered() -> Iterator[Meter]:
    """A meter current for the calls made by this thread inside the block."""
    meter = Meter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


@contextmanager
def counted_as(role: str) -> Iterator[None]:
    """Count this thread's calls inside the block under `role` on the current meter (nothing without one)."""
    meter = _METER.get()
    if meter is None:
        yield
        return
    with meter.counting(role):
        yield


_NOTICES: ContextVar[list[str] | None] = ContextVar("evalcore_notices", default=None)


@contextmanager
def noticed() -> Iterator[list[str]]:
    """Collect what the model calls made by this thread inside the block had to say (see `notice`)."""
    said: list[str] = []
    token = _NOTICES.set(said)
    try:
        yield said
    finally:
        _NOTICES.reset(token)


def notice(text: str) -> None:
    """Something a campaign should know about a model once (an endpoint that refused a request's format): written
    to the log, and kept by the `noticed` block around the call (a question's notes)."""
    log.warning("%s", text)
    said = _NOTICES.get()
    if said is not None:
        said.append(text)
