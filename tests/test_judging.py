"""Judging in campaigns: a judge model of its own, the answer's context, every reference answer, costs,
pass marks, structured replies; graded retrieval in campaigns; failures made visible."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from evalcore.campaigns import CampaignManager, campaign_aggregates, campaign_results, campaign_summary, get_campaign
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.datasets import load_dataset
from evalcore.errors import EvalError
from evalcore.metrics import graded_retrieval_scores
from evalcore.models import openai as openai_models
from evalcore.store.packing import MARKS, MEASURES, pack_row, sections, unpack_values
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer, Reply
from tests.conftest import TINY, write_dataset

AGENT_REPLY = {"answer": "Refunds are accepted within 30 days.",
               "sources": [{"id": 10, "title": "Terms of Sale (EU)", "text": "Refunds are accepted within 30 days."},
                           {"id": 13, "title": "路由器手册", "text": "路由器的默认地址是 192.168.8.1"}]}


def verdict_for(body: dict[str, Any], score: int = 4) -> str:
    """A judge's reply in the shape its prompt asks for."""
    system = body["messages"][0]["content"]
    if '"label"' in system:
        return json.dumps({"label": "pass", "reason": "Every claim is in the passages."})
    return json.dumps({"score": score, "reason": "Close to the reference."})


def agent_and_judge(path: str, body: Any) -> Reply | str:
    """One loopback server playing the agent (/agent) and the judge (chat completions)."""
    if path.endswith("/agent"):
        return Reply.json(AGENT_REPLY)
    return verdict_for(body)


def judge_calls(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [body for path, body, _ in server.requests if path.endswith("/chat/completions")]


def user_prompt(body: dict[str, Any]) -> str:
    return body["messages"][-1]["content"]


@pytest.fixture
def manager(tmp_path: Path) -> CampaignManager:
    manager = CampaignManager(tmp_path / "judging.db")
    yield manager
    manager.close()


def judged(server: FakeOpenAIServer, **keys: Any) -> TargetConfig:
    return TargetConfig.from_dict({"judge_model": "judge-mini", "judge_base_url": server.base_url,
                                   "judge_api_key_env": "", **keys})


def test_an_http_agent_is_judged_by_the_configured_model(manager: CampaignManager, tiny_dataset: Path) -> None:
    with FakeOpenAIServer(agent_and_judge) as server:
        config = judged(server, kind="http_agent", agent_url=f"{server.root_url}/agent")
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config,
                                     judges=("score", "groundedness", "groundedness_pro", "relevance")))
        done = manager.wait(campaign_id, timeout=60)
        calls, base_url = judge_calls(server), server.base_url
    assert done.status == "succeeded"
    results = campaign_results(manager.store, campaign_id)
    first = results[0].outcome
    assert first.judges["score"].score == 4.0
    assert first.judges["groundedness_pro"].result == "pass"
    assert first.judges["score"].model == f"openai:judge-mini@{base_url}"
    assert "|model:openai:judge-mini@" in first.signatures["judge.score"]
    # The agent's returned sources are the context the judges see, and the sources found.
    grounded = next(body for body in calls if "grounded" in body["messages"][0]["content"].lower())
    assert "Refunds are accepted within 30 days." in user_prompt(grounded)
    assert "192.168.8.1" in user_prompt(grounded)
    assert [s.title for s in first.sources] == ["Terms of Sale (EU)", "路由器手册"]
    # Question 3 has no reference answer: score is skipped, said so, and counted; relevance still runs.
    third = results[2].outcome.judges
    assert third["score"].result == "skipped"
    assert third["score"].reason == "skipped: no reference answer"
    assert third["relevance"].score == 4.0
    summary = campaign_summary(manager.store, campaign_id)
    assert summary.skipped == {"score": 1}
    judge_tokens = sum(v.tokens for r in results for v in r.outcome.judges.values())
    assert summary.judge_tokens.total == judge_tokens == 18 * len(calls)  # 11 + 7 per scripted reply
    assert summary.total_tokens == summary.tokens.total + judge_tokens


