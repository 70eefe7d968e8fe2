"""Judging a finished campaign again: a new campaign that reads the answers where they are stored (never asking the
target again), judged by another model, prompt or rubric; compared question by question, with the two judges'
agreement next to the people's."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Iterator
from html import unescape as unescape_html
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score

from evalcore.campaigns import CampaignManager, campaign_results, get_campaign, list_campaigns
from evalcore.campaigns.export import export_campaign
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.question_labels import set_label
from evalcore.campaigns.rejudging import RejudgeRequest
from evalcore.campaigns.trust import comparison_trust
from evalcore.cli import main
from evalcore.compare import compare_campaigns
from evalcore.errors import EvalError
from evalcore.store import Conflict, NotFound
from evalcore.store.packing import RANKED, packed_ids, sections
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer, Reply
from tests.conftest import write_dataset

ANSWER = " ".join(["Thirty days, counted from the delivery date."] * 20)  # long enough to count bytes by
FIRST = {"What is the refund window?": 5, "Quel est le délai ?": 2, "路由器的默认地址是什么？": 4}
SECOND = {"What is the refund window?": 4, "Quel est le délai ?": 1, "路由器的默认地址是什么？": 4}


def verdict(scores: dict[str, int], body: Any) -> str:
    score = next(s for q, s in scores.items() if q in body["messages"][-1]["content"])
    return json.dumps({"score": score, "reason": "scripted"})


def target_and_first_judge(path: str, body: Any) -> str:
    """The target's own chat model: it answers, and judges too under judge_kind auto (structured output asked)."""
    return verdict(FIRST, body) if "response_format" in body else ANSWER


@pytest.fixture
def judged(tmp_path: Path) -> Iterator[tuple[CampaignManager, str, FakeOpenAIServer]]:
    """A campaign answered and judged (relevance, score) by the target's own model, under tenant acme."""
    manager = CampaignManager(tmp_path / "rejudge.db")
    with FakeOpenAIServer(target_and_first_judge) as target:
        config = TargetConfig.from_dict({"retriever": "bm25", "generator": "openai", "base_url": target.base_url,
                                         "model": "answer-model", "api_key_env": "", "retries": 0})
        campaign_id = manager.launch(LaunchRequest(dataset=str(write_dataset(tmp_path / "tiny")), config=config,
                                                   judges=("relevance", "score"), tenant="acme", concurrency=1))
        assert manager.wait(campaign_id, timeout=60).status == "succeeded"
        yield manager, campaign_id, target
    manager.close()


def chat_calls(server: FakeOpenAIServer) -> int:
    return sum(path.endswith("/chat/completions") for path, _, _ in server.requests)


def rejudge_with(manager: CampaignManager, source: str, server: FakeOpenAIServer, **request: Any) -> str:
    """Judge `source` again with the model behind `server` and wait for it."""
    settings = {"judge_model": "judge-2", "judge_base_url": server.base_url, "judge_api_key_env": ""}
    campaign_id = manager.rejudge(RejudgeRequest(source, settings=settings, tenant="acme", **request))
    assert manager.wait(campaign_id, timeout=60).status == "succeeded"
    return campaign_id


