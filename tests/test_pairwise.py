"""The pairwise judge: both orders asked, a verdict that flips is a tie, unreadable replies are never guessed; the
win rate's Wilson interval and the sign test against scipy; cached, kept with the comparison, on the CLI."""

from __future__ import annotations

import importlib.util
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.compare import compare_campaigns
from evalcore.compare.pairwise_job import judge_comparison
from evalcore.compare.stats import sign_test, wilson_interval
from evalcore.errors import EvalError
from evalcore.jobs.job_queue import list_jobs
from evalcore.judges.pairwise import read_winner
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer
from tests.conftest import write_dataset

QUESTIONS = ["Which answer is right?", "Quel est le délai ?", "路由器的默认地址是什么？", "Both equal?", "Nonsense?"]
TABLES = {
    "queries": {"id": [1, 2, 3, 4, 5], "text": QUESTIONS},
    "corpus": {"id": [10, 11], "text": ["Refunds are accepted within 30 days.", "Le délai est de 14 jours."],
               "title": ["Terms of Sale (EU)", "CGV France"]},
    "answers": {"id": [100, 101], "text": ["30 days.", "14 jours."]},
    "qrels": {"qid": [1, 2], "pid": [10, 11], "score": [1, 1]},
    "qas": {"qid": [1, 2], "aid": [100, 101]},
}
# What the scripted judge does on each question: 1 prefers B's answer whatever the order; 2 prefers whichever
# answer is shown first (position bias); 3 prefers A's, after one unreadable reply in each order; 4 says tie;
# 5 never replies in the asked shape.
ANSWER = re.compile(r"Answer 1:\n(?P<one>.*?)\n\nPassages given to assistant 2", re.DOTALL)


def scripted_judge(path: str, body: Any) -> str:
    """The pairwise judge's replies, decided by the question and which campaign's answer is shown first."""
    user = body["messages"][1]["content"]
    qid = next(i for i, q in enumerate(QUESTIONS, 1) if q in user)
    first = "B" if ANSWER.search(user)["one"].startswith("B says") else "A"
    retried = len(body["messages"]) > 2
    if qid == 5 or (qid == 3 and not retried):
        return "The first one, I think."
    winner = {1: "B", 2: first, 3: "A", 4: "tie"}[qid]
    position = "tie" if winner == "tie" else ("1" if winner == first else "2")
    return json.dumps({"winner": position, "reason": f"scripted q{qid}"})


def results_file(path: Path, side: str) -> Path:
    path.write_text("".join(json.dumps({"qid": qid, "ranked_ids": [10 if side == "A" else 11],
                                        "answer": f"{side} says {qid}"}) + "\n" for qid in range(1, 6)),
                    encoding="utf-8")
    return path


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[CampaignManager, str, str]]:
    manager = CampaignManager(tmp_path / "pairwise.db")
    dataset = str(write_dataset(tmp_path / "five", TABLES))
    ids = []
    for side in "AB":
        config = TargetConfig.of(kind="results_file", results_path=str(results_file(tmp_path / f"{side}.jsonl", side)))
        ids.append(manager.launch(LaunchRequest(dataset=dataset, config=config)))
        manager.wait(ids[-1], timeout=60)
    yield manager, ids[0], ids[1]
    manager.close()


def judge_keys(server: FakeOpenAIServer) -> dict[str, Any]:
    return {"judge_model": "judge-mini", "judge_base_url": server.base_url, "judge_api_key_env": ""}


def test_both_orders_are_asked_a_flip_is_a_tie_and_an_unreadable_reply_is_unknown(
        pair: tuple[CampaignManager, str, str]) -> None:
    manager, a_id, b_id = pair
    with FakeOpenAIServer(scripted_judge) as server:
        preference = judge_comparison(manager.store, a_id, b_id, judge=judge_keys(server))
        asked = len(server.requests)
        again = judge_comparison(manager.store, a_id, b_id, judge=judge_keys(server))
        assert len(server.requests) == asked  # every call served by the cache
    winners = {v.qid: (v.winner, v.flipped) for v in preference.verdicts}
    assert winners == {1: ("B", False), 2: ("tie", True), 3: ("A", False), 4: ("tie", False), 5: ("unknown", False)}
    assert asked == 2 * 5 + 2 + 2  # both orders; q3 and q5 asked again once in each order
    assert "unreadable judge reply after one retry" in preference.verdicts[4].a_first.reason
    assert (preference.readable, preference.flips, preference.flip_rate) == (4, 1, 0.25)
    assert preference.win_rate == pytest.approx((1 + 2 / 2) / 4)
    assert preference.p_value == pytest.approx(binomtest(1, 2).pvalue)
    assert again.to_dict()["verdicts"] == preference.to_dict()["verdicts"]
    assert preference.signature.startswith("pairwise|prompt:v1|hash:")
    assert "model:" in preference.signature


