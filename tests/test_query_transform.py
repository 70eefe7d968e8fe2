"""Query transformation (rewrite, multi-query, HyDE) and the top_p / repeat_penalty settings, against a real
loopback OpenAI-compatible server."""

from __future__ import annotations

import threading
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import pytest

from evalcore.errors import EvalError
from evalcore.models import ModelError, OpenAIChatModel, cache_key, local_model
from evalcore.models.openai import frequency_penalty
from evalcore.targets import RagTarget, Retrieved, TargetConfig
from evalcore.targets import retrievers as retrieval_module
from evalcore.targets.base import Hit
from evalcore.targets.query import MULTI_QUERY_NEXT, fuse
from evalcore.targets.retrievers import bm25_scores, search
from evalcore.targets.target_config import HYDE_PROMPT, REWRITE_PROMPT
from evalcore.testing import FakeOpenAIServer, Reply
from evalcore.testing.multilingual_corpus import corpus
from tests.test_llm import DictCache

# A follow-up question that names nothing: only a rewrite can make it findable.
QUESTION = "And how do I get into its settings page?"
REWRITE = "router admin page address browser"
MORE = ["router default password label", "192.168.8.1 admin page"]
HYDE = "The router's admin page opens at 192.168.8.1 in a web browser; log in with the password on its label."
ANSWER = "At 192.168.8.1."
MESSAGES = [{"role": "user", "content": "Capital of France?"}]
FAST = {"retry_backoff": 0.01, "timeout": 5.0, "retries": 1, "api_key_env": "", "model": "fake-model"}


def scripted(path: str, body: dict) -> str | Reply:
    """Replies by prompt: the rewrite (quoted, with a second line to drop), the next multi-query ones, HyDE, answers."""
    prompt = body["messages"][-1]["content"]
    if prompt.startswith(REWRITE_PROMPT.split("{")[0]):
        return f'"{REWRITE}"\n(keywords only)'
    if prompt == MULTI_QUERY_NEXT:
        return MORE[sum(m["role"] == "assistant" for m in body["messages"]) - 1]
    if prompt.startswith(HYDE_PROMPT.split("{")[0]):
        return HYDE
    return ANSWER


def rewrite_fails(path: str, body: dict) -> str | Reply:
    """The rewrite call is refused (HTTP 400); everything else answers."""
    if body["messages"][-1]["content"].startswith(REWRITE_PROMPT.split("{")[0]):
        return Reply.error(400, "this deployment refuses the request")
    return scripted(path, body)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("index")


def prepared(index_dir: Path, server: FakeOpenAIServer, cache: object = None, **settings: object) -> RagTarget:
    config = TargetConfig.from_dict({"retriever": "bm25", "generator": "openai", "base_url": server.base_url,
                                     **FAST, **settings})
    target = RagTarget(config, cache=cache, cache_dir=index_dir)  # type: ignore[arg-type]
    target.prepare(corpus())
    return target


def chat_bodies(server: FakeOpenAIServer) -> list[dict]:
    return [body for path, body, _ in server.requests if path.endswith("/chat/completions")]


def items(target: RagTarget, text: str, vector_query: str | None = None) -> list[Retrieved]:
    assert target.kb is not None
    return [hit.item for hit in search(target.kb, target.config, text, vector_query)]


# --- top_p and repeat_penalty ---------------------------------------------------------------------

def test_sampling_settings_reach_the_request_only_off_neutral() -> None:
    cache = DictCache()
    with FakeOpenAIServer(default="Paris.") as server:
        model = OpenAIChatModel(server.base_url, "fake-model", api_key_env="", cache=cache)
        model.chat(MESSAGES, temperature=0.0, max_tokens=50, top_p=1.0, repeat_penalty=1.0)
        model.chat(MESSAGES, temperature=0.0, max_tokens=50, top_p=0.9, repeat_penalty=1.1)
    neutral, tuned = (body for _, body, _ in server.requests)
    # At neutral the request and its cache key are those made before the settings existed: old replies still hit.
    assert neutral == {"model": "fake-model", "messages": MESSAGES, "temperature": 0.0, "max_tokens": 50}
    assert cache_key(model.name, "chat/completions", {"temperature": 0.0, "max_tokens": 50}, MESSAGES) in cache.data
    assert tuned == {**neutral, "top_p": 0.9, "frequency_penalty": 0.1}
    assert len(cache.data) == 2


