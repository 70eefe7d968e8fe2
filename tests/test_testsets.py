"""Test sets generated from a corpus with a scripted loopback model: the four kinds, the passage's language or the
one asked, graded labels, the critic's rejections with their reasons, near-duplicates, a malformed reply asked
again then reported, a model that never answers, the same set from the same settings and cache, a job resumed
after its process was killed, the quality report with the critic's agreement with people, and the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from evalcore.cli import main
from evalcore.datasets import load_dataset
from evalcore.documents import import_corpus
from evalcore.errors import EvalError
from evalcore.jobs.job_queue import JobStatus, get_job, list_jobs, requeue_lapsed, run_now
from evalcore.metrics.agreement import kappa
from evalcore.store import Store, open_store
from evalcore.testing.documents import write_mixed_folder
from evalcore.testing.openai_server import FakeOpenAIServer, Reply
from evalcore.testing.testset_model import TestsetModel
from evalcore.testsets import (
    GenerationRequest,
    Kind,
    generate_testset,
    measure_testset,
    read_provenance,
    review_question,
    start_testset,
)
from evalcore.testsets.planning import language_of
from evalcore.testsets.question_prompts import RETRY

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve documents in English, French and Chinese imported as a corpus."""
    folder = tmp_path_factory.mktemp("testsets")
    write_mixed_folder(folder / "docs", 12)
    import_corpus(folder / "docs", folder / "corpus")
    return folder / "corpus"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(str(tmp_path / "store.db")) as opened:
        yield opened


def keys(server: FakeOpenAIServer, **more: Any) -> dict[str, Any]:
    return {"judge_model": "fake", "judge_base_url": server.base_url, "judge_api_key_env": "", **more}


def request(corpus: Path, out: Path, server: FakeOpenAIServer, questions: int = 24, **more: Any) -> GenerationRequest:
    model = keys(server, **more.pop("model", {}))
    return GenerationRequest(str(corpus), str(out), questions, model=model, **more)


def writer_prompts(server: FakeOpenAIServer) -> list[str]:
    return [body["messages"][0]["content"] for path, body, _ in server.requests
            if body["messages"][0]["content"].startswith("You write questions")]


def test_the_four_kinds_in_their_passages_languages_with_graded_labels(corpus: Path, store: Store,
                                                                       tmp_path: Path) -> None:
    model = TestsetModel()
    with FakeOpenAIServer(model.reply) as server:
        name, report = generate_testset(store, request(corpus, tmp_path / "set", server))
        base_url = server.base_url
    assert name == "set"
    provenance = read_provenance(tmp_path / "set")
    source = load_dataset(corpus)
    generated = load_dataset(tmp_path / "set")  # a five-Parquet dataset campaigns run on, the corpus as it was
    assert [p.pid for p in generated.passages] == [p.pid for p in source.passages]
    by_qid = {q.qid: q for q in generated.questions}
    assert {c.kind for c in provenance.candidates} == set(Kind)
    assert {c.language for c in provenance.candidates} == {"en", "fr", "zh"}
    for candidate in provenance.candidates:
        assert candidate.language == language_of(source.passage(candidate.sources[0]).text)
        assert candidate.accepted, candidate
        question = by_qid[candidate.qid]
        assert question.text == candidate.question
        if candidate.kind == Kind.UNANSWERABLE:  # abstention is measured on it: no label, no reference answer
            assert question.answerable is False
            assert question.labels == {}
            assert question.references == ()
            continue
        assert question.answerable is True
        assert question.references == (candidate.answer,)
        assert {pid for pid, label in question.labels.items() if label == 2} == set(candidate.sources)
        assert {pid for pid, label in question.labels.items() if label == 1} == set(candidate.related)
        # The reference answer is taken from its passages (the scripted writer copies their first sentence).
        assert candidate.answer.split(" ")[0] in " ".join(source.passage(pid).text for pid in candidate.sources)
    two = [c for c in provenance.candidates if c.kind == Kind.TWO_PASSAGES]
    assert all(len(c.sources) == 2 for c in two)
    assert all(len(set(c.sources)) == 2 for c in two)
    assert any(c.related for c in provenance.candidates)  # the second check labels other passages, lower
    shapes = [body["response_format"] for _, body, _ in server.requests]
    assert all(shape["type"] == "json_schema" for shape in shapes)  # asked in the reply's shape, where it can
    assert {tuple(shape["json_schema"]["schema"]["required"]) for shape in shapes} == {
        ("question", "answer"), ("question",), ("answerable", "standalone", "reason"), ("relevant",)}
    languages = {"English", "French", "Chinese (simplified characters)"}
    assert {next(lang for lang in languages if f"Write in {lang}." in prompt)
            for prompt in writer_prompts(server)} == languages
    assert report.candidates == report.accepted == report.kept == 24
    assert report.failed == 0
    assert {k.kind: k.accepted for k in report.by_kind} == {k.value: 6 for k in Kind}
    assert report.documents == 12
    assert report.documents_covered == 1.0
    assert report.prompt_tokens == sum(c.prompt_tokens for c in provenance.candidates) > 0
    assert provenance.tokens == {"prompt": report.prompt_tokens, "completion": report.completion_tokens}
    assert provenance.model == f"openai:fake@{base_url}"
    assert len(provenance.prompts_hash) == 16
    assert provenance.seed == 0
    assert provenance.corpus == {"dataset": "corpus", "content_hash": source.content_hash}