def test_the_judge_reads_both_answers_with_their_titled_passages_and_the_references(
        pair: tuple[CampaignManager, str, str]) -> None:
    manager, a_id, b_id = pair
    with FakeOpenAIServer(scripted_judge) as server:
        judge_comparison(manager.store, a_id, b_id, judge=judge_keys(server), limit=1)
        users = [body["messages"][1]["content"] for _, body, _ in server.requests]
        schema = server.requests[0][1]["response_format"]["json_schema"]["schema"]
    assert len(users) == 2
    assert schema["properties"]["winner"]["enum"] == ["1", "2", "tie"]
    a_first, b_first = users
    assert a_first.index("A says 1") < a_first.index("B says 1")
    assert b_first.index("B says 1") < b_first.index("A says")
    assert "[1] Terms of Sale (EU)\nRefunds are accepted within 30 days." in a_first  # A's passage, with its title
    assert "[1] CGV France\nLe délai est de 14 jours." in a_first  # B's
    assert "30 days." in a_first.split("Reference answers:")[1]


def test_the_comparison_carries_the_kept_verdicts_without_asking(pair: tuple[CampaignManager, str, str]) -> None:
    manager, a_id, b_id = pair
    assert compare_campaigns(manager.store, a_id, b_id).pairwise is None
    with FakeOpenAIServer(scripted_judge) as server:
        asked = judge_comparison(manager.store, a_id, b_id, judge=judge_keys(server))
    kept = compare_campaigns(manager.store, a_id, b_id).to_dict()["pairwise"]
    assert kept["verdicts"] == asked.to_dict()["verdicts"]
    assert (kept["b_wins"], kept["a_wins"], kept["ties"], kept["unknown"], kept["flips"]) == (1, 1, 2, 1, 1)
    assert "Wilson" in kept["interval_method"]
    assert "sign test" in kept["test"]
    with pytest.raises(EvalError, match="not a key of the pairwise judge's model"):
        judge_comparison(manager.store, a_id, b_id, judge={"model": "x"})


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"winner": "2", "reason": "B is right"}', ("2", "B is right")),
    ('```json\n{"winner": "tie", "reason": "same"}\n```', ("tie", "same")),
    ("{'winner': 1, 'reason': 'first'}", ("1", "first")),
    ('{"winner": "Answer 2", "reason": "r"}', ("2", "r")),
    ('{"winner": "3", "reason": "off the scale"}', None),
    ("Answer 1 is better.", None),  # prose is never read
    ("2", None),
])
def test_a_pairwise_reply_is_read_only_from_its_json(reply: str, expected: tuple[str, str] | None) -> None:
    assert read_winner(reply) == expected


def test_the_sign_test_and_the_wilson_interval_equal_scipy() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        wins, losses = (int(x) for x in rng.integers(0, 60, 2))
        assert sign_test(wins, losses) == pytest.approx(binomtest(wins, wins + losses).pvalue if wins + losses
                                                        else 1.0, rel=1e-9)
        n = wins + losses
        if n:
            expected = binomtest(wins, n).proportion_ci(method="wilson")
            assert wilson_interval(wins / n, n) == pytest.approx((expected.low, expected.high), abs=1e-12)
    assert wilson_interval(0.5, 0) is None


