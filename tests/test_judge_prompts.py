"""A campaign's own judge prompts: checked for their placeholders, their text and hash in the snapshot and the
signature, and two campaigns judged with different prompts flagged as not comparable on that measure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcore import judges
from evalcore.campaigns import CampaignManager, campaign_results, get_campaign
from evalcore.cli import main
from evalcore.compare import compare_campaigns
from evalcore.datasets import load_dataset, resolve_dataset
from evalcore.errors import EvalError
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer
from tests.conftest import write_dataset

OWN = """# output: likert
[system]
You are a strict grader of customer-service answers. Reply with {"score": 1-5, "reason": "..."}.
[user]
Question: {question}
Reference: {expected}
Answer: {answer}
"""


def scored(path: str, body: Any) -> str:
    """A judge scoring 2 under the campaign's own prompt and 5 under the built-in one."""
    strict = "strict grader" in body["messages"][0]["content"]
    return json.dumps({"score": 2 if strict else 5, "reason": "strict" if strict else "built-in"})


def judge_options(server: FakeOpenAIServer) -> list[str]:
    return ["--judge", "score", "--judge-model", "judge-mini", "--judge-base-url", server.base_url,
            "--judge-api-key-env", "", "--set", "retriever=bm25", "--json"]


def test_a_prompt_is_checked_for_its_sections_placeholders_and_scale() -> None:
    assert judges.prompt_problems("score", OWN) == []
    assert judges.prompt_problems("score", OWN.replace("Reference: {expected}\n", "")) == [
        "missing placeholder {expected}: the score judge reads it"]
    assert judges.prompt_problems("groundedness", OWN) == [
        "missing placeholder {context}: the groundedness judge reads it"]
    assert "unknown placeholder {passages}" in judges.prompt_problems("score", OWN + "{passages}")[0]
    assert "differs from the groundedness_pro judge's scale (label)" in \
        judges.prompt_problems("groundedness_pro", OWN.replace("{expected}", "{context}"))[-1]
    assert "[system] line" in judges.prompt_problems("score", "prompts/score.txt")[0]
    prompt = judges.custom_prompt("ai_score", OWN, where="judge_prompts.score")
    assert (prompt.name, prompt.version, prompt.output, prompt.requires) == (
        "score", "custom", "likert", judges.load_prompt("score").requires)
    assert judges.signature_of(prompt) == f"judge.score|prompt:custom|hash:{prompt.hash}|output:likert|parser:v3"
    assert prompt.hash != judges.custom_prompt("score", OWN + "Be brief.", where="x").hash
    with pytest.raises(EvalError, match=r"judge_prompts\.score: missing placeholder \{answer\}"):
        judges.custom_prompt("score", OWN.replace("{answer}", ""), where="judge_prompts.score")


def test_configurations_take_inline_text_or_a_file_next_to_the_toml(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "score.txt").write_text(OWN, encoding="utf-8")
    toml = tmp_path / "target.toml"
    toml.write_text('[judge_prompts]\nscore = "prompts/score.txt"\ngroundedness = """' + OWN.replace(
        "{expected}", "{context}") + '"""\n', encoding="utf-8")
    config = TargetConfig.from_toml(toml)
    assert dict(config.judge.judge_prompts)["score"] == OWN  # the text itself, not the path
    saved = tmp_path / "saved.toml"
    saved.write_text(config.to_toml(), encoding="utf-8")
    assert TargetConfig.from_toml(saved) == config  # a saved configuration keeps the texts
    with pytest.raises(EvalError) as error:
        TargetConfig.from_dict({"judge_prompts": {"score": OWN.replace("{expected}", "{ref}"), "vibes": OWN}})
    assert error.value.problems == [
        "judge_prompts: unknown judge 'vibes' (known: " + ", ".join(judges.JUDGES) + ")",
        "judge_prompts.score: unknown placeholder {ref} (allowed: {question}, {answer}, {context}, {expected})",
        "judge_prompts.score: missing placeholder {expected}: the score judge reads it"]
    toml.write_text('[judge_prompts]\nscore = "prompts/missing.txt"\n', encoding="utf-8")
    with pytest.raises(EvalError, match=r"judge_prompts\.score: cannot read the prompt file"):
        TargetConfig.from_toml(toml)