def test_a_rejudge_asks_only_the_judge_and_keeps_the_answers_stored_once(
        judged: tuple[CampaignManager, str, FakeOpenAIServer]) -> None:
    manager, source, target = judged
    asked_before = len(target.requests)
    with FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as judge:
        again = rejudge_with(manager, source, judge)
        assert chat_calls(judge) == 5  # three questions, two judges; score skips the one without a reference
    assert len(target.requests) == asked_before  # the target was not asked anything, not even checked
    campaign = get_campaign(manager.store, again)
    assert campaign.answers_from == source
    assert campaign.to_dict()["answers_from"] == source
    assert campaign.judges == ("relevance", "score")
    assert campaign.config["judge_kind"] == "openai"
    assert campaign.config["judge_model"] == "judge-2"
    assert campaign.kind == "dataset"
    assert campaign.tenant == "acme"
    old, new = campaign_results(manager.store, source), campaign_results(manager.store, again)
    assert [r.outcome.answer for r in new] == [r.outcome.answer for r in old] == [ANSWER] * 3
    assert [r.outcome.retrieved for r in new] == [r.outcome.retrieved for r in old]
    assert [r.outcome.context for r in new] == [r.outcome.context for r in old]
    lean = campaign_results(manager.store, again, detail=False)  # a comparison's read, column by column
    assert [r.outcome.answer for r in lean] == [ANSWER] * 3
    assert [[h.pid for h in r.outcome.retrieved] for r in lean] == [[h.pid for h in r.outcome.retrieved] for r in old]
    assert [r.outcome.judges["relevance"].score for r in new] == [4, 1, 4]
    assert [r.outcome.judges["relevance"].score for r in old] == [5, 2, 4]
    stored = manager.store.read("SELECT campaign_id, count(*) AS n, sum(length(answer)) AS chars, "
                                "sum(length(retrieved)) AS ranked FROM results GROUP BY campaign_id")
    by_campaign = {row["campaign_id"]: row for row in stored}
    assert by_campaign[source]["chars"] == 3 * len(ANSWER)
    assert by_campaign[again]["chars"] is None
    assert by_campaign[again]["n"] == 3
    assert by_campaign[again]["ranked"] == 0
    packed = manager.store.read("SELECT packed FROM results WHERE campaign_id = ?", (again,))
    assert not any(RANKED in sections(row["packed"]) for row in packed)  # the re-judge's rows pack no ranked list
    ranked = manager.store.read("SELECT packed FROM results WHERE campaign_id = ?", (source,))
    ids = {key for row in ranked for key in packed_ids(row["packed"])}
    stored = manager.store.read("SELECT count(*) AS n FROM passage_texts")
    assert stored[0]["n"] == len(ids)  # the passages are the judged campaign's only, each stored once


def test_the_comparison_differs_only_where_the_judges_do_and_gives_their_agreement(
        judged: tuple[CampaignManager, str, FakeOpenAIServer]) -> None:
    manager, source, _ = judged
    with FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as judge:
        again = rejudge_with(manager, source, judge, judges=("relevance",))
    comparison = compare_campaigns(manager.store, source, again)
    deltas = {m.measure: m for m in comparison.measures}
    judged_measures = {name for name in deltas if name.startswith("judge.")}
    assert judged_measures == {"judge.relevance", "judge.relevance:pass"}  # score was not judged again
    assert all(m.delta == 0 for name, m in deltas.items() if name not in judged_measures)
    assert deltas["judge.relevance"].delta == pytest.approx((4 + 1 + 4) / 3 - (5 + 2 + 4) / 3)
    assert any("judge relevance used a different model or prompt" in w for w in comparison.warnings)
    assert "A and B judged the same stored answers: only the judged measures can differ" in comparison.notes
    trust = comparison_trust(manager.store, source, again)
    found = trust.judges["relevance"]
    a, b = ["5", "2", "4"], ["4", "1", "4"]
    labels = list("12345")
    assert (found.n, found.accuracy) == (3, pytest.approx(1 / 3))
    assert found.kappa == pytest.approx(cohen_kappa_score(a, b, labels=labels))
    assert found.weighted_kappa == pytest.approx(cohen_kappa_score(a, b, labels=labels, weights="quadratic"))
    low, high = found.interval
    line = ("judge.relevance, B's verdicts against A's on the same answers: 3 questions, weighted kappa "
            f"{found.weighted_kappa:.2f} ({low:.2f} to {high:.2f})")
    assert trust.lines() == [line]
    assert trust.to_dict()["judges"]["relevance"]["n"] == 3
    assert trust.to_dict()["people"] == {"A": {}, "B": {}}
    # People's labels are about the answers: given on the judged campaign, they check both judges.
    people = ["5", "1", "4"]
    for qid, label in zip((1, 2, 3), people, strict=True):
        set_label(manager.store, source, qid, "relevance", label, author="ana")
    set_label(manager.store, source, 1, "score", "5", author="ana")  # a judge the re-judge did not run
    sides = comparison_trust(manager.store, source, again).people
    assert set(sides["A"]) == {"relevance", "score"}
    assert set(sides["B"]) == {"relevance"}
    for side, judged_as in (("A", a), ("B", b)):
        assert sides[side]["relevance"].weighted_kappa == pytest.approx(
            cohen_kappa_score(people, judged_as, labels=labels, weights="quadratic"))
    assert comparison_trust(manager.store, source, again).lines()[0].startswith(
        "judge.relevance against people's labels: A 3 labelled, weighted kappa ")


