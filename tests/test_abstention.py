"""Abstention: refusals recognised in three languages, unanswerable questions, and the three measures end to end."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalcore import __version__
from evalcore.campaigns import campaign_aggregates, campaign_results, get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.questions import with_answerability
from evalcore.campaigns.records import Question
from evalcore.compare import compare_campaigns
from evalcore.metrics import MEASURES, Inputs, panels, score_question
from evalcore.metrics.abstention import REFUSALS_VERSION, abstention_scores, is_refusal, is_unanswerable_marker
from evalcore.suites import Case, create_suite
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer
from tests.conftest import as_stored_before_packing, write_dataset

FALLBACK = "Sorry, I am unable to answer this question."

REFUSALS = [
    # English
    "I don't know.",
    "I don\u2019t know.",  # a typographic apostrophe
    "Sorry. I cannot find this information in the context.",
    "The provided context does not mention who founded Orvane Systems.",
    "There is no information about this in the documents.",
    "I'm not sure.",
    "Unfortunately, the documents do not contain this.",
    "The context doesn't say. However, it mentions the Lyon office.",  # the contrast is in the next sentence
    "I do not have enough information to answer.",
    FALLBACK,
    "sorry, i am unable to answer this question",  # the fallback, case and final stop aside
    "",
    # French
    "Je ne sais pas.",
    "Désolé, je ne peux pas répondre à cette question.",
    "Le contexte ne précise pas qui a fondé Orvane.",
    "Les documents ne mentionnent pas de bureau à Montréal.",
    "Aucune information sur ce sujet dans les documents.",
    "Cette information n'est pas mentionnée dans le contexte.",
    "Impossible de répondre avec ces documents.",
    # Chinese
    "抱歉，我无法回答这个问题。",
    "上下文中没有提到相关内容。",
    "没有相关信息。",
    "资料中未提及该办公室。",
    "我不知道。",
]

ANSWERS = [
    # English
    "I don't know Paris well, but the answer is 30 days",
    "The refund window is 30 days.",
    "The Kestrel R5 cannot find 5 GHz networks when DFS is on.",  # "cannot find" about the product, not the answer
    "The Basic plan does not contain SSO.",
    "The answer is 30 days. I don't know about the fees.",  # answered first
    "I cannot find it in the context, but it is probably 30 days.",
    "Not sure? The refund window is 30 days.",
    # French
    "Le thermostat ne transmet aucune information personnelle.",
    "Je ne sais pas exactement, mais c'est 30 jours.",
    # Chinese
    "如果不知道密码，请按住重置按钮10秒。",
    "R4 没有提供 WPA3。",
    "我不知道具体日期，但是应该是2026年。",
    "退货期限是7天。",
]


@pytest.mark.parametrize("answer", REFUSALS)
def test_refusals_are_recognised(answer: str) -> None:
    assert is_refusal(answer, FALLBACK)


@pytest.mark.parametrize("answer", ANSWERS)
def test_answers_are_not_refusals(answer: str) -> None:
    assert not is_refusal(answer, FALLBACK)


def test_a_refusal_after_the_answer_in_one_sentence_still_declines() -> None:
    # The rule is per sentence: a refusal phrasing with no contrast word after it declines, even
    # when an answer comes before it in the same sentence (documented in the module).
    assert is_refusal("Le délai est de 14 jours ; je ne sais pas pour la Belgique.")


def test_the_fallback_answer_is_a_refusal_only_when_configured() -> None:
    assert is_refusal("Nothing to say here.", "Nothing to say here")
    assert not is_refusal("Nothing to say here.", FALLBACK)


@pytest.mark.parametrize(("expected", "marked"), [
    ("(unanswerable)", True), ("  [No Answer] ", True), ("[unanswerable]", True), ("(no answer)", True),
    ("no answer", False), ("30 days", False), ("", False), (None, False),
])
def test_unanswerable_markers(expected: str | None, marked: bool) -> None:
    assert is_unanswerable_marker(expected) is marked


@pytest.mark.parametrize(("answer", "answerable", "expected"), [
    ("30 days.", True, {"false_abstention": 0.0}),
    ("I don't know.", True, {"false_abstention": 1.0}),
    ("I don't know.", False, {"correct_abstention": 1.0, "hallucination": 0.0}),
    ("It was founded in 1998.", False, {"correct_abstention": 0.0, "hallucination": 1.0}),
    ("I don't know.", None, {}),
    (None, False, {}),  # a results-file row without an answer
])
def test_abstention_scores(answer: str | None, answerable: bool | None, expected: dict[str, float]) -> None:
    assert abstention_scores(answer, answerable) == expected


def test_the_measures_are_registered_with_their_facts() -> None:
    facts = {name: (MEASURES[name].family, MEASURES[name].binary, MEASURES[name].higher_is_better)
             for name in ("correct_abstention", "hallucination", "false_abstention")}
    assert facts == {"correct_abstention": ("abstention", True, True), "hallucination": ("abstention", True, False),
                     "false_abstention": ("abstention", True, False)}
    assert MEASURES["hallucination"].signature == (f"hallucination|refusals:{REFUSALS_VERSION}|match:fold|"
                                                   f"version:{__version__}")
    assert ("Abstention", ["correct_abstention", "hallucination", "false_abstention"]) in panels(
        ["false_abstention", "hallucination", "correct_abstention", "recall"])


def test_an_unanswerable_question_is_not_scored_against_its_marker() -> None:
    scores = score_question(Inputs(answer="It is unanswerable.", expected_answer="(unanswerable)", answerable=False))
    assert scores.values == {"correct_abstention": 0.0, "hallucination": 1.0}
    assert scores.signatures["correct_abstention"].startswith("correct_abstention|refusals:")


def question(position: int, expected: str | None = None, references: tuple[str, ...] = (),
             relevant: dict[int, int] | None = None, sources: tuple[str, ...] = ()) -> Question:
    return Question(position, position, f"question {position}", expected, references, relevant, sources)


def test_which_questions_are_unanswerable() -> None:
    """Only a marker (or a dataset's answerable column) makes a question unanswerable; no expected answer is no
    reference."""
    marked = with_answerability([question(1, "30 days"), question(2, "(unanswerable)", sources=("Terms",)),
                                 question(3), question(4, sources=("Terms",)), question(5, "  ")])
    assert [q.answerable for q in marked] == [True, False, None, None, None]
    dataset = with_answerability([question(1, references=("30 days",)), question(2, relevant={10: 1}),
                                  question(3, relevant={10: 0}), question(4), question(5, references=("[No answer]",)),
                                  replace(question(6), answerable=False), replace(question(7), answerable=True)])
    assert [q.answerable for q in dataset] == [True, None, None, None, False, False, True]


ABSTAIN = {
    "queries": {"id": [1, 2, 3, 4], "text": ["What is the refund window?", "How long is the warranty?",
                                             "Who founded the company?", "Will it rain in Lyon tomorrow?"],
                "answerable": [None, None, False, False]},
    "corpus": {"id": [10, 11, 12], "text": ["Refunds are accepted within 30 days of delivery.",
                                            "The warranty lasts 3 years from delivery.",
                                            "The company sells routers and thermostats."],
               "title": ["Terms of Sale", "Warranty", "About us"]},
    "answers": {"id": [100, 101], "text": ["30 days.", "3 years."]},
    "qrels": {"qid": [1, 2], "pid": [10, 11]},
    "qas": {"qid": [1, 2], "aid": [100, 101]},
}


def asked(body: Any) -> str:
    """The question of a generation prompt (the default template ends with it)."""
    return re.search(r"Question: (.*)", body["messages"][-1]["content"]).group(1)


def scripted(replies: dict[str, str]):
    """A chat server answering by a word of the question."""
    def reply(path: str, body: Any) -> str:
        return next(text for word, text in replies.items() if word in asked(body))
    return reply


def launch(manager, data: Path, server: FakeOpenAIServer, **source: Any) -> str:
    """A campaign of the pipeline over `data`'s corpus with the chat server as its model (the dataset unless a
    suite)."""
    config = TargetConfig.of(knowledge_base=str(data), retriever="bm25", generator="openai", base_url=server.base_url,
                             model="fake", api_key_env="", keyword_threshold=0.0)
    campaign_id = manager.launch(LaunchRequest(config=config, concurrency=1, **(source or {"dataset": str(data)})))
    assert manager.wait(campaign_id, timeout=60).status == "succeeded"
    return campaign_id


def test_abstention_measures_on_answers_both_ways(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "abstain", ABSTAIN)
    manager = get_manager(tmp_path / "abstain.db")
    answers = {"refund": "Refunds are accepted within 30 days.", "warranty": "I don't know.",
               "founded": "It was founded by Marie Dupont in 1998."}
    with FakeOpenAIServer(scripted(answers)) as server:
        mixed = launch(manager, data, server)
        questions = [asked(body) for _, body, _ in server.requests]
    # Nothing is retrieved for the weather: the pipeline gives its fallback answer without asking the model.
    assert questions == ["What is the refund window?", "How long is the warranty?", "Who founded the company?"]
    results = {r.question.qid: r for r in campaign_results(manager.store, mixed)}
    assert [results[q].question.answerable for q in (1, 2, 3, 4)] == [True, True, False, False]
    assert results[4].outcome.answer == FALLBACK
    assert {q: {k: v for k, v in results[q].outcome.measures.items() if k in MEASURES
                and MEASURES[k].family == "abstention"} for q in results} == {
        1: {"false_abstention": 0.0}, 2: {"false_abstention": 1.0},
        3: {"correct_abstention": 0.0, "hallucination": 1.0}, 4: {"correct_abstention": 1.0, "hallucination": 0.0}}
    aggregates = campaign_aggregates(manager.store, mixed)
    assert {name: (aggregates[name].mean, aggregates[name].count)
            for name in ("correct_abstention", "hallucination", "false_abstention")} == {
        "correct_abstention": (0.5, 2), "hallucination": (0.5, 2), "false_abstention": (0.5, 2)}
    assert results[2].outcome.diagnosis == "generation miss"  # it had the warranty passage and declined

    with FakeOpenAIServer(lambda path, body: "Je ne sais pas.") as server:
        declining = launch(manager, data, server)
    comparison = compare_campaigns(manager.store, mixed, declining)
    deltas = {m.measure: m for m in comparison.measures}
    assert (deltas["hallucination"].mean_a, deltas["hallucination"].mean_b) == (0.5, 0.0)
    assert deltas["hallucination"].binary
    assert not deltas["hallucination"].higher_is_better
    assert deltas["hallucination"].test == "mcnemar-exact"
    assert deltas["false_abstention"].delta == 0.5
    assert deltas["correct_abstention"].mcnemar.only_b == 1
    manager.close()


def test_suite_cases_marked_are_unanswerable_and_empty_ones_have_no_reference(tmp_path: Path) -> None:
    """An optional expected answer left empty, next to cases that have one, is no reference: never a question to
    decline."""
    data = write_dataset(tmp_path / "abstain", ABSTAIN)
    manager = get_manager(tmp_path / "suite.db")
    suite = create_suite(manager.store, name="abstain", target_id="default", cases=[
        Case("What is the refund window?", "30 days", ("Terms of Sale",)),
        Case("Who founded the company?", "(unanswerable)"),
        Case("Which company sells thermostats?", None, ()),
    ])
    bare = create_suite(manager.store, name="bare", target_id="default", cases=[
        Case("What is the refund window?"), Case("Who founded the company?")])
    with FakeOpenAIServer(scripted({"refund": "30 days.", "founded": "Nobody knows: I cannot answer that.",
                                    "thermostats": "The company does."})) as server:
        marked = launch(manager, data, server, suite_id=suite.id)
        unknown = launch(manager, data, server, suite_id=bare.id)
    measures = [r.outcome.measures for r in campaign_results(manager.store, marked)]
    assert measures[0]["false_abstention"] == 0.0
    assert measures[1]["correct_abstention"] == 1.0
    assert [r.question.answerable for r in campaign_results(manager.store, marked)] == [True, False, None]
    assert not {"correct_abstention", "hallucination", "false_abstention", "coverage"} & measures[2].keys()
    assert "coverage" not in measures[1]  # never scored against "(unanswerable)"
    assert all(not {"correct_abstention", "hallucination", "false_abstention"} & r.outcome.measures.keys()
               for r in campaign_results(manager.store, unknown))
    manager.close()


def test_stored_campaigns_change_only_when_asked_to_recompute(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A campaign stored under the old rule (an empty expected answer taken for 'decline') keeps it until recomputed."""
    from evalcore.campaigns.recompute import recompute_abstention
    from evalcore.cli import main

    data = write_dataset(tmp_path / "abstain", ABSTAIN)
    manager = get_manager(tmp_path / "old.db")
    suite = create_suite(manager.store, name="old", target_id="default", cases=[
        Case("What is the refund window?", "30 days"), Case("Which company sells thermostats?", None)])
    with FakeOpenAIServer(scripted({"refund": "30 days.", "thermostats": "The company does."})) as server:
        campaign = launch(manager, data, server, suite_id=suite.id)

    def old_rule(conn) -> None:  # what the previous rule stored for the case without an expected answer
        as_stored_before_packing(conn, "campaign_id = ? AND position = 1", (campaign,))
        conn.execute("UPDATE campaign_questions SET answerable = 0 WHERE campaign_id = ? AND position = 1", (campaign,))
        conn.execute("UPDATE results SET measures = json_set(measures, '$.hallucination', 1.0, "
                     "'$.correct_abstention', 0.0) WHERE campaign_id = ? AND position = 1", (campaign,))

    manager.store.write(old_rule)
    assert campaign_aggregates(manager.store, campaign)["hallucination"].mean == 1.0  # read back as stored
    assert recompute_abstention(manager.store, campaign) == 1
    second = campaign_results(manager.store, campaign)[1]
    assert second.question.answerable is None
    assert not ABSTENTION_NAMES & second.outcome.measures.keys()
    assert "hallucination" not in campaign_aggregates(manager.store, campaign)
    assert campaign_results(manager.store, campaign)[0].outcome.measures["false_abstention"] == 0.0
    assert main(["campaigns", "recompute-abstention", campaign, "--db", str(manager.store.path)]) == 0
    assert "0 questions changed" in capsys.readouterr().out
    manager.close()