def test_an_http_agent_whose_configuration_names_its_chat_model_is_judged_by_it(tmp_path: Path) -> None:
    """No judge model named: the AI score asks the agent's own model, on the engine and through the API's suites."""
    from evalcore.targets.saved_targets import save_target
    from tests.test_api import Api, make_api, serve, wait_done

    app, keys, targets = make_api(tmp_path)
    with FakeOpenAIServer(agent_and_judge) as server, serve(app) as url:
        own = {"generator": "openai", "model": "agent-chat", "base_url": server.base_url, "api_key_env": ""}
        agent = TargetConfig.from_dict({"kind": "http_agent", "agent_url": f"{server.root_url}/agent", **own})
        api = Api(url, app, tmp_path / "api.db", keys, {**targets, "agent": save_target(app.state.store, agent,
                                                                                          tenant="acme")})
        suite = api.call("POST", "/api/v1/eval-suites", json={
            "name": "agent judged by its own model", "agent_id": api.targets["agent"],
            "cases": [{"question": "What is the refund window?", "expected_answer": "30 days"}]}).json()["data"]
        launched = api.call("POST", f"/api/v1/eval-suites/{suite['suite']['id']}/runs", json={"use_judge": True})
        assert launched.status_code == 202, launched.text
        run = wait_done(api, f"/api/v1/eval-suites/runs/{launched.json()['data']['run']['id']}",
                        lambda data: data["run"]["status"])
        models, base_url = {body["model"] for body in judge_calls(server)}, server.base_url
        bare = TargetConfig.from_dict({"kind": "http_agent", "agent_url": f"{server.root_url}/agent"})
        refused = api.call("POST", "/api/v1/eval-suites", json={
            "name": "agent without a model", "agent_id": save_target(app.state.store, bare, tenant="acme"),
            "cases": [{"question": "What is the refund window?"}]}).json()["data"]["suite"]
        refusal = api.call("POST", f"/api/v1/eval-suites/{refused['id']}/runs", json={"use_judge": True})
    assert run["run"]["status"] == "succeeded", run["run"]
    verdict = run["results"][0]["judges"]["score"]
    assert models == {"agent-chat"}, verdict
    assert verdict["score"] == 4.0, verdict
    assert verdict["model"] == f"openai:agent-chat@{base_url}"
    assert refusal.status_code == 422
    assert "judges need a chat model" in refusal.json()["error"]["message"]


def test_a_results_file_is_judged_on_its_own_contexts(manager: CampaignManager, tiny_dataset: Path,
                                                      tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"qid": 1, "ranked_ids": [11, 10], "answer": "30 days.",
                               "contexts": ["Refunds are accepted within 30 days of delivery."]}) + "\n"
                   + json.dumps({"qid": 2, "ranked_ids": [12], "answer": "14 jours."}) + "\n"
                   + json.dumps({"qid": 3, "ranked_ids": [13], "answer": "192.168.8.1"}) + "\n", encoding="utf-8")
    with FakeOpenAIServer(lambda path, body: verdict_for(body, 5)) as server:
        config = judged(server, kind="results_file", results_path=str(run))
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, judges=("groundedness",)))
        manager.wait(campaign_id, timeout=60)
        prompts = [user_prompt(body) for body in judge_calls(server)]
    first = campaign_results(manager.store, campaign_id)[0].outcome
    assert first.judges["groundedness"].score == 5.0
    assert [hit.text for hit in first.context] == ["Refunds are accepted within 30 days of delivery."]
    assert "Refunds are accepted within 30 days of delivery." in prompts[0]
    assert "Refunds were accepted within 14 days" not in prompts[0]  # ranked, but not what the answer used
    assert "Le délai de rétractation" in prompts[1]  # no contexts in the file: the ranked passages are