def test_a_language_asked_for_is_the_language_of_every_question(corpus: Path, store: Store, tmp_path: Path) -> None:
    with FakeOpenAIServer(TestsetModel().reply) as server:
        generate_testset(store, request(corpus, tmp_path / "fr", server, 8, language="fr",
                                        kinds=(Kind.FACT, Kind.UNANSWERABLE)))
    candidates = read_provenance(tmp_path / "fr").candidates
    assert {c.language for c in candidates} == {"fr"}
    assert ({c.kind for c in candidates} == {Kind.FACT,
                                                                                            Kind.UNANSWERABLE})
    assert all("Write in French." in prompt for prompt in writer_prompts(server))
    assert all(c.question.startswith(("Que sait-on de", "En quelle année")) for c in candidates)


def test_rejections_keep_their_reasons_and_stay_out_of_the_dataset(corpus: Path, store: Store,
                                                                   tmp_path: Path) -> None:
    source = load_dataset(corpus)
    leaning = source.passages[0].text.split()[0]
    with FakeOpenAIServer(TestsetModel(leaning=(leaning,)).reply) as server:
        # More fact questions than passages: the same passage asked twice gives the same question, a near-duplicate.
        generate_testset(store, request(corpus, tmp_path / "set", server, len(source.passages) + 6,
                                        kinds=(Kind.FACT,)))
    provenance = read_provenance(tmp_path / "set")
    rejected = {c.qid: c.rejections for c in provenance.candidates if not c.accepted}
    standalone = [r for reasons in rejected.values() for r in reasons if r.startswith("not standalone")]
    duplicates = [r for reasons in rejected.values() for r in reasons if r.startswith("near-duplicate of question")]
    assert standalone
    assert all(r == "not standalone: It leans on the passage." for r in standalone)
    assert sum("(similarity 1.00)" in r for r in duplicates) >= 6  # the same question again
    assert all(float(r.rsplit(" ", 1)[1].rstrip(")")) >= 0.9 for r in duplicates)
    first_ids = {str(c.qid) for c in provenance.candidates}
    assert all(r.split()[3] in first_ids for r in duplicates)  # it names the question it repeats
    assert set(rejected).isdisjoint(q.qid for q in load_dataset(tmp_path / "set").questions)
    report = measure_testset(tmp_path / "set")
    assert report.rejections["near-duplicate of question"] == len(duplicates)
    assert report.rejections["not standalone"] == len(standalone)
    assert report.duplicate_rate == pytest.approx(len(duplicates) / len(provenance.candidates))


