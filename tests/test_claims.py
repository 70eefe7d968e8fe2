"""Claim-level faithfulness: the answer split into claims, each checked against the passages it was built from;
faithfulness = supported / claims; refusals marked, not scored; malformed replies unreadable, never guessed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from evalcore import judges
from evalcore.campaigns import CampaignManager, campaign_aggregates, campaign_results, campaign_summary
from evalcore.cli import main
from evalcore.judges.claim_faithfulness import parse_claims
from evalcore.models import ChatReply
from evalcore.testing import FakeOpenAIServer, Reply
from tests.conftest import write_dataset

IDS = ["10", "11", "13"]  # the ids of the three passages a judge was given, in order


def claims_reply(*claims: tuple[str, str, int]) -> str:
    return json.dumps({"claims": [{"claim": c, "verdict": v, "passage": p} for c, v, p in claims]})


# (reply, faithfulness, verdicts): counted by hand.
READABLE = [
    (claims_reply(("Refunds are accepted.", "supported", 1), ("Within 30 days.", "supported", 1)), 1.0,
     ["supported", "supported"]),
    (claims_reply(("Refunds: 30 days.", "supported", 1), ("Refunds: 60 days.", "contradicted", 2),
                  ("Free shipping.", "not found", 0)), 1 / 3, ["supported", "contradicted", "not found"]),
    (claims_reply(("A", "not found", 0), ("B", "not_found", 0), ("C", "Supported", 3), ("D", "contradicted", 3)),
     0.25, ["not found", "not found", "supported", "contradicted"]),
    (claims_reply(("The router's address is 192.168.8.1.", "contradicted", 3)), 0.0, ["contradicted"]),
    # fenced, with prose around it, the passage as a string, a not-found claim naming a passage (kept as none)
    (('Here you go:\n```json\n{"claims": [{"claim": "X", "verdict": "supported", "passage": "2"},'
      ' {"claim": "Y", "verdict": "not found", "passage": 3}]}\n```'), 0.5, ["supported", "not found"]),
]
MALFORMED = [
    claims_reply(("A", "probably", 1)),                 # a verdict off the list
    claims_reply(("A", "supported", 4)),                # a passage the judge was not given
    claims_reply(("A", "supported", 0)),                # supported, but by no passage
    claims_reply(("A", "contradicted", 0)),             # contradicted by no passage
    claims_reply(("", "supported", 1)),                 # no claim text
    claims_reply(("A", "supported", 1)).replace('"passage": 1', '"passage": 1.5'),
    '{"claims": "all supported"}',                      # not a list
    '{"score": 5, "reason": "faithful"}',               # another judge's shape
    "Every claim is supported.",                        # prose
    '{"claims": [{"claim": "A", "verdict": "supported", "passage": 1}, "B"]}',  # one item not a claim
]


@pytest.mark.parametrize(("reply", "expected", "verdicts"), READABLE)
def test_faithfulness_is_supported_claims_over_claims(reply: str, expected: float, verdicts: list[str]) -> None:
    reading = parse_claims(reply, IDS)
    assert reading is not None
    assert reading.claims is not None
    assert reading.score == pytest.approx(expected)
    assert [claim.verdict for claim in reading.claims] == verdicts
    for claim in reading.claims:  # a verdict's evidence is the passage the judge named, with its id
        assert (claim.passage is None) == (claim.verdict == "not found")
        assert claim.passage_id == (IDS[claim.passage - 1] if claim.passage else "")


@pytest.mark.parametrize("reply", MALFORMED)
def test_a_malformed_claims_reply_is_unreadable(reply: str) -> None:
    assert parse_claims(reply, IDS) is None


def test_an_answer_without_a_claim_has_no_faithfulness() -> None:
    reading = parse_claims('{"claims": []}', IDS)
    assert reading is not None
    assert reading.claims == ()
    assert reading.score is None
    assert reading.reason == "the answer makes no claim"


class ScriptedModel:
    """A ChatModel double: replies from a list, records each call's messages, length bound and schema."""

    name = "scripted:test"

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.calls = list(replies), []

    def chat(self, messages: Any, *, temperature: Any = None, max_tokens: Any = None, schema: Any = None,
             top_k: Any = None) -> ChatReply:
        self.calls.append((messages, max_tokens, schema))
        return ChatReply(self.replies.pop(0), 10, 5, False)