def test_no_judge_model_refuses_the_launch_naming_the_keys(manager: CampaignManager, tiny_dataset: Path) -> None:
    agent = TargetConfig.of(kind="http_agent", agent_url="http://127.0.0.1:9/agent")
    with pytest.raises(EvalError, match="judges need a chat model") as refused:
        manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=agent, judges=("score",)))
    assert refused.value.where == "judge_model"
    assert "judge_model" in refused.value.fix
    extractive = TargetConfig.of(retriever="bm25")
    with pytest.raises(EvalError, match="judges need a chat model"):
        manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=extractive, use_judge=True))
    assert manager.store.read("SELECT count(*) AS n FROM campaigns")[0]["n"] == 0


def test_reference_answers_and_the_answers_context_reach_the_judges(manager: CampaignManager,
                                                                    tiny_dataset: Path) -> None:
    with FakeOpenAIServer(lambda path, body: verdict_for(body, 3)) as server:
        config = judged(server, retriever="bm25", context_top_k=1, judge_thresholds={"score": 4})
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config,
                                     judges=("score", "completeness", "groundedness")))
        manager.wait(campaign_id, timeout=60)
        calls = judge_calls(server)
    by_judge = {}
    for body in calls:
        system = body["messages"][0]["content"]
        name = next(n for n, words in (("score", "grade the answer"), ("completeness", "how complete"),
                                       ("groundedness", "sticks to its sources")) if words in system)
        by_judge.setdefault(name, []).append(user_prompt(body))
    # Question 1 has two reference answers: both are given to the score and completeness judges.
    assert "30 days." in by_judge["score"][0]
    assert "Thirty days after delivery." in by_judge["score"][0]
    assert "Thirty days after delivery." in by_judge["completeness"][0]
    # Groundedness sees exactly the context_top_k passages placed in the prompt, not all retrieved.
    first = campaign_results(manager.store, campaign_id)[0].outcome
    assert len(first.context) == 1
    assert len(first.retrieved) > 1
    grounded = by_judge["groundedness"][0]
    assert "[1] " in grounded
    assert "[2] " not in grounded
    assert first.context[0].text in grounded
    assert not any(hit.text in grounded for hit in first.retrieved[1:])
    # A pass mark of 4 turns a 3 into a fail; the mark is stored with the verdict and the campaign.
    assert first.judges["score"].score == 3.0
    assert first.judges["score"].result == "fail"
    assert first.judges["score"].threshold == 4.0
    assert get_campaign(manager.store, campaign_id).config["judge_thresholds"] == {"score": 4.0}


def test_structured_replies_are_asked_and_an_endpoint_that_refuses_them_is_asked_without(
        manager: CampaignManager, tiny_dataset: Path) -> None:
    openai_models._ACCEPTED.clear()

    def refusing(path: str, body: Any) -> Reply | str:
        if "response_format" in body:
            return Reply.error(400, "response_format json_schema is not supported by this model")
        return verdict_for(body)

    with FakeOpenAIServer(lambda path, body: verdict_for(body)) as server:
        config = judged(server, retriever="bm25")
        manager.wait(manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, judges=("score",),
                                                  limit=1)), timeout=60)
        (asked,) = judge_calls(server)
    schema = asked["response_format"]["json_schema"]["schema"]
    assert asked["response_format"]["type"] == "json_schema"
    assert schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert "maxLength" not in json.dumps(schema)
    with FakeOpenAIServer(refusing) as server:
        config = judged(server, retriever="bm25")
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, judges=("score",), limit=2,
                                                   cache=False))
        manager.wait(campaign_id, timeout=60)
        calls = judge_calls(server)
    # Refused as json_schema, then as json_object (the refusal names response_format), then remembered: plain text.
    assert [body.get("response_format", {}).get("type") for body in calls] == ["json_schema", "json_object", None,
                                                                                 None]
    assert all(r.outcome.judges["score"].score == 4.0 for r in campaign_results(manager.store, campaign_id))