ABSTENTION_NAMES = {"correct_abstention", "hallucination", "false_abstention"}


def test_the_refusal_judge_reads_what_the_phrasing_list_misses(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "abstain", ABSTAIN)
    manager = get_manager(tmp_path / "judged.db")
    evasive = "That lies beyond what these pages cover."  # declines in words the list does not hold

    def reply(path: str, body: Any) -> str:
        if "declined to answer" in body["messages"][0]["content"]:  # the refusal judge
            answer = body["messages"][-1]["content"].rsplit("Answer to check:", 1)[1]
            declined = any(words in answer for words in ("beyond", "unable"))
            return json.dumps({"label": "pass" if declined else "fail", "reason": "read"})
        return scripted({"refund": "30 days.", "warranty": "3 years.", "founded": evasive})(path, body)

    with FakeOpenAIServer(reply) as server:
        config = TargetConfig.of(knowledge_base=str(data), retriever="bm25", generator="openai", model="fake",
                                 base_url=server.base_url, api_key_env="", keyword_threshold=0.0)
        plain = manager.launch(LaunchRequest(dataset=str(data), config=config, concurrency=1))
        judged = manager.launch(LaunchRequest(dataset=str(data), config=config, concurrency=1, judges=("refusal",)))
        for campaign_id in (plain, judged):
            assert manager.wait(campaign_id, timeout=60).status == "succeeded"
    assert not is_refusal(evasive)
    founded = {campaign_id: campaign_results(manager.store, campaign_id)[2].outcome for campaign_id in (plain, judged)}
    assert founded[plain].measures["hallucination"] == 1.0
    assert founded[judged].measures["hallucination"] == 0.0
    assert founded[judged].measures["judge.refusal"] == 1.0
    assert "|match:judge|" in founded[judged].signatures["correct_abstention"]
    assert "|match:fold|" in founded[plain].signatures["correct_abstention"]
    aggregates = campaign_aggregates(manager.store, judged)
    assert (aggregates["correct_abstention"].mean, aggregates["false_abstention"].mean) == (1.0, 0.0)
    manager.close()


def test_only_the_opening_of_a_long_answer_is_read() -> None:
    assert is_refusal("I don't know. " + "filler words " * 20000)
    assert not is_refusal("The refund window is 30 days. " + "I don't know. " * 20000)
    assert not is_refusal(" " * 5000 + "30 days.")
    assert is_refusal(" " * 5000 + "I don't know.")  # blanks skipped


def test_the_abstention_means_read_as_one_sentence_in_the_declared_order() -> None:
    from evalcore.metrics import in_words

    means = {"hallucination": (0.25, 4), "correct_abstention": (0.75, 4), "false_abstention": (0.1, 10),
             "recall": (0.5, 14)}
    assert in_words(means, "abstention") == ("declined 3 of 4 unanswerable questions (75%) · answered 1 of them "
                                            "anyway (25% hallucination) · declined 1 of 10 answerable questions "
                                            "(10% false abstention)")
    assert in_words({"false_abstention": (None, 0)}, "abstention") is None