def claims_verdict(replies: list[str], **settings: Any) -> tuple[judges.Verdict, ScriptedModel]:
    model = ScriptedModel(replies)
    context = [judges.Passage("Refunds are accepted within 30 days.", "Terms of Sale (EU)", "10"),
               judges.Passage("Refunds were accepted within 14 days.", "Terms of Sale (2022)", "11")]
    verdict = judges.run_judge(judges.JudgeSettings(model, **settings), "claims", question="Refund window?",
                               answer="Refunds are accepted within 14 days.", context=context, expected=None)
    return verdict, model


def test_the_claims_judge_asks_for_claims_on_the_titled_context_and_passes_when_all_are_supported() -> None:
    verdict, model = claims_verdict([claims_reply(("Refunds are accepted.", "supported", 1),
                                                  ("Within 14 days.", "contradicted", 1))])
    assert (verdict.score, verdict.result, verdict.threshold) == (0.5, "fail", 1.0)
    assert verdict.reason == "1 of 2 claims supported, 1 contradicted"
    assert verdict.claims == (judges.Claim("Refunds are accepted.", "supported", 1, "10"),
                              judges.Claim("Within 14 days.", "contradicted", 1, "10"))
    ((messages, max_tokens, schema),) = model.calls
    assert "[1] Terms of Sale (EU)\nRefunds are accepted within 30 days." in messages[-1]["content"]
    assert schema["properties"]["claims"]["items"]["properties"]["verdict"]["enum"] == list(judges.VERDICTS)
    assert max_tokens >= 1000  # a list of claims is longer than a one-sentence verdict
    lenient, _ = claims_verdict([claims_reply(("A", "supported", 1), ("B", "contradicted", 2))],
                                thresholds={"claims": 0.5})
    assert (lenient.result, lenient.threshold) == ("pass", 0.5)
    assert judges.Verdict.from_dict(json.loads(json.dumps(verdict.to_dict()))) == verdict


def test_an_unreadable_claims_reply_is_asked_again_once_then_unknown() -> None:
    verdict, model = claims_verdict(["All good.", claims_reply(("Within 14 days.", "supported", 2))])
    assert (verdict.score, verdict.result, len(model.calls)) == (1.0, "pass", 2)
    assert '"claims"' in model.calls[1][0][-1]["content"]  # the retry shows the claims shape
    verdict, model = claims_verdict(["All good.", claims_reply(("Within 14 days.", "supported", 7))])
    assert (verdict.score, verdict.result, verdict.claims, len(model.calls)) == (None, "unknown", None, 2)
    assert verdict.reason.startswith("unreadable judge reply after one retry")


def test_a_refusal_is_marked_no_claim_and_not_scored() -> None:
    verdict, _ = claims_verdict(['{"claims": []}'])
    assert (verdict.score, verdict.result, verdict.claims) == (None, judges.JudgeResult.NO_CLAIM, ())
    assert verdict.reason == "the answer makes no claim"