@pytest.mark.long
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_the_local_model_gives_a_readable_verdict_every_time(manager: CampaignManager) -> None:
    config = TargetConfig.of(retriever="bm25", generator="local", max_tokens=32, context_top_k=1)
    # A 135M model on shared cores is slow (seconds a reply, most of it the prompt): a generous time limit, one
    # question with one passage, each judge's prompt and reply shape once (the grammar binds the reply, whatever the
    # question).
    campaign_id = manager.launch(LaunchRequest(dataset="default", config=config, limit=1, time_limit=900,
                                 judges=("score", "groundedness", "groundedness_pro")))
    done = manager.wait(campaign_id, timeout=1800)
    assert done.status == "succeeded", done.error
    verdicts = [v for r in campaign_results(manager.store, campaign_id) for v in r.outcome.judges.values()]
    assert len(verdicts) == 3
    assert all(v.result in ("pass", "fail") for v in verdicts), [(v.judge, v.reason) for v in verdicts]


def test_graded_measures_in_campaigns_equal_the_function_on_the_same_ranked_lists(manager: CampaignManager) -> None:
    config = TargetConfig.of(retriever="bm25", embedding_top_k=10, graded_thresholds={"ndcg@3": 0.7})
    campaign_id = manager.launch(LaunchRequest(dataset="default", config=config, limit=30))
    manager.wait(campaign_id, timeout=120)
    sample = load_dataset("default")
    top = max(label for q in sample.questions for label in q.labels.values())
    checked = 0
    for result in campaign_results(manager.store, campaign_id):
        labels, outcome = result.question.relevant, result.outcome
        if not labels:
            assert not any(name.startswith("graded.") for name in outcome.measures)
            continue
        ranked = [hit.pid for hit in outcome.retrieved]
        expected = graded_retrieval_scores(labels, [(pid, -rank) for rank, pid in enumerate(ranked)],
                                           0, top, {"ndcg@3": 0.7})
        for name in ("ndcg@3", "xdcg@3", "fidelity", "top1_relevance", "holes", "holes_ratio"):
            if expected[name] is not None:
                assert outcome.measures[f"graded.{name}"] == pytest.approx(expected[name], abs=1e-12)
            assert outcome.results[f"graded.{name}"] == expected[f"{name}_result"]
        assert outcome.signatures["graded.ndcg@3"].startswith(f"graded.ndcg@3|scale:0-{top}|")
        checked += 1
    assert checked >= 20
    assert top == 3
    marks = get_campaign(manager.store, campaign_id).options.graded_thresholds
    assert (marks["ndcg@3"], marks["top1_relevance"], marks["holes"], marks["total_ground_truth_documents"]) == \
        (0.7, 3, 0, 1)  # configured, then the defaults on 0-3


def test_a_name_stored_before_the_documented_one_reads_back_under_it(manager: CampaignManager) -> None:
    """Campaigns stored with `graded.total_groundtruth_documents` show it as `graded.total_ground_truth_documents`."""
    campaign_id = manager.launch(LaunchRequest(dataset="default", config=TargetConfig.of(retriever="bm25"), limit=6))
    manager.wait(campaign_id, timeout=120)
    new, old = "graded.total_ground_truth_documents", "graded.total_groundtruth_documents"
    before = {r.question.qid: r.outcome for r in campaign_results(manager.store, campaign_id)}

    def downgrade(conn) -> None:  # what a store written before the rename (and before coded names, packed rows) holds
        rows = conn.execute("SELECT campaign_id, position, packed FROM results").fetchall()
        conn.executemany("UPDATE results SET measures = ?, results = ?, packed = ? WHERE campaign_id = ? "
                         "AND position = ?",
                         [(json.dumps(unpack_values(parts[MEASURES])), json.dumps(unpack_values(parts[MARKS])),
                           pack_row((tag, data) for tag, data in parts.items() if tag not in (MEASURES, MARKS)),
                           row[0], row[1]) for row in rows for parts in (sections(row[2]),)])
        for column in ("measures", "results", "signatures"):
            conn.execute(f"UPDATE results SET {column} = replace({column}, ?, ?)", (new, old))
        conn.execute("UPDATE campaign_signatures SET name = replace(name, ?, ?), signature = replace(signature, ?, ?)",
                     (new, old, new, old))

    manager.store.write(downgrade)
    stored = manager.store.read("SELECT count(*) AS n FROM results WHERE measures LIKE ?", (f"%{old}%",))[0]["n"]
    assert stored >= 4
    after = {r.question.qid: r.outcome for r in campaign_results(manager.store, campaign_id)}
    assert {q: (o.measures, o.results, o.signatures) for q, o in after.items()} == \
        {q: (o.measures, o.results, o.signatures) for q, o in before.items()}
    assert campaign_aggregates(manager.store, campaign_id)[new].count == stored


