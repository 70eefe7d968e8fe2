"""Rubric judges: defined in plain words, checked, turned into a prompt whose text and hash travel with the
campaign; Likert and label scales read from scripted replies (malformed ones included) on every face."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcore import judges, metrics
from evalcore.campaigns import CampaignManager, campaign_results, get_campaign
from evalcore.cli import main
from evalcore.compare import compare_campaigns
from evalcore.errors import EvalError
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer, Reply
from tests.conftest import write_dataset

DEADLINE = """# output: 1-5
# pass: 4
# reads: question, answer, expected
[criteria]
The answer gives the exact refund deadline of the reference answer.
[steps]
1. Find the deadline in the reference answer. 2. Check the answer gives the same one.
"""
TONE = """# output: rude, neutral, warm
# pass: neutral
# reads: answer
[criteria]
The answer is courteous to a customer.
"""


class ScriptedModel:
    """A ChatModel double: replies from a list, records calls."""

    name = "scripted:test"

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.calls = list(replies), []

    def chat(self, messages, *, temperature=None, max_tokens=None, schema=None):
        from evalcore.models import ChatReply

        self.calls.append((messages, schema))
        return ChatReply(self.replies.pop(0), 10, 5, False)


def judge(rubric_text: str, name: str, replies: list[str]) -> tuple[judges.Verdict, ScriptedModel]:
    rubric = judges.parse_rubric(name, rubric_text)
    model = ScriptedModel(replies)
    settings = judges.JudgeSettings(model, thresholds={name: rubric.pass_mark},
                                    prompts={name: judges.rubric_prompt(rubric)})
    return judges.run_judge(settings, name, question="Refund window?", answer="30 days, thank you!",
                            context=["Refunds within 30 days."], expected="30 days from delivery."), model


def test_a_rubric_is_read_and_every_problem_named() -> None:
    rubric = judges.parse_rubric("deadline", DEADLINE)
    assert (rubric.labels, rubric.pass_mark, rubric.reads) == (tuple("12345"), 4.0, ("question", "answer", "expected"))
    assert rubric.steps.startswith("1. Find the deadline")
    tone = judges.parse_rubric("tone", TONE)
    assert (tone.labels, tone.pass_label, tone.pass_mark, tone.reads) == (("rude", "neutral", "warm"), "neutral", 2.0,
                                                                          ("answer",))
    assert judges.rubric_problems("score", "# pass: great\n# reads: answer, mood\n") == [
        "rubrics.score: name: 'score' is a built-in judge (replace its prompt with judge_prompts instead)",
        "rubrics.score: a [criteria] line followed by the criteria in plain words is required",
        "rubrics.score: # pass: expected one of 1, 2, 3, 4, 5, found 'great'",
        "rubrics.score: # reads: unknown input 'mood' (known: question, answer, context, expected)"]
    assert judges.rubric_problems("Bad Name", TONE)[0].startswith("rubrics.Bad Name: name: expected lower-case")
    assert "two or more distinct labels" in judges.rubric_problems("tone", TONE.replace("rude, neutral, warm", "ok"))[0]
    problems = judges.rubric_problems("tone", TONE.replace("answer\n", "question\n"))
    assert "reads the answer or the context" in problems[0]


def test_a_rubric_prompt_carries_criteria_steps_scale_and_only_what_it_reads() -> None:
    prompt = judges.rubric_prompt(judges.parse_rubric("deadline", DEADLINE))
    assert "exact refund deadline" in prompt.system
    assert "Evaluation steps:\n1. Find" in prompt.system
    assert "5 = fully meets the criteria." in prompt.system
    assert '{"score": <integer from 1 to 5>' in prompt.system
    assert prompt.user == "Question:\n{question}\n\nReference answer:\n{expected}\n\nAnswer to evaluate:\n{answer}"
    assert (prompt.output, prompt.version, prompt.requires) == ("likert", "rubric", ("question", "answer", "expected"))
    assert judges.signature_of(prompt) == f"judge.deadline|prompt:rubric|hash:{prompt.hash}|output:likert|parser:v3"
    other = judges.rubric_prompt(judges.parse_rubric("deadline", DEADLINE.replace("exact", "precise")))
    assert other.hash != prompt.hash
    tone = judges.rubric_prompt(judges.parse_rubric("tone", TONE))
    assert tone.user == "Answer to evaluate:\n{answer}"
    assert tone.labels == ("rude", "neutral", "warm")
    assert 'Labels, from worst to best: rude, neutral, warm.' in tone.system


LABEL_REPLIES = [  # reply, position on rude < neutral < warm (None: unreadable)
    ('{"label": "warm", "reason": "Thanks the customer."}', 3.0),
    ('```json\n{"label": " Neutral ", "reason": "Plain."}\n```', 2.0),
    ("<label>rude</label><reason>Curt.</reason>", 1.0),
    ("Verdict: warm. It thanks the customer.", 3.0),
    ("neutral - nothing more", 2.0),
    ('{"label": "friendly", "reason": "not on the scale"}', None),
    ("It is warm but also a bit rude.", None),  # no verdict word, two labels: not guessed
]


@pytest.mark.parametrize(("reply", "expected"), LABEL_REPLIES)
def test_a_label_scale_is_read_from_json_tags_and_narrow_prose(reply: str, expected: float | None) -> None:
    reading = judges.parse_reply(reply, "labels", ("rude", "neutral", "warm"))
    assert (reading.score if reading else None) == expected


def test_rubric_verdicts_pass_at_their_mark_and_an_unreadable_reply_is_asked_again_then_unknown() -> None:
    verdict, model = judge(TONE, "tone", ["no idea", '{"label": "warm", "reason": "Thanks the customer."}'])
    assert (verdict.score, verdict.label, verdict.result, verdict.threshold) == (3.0, "warm", "pass", 2.0)
    assert model.calls[0][1]["properties"]["label"]["enum"] == ["rude", "neutral", "warm"]
    assert '"label": "rude"' in model.calls[1][0][-1]["content"]  # the retry shows the scale's own labels
    rude, _ = judge(TONE, "tone", ['{"label": "rude", "reason": "Curt."}'])
    assert (rude.result, rude.label) == ("fail", "rude")
    lost, _ = judge(TONE, "tone", ["hmm", "still hmm"])
    assert (lost.score, lost.result) == (None, "unknown")
    three, _ = judge(DEADLINE, "deadline", ['{"score": 3, "reason": "Says a month."}'])
    assert (three.score, three.result, three.threshold, three.label) == (3.0, "fail", 4.0, None)
    assert judges.Verdict.from_dict(rude.to_dict()) == rude


def rubric_judge(path: str, body: Any) -> Reply | str:
    """A judge model that follows the rubric it is given: warm tone, deadline right (5) or, if 'precise', 4."""
    system = body["messages"][0]["content"]
    if "courteous" in system:
        return json.dumps({"label": "warm", "reason": "Polite."})
    return json.dumps({"score": 4 if "precise" in system else 5, "reason": "Same deadline."})


def test_rubric_campaigns_on_the_cli_and_api_are_measures_flagged_when_their_rubrics_differ(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db, dataset = str(tmp_path / "rubrics.db"), str(write_dataset(tmp_path / "tiny"))
    (tmp_path / "deadline.txt").write_text(DEADLINE, encoding="utf-8")
    (tmp_path / "tone.txt").write_text(TONE, encoding="utf-8")
    with FakeOpenAIServer(rubric_judge) as server:
        common = ["run", "--dataset", dataset, "--db", db, "--judge-model", "judge-mini", "--judge-base-url",
                  server.base_url, "--judge-api-key-env", "", "--set", "retriever=bm25", "--json"]
        assert main([*common, "--rubric", f"deadline={tmp_path / 'deadline.txt'}",
                     "--rubric", f"tone={tmp_path / 'tone.txt'}"]) == 0
        first = json.loads(capsys.readouterr().out)
        (tmp_path / "deadline.txt").write_text(DEADLINE.replace("exact", "precise"), encoding="utf-8")
        assert main([*common, "--rubric", f"deadline={tmp_path / 'deadline.txt'}"]) == 0
        second = json.loads(capsys.readouterr().out)
    assert {"judge.deadline", "judge.tone"} <= set(first["aggregates"])
    assert metrics.panels(["judge.deadline", "judge.tone:pass", "rougel"]) == [
        ("Generation", ["rougel"]), ("Judges", ["judge.deadline", "judge.tone:pass"])]
    manager = CampaignManager(db)
    a, b = first["campaign"]["id"], second["campaign"]["id"]
    assert get_campaign(manager.store, a).config["rubrics"] == {"deadline": DEADLINE, "tone": TONE}
    assert get_campaign(manager.store, a).judges == ("deadline", "tone")
    row = campaign_results(manager.store, a)[0].outcome
    assert (row.judges["tone"].label, row.judges["tone"].result, row.measures["judge.tone"]) == ("warm", "pass", 3.0)
    assert row.judges["deadline"].score == 5.0
    assert (row.signatures["judge.deadline"].startswith(
        "judge.deadline|prompt:rubric|hash:"))
    assert campaign_results(manager.store, a)[2].outcome.judges["deadline"].result == "skipped"  # no reference
    comparison = compare_campaigns(manager.store, a, b)
    assert "judge deadline used a different model or prompt: its scores are not comparable" in comparison.warnings
    assert any(delta.measure == "judge.deadline" for delta in comparison.measures)
    assert compare_campaigns(manager.store, a, b, basis="judge.deadline").basis == "judge.deadline"
    from evalcore.campaigns.export import export_campaign

    exported = json.loads(export_campaign(manager.store, a, "jsonl").splitlines()[0])
    assert any(key.startswith("tone") for key in exported)
    assert any(key.startswith("deadline") for key in exported)
    manager.close()


def test_bad_rubrics_are_refused_by_the_configuration_the_cli_and_the_api(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(EvalError) as error:
        TargetConfig.from_dict({"rubrics": {"tone": TONE.replace("# pass: neutral", "# pass: nice")}})
    assert error.value.problems == ["rubrics.tone: # pass: expected one of rude, neutral, warm, found 'nice'"]
    (tmp_path / "bad.txt").write_text("# output: 1-5\n", encoding="utf-8")
    assert main(["run", "--dataset", "default", "--db", str(tmp_path / "x.db"), "--rubric",
                 f"clarity={tmp_path / 'bad.txt'}"]) == 2
    assert "rubrics.clarity: a [criteria] line" in capsys.readouterr().err
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    root = tmp_path / "datasets"
    write_dataset(root / "tiny")
    app = create_app(tmp_path / "api.db", dataset_root=root)
    _, secret = create_key(app.state.store, tenant="default", role="admin", capability="full-access")
    with FakeOpenAIServer(rubric_judge) as server, \
            TestClient(app, headers={"Authorization": f"Bearer {secret}"}) as client:
        body = {"dataset_id": "tiny", "rubrics": {"tone": TONE},
                "judge": {"kind": "openai", "model": "judge-mini", "base_url": server.base_url, "api_key_env": ""}}
        task = client.post("/api/v1/evaluation", json=body).json()["data"]["task"]
        app.state.manager.wait(task["id"], timeout=60)
        bad = client.post("/api/v1/evaluation", json={**body, "rubrics": {"tone": "# output: 1-5\n"}})
        page = client.get(f"/api/v1/campaigns/{task['id']}/results").json()["data"]
    assert bad.status_code == 422
    assert "rubrics.tone: a [criteria] line" in bad.text
    assert page["results"][0]["judges"]["tone"]["label"] == "warm"


def test_the_run_page_defines_a_rubric_checks_it_previews_it_and_launches_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_dashboard_workflow import assert_clean, page_test, unescape

    db = str(tmp_path / "run.db")
    at = page_test(db, monkeypatch, "pages/run.py")
    key = "rubric-cfg-quick-0"
    at.number_input(key="cfg-quick-rubrics").set_value(1).run()
    assert any("a [criteria] line" in unescape(w.value) for w in at.warning)  # nothing written yet
    at.text_input(key=f"{key}-name").set_value("tone")
    at.radio(key=f"{key}-scale").set_value("labels").run()
    at.text_input(key=f"{key}-labels").set_value("rude, neutral, warm").run()
    at.selectbox(key=f"{key}-pass").set_value("neutral")
    at.multiselect(key=f"{key}-reads").set_value(["answer"])
    at.text_area(key=f"{key}-criteria").set_value("The answer is courteous to a customer.").run()
    assert_clean(at)
    assert not at.warning
    preview = next(block.value for block in at.code if "courteous" in block.value)
    assert "Labels, from worst to best: rude, neutral, warm." in preview
    assert "Answer to evaluate:" in preview
    with FakeOpenAIServer(rubric_judge) as server:
        at.text_input(key="cfg-quick-judge_model").set_value("judge-mini")
        at.text_input(key="cfg-quick-judge_base_url").set_value(server.base_url)
        at.text_input(key="cfg-quick-judge_api_key_env").set_value("")
        at.number_input(key="limit").set_value(1)
        at.button(key="FormSubmitter:launch-Launch").click().run()
        assert_clean(at)
        manager = CampaignManager(db)
        (campaign,) = manager.store.read("SELECT id FROM campaigns")
        manager.wait(campaign["id"], timeout=60)
    assert get_campaign(manager.store, campaign["id"]).config["rubrics"] == {"tone": judges.rubric_text(
        judges.Rubric("tone", "The answer is courteous to a customer.", "", ("rude", "neutral", "warm"), "neutral",
                      ("answer",)))}
    assert campaign_results(manager.store, campaign["id"])[0].outcome.judges["tone"].label == "warm"
    manager.close()