def test_a_paraphrase_sharing_its_passages_words_and_an_answerable_unanswerable_question_are_rejected(
        corpus: Path, store: Store, tmp_path: Path) -> None:
    scripted = TestsetModel()

    def copying(path: str, body: Any) -> Reply:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if system.startswith("You write questions") and "own words" in user:
            words = user.split("Passage:\n", 1)[1].split()[:8]
            return Reply(json.dumps({"question": " ".join(words) + "?", "answer": " ".join(words)}))
        if system.startswith("You check one question"):
            return Reply(json.dumps({"answerable": True, "standalone": True, "reason": "It says so."}))
        return scripted.reply(path, body)

    with FakeOpenAIServer(copying) as server:
        generate_testset(store, request(corpus, tmp_path / "set", server, 4,
                                        kinds=(Kind.PARAPHRASE, Kind.UNANSWERABLE)))
    by_kind = {c.kind: c for c in read_provenance(tmp_path / "set").candidates}
    (shared,) = by_kind[Kind.PARAPHRASE].rejections
    assert shared.startswith("shares ")
    assert shared.endswith("% of its words with its passage (a paraphrase: at most 50%)")
    assert int(shared.split()[1].rstrip("%")) > 50
    assert by_kind[Kind.UNANSWERABLE].rejections == (
        "answerable from its passage, though meant to be unanswerable: It says so.",)


def test_a_malformed_reply_is_asked_again_then_the_question_is_reported(corpus: Path, store: Store,
                                                                        tmp_path: Path) -> None:
    with FakeOpenAIServer(TestsetModel(unreadable=1).reply) as server:
        generate_testset(store, request(corpus, tmp_path / "once", server, 2, concurrency=1))
    first = read_provenance(tmp_path / "once").candidates[0]
    assert first.accepted
    assert first.error is None
    retried = [body["messages"] for _, body, _ in server.requests if len(body["messages"]) == 4]
    assert retried
    assert retried[0][3] == {"role": "user", "content": RETRY}
    with FakeOpenAIServer(TestsetModel(unreadable=2).reply) as server:
        _, report = generate_testset(store, request(corpus, tmp_path / "twice", server, 3, concurrency=1, seed=1))
    candidates = read_provenance(tmp_path / "twice").candidates
    assert candidates[0].error == "unreadable reply after one retry: 'Sure, here is a good question about it.'"
    assert not candidates[0].accepted
    assert all(c.accepted for c in candidates[1:])  # the job went on
    assert report.failed == 1
    assert len(load_dataset(tmp_path / "twice").questions) == 2
    assert any(reason.startswith("failed: unreadable reply after one retry") for reason in report.rejections)


def test_a_model_that_never_answers_stops_the_job_with_its_reason_and_writes_nothing(
        corpus: Path, store: Store, tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Reply.slow(3)) as server, pytest.raises(EvalError) as raised:
        generate_testset(store, request(corpus, tmp_path / "set", server, 20, concurrency=1,
                                        model={"timeout": 0.2, "retries": 0}))
    message = raised.value.line()
    assert "the model did not answer 3 questions in a row" in message
    assert "nothing was written" in message
    assert "judge_base_url" in message
    # Bounded: it stopped at the third failure; the one question in flight meanwhile was its last call.
    assert 3 <= len(server.requests) <= 4
    assert not (tmp_path / "set").exists()
    assert not list(tmp_path.glob(".set*"))
    failed = list_jobs(store, kind="testset")[0]
    assert failed.status == JobStatus.FAILED
    assert failed.done == 0


