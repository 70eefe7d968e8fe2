"""Campaigns with a query transformation: the queries stored per question, exported, served by the API,
compared, shown on the dashboard, swept; the call cache; and the local model end to end."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from pathlib import Path

import pytest

from evalcore.campaigns import CampaignManager, campaign_results, campaign_summary, get_campaign, list_campaigns
from evalcore.campaigns.export import export_campaign
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.cli.compare import question_line
from evalcore.compare import compare_campaigns
from evalcore.store import Store
from evalcore.targets import TargetConfig
from evalcore.targets.target_config import REWRITE_PROMPT
from evalcore.testing import FakeOpenAIServer, Reply

REWRITE = "refund window days after delivery"
PREFIX = REWRITE_PROMPT.split("{")[0]


def replies(path: str, body: dict) -> str | Reply:
    """Rewrites every question but the French one, whose rewrite call is refused (HTTP 400); answers the rest."""
    prompt = body["messages"][-1]["content"]
    if prompt.startswith(PREFIX):
        return Reply.error(400, "refused") if "délai" in prompt else REWRITE
    return "Thirty days."


@pytest.fixture
def manager(tmp_path: Path):
    result = CampaignManager(tmp_path / "query.db")
    yield result
    result.close()


def config(server: FakeOpenAIServer, dataset: Path, **settings: object) -> TargetConfig:
    return TargetConfig.from_dict({"retriever": "bm25", "generator": "openai", "base_url": server.base_url,
                                   "model": "fake-model", "api_key_env": "", "retries": 0,
                                   "knowledge_base": str(dataset), **settings})


def run(manager: CampaignManager, dataset: Path, target: TargetConfig) -> str:
    campaign_id = manager.launch(LaunchRequest(dataset=str(dataset), config=target, concurrency=1))
    assert manager.wait(campaign_id, timeout=60).status == "succeeded"
    return campaign_id


def chat_calls(server: FakeOpenAIServer) -> int:
    return sum(path.endswith("/chat/completions") for path, _, _ in server.requests)


def test_queries_are_stored_counted_cached_and_exported(manager: CampaignManager, tiny_dataset: Path) -> None:
    with FakeOpenAIServer(replies) as server:
        rewrite = config(server, tiny_dataset, query_transform="rewrite")
        first = run(manager, tiny_dataset, rewrite)
        calls = chat_calls(server)
        second = run(manager, tiny_dataset, rewrite)
        assert chat_calls(server) == calls + 1  # only the refused rewrite is asked again: the rest is cached
    results = {r.question.qid: r.outcome for r in campaign_results(manager.store, first)}
    assert results[1].queries == results[3].queries == (REWRITE,)
    refused = results[2]  # never a failed question: the question itself was retrieved with
    assert refused.error is None
    assert refused.queries == ()
    assert refused.answer == "Thirty days."
    assert any(n.startswith("query rewrite failed, the question was used instead") for n in refused.notes)
    # The rewrite's tokens are the answer's: 11 + 7 per call from the fake server.
    assert [(results[q].prompt_tokens, results[q].completion_tokens) for q in (1, 2, 3)] == [(22, 14), (11, 7),
                                                                                             (22, 14)]
    assert campaign_summary(manager.store, first).tokens.total == 36 + 18 + 36
    assert get_campaign(manager.store, second).cache_hits == 5
    assert [r.outcome.queries for r in campaign_results(manager.store, second)] == [o.queries for o in results.values()]

    lines = [json.loads(line) for line in export_campaign(manager.store, first, "jsonl").splitlines()]
    assert [line["queries"] for line in lines] == [[REWRITE], [], [REWRITE]]
    rows = list(csv.DictReader(io.StringIO(export_campaign(manager.store, first, "csv"), newline="")))
    assert [row["queries"] for row in rows] == [REWRITE, "", REWRITE]


def test_the_api_results_carry_the_queries(manager: CampaignManager, tiny_dataset: Path) -> None:
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    with FakeOpenAIServer(replies) as server:
        campaign_id = run(manager, tiny_dataset, config(server, tiny_dataset, query_transform="rewrite"))
    app = create_app(manager.store.path)
    key = create_key(app.state.store, tenant="default", role="viewer")[1]
    with TestClient(app) as client:
        answer = client.get(f"/api/v1/campaigns/{campaign_id}/results", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    assert [r["queries"] for r in answer.json()["data"]["results"]] == [[REWRITE], [], [REWRITE]]


def test_a_comparison_shows_each_sides_queries(manager: CampaignManager, tiny_dataset: Path) -> None:
    with FakeOpenAIServer(replies) as server:
        plain = run(manager, tiny_dataset, config(server, tiny_dataset))
        rewritten = run(manager, tiny_dataset, config(server, tiny_dataset, query_transform="rewrite"))
    comparison = compare_campaigns(manager.store, plain, rewritten)
    assert ({key: list(values) for key, values in comparison.config_diff.items()}
            == {"query_transform": ["none", "rewrite"]})
    by_qid = {q.qid: q for q in comparison.questions}
    assert (by_qid[1].queries_a, by_qid[1].queries_b, by_qid[2].queries_b) == ((), (REWRITE,), ())
    assert by_qid[1].to_dict()["queries_b"] == [REWRITE]
    assert question_line(by_qid[1]).endswith(f"queries: (the question) -> '{REWRITE}'")
    assert "queries:" not in question_line(by_qid[2])


def test_the_dashboard_shows_the_queries(manager: CampaignManager, tiny_dataset: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_dashboard import assert_clean, open_section, page_test

    with FakeOpenAIServer(replies) as server:
        plain = run(manager, tiny_dataset, config(server, tiny_dataset))
        rewritten = run(manager, tiny_dataset, config(server, tiny_dataset, query_transform="rewrite"))
    db = str(manager.store.path)
    at = page_test(db, monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(rewritten).run()
    assert_clean(at)
    assert f"Retrieved with: {REWRITE}" in [t.value for t in at.text]
    at = page_test(db, monkeypatch, "pages/compare.py")
    for name, campaign_id in (("A (baseline)", plain), ("B (candidate)", rewritten)):
        next(box for box in at.selectbox if box.label == name).set_value(campaign_id).run()
    open_section(at, "Questions")
    next(box for box in at.multiselect if box.label == "Verdicts").set_value(["better", "worse", "same"]).run()
    assert_clean(at)
    table = next(df.value for df in at.dataframe if "queries B" in df.value.columns)
    assert set(table["queries B"]) == {REWRITE, ""}
    assert set(table["queries A"]) == {""}


def test_run_sweeps_the_query_transform(tiny_dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "sweep.db"
    with FakeOpenAIServer(lambda path, body: "another query" if len(body["messages"]) > 1 and
                          body["messages"][-1]["content"].startswith("Write one more") else REWRITE) as server:
        toml = tmp_path / "rag.toml"
        toml.write_text(config(server, tiny_dataset).to_toml(), encoding="utf-8")
        code = main(["run", "--dataset", str(tiny_dataset), "--config", str(toml), "--db", str(db),
                     "--sweep", "query_transform=none,rewrite,multi_query"])
    assert code == 0
    assert "sweep over query_transform" in capsys.readouterr().out
    with Store(db) as store:
        campaigns = sorted(list_campaigns(store), key=lambda c: c.config["query_transform"])
        assert [c.config["query_transform"] for c in campaigns] == ["multi_query", "none", "rewrite"]
        queries = [[r.outcome.queries for r in campaign_results(store, c.id)] for c in campaigns]
    assert queries == [[(REWRITE, "another query", "another query")] * 3, [()] * 3, [(REWRITE,)] * 3]


@pytest.mark.long
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_a_rewrite_campaign_runs_end_to_end_on_the_local_model(manager: CampaignManager) -> None:
    # Short replies, one question and one passage in its answer's prompt: what is checked is that each step ran and
    # was counted, not what the small model wrote (its prompt, at about 6 ms of CPU a token, is most of the test's
    # cost; the rewrite's steps with a scripted model are checked on three questions above).
    target = TargetConfig.from_dict({"retriever": "bm25", "generator": "local", "query_transform": "rewrite",
                                     "max_tokens": 24, "query_max_tokens": 24, "context_top_k": 1})
    # The machine is slow and shared: the time limits only stop a hung model.
    campaign_id = manager.launch(LaunchRequest(dataset="default", config=target, limit=1, concurrency=1,
                                               time_limit=600))
    assert manager.wait(campaign_id, timeout=1800).status == "succeeded"
    for result in campaign_results(manager.store, campaign_id):
        outcome = result.outcome
        assert outcome.error is None
        assert outcome.answer
        assert outcome.retrieved
        # A rewrite was retrieved with, or a note says why the question was.
        assert len(outcome.queries) == 1 or any(n.startswith("query rewrite") for n in outcome.notes)
        assert outcome.prompt_tokens > 0
        assert outcome.completion_tokens > 0