# An agent answering each question from its own titled sources, and the judge's scripted replies on each answer.
AGENT = {
    "What is the refund window?": {
        "answer": "Refunds are accepted within 30 days. Shipping is free.",
        "sources": [{"id": 10, "title": "Terms of Sale (EU)", "text": "Refunds are accepted within 30 days."},
                    {"id": 11, "title": "Terms of Sale (2022)", "text": "Refunds were accepted within 14 days."}]},
    "Quel est le délai ?": {
        "answer": "Le délai est de 30 jours.",
        "sources": [{"id": 12, "title": "CGV France", "text": "Le délai de rétractation est de 14 jours."}]},
    "路由器的默认地址是什么？": {"answer": "I don't know.", "sources": []},
    "Which thermostat?": {"answer": "The T3.", "sources": [{"id": 14, "title": "Lumio T3 Manual", "text": "T3."}]},
}
JUDGE = {
    "Refunds are accepted within 30 days. Shipping is free.": claims_reply(
        ("Refunds are accepted within 30 days.", "supported", 1), ("Shipping is free.", "not found", 0)),
    "Le délai est de 30 jours.": claims_reply(("Le délai est de 30 jours.", "contradicted", 1)),
    "I don't know.": '{"claims": []}',
    "The T3.": claims_reply(("The thermostat is the T3.", "supported", 2)),  # passage 2 of 1: malformed, twice
}


def agent_and_claims_judge(path: str, body: Any) -> Reply | str:
    if path.endswith("/agent"):
        return Reply.json(AGENT[body["question"]])
    answer = body["messages"][1]["content"].split("Answer to split and check:\n", 1)[1]
    return JUDGE[answer]


def four_questions(folder: Path) -> Path:
    from tests.conftest import TINY

    tables = {name: {k: list(v) for k, v in columns.items()} for name, columns in TINY.items()}
    tables["queries"]["id"].append(4)
    tables["queries"]["text"].append("Which thermostat?")
    return write_dataset(folder, tables)


def run_claims(db: str, dataset: str, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
               *extra: str) -> str:
    assert main(["run", "--dataset", dataset, "--db", db, "--judge", "claims", "--judge-model", "judge-mini",
                 "--judge-base-url", server.base_url, "--judge-api-key-env", "", "--set", "kind=http_agent",
                 "--set", f"agent_url={server.root_url}/agent", "--json", *extra]) == 0
    return str(json.loads(capsys.readouterr().out)["campaign"]["id"])


