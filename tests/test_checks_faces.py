"""Each exact check's pass/fail, stored per question and shown where a question is: the Campaigns page, `campaigns
show`, the exports; and checks shown and edited on the Suites page."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from evalcore.campaigns import campaign_results, get_manager
from evalcore.cli import main
from evalcore.metrics import Inputs, score_question
from evalcore.metrics.answer_checks import checks_cell, parse_checks, prepared
from evalcore.suites import Case, create_suite, get_suite, list_suites
from evalcore.testing import FakeOpenAIServer
from tests.conftest import write_dataset
from tests.test_abstention import ABSTAIN, launch, scripted
from tests.test_dashboard import assert_clean, page_test, unescape

CASES = [Case("What is the refund window?", "30 days.", (), ("contains:30 days", r"regex:\d+ ans")),
         Case("How long is the warranty?", "3 years.", (), ("contains_any:three|3 ans", "length:..40")),
         Case("Who founded the company?", "Marie.", (), ())]


def test_each_check_of_a_question_is_scored_on_its_own() -> None:
    checks = prepared(("contains:30 jours", r"regex:\d+ €", "not_contains:je ne sais pas", "number_close:1%"))
    scores = score_question(Inputs(answer="Sous 30 jours, 12 € de frais.", references=["30"], checks=checks))
    assert dict(scores.checks) == {"contains:30 jours": True, r"regex:\d+ €": True,
                                   "not_contains:je ne sais pas": True, "number_close:1%": True}
    assert scores.values["checks_passed"] == 1.0
    chinese = prepared(("contains:30", "contains_any:退款|退货"))
    scores = score_question(Inputs(answer="退款期限为三十天。", checks=chinese))
    assert dict(scores.checks) == {"contains:30": False, "contains_any:退款|退货": True}
    assert scores.values["checks_passed"] == 0.0
    assert dict(score_question(Inputs(answer="no checks")).checks) == {}


def test_a_checks_cell_reads_back_to_the_same_checks() -> None:
    written = ("contains:a;b", r"regex:\d+ €", "json_valid")
    assert tuple(check.text for check in parse_checks(checks_cell(written))) == written


@pytest.fixture
def checked_campaign(tmp_path: Path) -> tuple[str, str]:
    """A suite campaign whose first question passes one check and fails the other, the second passes both."""
    data = write_dataset(tmp_path / "data", ABSTAIN)
    db = str(tmp_path / "checks.db")
    manager = get_manager(db)
    suite = create_suite(manager.store, name="checks", target_id="default", cases=CASES)
    with FakeOpenAIServer(scripted({"refund": "Within 30 days.", "warranty": "Three years.",
                                    "founded": "Marie."})) as server:
        campaign = launch(manager, data, server, suite_id=suite.id)
    manager.close()
    return db, campaign


def test_each_check_is_stored_per_question_and_exported(checked_campaign, monkeypatch, capsys) -> None:
    db, campaign = checked_campaign
    manager = get_manager(db)
    results = campaign_results(manager.store, campaign)
    assert [r.outcome.check_results for r in results] == [
        {"contains:30 days": True, r"regex:\d+ ans": False}, {"contains_any:three|3 ans": True, "length:..40": True},
        {}]
    assert [r.outcome.measures.get("checks_passed") for r in results] == [0.0, 1.0, None]
    manager.close()
    monkeypatch.setenv("EVALCORE_DB", db)
    assert main(["campaigns", "show", campaign]) == 0
    shown = capsys.readouterr().out
    assert "exact checks failed on 1 question:\n  question 1: regex:\\d+ ans\n" in shown
    assert main(["campaigns", "export", campaign, "--format", "csv", "--out", str(Path(db).parent / "out.csv")]) == 0
    rows = list(csv.DictReader(io.StringIO((Path(db).parent / "out.csv").read_text(encoding="utf-8-sig"))))
    assert rows[0]["check_results"] == "pass contains:30 days\nfail regex:\\d+ ans"
    assert rows[2]["check_results"] == ""
    out = Path(db).parent / "out.jsonl"
    assert main(["campaigns", "export", campaign, "--format", "jsonl", "--out", str(out)]) == 0
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert first["check_results"] == {"contains:30 days": True, r"regex:\d+ ans": False}


def test_the_campaigns_page_shows_each_check_of_the_question(checked_campaign, monkeypatch) -> None:
    db, _ = checked_campaign
    at = page_test(db, monkeypatch, "pages/campaigns.py")
    assert_clean(at)
    table = next(df.value for df in at.dataframe if "exact check" in df.value.columns)
    assert list(zip(table["exact check"], table["result"], strict=True)) == [("contains:30 days", "pass"),
                                                                            (r"regex:\d+ ans", "fail")]


def test_the_suites_page_shows_and_edits_the_checks(tmp_path: Path, monkeypatch) -> None:
    db = str(tmp_path / "suites.db")
    suite = create_suite(get_manager(db).store, name="checks", target_id="default", cases=CASES)
    at = page_test(db, monkeypatch, "pages/suites.py")
    at.selectbox[0].set_value(suite.id).run()
    assert list(at.data_editor[0].value["checks"]) == [r"contains:30 days; regex:\d+ ans",
                                                       "contains_any:three|3 ans; length:..40", ""]
    key = f"cases-{suite.id}"
    at.session_state[key] = {"edited_rows": {2: {"checks": "contains:Marie; not_contains:a\\;b"}}, "added_rows": [],
                             "deleted_rows": []}
    next(b for b in at.button if b.label == "Save").click().run()
    assert_clean(at)
    assert get_suite(get_manager(db).store, suite.id).cases[2].checks == ("contains:Marie", "not_contains:a;b")
    at.session_state[key] = {"edited_rows": {0: {"checks": "contain:30 days"}}, "added_rows": [], "deleted_rows": []}
    next(b for b in at.button if b.label == "Save").click().run()
    errors = unescape("\n".join(e.value for e in at.error))
    assert "unknown check" in errors
    assert "case 1: checks" in errors
    [kept] = list_suites(get_manager(db).store)
    assert kept.cases[0].checks == CASES[0].checks  # nothing saved from a table with a bad check


def test_the_suites_page_keeps_a_conversations_turns_through_an_edit(tmp_path: Path, monkeypatch) -> None:
    db = str(tmp_path / "talks.db")
    talk = [Case("How do I reset the router?", "Hold the button.", conversation="router", turn=1),
            Case("And if it still blinks?", "Call support.", conversation="router", turn=2),
            Case("What is the refund window?", "30 days.")]
    suite = create_suite(get_manager(db).store, name="talks", target_id="default", cases=talk)
    at = page_test(db, monkeypatch, "pages/suites.py")
    at.selectbox[0].set_value(suite.id).run()
    table = at.data_editor[0].value
    assert list(table["conversation"]) == ["router", "router", ""]
    assert list(table["turn"]) == ["1", "2", ""]
    at.session_state[f"cases-{suite.id}"] = {"edited_rows": {1: {"expected_answer": "Call support at once."}},
                                             "added_rows": [], "deleted_rows": []}
    next(b for b in at.button if b.label == "Save").click().run()
    assert_clean(at)
    saved = get_suite(get_manager(db).store, suite.id).cases
    assert [(c.conversation, c.turn) for c in saved] == [("router", 1), ("router", 2), (None, None)]
    assert saved[1].expected_answer == "Call support at once."