def test_the_same_settings_and_cache_give_the_same_set_without_asking_again(corpus: Path, store: Store,
                                                                            tmp_path: Path) -> None:
    with FakeOpenAIServer(TestsetModel().reply) as server:
        generate_testset(store, request(corpus, tmp_path / "a", server, 12, seed=7))
        asked = len(server.requests)
        generate_testset(store, request(corpus, tmp_path / "b", server, 12, seed=7))
        assert len(server.requests) == asked  # every call served by the store's cache
        generate_testset(store, request(corpus, tmp_path / "c", server, 12, seed=8))
    for table in ("queries", "answers", "qrels", "qas"):
        assert pq.read_table(tmp_path / "a" / f"{table}.parquet") == pq.read_table(tmp_path / "b" / f"{table}.parquet")
    a, c = read_provenance(tmp_path / "a"), read_provenance(tmp_path / "c")
    assert [x.qid for x in a.candidates] == [x.qid for x in read_provenance(tmp_path / "b").candidates]
    assert {x.qid for x in a.candidates}.isdisjoint(x.qid for x in c.candidates)  # another seed, other questions
    # A longer set from the same seed starts with the same questions (ids depend on the plan only).
    with FakeOpenAIServer(TestsetModel().reply) as server:
        generate_testset(store, request(corpus, tmp_path / "d", server, 16, seed=7))
    assert [x.qid for x in read_provenance(tmp_path / "d").candidates][:12] == [x.qid for x in a.candidates]


CHILD = """
import sys
from evalcore.jobs.job_queue import run_now
from evalcore.store import open_store
import evalcore.testsets.generation_job
with open_store(sys.argv[1]) as store:
    run_now(store, sys.argv[2])
"""