def test_a_campaign_stores_each_questions_claims_scores_faithfulness_and_counts_refusals(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, dataset = str(tmp_path / "claims.db"), str(four_questions(tmp_path / "four"))
    with FakeOpenAIServer(agent_and_claims_judge) as server:
        campaign_id = run_claims(db, dataset, server, capsys)
        lenient = run_claims(db, dataset, server, capsys, "--judge-threshold", "claims=0.5")
    manager = CampaignManager(db)
    results = {r.question.qid: r.outcome for r in campaign_results(manager.store, campaign_id)}
    first = results[1].judges["claims"]
    assert first.claims == (judges.Claim("Refunds are accepted within 30 days.", "supported", 1, "10"),
                            judges.Claim("Shipping is free.", "not found"))
    assert (first.score, first.result) == (0.5, "fail")
    assert results[1].measures["judge.claims"] == 0.5
    assert results[2].judges["claims"].claims == (judges.Claim("Le délai est de 30 jours.", "contradicted", 1, "12"),)
    assert results[2].measures["judge.claims"] == 0.0
    refusal, unreadable = results[3].judges["claims"], results[4].judges["claims"]
    assert (refusal.result, refusal.score, refusal.claims) == ("no_claim", None, ())
    assert (unreadable.result, unreadable.score, unreadable.claims) == ("unknown", None, None)
    assert "judge.claims" not in results[3].measures
    assert "judge.claims" not in results[4].measures
    aggregate = campaign_aggregates(manager.store, campaign_id)["judge.claims"]
    assert (aggregate.mean, aggregate.count) == (0.25, 2)  # the refusal is neither 0 nor 1
    assert campaign_summary(manager.store, campaign_id).no_claim == {"claims": 1}
    assert main(["campaigns", "show", campaign_id, "--db", db]) == 0
    assert "judge claims: no claim in 1 answer (refusals: marked, not scored)" in capsys.readouterr().out
    assert main(["campaigns", "export", campaign_id, "--format", "csv", "--db", db]) == 0
    assert "supported [1: 10] Refunds are accepted within 30 days. | not found: Shipping is free." in \
        capsys.readouterr().out
    assert_compared_like_any_measure(manager, campaign_id, lenient, tmp_path, capsys)
    assert_checked_against_pass_fail_labels(manager, campaign_id)
    manager.close()
    assert_the_campaigns_page_shows_claims(db, campaign_id)
    assert_the_api_gives_claims(db, campaign_id)  # after the page: a key makes the dashboard ask to sign in


def assert_compared_like_any_measure(manager: CampaignManager, a: str, b: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from evalcore.compare import compare_campaigns

    comparison = compare_campaigns(manager.store, a, b, basis="judge.claims")
    deltas = {delta.measure: delta for delta in comparison.measures}
    assert (deltas["judge.claims"].n, deltas["judge.claims"].mean_a, deltas["judge.claims"].delta) == (2, 0.25, 0.0)
    # a pass mark of 1 passes no answer, one of 0.5 passes the first: the pass rate moves, the faithfulness not
    assert (deltas["judge.claims:pass"].mean_a, deltas["judge.claims:pass"].mean_b) == (0.0, 0.5)
    assert comparison.basis == "judge.claims"
    report = tmp_path / "a-vs-b.html"
    assert main(["compare", a, b, "--db", str(manager.store.path), "--report", str(report)]) == 0
    capsys.readouterr()
    html = report.read_text(encoding="utf-8")
    assert "A: claims_claims" in html
    assert "contradicted [1: 12] Le délai est de 30 jours." in html


def assert_checked_against_pass_fail_labels(manager: CampaignManager, campaign_id: str) -> None:
    from evalcore.campaigns.question_labels import campaign_agreement, set_label
    from evalcore.errors import EvalError

    for qid, label in ((1, "fail"), (2, "pass"), (3, "pass"), (4, "fail")):
        set_label(manager.store, campaign_id, qid, "claims", label, author="test")
    with pytest.raises(EvalError, match="not a label of the claims judge"):
        set_label(manager.store, campaign_id, 1, "claims", "4", author="test")
    agreement = campaign_agreement(manager.store, campaign_id)["claims"]
    # the refusal and the unreadable reply have no verdict to agree with: questions 1 and 2 only, one agreeing
    assert (agreement.n, agreement.accuracy, set(agreement.categories)) == (2, 0.5, {"pass", "fail"})


def assert_the_api_gives_claims(db: str, campaign_id: str) -> None:
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    app = create_app(db)
    _, secret = create_key(app.state.store, tenant="default", role="viewer")
    with TestClient(app, headers={"Authorization": f"Bearer {secret}"}) as client:
        results = client.get(f"/api/v1/campaigns/{campaign_id}/results").json()["data"]["results"]
    by_qid = {r["qid"]: r["judges"]["claims"] for r in results}
    assert by_qid[1]["claims"] == [
        {"claim": "Refunds are accepted within 30 days.", "verdict": "supported", "passage": 1, "passage_id": "10"},
        {"claim": "Shipping is free.", "verdict": "not found", "passage": None, "passage_id": ""}]
    assert (by_qid[3]["result"], by_qid[3]["score"], by_qid[3]["claims"]) == ("no_claim", None, [])


def assert_the_campaigns_page_shows_claims(db: str, campaign_id: str) -> None:
    from tests.test_dashboard_workflow import page_test, unescape

    with pytest.MonkeyPatch.context() as monkeypatch:
        at = page_test(db, monkeypatch, "pages/campaigns.py")
        at.selectbox[0].set_value(campaign_id).run()
        assert any("no claim" in c.value and "claims 1" in c.value for c in at.caption)
        claims = next(df.value for df in at.dataframe if "claim" in df.value.columns)
        assert list(claims["verdict"]) == ["supported", "not found"]
        assert list(claims["passage id"]) == ["10", "—"]
        assert claims["title"][0] == "Terms of Sale (EU)"
        assert any("1 of 2 claims supported, 1 not found" in c.value for c in at.caption)
        picker = next(s for s in at.selectbox if s.label == "Question")
        picker.set_value(next(o for o in picker.options if o.startswith("3 ·"))).run()
        assert any("the answer makes no claim" in unescape(c.value) for c in at.caption)


def test_picking_claims_with_the_local_model_is_warned_on_the_run_page_and_the_cli(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_dashboard_workflow import page_test, unescape

    missing = str(tmp_path / "missing")  # the notes come first; the launch then fails on the dataset
    assert main(["run", "--dataset", missing, "--db", str(tmp_path / "n.db"), "--judge", "claims",
                 "--set", "judge_kind=local"]) == 2
    err = capsys.readouterr().err
    assert f"note: {judges.LOCAL_JUDGE_NOTE}" in err
    assert f"note: {judges.LOCAL_CLAIMS_NOTE}" in err
    assert main(["run", "--dataset", missing, "--db", str(tmp_path / "n.db"), "--judge", "score",
                 "--set", "judge_kind=local"]) == 2
    assert judges.LOCAL_CLAIMS_NOTE not in capsys.readouterr().err  # said only when claims is picked
    with pytest.MonkeyPatch.context() as monkeypatch:
        at = page_test(str(tmp_path / "page.db"), monkeypatch, "pages/run.py")
        at.selectbox(key="cfg-quick-kind").set_value("results_file")  # a file that is missing: refused at launch
        at.text_input(key="cfg-quick-results_path").set_value(str(tmp_path / "missing.jsonl"))
        at.selectbox(key="cfg-quick-judge_kind").set_value("local")
        next(m for m in at.multiselect if m.label == "Other judges").set_value(["claims"])
        at.button(key="FormSubmitter:launch-Launch").click().run()
    warnings = [unescape(w.value) for w in at.warning]
    assert judges.LOCAL_CLAIMS_NOTE in warnings
    assert judges.LOCAL_JUDGE_NOTE in warnings
    assert at.error
    assert "launched" not in at.session_state


def test_the_claims_pass_mark_is_a_share_and_other_judges_keep_theirs_on_1_to_5() -> None:
    from evalcore.errors import EvalError
    from evalcore.targets import TargetConfig

    assert TargetConfig.from_dict({"judge_thresholds": {"claims": 0.8, "score": 4}}).judge.judge_thresholds
    with pytest.raises(EvalError) as refused:
        TargetConfig.from_dict({"judge_thresholds": {"claims": 3, "score": 0.5}})
    assert sorted(refused.value.problems) == ["judge_thresholds.claims: expected a pass mark in [0, 1], found 3.0",
                                              "judge_thresholds.score: expected a pass mark in [1, 5], found 0.5"]


@pytest.mark.long
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_the_local_model_gives_a_claims_verdict_that_is_read_whole_or_said_unreadable() -> None:
    from evalcore.models.local_model import LocalChatModel

    context = [judges.Passage("Refunds are accepted within 30 days.", "Terms of Sale (EU)", "10"),
               judges.Passage("Shipping takes five days.", "Delivery", "11")]
    verdict = judges.run_judge(judges.JudgeSettings(LocalChatModel()), "claims", question="Refund window?",
                               answer="Refunds are accepted within 30 days.", context=context, expected=None)
    if verdict.result == judges.JudgeResult.UNKNOWN:  # the small model's reply broke a rule: said, never guessed
        assert verdict.claims is None, verdict
        assert verdict.reason.startswith("unreadable judge reply"), verdict
        return
    assert verdict.result in (judges.JudgeResult.PASS, judges.JudgeResult.FAIL, judges.JudgeResult.NO_CLAIM), verdict
    claims = verdict.claims or ()
    assert all(c.verdict in judges.VERDICTS for c in claims), claims
    assert all(c.passage in (None, 1, 2) for c in claims), claims
    assert all(c.passage_id == ("" if c.passage is None else IDS[c.passage - 1]) for c in claims), claims
    supported = sum(c.verdict == "supported" for c in claims)
    assert verdict.score == (supported / len(claims) if claims else None), verdict