@pytest.mark.parametrize(("repeat_penalty", "expected"), [(1.0, 0.0), (1.1, 0.1), (1.3, 0.3), (0.5, -0.5),
                                                          (3.0, 2.0), (3.5, 2.0), (-2.0, -2.0)])
def test_frequency_penalty_is_repeat_penalty_less_one_within_openai_bounds(repeat_penalty: float,
                                                                           expected: float) -> None:
    assert frequency_penalty(repeat_penalty) == expected


def test_a_model_refusing_a_sampling_setting_is_asked_without_it() -> None:
    replies = [Reply.error(400, "Unsupported parameter: 'top_p' is not supported with this model."), "Thought."]
    with FakeOpenAIServer(replies) as server:
        model = OpenAIChatModel(server.base_url, "fake-model", api_key_env="")
        assert model.chat(MESSAGES, top_p=0.5, repeat_penalty=1.2).text == "Thought."
    first, second = (body for _, body, _ in server.requests)
    assert first["top_p"] == 0.5
    assert "top_p" not in second
    assert second["frequency_penalty"] == 0.2


def test_top_k_is_an_extra_field_off_at_zero_and_dropped_when_refused() -> None:
    replies = ["A.", Reply.error(400, "Unrecognized request argument supplied: top_k"), "B."]
    with FakeOpenAIServer(replies) as server:
        model = OpenAIChatModel(server.base_url, "fake-model", api_key_env="")
        model.chat(MESSAGES, top_k=0)
        assert model.chat(MESSAGES, top_k=40, top_p=0.9).text == "B."
    off, refused, retried = (body for _, body, _ in server.requests)
    assert "top_k" not in off
    assert refused["top_k"] == 40
    assert "top_k" not in retried
    assert retried["top_p"] == 0.9


def test_the_generator_sends_the_configured_sampling(index_dir: Path) -> None:
    with FakeOpenAIServer(default=ANSWER) as server:
        prepared(index_dir, server).answer("router password")
        prepared(index_dir, server, top_p=0.8, top_k=20, repeat_penalty=1.25).answer("router password")
    plain, tuned = chat_bodies(server)
    assert "top_p" not in plain
    assert "frequency_penalty" not in plain
    assert "top_k" not in plain
    assert (tuned["top_p"], tuned["top_k"], tuned["frequency_penalty"]) == (0.8, 20, 0.25)


