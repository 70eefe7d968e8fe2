"""Test sets through the API (a job started by a full-access key, its report, its questions, reviews) and on the
Datasets page (the form starts the job; a generated set shows its quality and the review queue, whose keys accept,
edit and reject)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from evalcore.datasets import load_dataset
from evalcore.documents import import_corpus
from evalcore.jobs.job_queue import JobStatus, list_jobs
from evalcore.store import open_store
from evalcore.testing.documents import write_mixed_folder
from evalcore.testing.openai_server import FakeOpenAIServer
from evalcore.testing.testset_model import TestsetModel
from evalcore.testsets import GenerationRequest, generate_testset, read_provenance
from tests.test_api import Api, error_of
from tests.test_dashboard import AppTest, assert_clean, page_test, unescape
from tests.test_pairwise import follow_job


def test_the_api_generates_measures_lists_and_reviews_a_test_set(api: Api, tmp_path: Path) -> None:
    root: Path = api.app.state.dataset_root  # type: ignore[attr-defined]
    write_mixed_folder(tmp_path / "docs", 6)
    import_corpus(tmp_path / "docs", root / "docs-corpus")
    with FakeOpenAIServer(TestsetModel().reply) as server:
        body = {"dataset_id": "docs-corpus", "out_id": "docs-set", "questions": 8,
                "model": {"model": "fake", "base_url": server.base_url, "api_key_env": ""}}
        assert api.call("POST", "/api/v1/testsets", json=body).status_code == 403  # names a model: full access
        assert api.call("POST", "/api/v1/testsets", "viewer", json=body).status_code == 403
        paths = error_of(api.call("POST", "/api/v1/testsets", "full", json={**body, "dataset_id": "../etc"}), 422)
        assert paths["message"].startswith("dataset_id:")
        missing = error_of(api.call("POST", "/api/v1/testsets", "full", json={**body, "dataset_id": "nothing"}), 422)
        assert "nothing" in missing["message"]
        assert str(root) not in missing["message"]  # no server folder named
        started = api.call("POST", "/api/v1/testsets", "full", json=body)
        assert started.status_code == 202, started.text
        job = started.json()["data"]["job"]
        assert (job["kind"], job["total"]) == ("testset", 8)
        job = follow_job(api, job["id"])
    assert job["status"] == "succeeded", job
    assert job["result"]["dataset"] == "docs-set"
    assert job["result"]["report"]["accepted"] == 8
    report = api.call("GET", "/api/v1/testsets/docs-set/report", "viewer").json()["data"]["report"]
    assert report["candidates"] == 8
    assert report["documents"] == 6
    assert report["critic_agreement"] is None
    listed = api.call("GET", "/api/v1/testsets/docs-set/questions", "viewer").json()["data"]
    assert [q["position"] for q in listed["questions"]] == list(range(8))
    assert listed["reviews"] == []
    qid = listed["questions"][0]["qid"]
    review = {"qid": qid, "decision": "reject", "note": "too vague"}
    assert api.call("POST", "/api/v1/testsets/docs-set/reviews", "viewer", json=review).status_code == 403
    made = api.call("POST", "/api/v1/testsets/docs-set/reviews", json=review)
    assert made.status_code == 201, made.text
    assert made.json()["data"]["review"]["author"].startswith("key ")
    assert qid not in {q.qid for q in load_dataset(root / "docs-set").questions}
    report = api.call("GET", "/api/v1/testsets/docs-set/report", "viewer").json()["data"]["report"]
    assert report["kept"] == 7
    assert report["critic_agreement"]["n"] == 1
    unknown = error_of(api.call("POST", "/api/v1/testsets/docs-set/reviews", json={**review, "qid": 1}), 422)
    assert "no generated question has this id" in unknown["message"]
    plain = error_of(api.call("GET", "/api/v1/testsets/tiny/report", "viewer"), 422)
    assert "not a generated test set" in plain["message"]


def test_the_datasets_page_generates_a_test_set_then_measures_and_reviews_it(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    uploads = tmp_path / "uploads"
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(uploads))
    write_mixed_folder(tmp_path / "docs", 6)
    import_corpus(tmp_path / "docs", uploads / "uploads-docs")
    db = str(tmp_path / "db.sqlite")
    with FakeOpenAIServer(TestsetModel(leaning=("the",)).reply) as server:
        at: AppTest = page_test(db, monkeypatch)
        at.selectbox[0].set_value(str(uploads / "uploads-docs")).run()
        at.text_input(key="testset-out").set_value("uploads-docs-set")
        at.number_input(key="testset-questions").set_value(8)
        at.text_input(key="testset-model").set_value("fake")
        at.text_input(key="testset-url").set_value(server.base_url)
        at.text_input(key="testset-key").set_value("")
        at.button(key="FormSubmitter:testset-Generate").click()
        at.run()
        assert_clean(at)
        with open_store(db) as store:
            deadline = time.monotonic() + 60
            while list_jobs(store, kind="testset")[0].status.active:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert list_jobs(store, kind="testset")[0].status == JobStatus.SUCCEEDED
    folder = uploads / "uploads-docs-set"
    at.run()  # the list of datasets now holds the new one
    at.selectbox[0].set_value(str(folder)).run()
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    provenance = read_provenance(folder)
    accepted = sum(c.accepted for c in provenance.candidates)
    assert metrics["Accepted"] == f"{accepted}/8"
    assert metrics["Documents with a question"] == "100%"
    shown = "\n".join(t.value for t in at.text)
    first = provenance.candidates[0]
    assert first.question in shown
    assert "1 of 8" in unescape("\n".join(c.value for c in at.caption))
    at.button(key="testset-reject").click().run()  # key x
    at.button(key="testset-edit").click().run()  # key e: the second question, rewritten
    at.text_area[0].set_value("Which colour is the router's light?")
    at.button(key="FormSubmitter:testset-edit-form-Save the edit").click().run()
    at.button(key="testset-accept").click().run()  # key a
    assert_clean(at)
    reviews = read_provenance(folder).reviews
    assert [(r.qid, r.decision.value) for r in reviews] == [
        (first.qid, "reject"), (provenance.candidates[1].qid, "edit"), (provenance.candidates[2].qid, "accept")]
    questions = {q.qid: q.text for q in load_dataset(folder).questions}
    assert first.qid not in questions
    assert questions[provenance.candidates[1].qid] == "Which colour is the router's light?"
    assert "3 of 8 reviewed" in unescape("\n".join(c.value for c in at.caption))
    assert any("critic vs people on 3 reviewed" in t.value for t in at.text)


def test_a_test_set_runs_as_a_campaigns_dataset(tmp_path: Path) -> None:
    write_mixed_folder(tmp_path / "docs", 4)
    import_corpus(tmp_path / "docs", tmp_path / "corpus")
    from evalcore.campaigns import CampaignManager, campaign_results
    from evalcore.campaigns.launching import LaunchRequest
    from evalcore.targets import TargetConfig

    manager = CampaignManager(str(tmp_path / "db.sqlite"))
    try:
        with FakeOpenAIServer(TestsetModel().reply) as server:
            generate_testset(manager.store, GenerationRequest(
                str(tmp_path / "corpus"), str(tmp_path / "set"), 8,
                model={"judge_model": "fake", "judge_base_url": server.base_url, "judge_api_key_env": ""}))
        config = TargetConfig.of(chunking="none", retriever="bm25", generator="extractive")
        campaign_id = manager.launch(LaunchRequest(dataset=str(tmp_path / "set"), config=config))
        manager.wait(campaign_id, timeout=120)
        results = campaign_results(manager.store, campaign_id)
    finally:
        manager.close()
    assert len(results) == 8
    assert all(r.outcome.error is None for r in results)
    declined = [r for r in results if r.question.answerable is False]
    assert len(declined) == 2  # the unanswerable ones: their abstention is measured
