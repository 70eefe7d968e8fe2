"""max_reply_chars: replies longer than the cap fail their question with the sizes, before being held whole or
scored."""

from __future__ import annotations

import functools
import importlib.util
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore import metrics
from evalcore.campaigns import CampaignManager, campaign_results, get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.errors import EvalError
from evalcore.language import text
from evalcore.language.text import clear_caches as clear_text_caches
from evalcore.metrics.bleu_rouge import clear_caches as clear_generation_caches
from evalcore.models import OpenAIChatModel, ReplyTooLarge, reply_byte_limit
from evalcore.targets import TargetConfig, build_target
from evalcore.targets.target_config import GENERATION
from evalcore.testing import FakeOpenAIServer, Reply
from evalcore.testing.multilingual_corpus import corpus
from tests.test_llm import MESSAGES, DictCache

LIMIT = 1_000
BODY_LIMIT = reply_byte_limit(LIMIT)


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[CampaignManager]:
    result = get_manager(tmp_path / "cap.db")
    yield result
    result.close()


@pytest.fixture
def scored(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every answer the scorer is given."""
    lengths: list[int] = []
    score_question = metrics.score_question

    def counting(inputs: metrics.Inputs) -> metrics.Scores:
        lengths.append(-1 if inputs.answer is None else len(inputs.answer))
        return score_question(inputs)
    monkeypatch.setattr(metrics, "score_question", counting)
    return lengths


def chat(server: FakeOpenAIServer, cache: DictCache | None = None) -> OpenAIChatModel:
    return OpenAIChatModel(server.base_url, "fake", timeout=5.0, retries=2, backoff=0.01, cache=cache,
                           max_reply_chars=LIMIT)


def test_the_key_is_a_generation_setting_with_a_validated_range() -> None:
    assert TargetConfig().generation.max_reply_chars == 200_000
    assert "max_reply_chars" in TargetConfig.keys_in(GENERATION)
    assert TargetConfig.from_dict({"max_reply_chars": 5000}).generation.max_reply_chars == 5000
    for bad in (99, 1_000_001, 2.5, "many"):
        with pytest.raises(EvalError, match="max_reply_chars"):
            TargetConfig.from_dict({"max_reply_chars": bad})


def test_a_chat_reply_over_the_cap_is_refused_once_and_never_cached() -> None:
    cache = DictCache()
    with FakeOpenAIServer([Reply(text="x" * (LIMIT + 1)), Reply(text="y" * LIMIT)]) as server:
        with pytest.raises(ReplyTooLarge) as raised:
            chat(server, cache).chat(MESSAGES)
        assert len(server.requests) == 1
        assert cache.data == {}  # not retried, not cached
        assert chat(server, cache).chat(MESSAGES).text == "y" * LIMIT  # at the cap exactly: accepted
    assert "the model's reply has 1,001 characters, over max_reply_chars = 1,000" in str(raised.value)
    assert "raise max_reply_chars" in str(raised.value)


def test_a_body_whose_length_is_over_the_limit_is_refused_without_reading_it() -> None:
    with FakeOpenAIServer([Reply(text="x" * (3 * BODY_LIMIT))]) as server:
        with pytest.raises(ReplyTooLarge,
                           match=r"Content-Length\), over the 1,060,576 bytes that max_reply_chars = 1,000"):
            chat(server).chat(MESSAGES)
        assert len(server.requests) == 1


@contextmanager
def endless_body(total: int) -> Iterator[tuple[str, list[int]]]:
    """A loopback server answering any POST with a chunked 200 of `total` bytes; yields its URL and bytes sent."""
    sent = [0]
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
            try:
                while sent[0] < total:
                    conn.sendall(chunk)
                    sent[0] += 0x10000
            except OSError:  # the client stopped reading and closed the connection
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", sent
    finally:
        listener.close()
        thread.join(30)


def test_a_streamed_body_is_given_up_at_the_limit_not_read_whole() -> None:
    total = 200 * 1024 * 1024
    with endless_body(total) as (url, sent):
        model = OpenAIChatModel(url, "fake", timeout=5.0, retries=0, max_reply_chars=LIMIT)
        with pytest.raises(ReplyTooLarge, match=r"more than 1,060,576 bytes"):
            model.chat(MESSAGES)
    assert sent[0] < total // 4  # the server was cut off long before the end


def test_a_rerank_reply_over_the_limit_fails_the_question() -> None:
    with FakeOpenAIServer([Reply.json({"results": [], "padding": "x" * (2 * BODY_LIMIT)})]) as server:
        target = build_target(TargetConfig.of(reranker="http", rerank_url=server.root_url + "/rerank", retriever="bm25",
                                              max_reply_chars=LIMIT, retries=2))
        target.prepare(corpus())
        with pytest.raises(ReplyTooLarge, match="over the 1,060,576 bytes"):
            target.answer("What is the refund window?")
        assert len(server.requests) == 1


def test_agent_and_results_file_answers_over_the_cap_fail_their_question_before_scoring(
        manager: CampaignManager, tiny_dataset: Path, tmp_path: Path, scored: list[int]) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(f'{{"qid": 1, "ranked_ids": [10], "answer": "{"a" * (LIMIT + 1)}"}}\n'
                   f'{{"qid": 2, "ranked_ids": [12], "answer": "{"b" * LIMIT}"}}\n'
                   '{"qid": 3, "ranked_ids": [13], "answer": "short"}\n', encoding="utf-8")

    def agent(path: str, body: object) -> Reply:
        return Reply.json({"answer": "z" * (LIMIT + 5), "sources": []})

    with FakeOpenAIServer(agent) as server:
        for config in (TargetConfig.of(kind="results_file", results_path=str(run), max_reply_chars=LIMIT),
                       TargetConfig.of(kind="http_agent", agent_url=server.root_url + "/ask", max_reply_chars=LIMIT)):
            campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config))
            assert manager.wait(campaign_id, timeout=60).finished == 3
            errors = [result.outcome.error for result in campaign_results(manager.store, campaign_id)]
            if config.kind == "results_file":
                assert errors[1:] == [None, None]
                errors = errors[:1]
            sizes = {"results_file": "1,001", "http_agent": "1,005"}[config.kind]
            assert all(f"the answer has {sizes} characters, over max_reply_chars = 1,000" in str(e) for e in errors)
    # Nothing over the cap was ever scored: the scorer saw the two results-file answers within it.
    assert sorted(scored) == [5, LIMIT]


CALLS_PER_CHAR = 40  # the most function calls scoring takes per character of an answer
# Texts that are hard to score: many short tokens, Chinese (segmented word by word), all-distinct words.
HARD_TEXTS = {
    "english words": lambda n: " ".join(["the", "refund", "window", "is", "thirty", "days"][i % 6]
                                        for i in range(n))[:n],
    "one-letter tokens": lambda n: " ".join("abcdefghij"[i * 7 % 10] for i in range(n))[:n],
    "chinese": lambda n: "".join("退款期限是三十天内的路由器型号"[i * 7 % 15] for i in range(n)),
    "distinct words": lambda n: " ".join(f"w{i}" for i in range(n))[:n],
}


def scoring_calls(text: str) -> int:
    """Function calls (Python and C) made while scoring one answer: a count of work, not a time."""
    clear_generation_caches()
    clear_text_caches()  # the work of a new text, not of a cached one
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += event in ("call", "c_call")
    sys.setprofile(profile)
    try:
        metrics.score_question(metrics.Inputs(answer=text, references=["The refund window is 30 days. 退款期限"],
                                              expected_answer="30 days"))
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("kind", HARD_TEXTS)
def test_scoring_work_grows_linearly_so_the_cap_bounds_it(kind: str) -> None:
    # With every answer at most max_reply_chars long (above), linear work per character bounds the
    # work of any question: at most CALLS_PER_CHAR * max_reply_chars calls.
    metrics.score_question(metrics.Inputs(answer="退款", references=["x"]))  # the segmenter's one-time load
    small, large = (scoring_calls(HARD_TEXTS[kind](n)) for n in (2_000, 8_000))
    assert large <= 4.4 * small
    assert large <= CALLS_PER_CHAR * 8_000



@functools.cache
def jieba_viterbi() -> Callable[..., tuple[float, list[str]]]:
    """jieba's own HMM Viterbi, from a fresh copy of its module (the tokenizer replaces the loaded one's)."""
    spec = importlib.util.find_spec("jieba.finalseg")
    assert spec is not None
    assert spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    return fresh.viterbi  # type: ignore[no-any-return]


HAN = "退款期限是三十天内的路由器型号默认地址龘靐齉爩鱻麤"
PATHOLOGICAL = "".join(HAN[i * 7 % 15] for i in range(3_000))  # one run the dictionary does not join


def same_path(run: str) -> bool:
    """The tokenizer's Viterbi (which it installs in jieba) and jieba's own agree: probability and path."""
    import jieba.finalseg

    text.tokens("退款")
    assert jieba.finalseg.viterbi is text._viterbi
    tables = ("BMES", jieba.finalseg.start_P, jieba.finalseg.trans_P, jieba.finalseg.emit_P)
    return bool(text._viterbi(run, *tables) == jieba_viterbi()(run, *tables))


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(HAN), min_size=1, max_size=60))
def test_the_linear_viterbi_finds_jiebas_path_exactly(run: str) -> None:
    assert same_path(run)


def test_a_long_run_the_dictionary_does_not_join_segments_as_jieba_does() -> None:
    assert same_path(PATHOLOGICAL)