class FakeLlama:
    """Records llama.cpp's create_chat_completion arguments."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[dict] = []
        self.error = error

    def create_chat_completion(self, **kwargs: object) -> dict:
        self.calls.append(kwargs)
        if self.error:
            raise self.error
        return {"choices": [{"message": {"content": "Paris."}}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}


def test_the_local_model_gets_top_p_and_repeat_penalty_by_their_llama_cpp_names(
        monkeypatch: pytest.MonkeyPatch) -> None:
    llama = FakeLlama()
    monkeypatch.setattr(local_model, "_load_local", lambda: (llama, threading.Lock()))
    model = local_model.LocalChatModel()
    model.chat(MESSAGES, temperature=0.0, max_tokens=8)
    model.chat(MESSAGES, temperature=0.0, max_tokens=8, top_p=1.0, repeat_penalty=1.0)
    model.chat(MESSAGES, temperature=0.0, max_tokens=8, top_p=0.9, repeat_penalty=1.2, top_k=30)
    assert [set(call) - {"messages", "seed"} for call in llama.calls] == [
        {"temperature", "max_tokens"}, {"temperature", "max_tokens"},
        {"temperature", "max_tokens", "top_p", "repeat_penalty", "top_k"}]
    assert (llama.calls[2]["top_p"], llama.calls[2]["repeat_penalty"], llama.calls[2]["top_k"]) == (0.9, 1.2, 30)
    monkeypatch.setattr(local_model, "_load_local",
                        lambda: (FakeLlama(ValueError("Requested tokens exceed context window")), threading.Lock()))
    with pytest.raises(ModelError, match="the local model failed: Requested tokens exceed"):
        model.chat([{"role": "user", "content": "another prompt"}])


# --- configuration --------------------------------------------------------------------------------

@pytest.mark.parametrize(("settings", "words"), [
    ({"query_transform": "rewrite"}, 'generator = "extractive" has none'),
    ({"query_transform": "hyde", "generator": "local", "retriever": "bm25"}, "vector side only"),
    ({"query_transform": "multi_query", "kind": "http_agent", "agent_url": "http://x"}, "RAG pipeline only"),
    ({"query_transform": "expand"}, "expected one of none, rewrite, multi_query, hyde"),
    ({"rewrite_prompt": "Rewrite this."}, "missing placeholder {question}"),
    ({"hyde_prompt": "{question} {context}"}, "unknown placeholder {context}"),
    ({"multi_query_n": 0}, "expected a value in [1, 10]"),
    ({"top_p": 1.5}, "expected a value in [0, 1]"),
    ({"top_k": -1}, "expected a value in [0, 1000]"),
    ({"top_k": 2.5}, "expected a whole number"),
    ({"repeat_penalty": 0.0}, "expected a value in [0.5, 3]"),
])
def test_bad_query_settings_are_refused_naming_the_key(settings: dict, words: str) -> None:
    with pytest.raises(EvalError) as caught:
        TargetConfig.from_dict(settings)
    key = next(k for k in settings if k not in ("generator", "retriever", "kind", "agent_url"))
    assert any(p.startswith(f"{key}:") and words in p for p in caught.value.problems), caught.value.problems


def test_describe_names_the_transform_and_a_sweep_varies_it() -> None:
    base = TargetConfig.from_dict({"retriever": "bm25", "generator": "local"})
    configs = base.sweep("query_transform", ["none", "rewrite", "multi_query"])
    assert [c.describe() for c in configs] == ["bm25 · local model · k=5", "bm25 · query rewrite · local model · k=5",
                                               "bm25 · multi-query 3 · local model · k=5"]
    hyde = TargetConfig.from_dict({"generator": "local", "query_transform": "hyde", "top_p": 0.9})
    assert "HyDE" in hyde.describe()
    assert TargetConfig.from_dict(hyde.to_dict()) == hyde
    assert TargetConfig().diff(hyde) == {"generator": ("extractive", "local"), "query_transform": ("none", "hyde"),
                                         "top_p": (1.0, 0.9)}


# --- the transforms -------------------------------------------------------------------------------

def test_rewrite_retrieves_with_the_rewritten_query(index_dir: Path) -> None:
    with FakeOpenAIServer(scripted) as server:
        target = prepared(index_dir, server, query_transform="rewrite")
        result = target.answer(QUESTION)
    assert result.queries == [REWRITE]  # the first line, unquoted
    assert result.retrieved == items(target, REWRITE) != items(target, QUESTION)
    rewrite, generation = chat_bodies(server)
    assert rewrite["messages"] == [{"role": "user", "content": REWRITE_PROMPT.format(question=QUESTION, history="")}]
    assert rewrite["max_tokens"] == 128
    assert generation["messages"][-1]["content"].endswith(f"Question: {QUESTION}\nAnswer:")  # the question itself
    # Both calls are the answer's: 11 + 7 tokens each from the fake server.
    assert (result.llm_calls, result.prompt_tokens, result.completion_tokens) == (2, 22, 14)


def expected_fusion(target: RagTarget, texts: list[str]) -> list[tuple[int, Fraction]]:
    """RRF computed exactly: rows by the sum of 1 / (rrf_k + rank) over the lists, ties by row, top k."""
    assert target.kb is not None
    scores: dict[int, Fraction] = defaultdict(Fraction)
    for text in texts:
        for rank, hit in enumerate(search(target.kb, target.config, text), 1):
            scores[hit.row] += Fraction(1, target.config.retrieval.rrf_k + rank)
    best = sorted(scores, key=lambda row: (-scores[row], row))[: target.config.retrieval.embedding_top_k]
    return [(row, scores[row]) for row in best]


def test_multi_query_fuses_the_question_and_each_query_by_reciprocal_rank(index_dir: Path) -> None:
    with FakeOpenAIServer(scripted) as server:
        target = prepared(index_dir, server, query_transform="multi_query", keyword_threshold=0.0,
                          embedding_top_k=6, rrf_k=5)
        result = target.answer(QUESTION)
    assert result.queries == [REWRITE, *MORE]
    expected = expected_fusion(target, [QUESTION, REWRITE, *MORE])
    assert target.kb is not None
    assert [(item.pid, item.text) for item in result.retrieved] == [
        (target.kb.chunks[row].pid, target.kb.chunks[row].text) for row, _ in expected]
    assert [item.score for item in result.retrieved] == pytest.approx([float(score) for _, score in expected],
                                                                      abs=1e-12)
    assert all(item.stages["query_rrf"] == round(item.score, 6) for item in result.retrieved)
    # One conversation: each next query is asked after the ones before it.
    bodies = chat_bodies(server)
    assert len(bodies) == 4
    assert (bodies[2]["messages"] == [
        {"role": "user", "content": REWRITE_PROMPT.format(question=QUESTION, history="")},
        {"role": "assistant", "content": REWRITE},
        {"role": "user", "content": MULTI_QUERY_NEXT}, {"role": "assistant", "content": MORE[0]},
        {"role": "user", "content": MULTI_QUERY_NEXT}])
    assert result.llm_calls == 4


def test_fusion_ties_rank_by_row_whatever_the_order_of_the_lists() -> None:
    def hit(row: int) -> Hit:
        return Hit(row, Retrieved(row, f"t{row}", f"text {row}", 0.0, {"bm25": float(row)}))

    forward = fuse([[hit(7), hit(3), hit(5)], [hit(3), hit(7)], [hit(5)]], rrf_k=60, top_k=10)
    backward = fuse([[hit(5)], [hit(3), hit(7)], [hit(7), hit(3), hit(5)]], rrf_k=60, top_k=10)
    # 7 and 3 both hold ranks 1 and 2: a tie, broken by row; 5 holds ranks 1 and 3.
    assert [h.row for h in forward] == [h.row for h in backward] == [3, 7, 5]
    assert forward[0].item.score == 1 / 61 + 1 / 62
    assert forward[0].item.stages["bm25"] == 3.0
    assert [h.row for h in fuse([[hit(1), hit(2), hit(3)]], rrf_k=60, top_k=2)] == [1, 2]


def test_hyde_embeds_the_hypothetical_answer_on_the_vector_side_only(index_dir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    embedded: list[str] = []
    real = retrieval_module.embed_query

    def recording(model: str, text: str):
        embedded.append(text)
        return real(model, text)

    with FakeOpenAIServer(scripted) as server:
        target = prepared(index_dir, server, query_transform="hyde", retriever="hybrid")
        monkeypatch.setattr(retrieval_module, "embed_query", recording)
        result = target.answer(QUESTION)
    assert embedded == [HYDE]
    assert result.queries == [HYDE]
    assert result.retrieved == items(target, QUESTION, vector_query=HYDE)
    assert target.kb is not None
    keyword = bm25_scores(target.kb, QUESTION)  # BM25 kept the question
    rows = {(chunk.pid, chunk.text): row for row, chunk in enumerate(target.kb.chunks)}
    assert all(item.stages["bm25"] == round(float(keyword[rows[(item.pid, item.text)]]), 6)
               for item in result.retrieved)


def test_a_failed_rewrite_falls_back_to_the_question_with_a_note(index_dir: Path) -> None:
    with FakeOpenAIServer(rewrite_fails) as server:
        target = prepared(index_dir, server, query_transform="rewrite")
        result = target.answer(QUESTION)
        multi = prepared(index_dir, server, query_transform="multi_query").answer(QUESTION)
    assert result.queries == []
    assert result.answer == ANSWER
    assert result.retrieved == items(target, QUESTION)
    assert len(result.notes) == 1
    assert result.notes[0].startswith("query rewrite failed, the question was used instead")
    assert "HTTP 400" in result.notes[0]
    assert result.llm_calls == 1  # the refused call cost nothing
    assert multi.queries == []
    assert multi.notes[0].startswith("query multi_query 1 of 3 failed")


def test_an_empty_rewrite_is_noted_and_the_question_used(index_dir: Path) -> None:
    with FakeOpenAIServer(lambda path, body: '  ""  ' if len(body["messages"]) == 1 else ANSWER) as server:
        result = prepared(index_dir, server, query_transform="rewrite").answer(QUESTION)
    assert result.queries == []
    assert result.notes == ["query rewrite was empty, the question was used instead"]