def test_only_a_finished_campaign_of_ones_tenant_is_judged_again_and_its_answers_stay(
        judged: tuple[CampaignManager, str, FakeOpenAIServer]) -> None:
    manager, source, _ = judged
    with pytest.raises(NotFound):
        manager.rejudge(RejudgeRequest(source, tenant="other"))
    with pytest.raises(EvalError, match="a re-judge changes only the judges: retriever is not a judge key"):
        manager.rejudge(RejudgeRequest(source, tenant="acme", settings={"retriever": "vector"}))
    with pytest.raises(EvalError, match="unknown judge 'vibes'"):
        manager.rejudge(RejudgeRequest(source, tenant="acme", judges=("vibes",)))
    manager.store.write(lambda conn: conn.execute("UPDATE campaigns SET status = 'cancelled'"))
    with pytest.raises(Conflict, match="only a campaign whose every question ran can be judged again: this one is "
                                       "cancelled"):
        manager.rejudge(RejudgeRequest(source, tenant="acme"))
    manager.store.write(lambda conn: conn.execute("UPDATE campaigns SET status = 'succeeded'"))
    with FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as judge:
        again = rejudge_with(manager, source, judge, judges=("score",))
    with pytest.raises(Conflict, match="cannot delete the campaign: its answers are judged again by 1 campaign") \
            as error:
        manager.delete(source)
    assert error.value.found == again
    with pytest.raises(Conflict, match="cannot answer its failed questions again"):
        manager.retry_failed(source)
    manager.delete(again)
    manager.delete(source)


def test_the_cli_judges_again_and_compare_gives_both_agreements_as_text_and_json(
        judged: tuple[CampaignManager, str, FakeOpenAIServer], capsys: pytest.CaptureFixture) -> None:
    manager, source, target = judged
    db, asked_before = str(manager.store.path), len(target.requests)
    assert main(["rejudge", source, "--tenant", "acme", "--set", "retriever=vector", "--db", db]) == 2
    assert "error: retriever: a re-judge changes only the judges" in capsys.readouterr().err
    with FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as judge:
        assert main(["rejudge", source, "--judge", "relevance", "--judge-model", "judge-2", "--judge-base-url",
                     judge.base_url, "--judge-api-key-env", "", "--tenant", "acme", "--db", db]) == 0
    out = capsys.readouterr().out
    assert f"judging again the answers of {get_campaign(manager.store, source).name!r} ({source})" in out
    assert f"judges again the answers of campaign {source} (its target was not asked)" in out
    assert len(target.requests) == asked_before
    (again,) = [c.id for c in list_campaigns(manager.store, "acme") if c.answers_from == source]
    assert get_campaign(manager.store, again).name.endswith(" · judged again: relevance")
    report = Path(db).with_name("report.html")
    assert main(["compare", source, again, "--db", db, "--report", str(report)]) == 0
    line = "judge.relevance, B's verdicts against A's on the same answers: 3 questions, weighted kappa "
    assert line in capsys.readouterr().out
    html = unescape_html(report.read_text(encoding="utf-8"))
    assert "<h2>How far to trust the judges</h2>" in html
    assert line in html
    assert main(["compare", source, again, "--db", db, "--json"]) == 0
    agreement = json.loads(capsys.readouterr().out)["agreement"]
    assert agreement["judges"]["relevance"]["n"] == 3
    assert agreement["people"] == {"A": {}, "B": {}}