def test_compare_pairwise_on_the_cli_prints_the_figures_and_the_json_carries_them(
        pair: tuple[CampaignManager, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    manager, a_id, b_id = pair
    db = ["--db", str(manager.store.path)]
    with FakeOpenAIServer(scripted_judge) as server:
        keys = ["--judge-model", "judge-mini", "--judge-base-url", server.base_url, "--judge-api-key-env", ""]
        assert main(["compare", a_id, b_id, "--pairwise", *keys, *db]) == 0
    out = capsys.readouterr().out
    assert "pairwise judge: B preferred over A 50% (95%" in out
    assert "order flipped 1 of 4 (25%)" in out
    assert "q2 tie (flipped with the order: a tie)" in out
    assert "[scripted q1]" in out
    assert main(["compare", a_id, b_id, "--json", *db]) == 0  # kept: shown without asking
    assert json.loads(capsys.readouterr().out)["pairwise"]["flip_rate"] == 0.25
    assert main(["compare", a_id, b_id, "--judge-model", "x", *db]) == 2
    assert "add --pairwise" in capsys.readouterr().err
    with FakeOpenAIServer(scripted_judge) as server:
        keys = ["--judge-model", "judge-mini", "--judge-base-url", server.base_url, "--judge-api-key-env", ""]
        assert main(["compare", a_id, b_id, "--pairwise", "--pairwise-limit", "2", "--json", *keys, *db]) == 0
    assert [v["qid"] for v in json.loads(capsys.readouterr().out)["pairwise"]["verdicts"]] == [1, 2]


def finished_pair(manager: CampaignManager, tmp_path: Path) -> list[str]:
    """Campaigns A and B of tenant acme, ended, over the five questions (their answers from results files)."""
    dataset = str(write_dataset(tmp_path / "five", TABLES))
    ids = []
    for side in "AB":
        config = TargetConfig.of(kind="results_file", results_path=str(results_file(tmp_path / f"{side}.jsonl", side)))
        ids.append(manager.launch(LaunchRequest(dataset=dataset, config=config, tenant="acme")))
        manager.wait(ids[-1], timeout=60)
    return ids


def test_the_api_asks_the_pairwise_judge_and_the_comparison_carries_it(api: Any, tmp_path: Path) -> None:
    ids = finished_pair(api.app.state.manager, tmp_path)
    query = {"a": ids[0], "b": ids[1]}
    assert api.call("GET", "/api/v1/compare", params=query).json()["data"]["comparison"]["pairwise"] is None
    with FakeOpenAIServer(scripted_judge) as server:
        body = {"judge": {"model": "judge-mini", "base_url": server.base_url, "api_key_env": ""}}
        assert api.call("POST", "/api/v1/compare/pairwise", params=query, json=body).status_code == 403  # a model
        assert api.call("POST", "/api/v1/compare/pairwise", params=query, json=body, key="viewer").status_code == 403
        asked = api.call("POST", "/api/v1/compare/pairwise", params=query, json=body, key="full")
        assert asked.status_code == 202, asked.text
        job = asked.json()["data"]["job"]
        assert (job["kind"], job["total"]) == ("pairwise", 5)
        assert job["status"] in ("queued", "running")
        again = api.call("POST", "/api/v1/compare/pairwise", params=query, json=body, key="full")
        assert again.status_code in (202, 409)  # 409 while the first is under way, naming it
        if again.status_code == 409:
            assert again.json()["error"]["running_id"] == job["id"]
        job = follow_job(api, job["id"])
    assert api.call("GET", f"/api/v1/jobs/{job['id']}", key="other").status_code == 404
    assert job["status"] == "succeeded", job
    assert job["done"] == 5, job
    pairwise = job["result"]["pairwise"]
    assert (pairwise["readable"], pairwise["flips"], pairwise["win_rate"]) == (4, 1, 0.5)
    assert pairwise["verdicts"][1]["flipped"]
    assert pairwise["verdicts"][4]["winner"] == "unknown"
    kept = api.call("GET", "/api/v1/compare", params=query, key="viewer").json()["data"]["comparison"]["pairwise"]
    assert kept["verdicts"] == pairwise["verdicts"]
    assert kept["p_value"] == pytest.approx(binomtest(1, 2).pvalue)
    other = api.call("POST", "/api/v1/compare/pairwise", params=query, json=body, key="other")
    assert other.status_code == 404


def finished(manager: CampaignManager) -> bool:
    """Whether the store's pairwise job ended."""
    return [job.status.value for job in list_jobs(manager.store)] == ["succeeded"]


def follow_job(api: Any, job_id: str, timeout: float = 60) -> dict[str, Any]:
    """Poll a job until it ended, as a client would: the job."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = api.call("GET", f"/api/v1/jobs/{job_id}", key="viewer").json()["data"]["job"]
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still {job['status']}")


def test_the_compare_page_asks_the_pairwise_judge_and_the_report_shows_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_dashboard import open_section
    from tests.test_dashboard_workflow import assert_clean, page_test, unescape

    manager = CampaignManager(tmp_path / "page.db")
    dataset = str(write_dataset(tmp_path / "five", TABLES))
    with FakeOpenAIServer(scripted_judge) as server:
        ids = []
        for side in "AB":  # B's judge keys are the pairwise judge's model on the page
            config = TargetConfig.from_dict({"kind": "results_file", **judge_keys(server),
                                             "results_path": str(results_file(tmp_path / f"{side}.jsonl", side))})
            ids.append(manager.launch(LaunchRequest(dataset=dataset, config=config)))
            manager.wait(ids[-1], timeout=60)
        at = open_section(page_test(str(manager.store.path), monkeypatch, "pages/compare.py"), "Pairwise judge")
        assert_clean(at)
        assert any("has not been asked" in i.value for i in at.info)
        at = at.button(key="ask-pairwise").click().run()
        assert_clean(at)
        assert any("Pairwise judge" in bar.proto.text for bar in at.get("progress")) or finished(manager)
        deadline = time.monotonic() + 60
        while not finished(manager) and time.monotonic() < deadline:
            time.sleep(0.05)
        at = at.run()  # the page's fragment would rerun it once the job ended
        assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["B preferred (ties half)"] == "50%"
    assert metrics["B wins / ties / A wins"] == "1 / 2 / 1"
    assert metrics["Flipped with the order"] == "25%"
    assert metrics["Sign test p"] == "1"
    table = next(df.value for df in at.dataframe if "flipped" in df.value.columns)
    assert table.set_index("qid").loc[2, ["verdict", "flipped", "A first", "B first"]].tolist() == ["tie", True, "A",
                                                                                                    "B"]
    assert table.set_index("qid").loc[5, "A first"] == "unreadable"
    at = page_test(str(manager.store.path), monkeypatch, "pages/compare.py")  # a new session: read back, not asked
    assert any("pairwise judge: B preferred over A 50%" in unescape(c.value) for c in at.caption)
    report = tmp_path / "report.html"
    assert main(["compare", ids[0], ids[1], "--db", str(manager.store.path), "--report", str(report)]) == 0
    html = report.read_text(encoding="utf-8")
    assert "<h2>Pairwise judge</h2>" in html
    assert "Wilson score interval" in html
    assert "scripted q1" in html
    manager.close()


def test_a_notebook_asks_the_pairwise_judge_and_shows_its_table(pair: tuple[CampaignManager, str, str]) -> None:
    import evalcore

    manager, a_id, b_id = pair
    assert evalcore.comparison(a_id, b_id, db=manager.store.path).pairwise() is None
    with FakeOpenAIServer(scripted_judge) as server:
        view = evalcore.comparison(a_id, b_id, db=manager.store.path, pairwise=True, judge=judge_keys(server))
    table = view.pairwise()
    assert table is not None
    assert table["verdict"].tolist() == ["B", "tie", "A", "tie", "unknown"]
    assert "pairwise judge: B preferred over A 50%" in view._repr_html_()


def test_passages_over_the_judge_models_window_are_cut_and_the_verdict_says_so(
        pair: tuple[CampaignManager, str, str]) -> None:
    from evalcore.testing import Reply

    def small_window(path: str, body: Any) -> Reply | str:
        if "Refunds are accepted within 30 days." in body["messages"][1]["content"]:
            return Reply.error(400, "This model's maximum context length is 64 tokens (context_length_exceeded)")
        return scripted_judge(path, body)

    manager, a_id, b_id = pair
    with FakeOpenAIServer(small_window) as server:
        (verdict,) = judge_comparison(manager.store, a_id, b_id, judge=judge_keys(server), limit=1).verdicts
        cut = [body["messages"][1]["content"] for _, body, _ in server.requests][-1]
    assert verdict.winner == "B"
    assert verdict.context_cut is not None
    assert verdict.context_cut.startswith("context cut to 18 of 36 characters")
    assert "[cut: the judge model's context window is too small]" in cut


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_the_local_model_gives_a_readable_pairwise_verdict_in_both_orders(
        pair: tuple[CampaignManager, str, str]) -> None:
    from evalcore.campaigns import get_campaign
    from evalcore.compare.pairwise_job import asks_local_model

    manager, a_id, b_id = pair
    b = get_campaign(manager.store, b_id)
    assert asks_local_model(b, {"judge_kind": "local"})
    assert not asks_local_model(b, {"judge_model": "m"})
    (verdict,) = judge_comparison(manager.store, a_id, b_id, judge={"judge_kind": "local"}, limit=1).verdicts
    assert verdict.a_first.winner in ("A", "B", "tie"), verdict
    assert verdict.b_first.winner in ("A", "B", "tie"), verdict
    assert verdict.winner in ("A", "B", "tie")
    assert verdict.flipped == (verdict.a_first.winner != verdict.b_first.winner)
