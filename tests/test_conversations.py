"""Conversations: questions that are turns of one, read from every format, run in order with their history."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.campaigns import CampaignManager, campaign_results
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.turn_order import NOT_ASKED
from evalcore.datasets import load_dataset
from evalcore.errors import EvalError
from evalcore.judges import Verdict
from evalcore.suites import Case, create_suite, export_suite_csv, get_suite, parse_suite_csv, parse_suite_jsonl
from evalcore.targets import TargetConfig
from evalcore.testing.agent import LoopbackAgent

SUITE_CSV = """question;expected answer;sources;conversation
What is the refund window?;30 days;;refunds
Is there a form to fill in?;Yes, the online refund form.;;refunds
Quelle est l'adresse du magasin ?;12 rue de la Paix;;horaires
And for items bought on sale?;Sale items: 14 days.;;refunds
À quelle heure ouvre-t-il ?;À 9 h.;;horaires
Where is the thermostat?;In the hall.;;
Et le week-end ?;À 10 h le samedi, fermé le dimanche.;;horaires
Et les jours fériés ?;Fermé.;;horaires
""".encode()
# The agent's body: the conversation, the turn and the history as JSON values.
BODY = json.dumps({"question": "{question}", "conversation": "{conversation}", "turn": "{turn}",
                   "history": "{history}", "transcript": "{history}\n{question}"})


def answer_of(body: dict[str, Any]) -> str:
    """What the agent answers: a text naming the turn and the question (so that a history is checkable)."""
    return f"answer {body['turn']} to {body['question']}"


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[CampaignManager]:
    result = CampaignManager(tmp_path / "conversations.db")
    yield result
    result.close()


def agent_config(url: str, **keys: Any) -> TargetConfig:
    return TargetConfig.from_dict({"kind": "http_agent", "agent_url": url, "agent_body": BODY, "timeout": 30,
                                   "retries": 0, **keys})


def run_suite(manager: CampaignManager, agent: LoopbackAgent, **keys: Any) -> str:
    report = parse_suite_csv(SUITE_CSV, source="suite.csv")
    suite = create_suite(manager.store, name=f"talks {keys}", target_id="default", cases=report.cases)
    campaign = manager.wait(manager.launch(LaunchRequest(suite_id=suite.id, config=agent_config(agent.url, **keys),
                                                         concurrency=4, cache=False, max_failed_share=1)), 60)
    return campaign.id


def test_the_csv_conversation_column_numbers_turns_in_file_order() -> None:
    report = parse_suite_csv(SUITE_CSV, source="suite.csv")
    assert report.ok, report.rejected
    turns = [(case.conversation, case.turn) for case in report.cases]
    assert turns == [("refunds", 1), ("refunds", 2), ("horaires", 1), ("refunds", 3), ("horaires", 2), (None, None),
                     ("horaires", 3), ("horaires", 4)]
    assert any("2 conversations" in note for note in report.notes)
    # Written back with each conversation's turns together, in turn order: read again, the same turns.
    again = parse_suite_csv(export_suite_csv(report.cases).encode(), source="again.csv").cases
    assert sorted(again, key=str) == sorted(report.cases, key=str)
    # A suite without conversations keeps its three columns.
    assert export_suite_csv([Case("q", "a")]).splitlines()[0] == "question;expected_answer;sources"


def test_the_optional_columns_are_read_by_their_header_names_else_checks_then_conversation() -> None:
    by_name = parse_suite_csv(b"Question;Expected answer;Sources;Conversation;Checks\n"
                              b"Refund window?;30 days;;refunds;contains:30\n"
                              b"And on sale?;14 days;;refunds;\n", source="named.csv")
    assert report_cases(by_name) == [("Refund window?", ("contains:30",), "refunds", 1),
                                     ("And on sale?", (), "refunds", 2)]
    # A French header names them too, case ignored.
    french = parse_suite_csv("Question;Réponse attendue;Sources;VÉRIFICATIONS;dialogue\nq;a;;json_valid;c\n".encode())
    assert report_cases(french) == [("q", ("json_valid",), "c", 1)]
    # Without a header: the fourth cell is checks, the fifth the conversation.
    plain = parse_suite_csv(b"q1;a;;regex:\\d+;talk\nq2;a;;;talk\nq3;a;;contains:a\n")
    assert report_cases(plain) == [("q1", ("regex:\\d+",), "talk", 1), ("q2", (), "talk", 2),
                                   ("q3", ("contains:a",), None, None)]
    # A header with only a conversation column: the fourth cell is the conversation, not a check.
    assert report_cases(parse_suite_csv(b"question;answer;sources;conversation\nq;a;;c\n")) == [("q", (), "c", 1)]
    # An empty header cell keeps its place: the fifth cell is still the conversation.
    assert report_cases(parse_suite_csv(b"question;answer;sources;;conversation\nq;a;;json_valid;c\n")) == [
        ("q", ("json_valid",), "c", 1)]
    # A header naming a column twice is refused, naming the header's line.
    with pytest.raises(EvalError, match="twice") as raised:
        parse_suite_csv(b"question;answer;sources;checks;check\nq;a;;json_valid;json_valid\n", source="twice.csv")
    assert raised.value.where == "twice.csv line 1"
    # Export writes only the columns in use, and reads back to the same cases.
    for cases in ([Case(question="q", checks=("contains:a",))], [Case(question="q", conversation="c", turn=1)],
                  [Case(question="q", checks=("json_valid",), conversation="c", turn=1)]):
        text = export_suite_csv(cases)
        header = text.splitlines()[0].split(";")
        assert header[3:] == [name for name, used in (("checks", cases[0].checks), ("conversation",
                                                                                   cases[0].conversation)) if used]
        assert parse_suite_csv(text.encode()).cases == cases


def report_cases(report: Any) -> list[tuple[str, tuple[str, ...], str | None, int | None]]:
    assert report.ok, report.rejected
    return [(case.question, case.checks, case.conversation, case.turn) for case in report.cases]


def test_jsonl_turns_are_checked_and_named_by_line() -> None:
    lines = [{"question": "b2", "conversation": "b", "turn": 2}, {"question": "a1", "conversation": "a"},
             {"question": "b1", "conversation": "b", "turn": 1}, {"question": "alone"},
             {"question": "a2", "conversation": "a"}]
    cases = parse_suite_jsonl("\n".join(json.dumps(line) for line in lines).encode(), source="s.jsonl")
    assert [(c.question, c.conversation, c.turn) for c in cases] == [
        ("b1", "b", 1), ("b2", "b", 2), ("a1", "a", 1), ("alone", None, None), ("a2", "a", 2)]
    bad = [{"question": "x1", "conversation": "x", "turn": 1}, {"question": "x1 again", "conversation": "x", "turn": 1},
           {"question": "y1", "conversation": "y", "turn": 1}, {"question": "y3", "conversation": "y", "turn": 3},
           {"question": "z", "turn": 2}]
    with pytest.raises(EvalError) as error:
        parse_suite_jsonl("\n".join(json.dumps(line) for line in bad).encode(), source="s.jsonl")
    problems = error.value.problems
    assert "s.jsonl line 2: turn 1 of conversation 'x' twice (first at s.jsonl line 1)" in problems
    assert any(p.startswith("s.jsonl line 4: conversation 'y' has no turn 2") for p in problems), problems
    assert "s.jsonl line 5: turn 2 without a conversation (give both, or neither)" in problems


def write_dataset(folder: Path, conversations: list[Any], turns: list[Any]) -> Path:
    folder.mkdir()
    ids = list(range(1, len(turns) + 1))
    tables = {
        "queries": {"id": ids, "text": [f"question {i}" for i in ids], "conversation": conversations, "turn": turns},
        "corpus": {"id": [1], "text": ["a passage"]},
        "answers": {"id": [1], "text": ["an answer"]},
        "qrels": {"qid": [1], "pid": [1]},
        "qas": {"qid": [1], "aid": [1]},
    }
    for name, columns in tables.items():
        pq.write_table(pa.table(columns), folder / f"{name}.parquet")
    return folder


def test_dataset_conversations_load_and_bad_turns_are_named(tmp_path: Path) -> None:
    good = load_dataset(write_dataset(tmp_path / "good", ["c1", "c1", None, "7", "7"], [1, 2, None, 1, 2]))
    assert [(q.conversation, q.turn) for q in good.questions] == [("c1", 1), ("c1", 2), (None, None), ("7", 1),
                                                                  ("7", 2)]
    with pytest.raises(EvalError) as error:
        load_dataset(write_dataset(tmp_path / "bad", ["c1", "c1", "c2", "c2"], [1, 1, 1, 3]))
    problems = "\n".join(error.value.problems)
    assert "queries.parquet row 1: turn 1 of conversation 'c1' twice (first at queries.parquet row 0)" in problems
    assert "queries.parquet row 3: conversation 'c2' has no turn 2" in problems


def expected_history(questions: list[str], answers: list[str], turn: int, rounds: int) -> list[dict[str, str]]:
    first = max(1, turn - rounds)
    return [message for number in range(first, turn) for message in (
        {"role": "user", "content": questions[number - 1]}, {"role": "assistant", "content": answers[number - 1]})]


@pytest.mark.parametrize("rounds", [0, 1, 3])
def test_the_agent_receives_exactly_max_rounds_of_its_own_answers(manager: CampaignManager, rounds: int) -> None:
    with LoopbackAgent(reply=answer_of) as agent:
        campaign_id = run_suite(manager, agent, max_rounds=rounds)
    by_conversation: dict[str, list[dict[str, Any]]] = {}
    for body in agent.bodies:
        by_conversation.setdefault(body["conversation"], []).append(body)
    # Each conversation's turns were asked in order.
    assert {name: [b["turn"] for b in bodies] for name, bodies in by_conversation.items()} == {
        "refunds": [1, 2, 3], "horaires": [1, 2, 3, 4], "": [None]}
    for name, bodies in by_conversation.items():
        questions = [b["question"] for b in bodies]
        answers = [answer_of(b) for b in bodies]
        for body in bodies:
            turn = body["turn"] or 1
            assert body["history"] == expected_history(questions, answers, turn, rounds), (name, turn)
    results = campaign_results(manager.store, campaign_id)
    assert [(r.question.conversation, r.question.turn) for r in results][:3] == [("refunds", 1), ("refunds", 2),
                                                                                  ("horaires", 1)]
    assert all(r.outcome.error is None for r in results)
    exported = results[0].to_dict()
    assert exported["conversation"] == "refunds"
    assert exported["turn"] == 1


def test_a_reference_history_gives_the_expected_answers(manager: CampaignManager) -> None:
    with LoopbackAgent(reply=answer_of) as agent:
        run_suite(manager, agent, max_rounds=2, history="references")
    last = next(b for b in agent.bodies if b["conversation"] == "horaires" and b["turn"] == 4)
    assert last["history"] == [
        {"role": "user", "content": "À quelle heure ouvre-t-il ?"}, {"role": "assistant", "content": "À 9 h."},
        {"role": "user", "content": "Et le week-end ?"},
        {"role": "assistant", "content": "À 10 h le samedi, fermé le dimanche."}]
    assert last["transcript"].startswith("Conversation so far:\nUser: À quelle heure ouvre-t-il ?\nAssistant: À 9 h.")


def test_a_failed_turn_leaves_its_followers_not_asked_and_a_retry_continues_there(manager: CampaignManager) -> None:
    broken = {"Is there a form to fill in?"}

    def flaky(body: dict[str, Any]) -> str | None:
        return None if body["question"] in broken else answer_of(body)

    with LoopbackAgent(reply=flaky) as agent:
        campaign_id = run_suite(manager, agent, max_rounds=3)
        results = {(r.question.conversation, r.question.turn): r.outcome for r in
                   campaign_results(manager.store, campaign_id)}
        assert results[("refunds", 2)].error is not None
        assert NOT_ASKED not in (results[("refunds", 2)].error or "")
        follower = results[("refunds", 3)].error or ""
        assert follower.startswith(f"{NOT_ASKED}: turn 2 of conversation 'refunds' failed"), follower
        assert [b["turn"] for b in agent.bodies if b["conversation"] == "refunds"] == [1, 2]
        broken.clear()
        agent.bodies.clear()
        manager.wait(manager.retry_failed(campaign_id), 60)
    # The retry asked turns 2 and 3 in order, turn 2 with turn 1's stored answer as its history.
    asked = [b for b in agent.bodies if b["conversation"] == "refunds"]
    assert [b["turn"] for b in asked] == [2, 3]
    assert asked[0]["history"] == [{"role": "user", "content": "What is the refund window?"},
                                   {"role": "assistant", "content": "answer 1 to What is the refund window?"}]
    assert all(r.outcome.error is None for r in campaign_results(manager.store, campaign_id))


def test_a_resume_continues_a_conversation_from_its_first_unfinished_turn(manager: CampaignManager) -> None:
    with LoopbackAgent(reply=answer_of) as agent:
        campaign_id = run_suite(manager, agent, max_rounds=1)
        # As if the campaign had been interrupted after the first two turns of "horaires".
        manager.store.write(lambda conn: conn.execute(
            "DELETE FROM results WHERE campaign_id = ? AND position IN (SELECT position FROM campaign_questions "
            "WHERE campaign_id = ? AND conversation = 'horaires' AND turn > 2)", (campaign_id, campaign_id)))
        manager.store.write(lambda conn: conn.execute(
            "UPDATE campaigns SET status = 'interrupted', finished = finished - 2 WHERE id = ?", (campaign_id,)))
        agent.bodies.clear()
        manager.wait(manager.resume(campaign_id), 60)
    assert [(b["conversation"], b["turn"]) for b in agent.bodies] == [("horaires", 3), ("horaires", 4)]
    assert agent.bodies[0]["history"] == [{"role": "user", "content": "À quelle heure ouvre-t-il ?"},
                                          {"role": "assistant", "content": "answer 2 to À quelle heure ouvre-t-il ?"}]


def test_suite_turns_are_stored_and_checked(manager: CampaignManager) -> None:
    suite = create_suite(manager.store, name="s", target_id="default",
                         cases=[{"question": "a", "conversation": "c"}, {"question": "b", "conversation": "c"}])
    assert [(c.conversation, c.turn) for c in get_suite(manager.store, suite.id).cases] == [("c", 1), ("c", 2)]
    with pytest.raises(EvalError, match="has no turn 2") as error:
        create_suite(manager.store, name="t", target_id="default",
                     cases=[{"question": "a", "conversation": "c", "turn": 1},
                            {"question": "b", "conversation": "c", "turn": 3}])
    gap = "case 2: conversation 'c' has no turn 2 (its turns are 1, 3; they must be 1, 2, ... without a gap)"
    assert error.value.problems == [gap]


def test_a_conversation_is_in_one_suite_of_a_workspace(manager: CampaignManager, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from evalcore.access.principals import LOCAL_TENANT
    from evalcore.cli import main
    from evalcore.suites import list_suites, replace_suite

    report = parse_suite_csv(SUITE_CSV, source="suite.csv")
    first = create_suite(manager.store, name="first", target_id="default", cases=report.cases, places=report.places)
    # Another suite of the workspace with the same conversations is refused, each named by its file's line.
    with pytest.raises(EvalError) as raised:
        create_suite(manager.store, name="second", target_id="default", cases=report.cases, places=report.places)
    assert raised.value.message == "2 conversations already in another suite of this workspace: nothing imported"
    held = f"is already in suite 'first' ({first.id})"
    assert raised.value.problems == [f"suite.csv line 2: conversation 'refunds' {held}",
                                     f"suite.csv line 4: conversation 'horaires' {held}"]
    assert [suite.name for suite in list_suites(manager.store, LOCAL_TENANT)] == ["first"]
    # Without places, the cases are named by their number; keeping both under a free name is refused as well.
    with pytest.raises(EvalError) as raised:
        create_suite(manager.store, name="first", target_id="default", cases=report.cases, if_exists="keep_both")
    assert raised.value.problems[0].startswith("case 1: conversation 'refunds' is already in suite 'first'")
    # The suite that holds them may take them again (replaced by name, or edited), and another workspace has its own.
    create_suite(manager.store, name="first", target_id="default", cases=report.cases, if_exists="replace")
    replace_suite(manager.store, first.id, name="first", target_id="default", cases=report.cases)
    create_suite(manager.store, tenant="acme", name="second", target_id="default", cases=report.cases)
    # The command line names the file's lines too, and imports nothing.
    path = tmp_path / "talks.csv"
    path.write_bytes(SUITE_CSV)
    assert main(["suites", "import", str(path), "--name", "third", "--target", "default",
                 "--db", str(manager.store.path)]) != 0
    err = capsys.readouterr().err
    assert f"{path} line 2: conversation 'refunds' is already in suite 'first'" in err, err
    assert [suite.name for suite in list_suites(manager.store, LOCAL_TENANT)] == ["first"]


def test_the_rewrite_and_the_generator_see_the_history(manager: CampaignManager, tiny_dataset: Path) -> None:
    from evalcore.targets.target_config import REWRITE_PROMPT
    from evalcore.testing import FakeOpenAIServer

    prefix = REWRITE_PROMPT.split("{")[0]

    def replies(path: str, body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith(prefix):
            return "refund window days on weekends" if "Conversation so far" in prompt else "refund window days"
        return "Thirty days." if len(body["messages"]) <= 2 else "Also on weekends."

    cases = [{"question": "What is the refund window?", "conversation": "r"},
             {"question": "And on weekends?", "conversation": "r"}]
    suite = create_suite(manager.store, name="rewrite", target_id="default", cases=cases)
    with FakeOpenAIServer(replies) as server:
        config = TargetConfig.from_dict({"retriever": "bm25", "generator": "openai", "base_url": server.base_url,
                                         "model": "fake-model", "api_key_env": "", "retries": 0,
                                         "knowledge_base": str(tiny_dataset), "query_transform": "rewrite",
                                         "max_rounds": 1})
        campaign_id = manager.wait(manager.launch(LaunchRequest(suite_id=suite.id, config=config, concurrency=2,
                                                                cache=False)), 60).id
        bodies = [body for path, body, _ in server.requests if path.endswith("/chat/completions")]
    rewrites = [b["messages"][-1]["content"] for b in bodies if b["messages"][-1]["content"].startswith(prefix)]
    assert rewrites[0] == REWRITE_PROMPT.format(question="What is the refund window?", history="")
    assert rewrites[1] == REWRITE_PROMPT.format(
        question="And on weekends?",
        history="Conversation so far:\nUser: What is the refund window?\nAssistant: Thirty days.\n\n")
    results = campaign_results(manager.store, campaign_id)
    assert [r.outcome.queries for r in results] == [("refund window days",), ("refund window days on weekends",)]
    answer_call = next(b for b in bodies if not b["messages"][-1]["content"].startswith(prefix)
                       and len(b["messages"]) > 2)
    assert answer_call["messages"][1:3] == [{"role": "user", "content": "What is the refund window?"},
                                            {"role": "assistant", "content": "Thirty days."}]
    assert results[1].outcome.answer == "Also on weekends."


def test_a_comparison_of_conversations_resamples_whole_conversations(manager: CampaignManager) -> None:
    from evalcore.compare import compare_campaigns
    from evalcore.compare.clusters import cluster_bootstrap, cluster_sign_flip

    expected = {case.question: case.expected_answer for case in parse_suite_csv(SUITE_CSV).cases}
    report = parse_suite_csv(SUITE_CSV, source="suite.csv")
    suite = create_suite(manager.store, name="compared", target_id="default", cases=report.cases)
    ids = []
    for reply in (answer_of, lambda body: expected[body["question"]] if body["turn"] != 2 else "no idea"):
        with LoopbackAgent(reply=reply) as agent:
            request = LaunchRequest(suite_id=suite.id, config=agent_config(agent.url), concurrency=2, cache=False)
            ids.append(manager.wait(manager.launch(request), 60).id)
    comparison = compare_campaigns(manager.store, ids[0], ids[1], resamples=2000)
    coverage = next(m for m in comparison.measures if m.measure == "coverage")
    assert coverage.conversations == 3
    assert coverage.test.startswith("conversation sign-flip randomization")
    a, b = (campaign_results(manager.store, campaign) for campaign in ids)
    diffs = np.array([y.outcome.measures["coverage"] - x.outcome.measures["coverage"]
                      for x, y in zip(a, b, strict=True)])
    labels = [x.question.conversation or f"question {x.question.qid}" for x in a]
    interval = cluster_bootstrap(diffs, labels, resamples=2000, seed=0)
    assert interval is not None
    assert (coverage.ci_low, coverage.ci_high) == (interval.low, interval.high)
    assert coverage.p_value == cluster_sign_flip(diffs, labels, resamples=2000)[0] == 0.25  # 3 clusters: exact
    assert coverage.ci_low_turns is not None
    assert coverage.p_turns is not None
    assert coverage.p_turns < 0.05
    assert coverage.to_dict()["conversations"] == 3
    assert any(note.startswith("2 conversations: the pairs are matched by conversation and turn")
               for note in comparison.notes)
    # Per conversation: its turns side by side, with their stages, and one verdict.
    verdicts = {c.conversation: c for c in comparison.conversations}
    refunds = verdicts["refunds"]
    assert [(t.turn, t.verdict) for t in refunds.turns] == [(1, "better"), (2, "worse"), (3, "better")]
    assert refunds.verdict == "better"
    assert (refunds.better, refunds.worse) == (2, 1)
    assert all(t.stage_a is not None for t in refunds.turns)
    assert all(t.stage_b is not None for t in refunds.turns)
    # Kept in the store and read back the same, in the JSON too.
    again = compare_campaigns(manager.store, ids[0], ids[1], resamples=2000)
    assert again.conversations == comparison.conversations
    assert again.to_dict()["conversations"][0]["turns"][0]["turn"] == 1


def test_conversation_measures_share_passed_and_first_failing_turn() -> None:
    from evalcore.campaigns.conversation_measures import ConversationSummary, TurnLine, conversations_of, turn_passed
    from evalcore.diagnosis import GenerationMarks

    def line(turn: int, stage: str | None, error: str | None = None) -> TurnLine:
        return TurnLine(turn, turn, f"q{turn}", stage, error, turn_passed(stage, error, {}, GenerationMarks(0.3, 0.5)))

    # A turn with nothing to attribute it by is judged by the generation marks against its reference, if any.
    assert turn_passed("unlabeled", None, {"rougel": 0.1, "coverage": 0.6}, GenerationMarks(0.3, 0.5)) is True
    assert turn_passed("unlabeled", None, {"rougel": 0.1, "coverage": 0.4}, GenerationMarks(0.3, 0.5)) is False

    results = conversations_of([("a", line(2, "generation miss")), ("a", line(1, "ok")), ("a", line(3, "ok")),
                                ("b", line(1, "unlabeled")), ("b", line(2, None, "not asked: ...")),
                                ("c", line(1, "ok"))])
    a, b, c = results
    assert [t.turn for t in a.turns] == [1, 2, 3]
    assert (a.passed, a.judged, a.share_passed, a.first_failing_turn, a.first_failure) == (2, 3, 2 / 3, 2,
                                                                                            "generation miss")
    assert (b.passed, b.judged, b.share_passed, b.first_failing_turn, b.first_failure) == (0, 1, 0.0, 2,
                                                                                            "not asked: ...")
    assert (c.share_passed, c.first_failing_turn) == (1.0, None)
    short = TurnLine(1, 1, "q1", "unlabeled", None, False)  # failed on its answer against the reference
    assert conversations_of([("d", short)])[0].first_failure == (
        "answer under its marks against the reference: ROUGE-L F1 and coverage")
    summary = ConversationSummary.of(results)
    assert (summary.conversations, summary.all_passed) == (3, 1)
    assert summary.mean_share_passed == pytest.approx((2 / 3 + 0 + 1) / 3)


def test_the_faces_carry_conversations_and_turns(manager: CampaignManager, capsys: pytest.CaptureFixture[str]) -> None:
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app
    from evalcore.campaigns.export import export_campaign
    from evalcore.cli import main
    from evalcore.notebook.views import CampaignView

    expected = {case.question: case.expected_answer for case in parse_suite_csv(SUITE_CSV).cases}
    with LoopbackAgent(reply=lambda body: None if body["turn"] == 2 else expected[body["question"]]) as agent:
        campaign_id = run_suite(manager, agent, max_rounds=1)
    header, *rows = export_campaign(manager.store, campaign_id, "csv").splitlines()
    assert header.startswith("qid,conversation,turn,question,")
    assert rows[0].startswith("1,refunds,1,What is the refund window?,")
    lines = [json.loads(line) for line in export_campaign(manager.store, campaign_id, "jsonl").splitlines()]
    assert [(line["conversation"], line["turn"]) for line in lines][:2] == [("refunds", 1), ("refunds", 2)]
    table = CampaignView(manager.store, campaign_id).conversations()
    assert list(table[table.conversation == "horaires"].turn) == [1, 2, 3, 4]
    assert set(table[table.conversation == "refunds"].first_failing_turn) == {2}

    db = manager.store.path
    assert main(["campaigns", "conversations", campaign_id, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("2 conversations, 0 with every judged turn passed")
    assert "conversation refunds: 1/3 turns passed (33%), first failing turn 2" in out, out
    assert main(["campaigns", "conversations", campaign_id, "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["first_failing_turn"] for r in data["results"]] == [2, 2]

    app = create_app(db)
    headers = {"Authorization": f"Bearer {create_key(app.state.store, tenant='default', role='viewer')[1]}"}
    with TestClient(app) as client:
        body = client.get(f"/api/v1/campaigns/{campaign_id}/conversations", headers=headers).json()["data"]
        assert body["summary"]["conversations"] == 2
        assert [t["turn"] for t in body["conversations"][1]["turns"]] == [1, 2, 3, 4]
        page = client.get(f"/api/v1/campaigns/{campaign_id}/results", headers=headers).json()["data"]
        assert (page["results"][1]["conversation"], page["results"][1]["turn"]) == ("refunds", 2)


def test_a_target_written_before_conversations_answers_each_turn_alone(manager: CampaignManager,
                                                                       tiny_dataset: Path) -> None:
    from evalcore.targets import TargetAnswer

    class Legacy:
        config = TargetConfig.of(knowledge_base=str(tiny_dataset))

        def check(self) -> None: ...

        def prepare(self, passages: Any, progress: Any = None) -> None: ...

        def answer(self, question: str, qid: int | None = None) -> TargetAnswer:
            return TargetAnswer(answer=f"alone: {question}", retrieved=[])

        def chat_model(self) -> None:
            return None

    suite = create_suite(manager.store, name="legacy", target_id="default",
                         cases=[{"question": "a", "conversation": "c"}, {"question": "b", "conversation": "c"}])
    campaign = manager.wait(manager.launch(LaunchRequest(suite_id=suite.id, target=Legacy())), 60)  # type: ignore[arg-type]
    assert [r.outcome.answer for r in campaign_results(manager.store, campaign.id)] == ["alone: a", "alone: b"]


def test_the_dashboard_shows_conversations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_dashboard import assert_clean, open_section, page_test

    db = tmp_path / "dashboard.db"
    manager = CampaignManager(db)
    expected = {case.question: case.expected_answer for case in parse_suite_csv(SUITE_CSV).cases}
    suite = create_suite(manager.store, name="talks", target_id="default", cases=parse_suite_csv(SUITE_CSV).cases)
    for reply in (answer_of, lambda body: expected[body["question"]]):
        with LoopbackAgent(reply=reply) as agent:
            request = LaunchRequest(suite_id=suite.id, config=agent_config(agent.url), cache=False)
            campaign_id = manager.wait(manager.launch(request), 60).id
    # A conversation judge's verdict kept for the last campaign (the page's first): shown beside its measures.
    verdict = Verdict(judge="conversation_goal", model="m", prompt_hash="h", prompt_version="1", signature="s",
                      threshold=None, score=0.0, reason="The weekend hours were never given.", result="fail")
    manager.store.write(lambda conn: conn.execute(
        "INSERT INTO conversation_verdicts (campaign_id, conversation, judge, verdict, judged_at) "
        "VALUES (?, ?, ?, ?, ?)", (campaign_id, "horaires", "conversation_goal", json.dumps(verdict.to_dict()), 1.0)))
    manager.close()

    at = page_test(str(db), monkeypatch)  # the sample dataset's conversations
    assert_clean(at)
    assert "Conversations" in [h.value for h in at.subheader]
    assert list(at.dataframe[-1].value.turn) == [1, 2, 3]  # the first conversation's turns, in order

    at = page_test(str(db), monkeypatch, "pages/campaigns.py")
    assert "Conversations" in [tab.label for tab in at.tabs]
    open_section(at, "Conversations", "campaign-section")
    assert_clean(at)
    turns = [e.label for e in at.expander if e.label.startswith("Turn ")]
    assert [label.split(" · ")[0] for label in turns] == ["Turn 1", "Turn 2", "Turn 3"]
    table = next(frame.value for frame in at.dataframe if "conversation" in frame.value.columns)
    shown = table["goal reached"].where(table["goal reached"].notna(), "")
    assert dict(zip(table.conversation, shown, strict=True)) == {"refunds": "", "horaires": "fail"}
    assert any(button.label == "Judge the conversations" for button in at.button)

    at = page_test(str(db), monkeypatch, "pages/compare.py")
    assert "Conversations" in [tab.label for tab in at.tabs]
    open_section(at, "Conversations")
    assert_clean(at)
    side_by_side = at.dataframe[-1].value
    assert list(side_by_side.columns[:4]) == ["turn", "question", "answer A", "answer B"]
    assert side_by_side["answer B"].iloc[0] == "30 days"


def test_the_html_report_carries_the_conversations(manager: CampaignManager) -> None:
    from evalcore.campaigns import get_campaign
    from evalcore.compare import compare_campaigns
    from evalcore.compare.report import comparison_report

    expected = {case.question: case.expected_answer for case in parse_suite_csv(SUITE_CSV).cases}
    suite = create_suite(manager.store, name="report", target_id="default", cases=parse_suite_csv(SUITE_CSV).cases)
    ids = []
    for reply in (answer_of, lambda body: expected[body["question"]]):
        with LoopbackAgent(reply=reply) as agent:
            request = LaunchRequest(suite_id=suite.id, config=agent_config(agent.url), cache=False)
            ids.append(manager.wait(manager.launch(request), 60).id)
    comparison = compare_campaigns(manager.store, ids[0], ids[1], resamples=500)
    a, b = (get_campaign(manager.store, campaign) for campaign in ids)
    html = comparison_report(comparison, a, b, {})
    assert "<h2>Conversations</h2>" in html
    assert "resample whole conversations" in html
    assert "<td>horaires</td>" in html


def test_conversation_judges_read_the_whole_conversation_and_keep_their_verdicts(
        manager: CampaignManager, capsys: pytest.CaptureFixture[str]) -> None:
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app
    from evalcore.campaigns import campaign_conversations
    from evalcore.campaigns.talk_judges import judge_conversations
    from evalcore.cli import main
    from evalcore.judges import JudgeResult
    from evalcore.judges.conversation import CONVERSATION_JUDGES, conversation_prompt, transcript
    from evalcore.notebook.views import CampaignView
    from evalcore.testing import FakeOpenAIServer

    contradiction = conversation_prompt("conversation_contradiction").system
    seen: list[str] = []

    def judge(path: str, body: dict[str, Any]) -> str:
        conversation = body["messages"][-1]["content"]
        seen.append(conversation)
        # The refunds conversation's second answer says another number than its first: a contradiction; the goal
        # judge fails the conversation whose second turn has no real answer.
        if body["messages"][0]["content"] == contradiction:
            bad = "30 days" in conversation and "60 days" in conversation
            return json.dumps({"label": "fail" if bad else "pass", "reason": "Turn 2 says 60 days, turn 1 30 days."
                               if bad else "The answers agree."})
        return json.dumps({"label": "fail" if "(no answer)" in conversation else "pass", "reason": "Checked."})

    answers = {"What is the refund window?": "30 days", "Is there a form to fill in?": "Refunds take 60 days."}
    with LoopbackAgent(reply=lambda body: None if body["question"] == "Et le week-end ?"
                       else answers.get(body["question"], f"answer to {body['question']}")) as agent, \
            FakeOpenAIServer(judge) as server:
        campaign_id = run_suite(manager, agent, max_rounds=1, history="references", judge_model="fake-judge",
                                judge_base_url=server.base_url, judge_api_key_env="")
        seen.clear()
        verdicts = judge_conversations(manager.store, campaign_id)
        asked = len(seen)
        # The API asks them again (an admin; a viewer may not), the same verdicts kept.
        app = create_app(manager.store.path)
        with TestClient(app) as client:
            url = f"/api/v1/campaigns/{campaign_id}/conversations/judge"
            viewer = create_key(app.state.store, tenant="default", role="viewer")[1]
            assert client.post(url, headers={"Authorization": f"Bearer {viewer}"}).status_code == 403
            admin = create_key(app.state.store, tenant="default", role="admin")[1]
            answer = client.post(url, headers={"Authorization": f"Bearer {admin}"})
        assert answer.status_code == 200, answer.text
        by_name = {c["conversation"]: c["judges"] for c in answer.json()["data"]["conversations"]}
        assert by_name["refunds"]["conversation_contradiction"]["result"] == "fail"
    assert set(verdicts) == {"refunds", "horaires"}
    assert (all(set(v) == set(CONVERSATION_JUDGES)
                                                              for v in verdicts.values()))
    # Each judge read the whole conversation, turn by turn, with the answers stored.
    assert any(text.startswith("Conversation:\nTurn 1\nUser: What is the refund window?\nAssistant: 30 days\n\n"
                               "Turn 2\nUser: Is there a form to fill in?\nAssistant: Refunds take 60 days.")
               for text in seen), seen
    assert transcript([]) == ""
    assert asked == 4
    assert verdicts["refunds"]["conversation_contradiction"].result == JudgeResult.FAIL
    assert verdicts["refunds"]["conversation_contradiction"].reason == "Turn 2 says 60 days, turn 1 30 days."
    assert verdicts["horaires"]["conversation_contradiction"].result == JudgeResult.PASS
    assert verdicts["horaires"]["conversation_goal"].result == JudgeResult.FAIL  # turn 3 failed: "(no answer)"
    assert verdicts["refunds"]["conversation_goal"].model.startswith("openai:fake-judge@")
    # Kept with the conversation's measures, and read back by every face.
    kept = {c.conversation: c.judges for c in campaign_conversations(manager.store, campaign_id)}
    assert kept == verdicts
    assert main(["campaigns", "conversations", campaign_id, "--db", str(manager.store.path)]) == 0
    out = capsys.readouterr().out
    assert "conversation_contradiction: fail (Turn 2 says 60 days, turn 1 30 days.)" in out, out
    table = CampaignView(manager.store, campaign_id).conversations()
    assert set(table[table.conversation == "refunds"].conversation_contradiction) == {"fail"}
    # A campaign without conversations is refused, with why.
    single = create_suite(manager.store, name="alone", target_id="default", cases=[Case(question="q")])
    with LoopbackAgent(reply=lambda body: "a") as agent:
        alone = manager.wait(manager.launch(LaunchRequest(suite_id=single.id, config=agent_config(agent.url),
                                                          cache=False)), 60).id
    with pytest.raises(EvalError, match="no conversation"):
        judge_conversations(manager.store, alone)