def test_a_dataset_outside_the_configured_scale_is_refused(manager: CampaignManager) -> None:
    with pytest.raises(EvalError, match="outside the graded scale"):
        manager.launch(LaunchRequest(dataset="default", config=TargetConfig.of(retriever="bm25", graded_label_max=2)))


def failing_dataset(folder: Path, questions: int) -> Path:
    tables = {**TINY, "queries": {"id": list(range(1, questions + 1)),
                                  "text": [f"question {i} about refunds" for i in range(1, questions + 1)]},
              "qrels": {"qid": [1], "pid": [10]}, "qas": {"qid": [1], "aid": [100]}}
    return write_dataset(folder, tables)


def test_failed_questions_are_visible_and_the_stop_says_why(manager: CampaignManager, tmp_path: Path) -> None:
    data = failing_dataset(tmp_path / "ten", 10)

    def every_other_fails(path: str, body: Any) -> Reply | str:
        number = int(user_prompt(body).rsplit("question ", 1)[1].split()[0])
        return Reply.error(400, "bad request") if number in (2, 4, 6, 8) else "Within 30 days."

    with FakeOpenAIServer(every_other_fails) as server:
        config = TargetConfig.of(retriever="bm25", generator="openai", base_url=server.base_url, model="m",
                                 api_key_env="")
        done = manager.wait(manager.launch(LaunchRequest(dataset=str(data), config=config, concurrency=1)), timeout=60)
        assert (done.status, done.failed, done.status_text) == ("succeeded_with_failures", 4, "succeeded with 4 failed")
        stopped = manager.wait(manager.launch(LaunchRequest(dataset=str(data), config=config, concurrency=1,
                                              max_failed_share=0.2, cache=False)), timeout=60)
    assert stopped.status == "failed"
    assert stopped.failed == 3
    assert stopped.error == "stopped when 3 of 10 questions had failed (more than 20%)"


def test_a_failed_question_keeps_the_tokens_of_the_calls_that_succeeded(manager: CampaignManager,
                                                                        tmp_path: Path) -> None:
    data = failing_dataset(tmp_path / "one", 1)

    def rerank_then_fail(path: str, body: Any) -> Reply | str:
        if "Does the passage help" in user_prompt(body):
            return "yes"
        return Reply.error(400, "generation refused")

    with FakeOpenAIServer(rerank_then_fail) as server:
        config = TargetConfig.of(retriever="bm25", reranker="llm", rerank_url=server.base_url, rerank_model="m",
                                 generator="openai", base_url=server.base_url, model="m", api_key_env="")
        campaign_id = manager.launch(LaunchRequest(dataset=str(data), config=config))
        done = manager.wait(campaign_id, timeout=60)
        reranks = sum(1 for body in judge_calls(server) if "Does the passage help" in user_prompt(body))
    (result,) = campaign_results(manager.store, campaign_id)
    assert done.failed == 1
    assert "generation refused" in result.outcome.error
    assert reranks > 0
    assert result.outcome.prompt_tokens == 11 * reranks
    assert result.outcome.completion_tokens == 7 * reranks


def test_suite_campaigns_ask_one_question_at_a_time_by_default(manager: CampaignManager) -> None:
    from evalcore.suites import Case, create_suite

    suite = create_suite(manager.store, tenant="default", name="s", target_id="default",
                         cases=[Case("What is the refund window?", "30 days")])
    campaign_id = manager.launch(LaunchRequest(suite_id=suite.id, config=TargetConfig.of(retriever="bm25")))
    assert get_campaign(manager.store, campaign_id).options.concurrency == 1
    manager.wait(campaign_id, timeout=60)