def test_the_api_judges_again_on_its_workers_and_compares_with_both_agreements(
        judged: tuple[CampaignManager, str, FakeOpenAIServer]) -> None:
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    manager, source, target = judged
    app = create_app(str(manager.store.path))
    _, admin = create_key(app.state.store, tenant="acme", role="admin", capability="full-access")
    _, viewer = create_key(app.state.store, tenant="acme", role="viewer")
    _, stranger = create_key(app.state.store, tenant="other", role="admin", capability="full-access")
    asked_before = len(target.requests)
    route = f"/api/v1/campaigns/{source}/rejudge"
    with FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as judge, TestClient(app) as client:
        body = {"judges": ["relevance"], "judge": {"kind": "openai", "model": "judge-2", "base_url": judge.base_url,
                                                   "api_key_env": ""}}
        assert client.post(route, json=body, headers=bearer(viewer)).status_code == 403
        assert client.post(route, json=body, headers=bearer(stranger)).status_code == 404
        made = client.post(route, json=body, headers=bearer(admin))
        assert made.status_code == 202, made.text
        again = made.json()["data"]["campaign"]
        assert again["answers_from"] == source
        assert again["judges"] == ["relevance"]
        for _ in range(300):
            again = client.get(f"/api/v1/campaigns/{again['id']}", headers=bearer(admin)).json()["data"]["campaign"]
            if again["status"] not in ("queued", "pending", "running"):
                break
            time.sleep(0.1)
        assert again["status"] == "succeeded"
        assert chat_calls(judge) == 3
        compared = client.get(f"/api/v1/compare?a={source}&b={again['id']}", headers=bearer(admin)).json()["data"]
    assert len(target.requests) == asked_before
    assert compared["agreement"]["judges"]["relevance"]["n"] == 3
    deltas = {m["measure"]: m["delta"] for m in compared["comparison"]["measures"]}
    assert deltas["judge.relevance"] == pytest.approx((4 + 1 + 4) / 3 - (5 + 2 + 4) / 3)
    assert all(delta == 0 for name, delta in deltas.items() if not name.startswith("judge."))


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_the_campaigns_page_judges_a_finished_campaign_again(
        judged: tuple[CampaignManager, str, FakeOpenAIServer], monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.campaigns import get_manager
    from tests.test_dashboard_workflow import assert_clean, page_test, unescape

    manager, source, target = judged
    manager.store.write(lambda conn: conn.execute("UPDATE campaigns SET tenant = 'default'"))
    monkeypatch.setenv("JUDGE_KEY", "secret")
    monkeypatch.setenv("EVALCORE_ALLOWED_ENV", "JUDGE_KEY")  # the operator lets sessions name it
    asked_before = len(target.requests)
    at = page_test(str(manager.store.path), monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(source).run()
    assert_clean(at)
    assert not at.text_area  # the form is drawn once its expander is opened
    at.session_state["rejudge-open"] = True
    at.run()
    at.text_area(key="rejudge-rubric").set_value("[criteria]\nThe answer is right.")
    next(b for b in at.button if b.label == "Judge again").click().run()
    assert any("a rubric needs a name" in unescape(e.value) for e in at.error)
    assert not [c for c in list_campaigns(manager.store) if c.answers_from == source]
    at.text_area(key="rejudge-rubric").set_value("")
    with FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as judge:
        at.multiselect(key="rejudge-judges").set_value(["relevance"])
        at.text_input(key="rejudge-model").set_value("judge-2")
        at.text_input(key="rejudge-url").set_value(judge.base_url)
        at.text_input(key="rejudge-key-env").set_value("JUDGE_KEY")
        next(b for b in at.button if b.label == "Judge again").click().run()
        assert_clean(at)
        (again,) = [c for c in list_campaigns(manager.store) if c.answers_from == source]
        assert get_manager(str(manager.store.path)).wait(again.id, timeout=60).status == "succeeded"
        assert chat_calls(judge) == 3
        assert judge.requests[0][2]["Authorization"] == "Bearer secret"
    assert len(target.requests) == asked_before
    flashes = [unescape(m.value) for m in at.success]
    assert f"Judging again as {again.name}." in flashes, flashes
    assert at.selectbox[0].value == again.id  # the page opens on the new campaign
    assert any(f"Judges again the answers of {get_campaign(manager.store, source).name}: its target was not asked"
               in unescape(c.value) for c in at.caption)
    compare = page_test(str(manager.store.path), monkeypatch, "pages/compare.py")  # proposes the two newest
    assert_clean(compare)
    assert any("judge.relevance, B's verdicts against A's on the same answers: 3 questions" in unescape(c.value)
               for c in compare.caption)


def failing_french(path: str, body: Any) -> Any:
    """The target fails the French question (HTTP 400, not retried) and answers the others; judges as FIRST."""
    if "response_format" in body:
        return verdict(FIRST, body)
    return Reply.error(400, "refused") if "délai" in body["messages"][-1]["content"] else ANSWER


def test_a_failed_question_stays_failed_and_an_interrupted_rejudge_resumes_without_the_target(
        tmp_path: Path) -> None:
    manager = CampaignManager(tmp_path / "failed.db")
    with FakeOpenAIServer(failing_french) as target, \
            FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as judge:
        config = TargetConfig.from_dict({"retriever": "bm25", "generator": "openai", "base_url": target.base_url,
                                         "model": "answer-model", "api_key_env": "", "retries": 0})
        source = manager.launch(LaunchRequest(dataset=str(write_dataset(tmp_path / "tiny")), config=config,
                                              judges=("relevance",), concurrency=1, max_failed_share=1.0))
        assert manager.wait(source, timeout=60).status == "succeeded_with_failures"
        asked_before = len(target.requests)
        settings = {"judge_model": "judge-2", "judge_api_key_env": "", "judge_base_url": judge.base_url}
        again = manager.rejudge(RejudgeRequest(source, settings=settings, cache=False))
        assert manager.wait(again, timeout=60).status == "succeeded_with_failures"
        errors = [(r.question.qid, r.outcome.error) for r in campaign_results(manager.store, again)]
        assert errors == [(r.question.qid, r.outcome.error) for r in campaign_results(manager.store, source)]
        assert errors[1][1] is not None
        assert "refused" in errors[1][1]
        assert chat_calls(judge) == 2
        # A crash loses the questions in flight: here the last one; resuming judges it alone.
        manager.store.write(lambda conn: conn.execute("DELETE FROM results WHERE campaign_id = ? AND position = 2",
                                                      (again,)))
        manager.store.write(lambda conn: conn.execute("UPDATE campaigns SET status = 'interrupted' WHERE id = ?",
                                                      (again,)))
        manager.resume(again)
        assert manager.wait(again, timeout=60).status == "succeeded_with_failures"
        assert len(target.requests) == asked_before
        assert chat_calls(judge) == 3
    resumed = campaign_results(manager.store, again)
    assert [r.outcome.answer for r in resumed] == [ANSWER, None, ANSWER]
    assert [r.outcome.judges["relevance"].score for r in resumed if not r.outcome.error] == [4, 4]
    manager.close()


def test_a_notebook_judges_again_and_compares(judged: tuple[CampaignManager, str, FakeOpenAIServer]) -> None:
    import evalcore as ec

    manager, source, target = judged
    asked_before = len(target.requests)
    with FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as judge:
        view = ec.rejudge(source, judges=["relevance"], judge_model="judge-2", judge_base_url=judge.base_url,
                          judge_api_key_env="", db=manager.store.path, progress=False)
    assert view.record.answers_from == source
    assert len(target.requests) == asked_before
    compared = ec.comparison(source, view.id, db=manager.store.path)
    assert {m.measure: m.delta for m in compared.comparison.measures}["judge.relevance"] == pytest.approx(-2 / 3)


def test_both_stores_keep_the_answers_once_and_read_them_back_for_the_rejudge(db: str, tmp_path: Path) -> None:
    manager = CampaignManager(db)
    with FakeOpenAIServer(lambda path, body: verdict(FIRST, body)) as first, \
            FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as second:
        config = TargetConfig.from_dict({"retriever": "bm25", "judge_model": "judge-1", "judge_api_key_env": "",
                                         "judge_base_url": first.base_url})  # extractive answers: no model
        source = manager.launch(LaunchRequest(dataset=str(write_dataset(tmp_path / "tiny")), config=config,
                                              judges=("relevance",), concurrency=1))
        assert manager.wait(source, timeout=60).status == "succeeded"
        again = manager.rejudge(RejudgeRequest(source, settings={"judge_model": "judge-2",
                                                                 "judge_base_url": second.base_url}))
        assert manager.wait(again, timeout=60).status == "succeeded"
        assert chat_calls(first) == chat_calls(second) == 3
    old, new = campaign_results(manager.store, source), campaign_results(manager.store, again)
    assert [(r.outcome.answer, r.outcome.context, r.outcome.sources) for r in new] == \
        [(r.outcome.answer, r.outcome.context, r.outcome.sources) for r in old]
    assert all(r.outcome.answer for r in new)
    stored = manager.store.read("SELECT count(*) AS n FROM results WHERE answer IS NOT NULL")[0]["n"]
    assert stored == 3  # the judged campaign's rows only
    exported = [json.loads(line) for line in export_campaign(manager.store, again, "jsonl").splitlines()]
    assert [line["answer"] for line in exported] == [r.outcome.answer for r in old]
    # A comparison reads the re-judge's columns joined with the judged campaign's row, on both backends.
    from evalcore.compare import compare_campaigns, compare_results

    kept = compare_campaigns(manager.store, source, again, resamples=200)
    direct = compare_results(get_campaign(manager.store, source), campaign_results(manager.store, source),
                             get_campaign(manager.store, again), campaign_results(manager.store, again), resamples=200)
    assert kept.to_dict() == direct.to_dict()
    assert {q.verdict for q in kept.questions} <= {"better", "worse", "same"}
    assert all(q.answer_a == q.answer_b for q in kept.questions)
    assert all(not q.answer_changed for q in kept.questions)
    manager.close()


def test_a_rejudge_is_cancelled_like_any_campaign(judged: tuple[CampaignManager, str, FakeOpenAIServer]) -> None:
    manager, source, _ = judged
    with FakeOpenAIServer(lambda path, body: verdict(SECOND, body), delay=1.0) as judge:
        settings = {"judge_model": "judge-2", "judge_api_key_env": "", "judge_base_url": judge.base_url}
        again = manager.rejudge(RejudgeRequest(source, judges=("relevance",), settings=settings, concurrency=1,
                                               cache=False))
        manager.cancel(again)
        ended = manager.wait(again, timeout=60)
    assert ended.status == "cancelled"
    assert ended.finished < 3


def test_a_suite_campaign_is_judged_again_as_one_of_the_suites(tmp_path: Path) -> None:
    from evalcore.suites import Case, create_suite

    manager = CampaignManager(tmp_path / "suite.db")
    with FakeOpenAIServer(lambda path, body: verdict(FIRST, body)) as first, \
            FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as second:
        config = TargetConfig.from_dict({"retriever": "bm25", "judge_model": "judge-1", "judge_api_key_env": "",
                                         "judge_base_url": first.base_url,
                                         "knowledge_base": str(write_dataset(tmp_path / "tiny"))})
        cases = [Case("What is the refund window?", "30 days."), Case("Quel est le délai ?", "14 jours")]
        suite = create_suite(manager.store, tenant="default", name="refunds", target_id="default", cases=cases)
        source = manager.launch(LaunchRequest(suite_id=suite.id, config=config, judges=("relevance",)))
        assert manager.wait(source, timeout=60).status == "succeeded"
        again = manager.rejudge(RejudgeRequest(source, settings={"judge_base_url": second.base_url,
                                                                 "judge_model": "judge-2"}))
        campaign = manager.wait(again, timeout=60)
        assert chat_calls(second) == 2
    assert (campaign.status, campaign.kind, campaign.suite_id, campaign.id[:4]) == ("succeeded", "suite", suite.id,
                                                                                    "run_")
    assert [r.outcome.judges["relevance"].score for r in campaign_results(manager.store, again)] == [4, 1]
    manager.close()


def test_the_rejudges_next_step_compares_it_with_the_campaign_it_judged(
        judged: tuple[CampaignManager, str, FakeOpenAIServer], capsys: pytest.CaptureFixture) -> None:
    manager, source, _ = judged
    db, dataset = str(manager.store.path), get_campaign(manager.store, source).source
    later = manager.launch(LaunchRequest(dataset=dataset, config=TargetConfig.of(retriever="bm25"), tenant="acme",
                                         name="later"))   # newer than the judged one, on the same questions
    assert manager.wait(later, timeout=60).status == "succeeded"
    with FakeOpenAIServer(lambda path, body: verdict(SECOND, body)) as judge:
        assert main(["rejudge", source, "--judge", "relevance", "--judge-model", "judge-2", "--judge-base-url",
                     judge.base_url, "--judge-api-key-env", "", "--tenant", "acme", "--db", db]) == 0
    (again,) = [c for c in list_campaigns(manager.store, "acme") if c.answers_from == source]
    judged_name = get_campaign(manager.store, source).name
    assert capsys.readouterr().out.splitlines()[-1] == (f"next: python -m evalcore compare {shlex.quote(judged_name)} "
                                                        f"{shlex.quote(again.name)} --db {shlex.quote(db)}")