def test_a_campaign_judged_with_its_own_prompt_is_flagged_against_the_built_in(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db, dataset = str(tmp_path / "prompts.db"), str(write_dataset(tmp_path / "tiny"))
    (tmp_path / "score.txt").write_text(OWN, encoding="utf-8")
    with FakeOpenAIServer(scored) as server:
        assert main(["run", "--dataset", dataset, "--db", db, *judge_options(server)]) == 0
        builtin = json.loads(capsys.readouterr().out)["campaign"]["id"]
        assert main(["run", "--dataset", dataset, "--db", db, *judge_options(server),
                     "--judge-prompt", f"score={tmp_path / 'score.txt'}"]) == 0
        own = json.loads(capsys.readouterr().out)["campaign"]["id"]
        bad = tmp_path / "bad.txt"
        bad.write_text(OWN.replace("{answer}", "(no answer)"), encoding="utf-8")
        assert main(["run", "--dataset", dataset, "--db", db, *judge_options(server),
                     "--judge-prompt", f"score={bad}"]) == 2
    assert "judge_prompts.score: missing placeholder {answer}: the score judge reads it" in capsys.readouterr().err
    manager = CampaignManager(db)
    assert get_campaign(manager.store, own).config["judge_prompts"] == {"score": OWN}  # the text in the snapshot
    first = campaign_results(manager.store, own)[0].outcome
    verdict = first.judges["score"]
    assert (verdict.score, verdict.prompt_version, verdict.prompt_hash) == (2.0, "custom", judges.text_hash(OWN))
    assert first.signatures["judge.score"].startswith(f"judge.score|prompt:custom|hash:{judges.text_hash(OWN)}|")
    assert campaign_results(manager.store, builtin)[0].outcome.judges["score"].prompt_version == "1"
    comparison = compare_campaigns(manager.store, builtin, own)
    assert "judge score used a different model or prompt: its scores are not comparable" in comparison.warnings
    manager.close()


def test_the_run_page_checks_an_own_prompt_as_it_is_typed_previews_it_and_launches_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_dashboard_workflow import assert_clean, page_test, unescape

    db = str(tmp_path / "run.db")
    at = page_test(db, monkeypatch, "pages/run.py")
    key = "cfg-quick"
    at.multiselect(key=f"{key}-judge_prompts").set_value(["score"]).run()
    assert at.text_area(key=f"prompt-{key}-score").value == judges.builtin_text("score")
    assert any("Question:" in block.value for block in at.code)  # the built-in prompt, previewed
    at.text_area(key=f"prompt-{key}-score").set_value(OWN.replace("{expected}", "{ref}")).run()
    assert any("unknown placeholder {ref}" in unescape(w.value)
               and "missing placeholder {expected}" in unescape(w.value)
               for w in at.warning)
    at.text_area(key=f"prompt-{key}-score").set_value(OWN).run()
    assert not at.warning
    preview = next(block.value for block in at.code if "strict grader" in block.value)
    first = load_dataset(resolve_dataset("default")).questions[0]  # the sample's first question fills the preview
    assert f"Question: {first.text}" in preview
    assert first.references[0] in preview
    assert "Answer: (the answer, once the target has given it)" in preview
    with FakeOpenAIServer(scored) as server:
        at.text_input(key=f"{key}-judge_model").set_value("judge-mini")
        at.text_input(key=f"{key}-judge_base_url").set_value(server.base_url)
        at.text_input(key=f"{key}-judge_api_key_env").set_value("")
        at.number_input(key="limit").set_value(1)
        at.checkbox[0].check()
        at.button(key="FormSubmitter:launch-Launch").click().run()
        assert_clean(at)
        manager = CampaignManager(db)
        (campaign,) = manager.store.read("SELECT id FROM campaigns")
        manager.wait(campaign["id"], timeout=60)
    assert get_campaign(manager.store, campaign["id"]).config["judge_prompts"] == {"score": OWN}
    assert campaign_results(manager.store, campaign["id"])[0].outcome.judges["score"].prompt_version == "custom"
    manager.close()


def test_the_api_takes_an_own_prompt_in_a_run_body_and_refuses_a_bad_one(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    root = tmp_path / "datasets"
    write_dataset(root / "tiny")
    app = create_app(tmp_path / "api.db", dataset_root=root)
    _, secret = create_key(app.state.store, tenant="default", role="admin", capability="full-access")
    with FakeOpenAIServer(scored) as server, \
            TestClient(app, headers={"Authorization": f"Bearer {secret}"}) as client:
        body = {"dataset_id": "tiny", "judges": ["score"], "judge_prompts": {"score": OWN},
                "judge": {"kind": "openai", "model": "judge-mini", "base_url": server.base_url, "api_key_env": ""}}
        task = client.post("/api/v1/evaluation", json=body).json()["data"]["task"]
        manager = app.state.manager
        manager.wait(task["id"], timeout=60)
        bad = client.post("/api/v1/evaluation", json={**body, "judge_prompts": {"score": "prompts/score.txt"}})
    assert bad.status_code == 422
    assert "judge_prompts.score: expected a [system] line" in bad.text
    stored = get_campaign(manager.store, task["id"])
    assert stored.config["judge_prompts"] == {"score": OWN}
    assert campaign_results(manager.store, task["id"])[0].outcome.judges["score"].score == 2.0