def test_cli_judge_options_and_exit_code_of_a_run_with_failures(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    db = str(tmp_path / "cli.db")
    with FakeOpenAIServer(agent_and_judge) as server:
        code = main(["run", "--dataset", str(write_dataset(tmp_path / "tiny")), "--db", db, "--judge", "score",
                     "--judge-model", "judge-mini", "--judge-base-url", server.base_url, "--judge-api-key-env", "",
                     "--judge-threshold", "score=5", "--set", "kind=http_agent", "--set",
                     f"agent_url={server.root_url}/agent", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["campaign"]["config"]["judge_thresholds"] == {"score": 5.0}
    assert report["summary"]["skipped"] == {"score": 1}
    assert report["summary"]["judge_tokens"]["total"] == 36
    assert main(["run", "--dataset", "default", "--db", db, "--judge-threshold", "score"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err


def test_exports_carry_each_judges_fields(manager: CampaignManager, tiny_dataset: Path) -> None:
    import csv
    import io

    from evalcore.campaigns.export import export_campaign

    with FakeOpenAIServer(agent_and_judge) as server:
        config = judged(server, kind="http_agent", agent_url=f"{server.root_url}/agent",
                        judge_thresholds={"score": 5})
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config,
                                                   judges=("score", "groundedness_pro")))
        manager.wait(campaign_id, timeout=60)
    first = json.loads(export_campaign(manager.store, campaign_id, "jsonl").splitlines()[0])
    assert (first["score"], first["score_result"], first["score_threshold"]) == (4.0, "fail", 5.0)
    assert first["score_reason"] == "Close to the reference."
    assert (first["groundedness_pro"], first["groundedness_pro_result"], first["groundedness_pro_threshold"]) == \
        (True, "pass", None)
    assert first["graded.ndcg@3_result"] in ("pass", "fail", "unknown")
    assert first["graded.ndcg@3_threshold"] == 0.5
    assert first["graded.top1_relevance_threshold"] == 3
    assert first["graded.holes_threshold"] == 0
    rows = list(csv.DictReader(io.StringIO(export_campaign(manager.store, campaign_id, "csv").lstrip("\ufeff"))))
    assert rows[2]["score_result"] == "skipped"
    assert rows[0]["groundedness_pro"] == "True"


def test_exports_and_the_api_give_the_evaluators_documented_names(manager: CampaignManager, tiny_dataset: Path,
                                                                  tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    """One option selects the flat fields under the evaluators' names; the nested form stays."""
    import csv
    import io

    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app
    from evalcore.campaigns.export import export_campaign

    with FakeOpenAIServer(agent_and_judge) as server:
        config = judged(server, kind="http_agent", agent_url=f"{server.root_url}/agent")
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config,
                                     judges=("retrieval", "groundedness", "relevance", "completeness",
                                             "groundedness_pro")))
        manager.wait(campaign_id, timeout=60)
    first = json.loads(export_campaign(manager.store, campaign_id, "jsonl", names="evaluator").splitlines()[0])
    for name in ("retrieval", "groundedness", "relevance"):
        assert {key: first[key] for key in (name, f"gpt_{name}", f"{name}_result", f"{name}_threshold")} == \
            {name: 4.0, f"gpt_{name}": 4.0, f"{name}_result": "pass", f"{name}_threshold": 3.0}
        assert first[f"{name}_reason"] == first["judges"][name]["reason"]
    assert (first["response_completeness"], first["response_completeness_result"]) == (4.0, "pass")
    assert sorted(k for k in first if "completeness" in k) == [
        "response_completeness", "response_completeness_reason", "response_completeness_result",
        "response_completeness_threshold"]
    assert ((first["groundedness_pro_label"], first["groundedness_pro_reason"])
            == (True, first["judges"]["groundedness_pro"]["reason"]))
    assert "groundedness_pro" not in first
    assert first["judges"]["retrieval"]["score"] == 4.0  # the nested form stays
    header = next(csv.reader(io.StringIO(export_campaign(manager.store, campaign_id, "csv", names="evaluator"))))
    assert {"gpt_retrieval", "response_completeness_threshold", "groundedness_pro_label"} <= set(header)
    with pytest.raises(EvalError, match="unknown judge field names"):
        export_campaign(manager.store, campaign_id, "csv", names="azure")
    key = create_key(manager.store, tenant="default", role="viewer")[1]
    client = TestClient(create_app(manager.store.path), headers={"Authorization": f"Bearer {key}"})
    page = client.get(f"/api/v1/campaigns/{campaign_id}/results", params={"names": "evaluator"}).json()["data"]
    assert page["results"][0]["flat"]["gpt_relevance"] == 4.0
    assert client.get(f"/api/v1/campaigns/{campaign_id}/results").json()["data"]["results"][0]["flat"] is None
    assert client.get(f"/api/v1/campaigns/{campaign_id}/results", params={"names": "x"}).status_code in (400, 422)
    assert main(["campaigns", "export", campaign_id, "--format", "jsonl", "--names", "evaluator",
                 "--db", str(manager.store.path)]) == 0
    assert '"gpt_retrieval": 4.0' in capsys.readouterr().out
LONG_PASSAGE = "Terms of sale. " + "General conditions apply to every order. " * 55 + "Refunds: within 30 days."


def windowed_agent_and_judge(path: str, body: Any) -> Reply | str:
    """An agent returning one long titled passage, and a judge whose window takes 1,500 characters of prompt."""
    if path.endswith("/agent"):
        return Reply.json({"answer": "Within 30 days.",
                           "sources": [{"id": 10, "title": "Terms of Sale (EU)", "text": LONG_PASSAGE}]})
    if len(user_prompt(body)) > 1500:
        return Reply.error(400, "This model's maximum context length is 512 tokens (context_length_exceeded)")
    return verdict_for(body)


def test_judges_see_the_whole_titled_context_and_a_cut_forced_by_the_window_is_stored_and_shown(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db, dataset = str(tmp_path / "cut.db"), str(write_dataset(tmp_path / "tiny"))
    with FakeOpenAIServer(agent_and_judge) as server:  # a judge with room: the passage whole, with its title
        assert main(["run", "--dataset", dataset, "--db", db, "--judge", "groundedness", "--limit", "1",
                     "--judge-model", "judge-mini", "--judge-base-url", server.base_url, "--judge-api-key-env", "",
                     "--set", "kind=http_agent", "--set", f"agent_url={server.root_url}/agent"]) == 0
        (call,) = judge_calls(server)
    assert "[1] Terms of Sale (EU)\nRefunds are accepted within 30 days." in user_prompt(call)
    assert "context cut" not in capsys.readouterr().out
    with FakeOpenAIServer(windowed_agent_and_judge) as server:
        assert main(["run", "--dataset", dataset, "--db", db, "--judge", "groundedness", "--limit", "1", "--no-cache",
                     "--judge-model", "judge-mini", "--judge-base-url", server.base_url, "--judge-api-key-env", "",
                     "--set", "kind=http_agent", "--set", f"agent_url={server.root_url}/agent", "--json"]) == 0
        prompts = [user_prompt(body) for body in judge_calls(server)]
    report = json.loads(capsys.readouterr().out)
    assert LONG_PASSAGE in prompts[0]
    assert len(prompts) == 2  # whole and refused, then halved
    assert "[cut: the judge model's context window is too small]" in prompts[-1]
    assert report["summary"]["cut"] == {"groundedness": 1}
    (result,) = campaign_results(CampaignManager(db).store, report["campaign"]["id"])
    verdict = result.outcome.judges["groundedness"]
    assert verdict.score == 4.0
    assert (verdict.context_cut == (
        f"context cut to {len(LONG_PASSAGE) // 2:,} of {len(LONG_PASSAGE):,} characters: "
        "the judge model's context window is too small"))
    assert main(["campaigns", "show", report["campaign"]["id"], "--db", db]) == 0
    assert "judge groundedness: context cut to fit the judge model's context window on 1 question" in \
        capsys.readouterr().out
    # The Campaigns page says it too: a warning with the count, and the question's judge row.
    from tests.test_dashboard_workflow import page_test

    with pytest.MonkeyPatch.context() as monkeypatch:
        at = page_test(db, monkeypatch, "pages/campaigns.py")
        at.selectbox[0].set_value(report["campaign"]["id"]).run()
    assert any("Context cut to fit the judge model's context window" in w.value and "groundedness 1" in w.value
               for w in at.warning)
    judges = next(df.value for df in at.dataframe if "reason" in df.value.columns)
    assert list(judges["context"]) == [verdict.context_cut]
    # And the API: the question's verdict carries it.
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    app = create_app(db)
    _, secret = create_key(app.state.store, tenant="default", role="viewer")
    with TestClient(app, headers={"Authorization": f"Bearer {secret}"}) as client:
        path = f"/api/v1/campaigns/{report['campaign']['id']}"
        page = client.get(f"{path}/results").json()["data"]
    assert page["results"][0]["judges"]["groundedness"]["context_cut"] == verdict.context_cut


def test_judging_with_the_local_model_says_how_far_it_can_be_trusted(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    from evalcore.judges import LOCAL_JUDGE_NOTE
    from evalcore.targets.generators import judged_locally

    assert judged_locally(TargetConfig.of(judge_kind="local"))
    assert judged_locally(TargetConfig.of(generator="local"))
    assert (not judged_locally(TargetConfig.of(generator="local",
                                                                                               judge_kind="openai",
                                                                                               judge_model="m")))
    assert not judged_locally(TargetConfig.of(kind="http_agent", agent_url="http://127.0.0.1:9/a", generator="local"))
    missing = str(tmp_path / "missing")  # the note comes first; the launch then fails on the dataset
    assert main(["run", "--dataset", missing, "--db", str(tmp_path / "n.db"), "--judge", "score",
                 "--set", "judge_kind=local"]) == 2
    assert f"note: {LOCAL_JUDGE_NOTE}" in capsys.readouterr().err
    assert main(["run", "--dataset", missing, "--db", str(tmp_path / "n.db"), "--set", "judge_kind=local"]) == 2
    assert "SmolLM2" not in capsys.readouterr().err  # no judge, nothing to say


def test_a_judge_model_named_under_auto_judges_even_when_the_target_has_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db, dataset = str(tmp_path / "named.db"), str(write_dataset(tmp_path / "tiny"))

    def generator(path: str, body: Any) -> str:   # the target's own model: it would score 2 if it judged
        return verdict_for(body, score=2) if "response_format" in body else "Refunds are accepted within 30 days."

    with FakeOpenAIServer(generator) as own, FakeOpenAIServer(lambda path, body: verdict_for(body, 5)) as named:
        assert main(["run", "--dataset", dataset, "--db", db, "--judge", "score", "--limit", "1", "--json",
                     "--set", "retriever=bm25", "--set", "generator=openai", "--set", "model=gen",
                     "--set", f"base_url={own.base_url}", "--set", "api_key_env=",
                     "--judge-model", "judge-mini", "--judge-base-url", named.base_url,
                     "--judge-api-key-env", ""]) == 0
        own_calls, named_calls, named_url = judge_calls(own), judge_calls(named), named.base_url
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert [body["model"] for body in own_calls] == ["gen"]
    assert "response_format" not in own_calls[0]
    assert [body["model"] for body in named_calls] == ["judge-mini"]
    assert f"judges (score) ask openai:judge-mini@{named_url}" in captured.err
    assert report["campaign"]["config"]["judge_kind"] == "auto"
    assert report["campaign"]["config"]["judge_model"] == "judge-mini"
    (result,) = campaign_results(CampaignManager(db).store, report["campaign"]["id"])
    verdict = result.outcome.judges["score"]
    assert (verdict.model, verdict.score) == (f"openai:judge-mini@{named_url}", 5.0)
    assert result.outcome.signatures["judge.score"].endswith(f"|model:openai:judge-mini@{named_url}")