def test_a_job_killed_midway_is_resumed_asking_only_the_questions_not_kept(corpus: Path, tmp_path: Path) -> None:
    scripted, release = TestsetModel(), threading.Event()
    writers = []

    def held(path: str, body: Any) -> Reply:
        if body["messages"][0]["content"].startswith("You write questions"):
            writers.append(body["messages"][1]["content"])
            if len(writers) > 4:
                release.wait(30)  # the fifth question hangs: its process is killed meanwhile
        return scripted.reply(path, body)

    db = str(tmp_path / "store.db")
    with FakeOpenAIServer(held) as server, open_store(db) as store:
        job_id = start_testset(store, request(corpus, tmp_path / "set", server, 10, concurrency=1))
        child = subprocess.Popen([sys.executable, "-c", CHILD, db, job_id], cwd=ROOT,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            deadline = time.monotonic() + 60
            while get_job(store, job_id).done < 4:
                assert time.monotonic() < deadline
                assert child.poll() is None
                time.sleep(0.05)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        release.set()
        kept = get_job(store, job_id).done
        assert kept == 4
        assert not (tmp_path / "set").exists()
        # The lease of the killed process runs out: the job goes back to the queue, and the next claim resumes it.
        store.write(lambda conn: conn.execute("UPDATE jobs SET heartbeat = ? WHERE id = ?",
                                              (time.time() - 3600, job_id)))
        assert store.write(requeue_lapsed) == 1
        before = len(writers)
        assert run_now(store, job_id).status == JobStatus.SUCCEEDED
        assert len(writers) - before == 10 - kept  # the kept questions were not asked again
    with FakeOpenAIServer(TestsetModel().reply) as server, open_store(str(tmp_path / "fresh.db")) as fresh:
        generate_testset(fresh, request(corpus, tmp_path / "whole", server, 10, concurrency=1))
    resumed, whole = read_provenance(tmp_path / "set"), read_provenance(tmp_path / "whole")
    assert [c.to_dict() for c in resumed.candidates] == [c.to_dict() for c in whole.candidates]


def test_reviews_change_the_dataset_and_the_report_gives_the_critics_kappa(corpus: Path, store: Store,
                                                                           tmp_path: Path) -> None:
    with FakeOpenAIServer(TestsetModel(leaning=("the",)).reply) as server:
        generate_testset(store, request(corpus, tmp_path / "set", server, 16))
    folder = tmp_path / "set"
    candidates = read_provenance(folder).candidates
    accepted = [c for c in candidates if c.accepted]
    rejected = [c for c in candidates if not c.accepted]
    assert rejected
    assert len(accepted) >= 4
    assert measure_testset(folder).critic_agreement is None
    review_question(folder, accepted[0].qid, "reject", author="ana", note="too vague")
    review_question(folder, accepted[1].qid, "accept", author="ana")
    review_question(folder, accepted[2].qid, "edit", author="ana", question="What is  the router's colour?")
    review_question(folder, rejected[0].qid, "accept", author="ana")  # a person overrides the critic
    questions = {q.qid: q for q in load_dataset(folder).questions}
    assert accepted[0].qid not in questions
    assert rejected[0].qid in questions
    assert questions[accepted[2].qid].text == "What is the router's colour?"
    report = measure_testset(folder)
    human = ["reject", "accept", "accept", "accept"]
    critic = ["accept", "accept", "accept", "reject"]
    agreement = report.critic_agreement
    assert agreement is not None
    assert agreement.n == 4
    assert report.reviewed == 4
    assert agreement.kappa == kappa(human, critic, ("reject", "accept"))
    assert agreement.interval is not None
    assert report.kept == len(accepted) - 1 + 1
    with pytest.raises(EvalError, match="no generated question has this id"):
        review_question(folder, 1, "accept")
    with pytest.raises(EvalError, match="an edit gives the new question or the new answer"):
        review_question(folder, accepted[3].qid, "edit")
    assert [r.decision.value for r in read_provenance(folder).reviews] == ["reject", "accept", "edit", "accept"]


def test_bad_requests_are_refused_before_a_job_is_queued(corpus: Path, store: Store, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        cases = [
            (request(corpus, tmp_path / "x", server, 0), "too many or too few questions"),
            (request(corpus, corpus, server, 4), "a dataset already exists there"),
            (request(corpus, tmp_path / "x", server, 4, language="de"), "not a language questions are written in"),
            (GenerationRequest(str(corpus), str(tmp_path / "x"), 4), "no model to write the questions"),
            (request(corpus, tmp_path / "x", server, 4, model={"judge_colour": 1}),
             "not a key of the model that writes questions"),
        ]
        for bad, message in cases:
            with pytest.raises(EvalError, match=message):
                start_testset(store, bad)
        with pytest.raises(EvalError, match="not a kind of generated question"):
            Kind.parse(["fact", "riddle"])
    assert list_jobs(store, kind="testset") == []


def test_the_command_line_generates_reports_and_reviews(corpus: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out, db = tmp_path / "set", str(tmp_path / "cli.db")
    with FakeOpenAIServer(TestsetModel().reply) as server:
        assert main(["testset", "generate", "--dataset", str(corpus), "--out", str(out), "--questions", "8",
                     "--kinds", "fact,unanswerable", "--model", "fake", "--base-url", server.base_url,
                     "--judge-api-key-env", "", "--db", db]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[:4] == [f"test set written to {out}",
                           "accepted 8/8 (100%) of the questions planned; 8 in the dataset after review; 0 failed",
                           printed[2], "  unanswerable: accepted 4/4 (100%)"]
    assert printed[2].startswith("  fact: accepted 4/4 (100%), baseline recall@10 ")
    qid = read_provenance(out).candidates[0].qid
    assert main(["testset", "review", str(out), str(qid), "reject", "--note", "vague", "--author", "ana"]) == 0
    assert capsys.readouterr().out.strip() == f"question {qid}: reject by ana"
    assert main(["testset", "report", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kept"] == 7
    assert report["reviewed"] == 1
    assert report["critic_agreement"]["n"] == 1
    assert main(["testset", "generate", "--dataset", str(corpus), "--out", str(tmp_path / "y"), "--questions", "2",
                 "--db", db]) == 2
    assert "no model to write the questions" in capsys.readouterr().err
