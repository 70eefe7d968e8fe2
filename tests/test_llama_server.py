"""A judged campaign on a server nobody here wrote: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M, on
loopback. It answers json_schema with HTTP 500: the judges fall back to json_object (the schema in the prompt and as
its grammar), say so once, and every verdict is read or counted unreadable; tokens are the server's usage fields."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcore.campaigns import CampaignManager, campaign_results, campaign_summary
from evalcore.campaigns.launching import LaunchRequest
from evalcore.judges import JudgeResult
from evalcore.models import openai as openai_models
from evalcore.targets import TargetConfig
from evalcore.testing.llama_server import MODEL, LlamaServer, missing

REASON = missing()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs llama-cpp-python's server: {REASON}")
JUDGES = ("score", "groundedness_pro")
# Two questions, one passage each in the judges' prompts: every behaviour checked here (the refusal found once, each
# judge's verdicts read or counted, tokens against usage) shows on the first question; the second one's calls are
# the first asked with the switch remembered. Each reply of a 135M model on shared cores costs seconds.
QUESTIONS = 2


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    with LlamaServer() as running:
        yield running


def asks_about(request: dict[str, Any], question: str) -> bool:
    """Whether a judge call is about this question (a retry's messages hold the first call's)."""
    return any(question in message["content"] for message in request["messages"])


@pytest.mark.long
def test_a_judged_campaign_on_llama_cpp_pythons_server_reads_or_counts_every_verdict_with_its_tokens(
        server: LlamaServer, tmp_path: Path) -> None:
    openai_models._ACCEPTED.clear()   # what this endpoint accepts is found out here, not remembered from elsewhere
    manager = CampaignManager(tmp_path / "llama.db")
    try:
        config = TargetConfig.from_dict({"retriever": "bm25", "judge_model": MODEL, "judge_base_url": server.base_url,
                                         "judge_api_key_env": "", "retries": 1, "retry_backoff": 0.01,
                                         "timeout": 600.0, "context_top_k": 1})
        campaign_id = manager.launch(LaunchRequest(dataset="default", config=config, judges=JUDGES, limit=QUESTIONS,
                                                   concurrency=1, cache=False, time_limit=1800))
        done = manager.wait(campaign_id, timeout=3600)
        results = campaign_results(manager.store, campaign_id)
        summary = campaign_summary(manager.store, campaign_id)
    finally:
        manager.close()
    assert done.status == "succeeded", done.error
    exchanges = [(request, status, reply) for request, status, reply in server.exchanges
                 if isinstance(request, dict) and "response_format" in request]
    # The first judge call asks json_schema and is refused with 500 naming response_format; every later one asks
    # json_object with the schema, and the switch is said once, on the question that found it.
    first, *later = exchanges
    assert first[0]["response_format"]["type"] == "json_schema"
    assert first[1] == 500
    assert "response_format" in str(first[2])
    assert later
    assert (all(request["response_format"] == {"type": "json_object", "schema": request["response_format"][
        "schema"]} for request, _, _ in later))
    notes = [note for r in results for note in r.outcome.notes]
    assert len(notes) == 1
    assert "refused structured output as json_schema (HTTP 500" in notes[0]
    # Every verdict is read (pass or fail) or counted unreadable; none is lost.
    verdicts = [(r.question.text, name, v) for r in results for name, v in r.outcome.judges.items()]
    assert len(verdicts) == len(results) * len(JUDGES) == QUESTIONS * len(JUDGES)
    assert all(v.result in (JudgeResult.PASS, JudgeResult.FAIL, JudgeResult.UNKNOWN) for _, _, v in verdicts)
    for name in JUDGES:
        unknown = sum(v.result == JudgeResult.UNKNOWN for _, judge, v in verdicts if judge == name)
        assert summary.unknown.get(name, 0) == unknown
        assert summary.judged[name] == QUESTIONS
    # Each verdict's tokens are the usage fields of the server's replies to its calls (the retry's included).
    answered = [(request, reply) for request, status, reply in later if status == 200]
    for question, name, verdict in verdicts:
        calls = [reply["usage"] for request, reply in answered
                 if asks_about(request, question) and _judge_of(request) == name]
        assert calls, (name, question)
        assert (verdict.prompt_tokens, verdict.completion_tokens) == (
            sum(u["prompt_tokens"] for u in calls), sum(u["completion_tokens"] for u in calls))
        assert verdict.model == f"openai:{MODEL}@{server.base_url}"
    usage = [reply["usage"] for _, reply in answered]
    assert (summary.judge_tokens.prompt, summary.judge_tokens.completion) == (
        sum(u["prompt_tokens"] for u in usage), sum(u["completion_tokens"] for u in usage))


def _judge_of(request: dict[str, Any]) -> str:
    """Which judge asked: groundedness pro's schema asks for a label, the score judge's for a score."""
    return "groundedness_pro" if "label" in request["response_format"]["schema"]["properties"] else "score"
