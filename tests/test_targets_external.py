"""External targets: an HTTP agent on loopback, and results files (JSONL, Parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.campaigns.launching import LaunchRequest
from evalcore.errors import EvalError
from evalcore.models import ModelError
from evalcore.targets import TargetConfig, build_target
from evalcore.targets.external import json_path
from evalcore.testing import FakeOpenAIServer, Reply
from evalcore.testing.multilingual_corpus import corpus

AGENT_REPLY = {"data": {"reply": {"text": "Within 30 days."},
                        "docs": [{"doc_id": "0", "name": "Refund policy", "body": "Customers may...", "score": 0.9},
                                 {"doc_id": "cgv-2024.pdf", "name": "CGV", "body": "Le client..."}]}}


def agent(url: str, **settings: object):
    return build_target(TargetConfig.from_dict({
        "kind": "http_agent", "agent_url": url, "agent_body": {"input": {"query": "{question}", "id": "{qid}"},
                                                               "stream": False},
        "agent_answer_path": "data.reply.text", "agent_sources_path": "data.docs", "agent_source_id": "doc_id",
        "agent_source_title": "name", "agent_source_text": "body", "retry_backoff": 0.01, "retries": 1,
        "agent_headers": {"Authorization": "Bearer ${AGENT_TOKEN}", "X-Team": "eval"}, **settings}))


def test_http_agent_posts_template_and_reads_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TOKEN", "s3cret")
    with FakeOpenAIServer([Reply.error(503), Reply.json(AGENT_REPLY)]) as server:
        target = agent(f"{server.root_url}/agent/ask")
        target.check()
        target.prepare(corpus())
        result = target.answer('Refund "window"?', qid=0)
    path, body, headers = server.requests[-1]
    assert path == "/agent/ask"
    assert body == {"input": {"query": 'Refund "window"?', "id": "0"}, "stream": False}
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["X-Team"] == "eval"
    assert result.answer == "Within 30 days."
    assert [(r.pid, r.title, r.source, r.score) for r in result.retrieved] == [
        (0, "Refund policy", "0", 0.9), (None, "CGV", "cgv-2024.pdf", 0.0)]
    assert target.chat_model() is None


def test_http_agent_missing_secret_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_TOKEN", raising=False)
    with pytest.raises(EvalError, match="AGENT_TOKEN is not set") as caught:
        agent("http://127.0.0.1:9/agent").check()
    assert caught.value.where == "agent_headers.Authorization"


def test_http_agent_reply_without_answer_path_fails_after_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TOKEN", "t")
    with FakeOpenAIServer([Reply.json({"data": {}})] * 2) as server, pytest.raises(ModelError, match="malformed"):
        agent(f"{server.root_url}/agent").answer("q")
    assert len(server.requests) == 2


def test_http_agent_sources_that_are_not_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TOKEN", "t")
    one = {"data": {"reply": {"text": "Yes."}, "docs": {"doc_id": 3, "name": "Manual"}}}
    text = {"data": {"reply": {"text": "Yes."}, "docs": "manual.pdf, faq.md"}}
    with FakeOpenAIServer([Reply.json(one), Reply.json(text)]) as server:
        target = agent(f"{server.root_url}/agent", retries=0)
        assert [(r.pid, r.title) for r in target.answer("q").retrieved] == [(3, "Manual")]
        with pytest.raises(ModelError, match="data.docs is not a list of sources"):
            target.answer("q")


def test_json_path() -> None:
    data = {"choices": [{"message": {"content": "hi"}}], "a": {"b": None}}
    assert json_path(data, "choices.0.message.content") == "hi"
    assert json_path(data, "a.b") is None
    assert json_path(data, "") == data
    with pytest.raises(KeyError):
        json_path(data, "choices.0.nope")


def results_target(path: Path):
    target = build_target(TargetConfig.from_dict({"kind": "results_file", "results_path": str(path)}))
    target.prepare(corpus())
    return target


def test_results_file_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rows = [{"qid": 1, "ranked_ids": [1, "12", 999], "answer": "On the label."},
            {"qid": "2", "ranked_ids": [], "answer": None},
            {"question": "Suite question?", "ranked_ids": ["Router manual"], "answer": "Yes."}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    target = results_target(path)
    first = target.answer("ignored", qid=1)
    assert first.answer == "On the label."
    assert [(r.pid, r.title, r.score) for r in first.retrieved] == [
        (1, "Router manual", 3.0), (12, "Machine à café", 2.0), (None, "", 1.0)]
    assert (target.answer("x", qid=2).answer, target.answer("x", qid=2).retrieved) == (None, [])
    assert target.answer(" Suite question? ").retrieved[0].source == "Router manual"
    with pytest.raises(EvalError, match="no row for question 3"):
        target.answer("x", qid=3)


def test_results_file_parquet(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"qid": [5], "ranked_ids": [[3, 2]], "answer": ["Descale."]}), path)
    result = results_target(path).answer("q", qid=5)
    assert (result.answer, [r.pid for r in result.retrieved]) == ("Descale.", [3, 2])


def test_results_file_parquet_written_by_pandas_with_gaps(tmp_path: Path) -> None:
    # pandas stores an integer column with a missing value as floats (5.0, NaN -> null).
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"qid": [5.0, None], "ranked_ids": [["3", "x9", "2"], ["1"]], "answer": [None, "Yes."],
                             "question": [None, "Suite question?"]}), path)
    target = results_target(path)
    result = target.answer("q", qid=5)
    assert result.answer is None  # no answer in the file: no generation measures, not zeros
    assert [(r.pid, r.source) for r in result.retrieved] == [(3, "3"), (None, "x9"), (2, "2")]
    assert target.answer("Suite question?").answer == "Yes."


def test_results_file_problems_name_the_row(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"qid": 1, "ranked_ids": "1,2"}\n{"qid": "x", "ranked_ids": [], "answer": 3}\n', encoding="utf-8")
    with pytest.raises(EvalError) as caught:
        results_target(path)
    assert caught.value.problems == [
        f"{path} row 1: ranked_ids must be a list of ids, found '1,2'",
        f"{path} row 2: qid must be an integer, found 'x'",
        f"{path} row 2: answer must be text, found 3"]
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(EvalError, match=r"bad.jsonl:1: not valid JSON"):
        results_target(path)
    with pytest.raises(EvalError, match="results file not found"):
        results_target(tmp_path / "missing.jsonl")
    path.write_bytes(b'\xff\xfe{"qid": 1}\n')  # UTF-16 text
    with pytest.raises(EvalError, match="cannot read the results file"):
        results_target(path)
    broken = tmp_path / "broken.parquet"
    broken.write_text("not parquet", encoding="utf-8")
    with pytest.raises(EvalError, match="cannot read the results file"):
        results_target(broken)


def test_an_agents_file_names_are_kept_matched_and_shown(tmp_path: Path) -> None:
    """Expected sources match a file name (partial, case and accents ignored) as well as a title or an id."""
    from evalcore.campaigns import CampaignManager, campaign_results
    from evalcore.suites import Case, create_suite
    from tests.conftest import write_dataset

    docs = [{"doc_id": "a1", "name": "Conditions", "filename": "Conditions_Générales_2024.PDF", "body": "30 jours"},
            {"doc_id": "b2", "name": "Manual", "doc_path": "/kb/routeur-manuel.md", "url": "https://x/other.html"}]

    def reply(path: str, body: dict) -> Reply:
        return Reply.json({"data": {"reply": {"text": "Within 30 days."}, "docs": docs}})

    manager = CampaignManager(tmp_path / "files.db")
    suite = create_suite(manager.store, tenant="default", name="files", target_id="default", cases=[
        Case("Refund window?", "30 days", ("generales",)), Case("Router?", "", ("OTHER",))])
    with FakeOpenAIServer(reply) as server:
        for field in ("", "doc_path"):
            config = TargetConfig.from_dict({
                "kind": "http_agent", "agent_url": f"{server.root_url}/agent", "agent_answer_path": "data.reply.text",
                "agent_sources_path": "data.docs", "agent_source_id": "doc_id", "agent_source_title": "name",
                "agent_source_text": "body", "agent_source_file": field,
                "knowledge_base": str(write_dataset(tmp_path / "kb"))})
            campaign = manager.launch(LaunchRequest(suite_id=suite.id, config=config))
            manager.wait(campaign, timeout=30)
            results = campaign_results(manager.store, campaign)
            found = [r.outcome.measures["sources_found"] for r in results]
            names = [s.file_name for s in results[0].outcome.sources]
            assert (found, names) == (([1.0, 1.0], ["Conditions_Générales_2024.PDF", "https://x/other.html"])
                                      if not field else ([0.0, 0.0], ["", "/kb/routeur-manuel.md"]))
    assert results[0].outcome.sources[1].label == "Manual (/kb/routeur-manuel.md)"
    manager.close()
