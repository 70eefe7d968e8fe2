"""People's labels and judge agreement: kappa against scikit-learn, labels stored per campaign, question and judge
(tenant-scoped, who and when), CSV import and export, the CLI and the API."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import warnings
from html import unescape as unescape_html
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from evalcore.access.principals import Forbidden, Principal
from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.question_labels import (
    campaign_agreement,
    campaign_labels,
    delete_label,
    import_labels_csv,
    labels_csv,
    set_label,
)
from evalcore.cli import main
from evalcore.errors import EvalError
from evalcore.metrics.agreement import agreement, bootstrap_interval, confusion, kappa
from evalcore.store import NotFound
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer
from tests.conftest import write_dataset

LIKERT = [str(x) for x in range(1, 6)]


@pytest.mark.parametrize("weights", ["none", "linear", "quadratic"])
def test_kappa_equals_scikit_learn_on_random_tables(weights: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(500):
        n = int(rng.integers(1, 60))
        human = [str(x) for x in rng.integers(1, 6, n)]
        judged = human[:] if rng.random() < 0.2 else [str(x) for x in rng.integers(1, 6, n)]
        if rng.random() < 0.3:  # a judge that is mostly right, off by one now and then
            judged = [str(min(5, int(h) + int(rng.random() < 0.3))) for h in human]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn warns where kappa is undefined (it gives NaN)
            expected = cohen_kappa_score(human, judged, labels=LIKERT, weights=None if weights == "none" else weights)
        ours = kappa(human, judged, LIKERT, weights)
        assert (ours is None and np.isnan(expected)) or ours == pytest.approx(expected, abs=1e-12)
        assert confusion(human, judged, LIKERT).tolist() == confusion_matrix(human, judged, labels=LIKERT).tolist()


def test_an_ordinal_agreement_gives_every_kappa_as_scikit_learn_does() -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(2, 40))
        human = [str(x) for x in rng.integers(1, 6, n)]
        judged = [str(min(5, max(1, int(h) + int(rng.integers(-2, 3))))) for h in human]
        found = agreement("score", human, judged, LIKERT, ordinal=True, resamples=10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = {weights: cohen_kappa_score(human, judged, labels=LIKERT, weights=weights)
                        for weights in (None, "linear", "quadratic")}
        for ours, weights in ((found.kappa, None), (found.linear_kappa, "linear"), (found.weighted_kappa, "quadratic")):
            assert (ours is None and np.isnan(expected[weights])) or ours == pytest.approx(expected[weights], abs=1e-12)
    # Pass/fail has no order: neither weighted kappa.
    binary = agreement("groundedness_pro", ["pass", "fail"], ["pass", "pass"], ["fail", "pass"], ordinal=False)
    assert binary.weighted_kappa is None
    assert binary.linear_kappa is None


def test_a_hand_checked_table_and_the_bootstrap_interval() -> None:
    # 10 questions: people say pass 6, fail 4; the judge agrees on 8 (5 pass, 3 fail).
    human = ["pass"] * 6 + ["fail"] * 4
    judged = ["pass"] * 5 + ["fail"] + ["fail"] * 3 + ["pass"]
    # p_o = 0.8; p_e = 0.6 * 0.6 + 0.4 * 0.4 = 0.52; kappa = 0.28 / 0.48
    assert kappa(human, judged, ["fail", "pass"]) == pytest.approx(0.28 / 0.48)
    result = agreement("groundedness_pro", human, judged, ["fail", "pass"], ordinal=False)
    assert (result.n, result.accuracy, result.weighted_kappa, result.matrix) == (10, 0.8, None, ((3, 1), (1, 5)))
    low, high = result.interval
    assert -1 <= low < 0.28 / 0.48 < high <= 1
    assert bootstrap_interval(["pass"], ["pass"], ["fail", "pass"]) is None
    assert kappa(["pass", "pass"], ["pass", "pass"], ["fail", "pass"]) is None  # no chance to disagree


SCORES = {"What is the refund window?": 5, "Quel est le délai ?": 2, "路由器的默认地址是什么？": 4}


def scoring_judge(path: str, body: Any) -> str:
    """A judge giving each question the score of the table (groundedness pro: pass from 3)."""
    score = next(s for q, s in SCORES.items() if q in body["messages"][1]["content"])
    if '"label"' in body["messages"][0]["content"]:
        return json.dumps({"label": "pass" if score >= 3 else "fail", "reason": "scripted"})
    return json.dumps({"score": score, "reason": "scripted"})


@pytest.fixture
def judged(tmp_path: Path) -> tuple[CampaignManager, str]:
    manager = CampaignManager(tmp_path / "labels.db")
    with FakeOpenAIServer(scoring_judge) as server:
        config = TargetConfig.from_dict({"retriever": "bm25", "judge_model": "judge-mini", "judge_api_key_env": "",
                                         "judge_base_url": server.base_url})
        campaign_id = manager.launch(LaunchRequest(dataset=str(write_dataset(tmp_path / "tiny")), config=config,
                                     judges=("relevance", "groundedness_pro"), tenant="acme"))
        manager.wait(campaign_id, timeout=60)
    yield manager, campaign_id
    manager.close()


def test_labels_are_checked_stored_with_who_and_when_and_scoped_to_the_tenant(
        judged: tuple[CampaignManager, str], monkeypatch: pytest.MonkeyPatch) -> None:
    manager, campaign_id = judged
    admin = Principal("acme", "admin", "run_evaluations", key_id="k1")
    label = set_label(manager.store, campaign_id, 1, "relevance", " 5 ", note="exact", author="ana", principal=admin)
    assert (label.label, label.note, label.author) == ("5", "exact", "key k1")
    assert label.labelled_at > 0  # not ana
    set_label(manager.store, campaign_id, 1, "relevance", "4.0", author="bo")  # replaced, a spreadsheet's 4.0 is 4
    assert [(x.qid, x.label, x.author) for x in campaign_labels(manager.store, campaign_id)] == [(1, "4", "bo")]
    with pytest.raises(EvalError, match="not a label of the relevance judge"):
        set_label(manager.store, campaign_id, 1, "relevance", "7", author="ana")
    with pytest.raises(EvalError, match="was not judged by 'score'"):
        set_label(manager.store, campaign_id, 1, "score", "4", author="ana")
    with pytest.raises(EvalError, match="has no question 99"):
        set_label(manager.store, campaign_id, 99, "relevance", "4", author="ana")
    with pytest.raises(NotFound):
        campaign_labels(manager.store, campaign_id, principal=Principal("other", "admin", "run_evaluations", "k2"))
    viewer = Principal("acme", "viewer", "run_evaluations", key_id="k3")
    with pytest.raises(Forbidden, match="EVALCORE_VIEWERS_LABEL=1"):
        set_label(manager.store, campaign_id, 2, "relevance", "pass", author="vi", principal=viewer)
    monkeypatch.setenv("EVALCORE_VIEWERS_LABEL", "1")
    assert set_label(manager.store, campaign_id, 2, "relevance", "pass", author="vi", principal=viewer).label == "pass"


def test_labels_go_out_and_come_back_as_csv_and_bad_rows_are_all_named(judged: tuple[CampaignManager, str]) -> None:
    manager, campaign_id = judged
    set_label(manager.store, campaign_id, 3, "groundedness_pro", "fail", note="=cmd() looks like a formula",
              author="ana")
    text = labels_csv(manager.store, campaign_id)
    assert text.startswith("qid,judge,label,note,author,labelled_at,question\r\n")
    assert "'=cmd()" in text
    [row] = list(csv.DictReader(io.StringIO(text)))
    [label] = campaign_labels(manager.store, campaign_id)
    written = dt.datetime.fromisoformat(row["labelled_at"])  # ISO 8601 with its zone, not epoch seconds
    assert written.utcoffset() == dt.timedelta(0)
    assert abs(written.timestamp() - label.labelled_at) < 1
    manager.store.write(lambda conn: conn.execute("DELETE FROM labels"))
    assert import_labels_csv(manager.store, campaign_id, text, author="importer") == 1
    (back,) = campaign_labels(manager.store, campaign_id)
    assert (back.qid, back.label, back.note, back.author) == (3, "fail", "=cmd() looks like a formula", "ana")
    bad = "qid,judge,label\n1,relevance,9\nx,relevance,3\n2,vibes,pass\n2,relevance,3\n"
    with pytest.raises(EvalError) as error:
        import_labels_csv(manager.store, campaign_id, bad, author="ana", source="mine.csv")
    assert [p.split(":")[0] for p in error.value.problems] == ["mine.csv line 2", "mine.csv line 3", "mine.csv line 4"]
    assert "qid" in error.value.problems[1]
    assert "not judged by 'vibes'" in error.value.problems[2]
    assert len(campaign_labels(manager.store, campaign_id)) == 1  # nothing of the bad file was kept
    with pytest.raises(EvalError, match="missing column 'label'"):
        import_labels_csv(manager.store, campaign_id, "qid,judge\n1,relevance\n", author="ana")


def test_agreement_compares_the_verdicts_with_the_labels_as_scikit_learn_does(
        judged: tuple[CampaignManager, str]) -> None:
    manager, campaign_id = judged
    people = {1: "5", 2: "3", 3: "4"}  # the judge said 5, 2, 4
    for qid, label in people.items():
        set_label(manager.store, campaign_id, qid, "relevance", label, author="ana")
    found = campaign_agreement(manager.store, campaign_id)["relevance"]
    judge = ["5", "2", "4"]
    assert (found.n, found.accuracy, found.categories) == (3, pytest.approx(2 / 3), tuple(LIKERT))
    assert found.kappa == pytest.approx(cohen_kappa_score(list(people.values()), judge, labels=LIKERT))
    assert found.weighted_kappa == pytest.approx(
        cohen_kappa_score(list(people.values()), judge, labels=LIKERT, weights="quadratic"))
    assert found.linear_kappa == pytest.approx(
        cohen_kappa_score(list(people.values()), judge, labels=LIKERT, weights="linear"))
    set_label(manager.store, campaign_id, 2, "relevance", "fail", author="ana")  # pass/fail: compared as pass/fail
    mixed = campaign_agreement(manager.store, campaign_id)["relevance"]
    assert mixed.categories == ("fail", "pass")
    assert mixed.matrix == ((1, 0), (0, 2))
    assert mixed.weighted_kappa is None


def test_the_cli_and_the_api_label_import_export_and_report_agreement(
        judged: tuple[CampaignManager, str], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    manager, campaign_id = judged
    db = str(manager.store.path)
    assert main(["labels", "set", campaign_id, "1", "relevance", "5", "--note", "right", "--author", "ana",
                 "--db", db]) == 0
    assert "question 1: relevance labelled 5 by ana" in capsys.readouterr().out
    (tmp_path / "in.csv").write_text("qid,judge,label\n2,relevance,2\n3,relevance,4\n", encoding="utf-8")
    assert main(["labels", "import", campaign_id, str(tmp_path / "in.csv"), "--db", db]) == 0
    assert main(["labels", "agreement", campaign_id, "--db", db]) == 0
    out = capsys.readouterr().out
    assert ("judge relevance: 3 labelled questions, accuracy 1.000, kappa 1.000, weighted kappa 1.000 (linear "
            "1.000)") in out
    assert main(["labels", "export", campaign_id, "--out", str(tmp_path / "out.csv"), "--db", db]) == 0
    assert (tmp_path / "out.csv").read_text(encoding="utf-8").count("relevance") == 3
    assert main(["labels", "set", campaign_id, "1", "relevance", "great", "--db", db]) == 2
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    app = create_app(db)
    key_id, secret = create_key(app.state.store, tenant="acme", role="admin")
    with TestClient(app, headers={"Authorization": f"Bearer {secret}"}) as client:
        put = client.put(f"/api/v1/campaigns/{campaign_id}/labels/2/groundedness_pro", json={"label": "pass"})
        refused = client.put(f"/api/v1/campaigns/{campaign_id}/labels/2/groundedness_pro", json={"label": "meh"})
        imported = client.post(f"/api/v1/campaigns/{campaign_id}/labels/import",
                               content="qid,judge,label\n3,groundedness_pro,fail\n",
                               headers={"Content-Type": "text/csv"})
        listed = client.get(f"/api/v1/campaigns/{campaign_id}/labels").json()["data"]["labels"]
        agreed = client.get(f"/api/v1/campaigns/{campaign_id}/agreement").json()["data"]["agreement"]
        gone = client.delete(f"/api/v1/campaigns/{campaign_id}/labels/3/groundedness_pro")
        binary = client.post(f"/api/v1/campaigns/{campaign_id}/labels/import", content=b"PK\x03\x04\xff\xfe\x00\x81",
                             headers={"Content-Type": "text/csv"})
        long_judge = client.delete(f"/api/v1/campaigns/{campaign_id}/labels/3/{'j' * 61}")
    assert binary.status_code == 422
    assert "not UTF-8 text" in binary.json()["error"]["message"]
    assert "surrogate" not in binary.text
    assert long_judge.status_code == 422, long_judge.text
    assert put.status_code == 200
    assert put.json()["data"]["label"]["author"] == f"key {key_id}"
    assert refused.status_code in (400, 422)
    assert "not a label of the groundedness_pro judge" in refused.text
    assert imported.json()["data"]["imported"] == 1
    assert gone.status_code == 204
    assert len(listed) == 5
    assert agreed["relevance"]["n"] == 3
    assert agreed["groundedness_pro"]["n"] == 2


def test_the_campaigns_page_walks_the_queue_labels_with_buttons_and_shows_agreement(
        judged: tuple[CampaignManager, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_dashboard import open_section
    from tests.test_dashboard_workflow import assert_clean, page_test, unescape

    manager, campaign_id = judged
    manager.store.write(lambda conn: conn.execute("UPDATE campaigns SET tenant = 'default'"))
    at = page_test(str(manager.store.path), monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(campaign_id).run()
    open_section(at, "Labels", "campaign-section")
    assert_clean(at)
    at.selectbox(key=f"label-judge-{campaign_id}").set_value("relevance").run()
    assert any("Question 1: What is the refund window?" in t.value for t in at.text)
    assert any(t.value.startswith("[2] Terms of Sale (2022)\nRefunds") for t in at.text)  # the passages, titled
    assert any(t.value == "Reference: 30 days." for t in at.text)
    at.text_input(key=f"label-note-{campaign_id}-relevance-1").set_value("exact deadline")
    at.button(key="label-5").click().run()  # question 1, then the queue moves on to question 2
    assert any("Question 2: Quel est le délai ?" in t.value for t in at.text)
    at.button(key="label-2").click().run()
    at.button(key="label-previous").click().run()
    assert any("Labelled 2 by local" in unescape(c.value) for c in at.caption)
    at.button(key="label-next").click().run()  # question 3, the one left
    at.button(key="label-4").click().run()
    assert_clean(at)
    assert any(t.value.startswith("relevance: 3 labelled · accuracy 1.00 · kappa 1.00 · weighted kappa 1.00")
               for t in at.text)
    (first, *_) = campaign_labels(manager.store, campaign_id)
    assert (first.qid, first.label, first.note, first.author) == (1, "5", "exact deadline", "local")


def test_comparisons_say_how_far_each_judge_agrees_with_people_on_every_face(
        judged: tuple[CampaignManager, str], tmp_path: Path, capsys: pytest.CaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    manager, a = judged
    with FakeOpenAIServer(scoring_judge) as server:
        config = TargetConfig.from_dict({"retriever": "bm25", "embedding_top_k": 5, "judge_model": "judge-mini",
                                         "judge_api_key_env": "", "judge_base_url": server.base_url})
        b = manager.launch(LaunchRequest(dataset=str(tmp_path / "tiny"), config=config, judges=("relevance",),
                                         tenant="acme"))
        manager.wait(b, timeout=60)
    for qid, label in {1: "5", 2: "3", 3: "4"}.items():
        set_label(manager.store, a, qid, "relevance", label, author="ana")
    db, report = str(manager.store.path), tmp_path / "report.html"
    assert main(["compare", a, b, "--db", db, "--report", str(report)]) == 0
    expected = "judge.relevance against people's labels: A 3 labelled, weighted kappa 0.86 ("
    out = capsys.readouterr().out
    assert expected in out
    assert out.rstrip().endswith("; B no label")
    html = unescape_html(report.read_text(encoding="utf-8"))
    assert "<h2>How far to trust the judges</h2>" in html
    assert expected in html
    from tests.test_dashboard_workflow import page_test, unescape

    manager.store.write(lambda conn: conn.execute("UPDATE campaigns SET tenant = 'default'"))
    at = page_test(db, monkeypatch, "pages/compare.py")
    assert any(expected in unescape(c.value) for c in at.caption)


def test_one_author_rule_a_keys_labels_are_its_own_and_a_long_note_is_refused_not_cut(
        judged: tuple[CampaignManager, str]) -> None:
    manager, campaign_id = judged
    key = Principal("acme", "admin", "run_evaluations", key_id="k7")
    forged = "qid,judge,label,note,author\n1,relevance,5,fine,someone-else\n"
    with pytest.raises(EvalError, match=r"line 2: author: labels imported with a key are that key's \(key k7\)"):
        import_labels_csv(manager.store, campaign_id, forged, source="mine.csv", principal=key)
    assert import_labels_csv(manager.store, campaign_id, forged.replace("someone-else", ""), principal=key) == 1
    assert [x.author for x in campaign_labels(manager.store, campaign_id)] == ["key k7"]
    assert import_labels_csv(manager.store, campaign_id, forged) == 1  # the local operator's rows keep theirs
    assert [x.author for x in campaign_labels(manager.store, campaign_id)] == ["someone-else"]
    long = f"qid,judge,label,note\n1,relevance,5,{'x' * 2001}\n"
    with pytest.raises(EvalError, match="mine.csv line 2: note: a note has at most 2000 characters"):
        import_labels_csv(manager.store, campaign_id, long, source="mine.csv")
    with pytest.raises(EvalError, match="not judged by"):
        delete_label(manager.store, campaign_id, 1, "j" * 500)
