"""Exact checks a question asserts of its answer: hand-made tables in English, French and Chinese, bad checks named."""

from __future__ import annotations

import time

import pytest

from evalcore.errors import EvalError
from evalcore.metrics import MEASURES, Inputs, score_question
from evalcore.metrics.answer_checks import number, parse_checks, passes

# (checks as written, answer, expected answer, passes every check), by hand
TABLE = [
    # English
    ("contains:30 days", "Refunds are accepted within 30 Days.", "", True),
    ("contains:30 days", "Refunds are accepted within thirty days.", "", False),
    ("contains_any:30 days|thirty days", "Refunds are accepted within thirty days.", "", True),
    ("contains_all:refund|30 days", "Returns within 30 days.", "", False),
    ("not_contains:I don't know", "I don't know.", "", False),
    (r"regex:\b\d{2} days\b", "within 30 days", "", True),
    ("length:..20", "Refunds are accepted within 30 days.", "", False),
    ("length:10..40; contains:30", "Refunds are accepted within 30 days.", "", True),
    ("number_close:0.5", "It costs 19.99 dollars.", "20 dollars", True),
    ("number_close:1%", "It weighs 1,030 grams.", "1000 grams", False),  # a comma is a decimal one: 1.03
    ("json_valid", '{"days": 30}', "", True),
    ("json_valid", "days: 30", "", False),
    ('json_schema:{"type": "object", "required": ["days"], "properties": {"days": {"type": "integer"}}}',
     '{"days": 30}', "", True),
    ('json_schema:{"type": "object", "required": ["days"]}', '{"weeks": 4}', "", False),
    # French
    ("contains:30 jours", "Le délai de rétractation est de 30 jours.", "", True),
    ("contains:delai de retractation", "Le DÉLAI de rétractation est de 30 jours.", "", True),  # accents, case
    (r"regex:\d+ €", "La livraison coûte 5 €.", "", True),
    (r"regex:\d+ €", "La livraison est gratuite.", "", False),
    ("not_contains:je ne sais pas", "Je ne sais pas.", "", False),
    ("number_close:0.1", "Le taux est de 3,5 %.", "3,5", True),
    ("number_close:5%", "Environ 104 jours.", "100 jours", True),
    ("contains:30 jours\\; sans frais", "30 jours; sans frais", "", True),  # an escaped semicolon
    # Chinese
    ("contains:退款", "退款期限为30天。", "", True),
    ("contains_all:退款|30天", "退款期限为30天。", "", True),
    ("contains_any:三十天|30天", "退货期限是十五天。", "", False),
    (r"regex:\d+天", "退款期限为30天。", "", True),
    ("number_close:0", "运费是12元。", "12元", True),
    ("length:1..5", "退款期限为30天。", "", False),
    ("not_contains:无法回答", "根据文档，退款期限为30天。", "", True),
]


@pytest.mark.parametrize(("spec", "answer", "expected", "passed"), TABLE)
def test_checks_on_a_hand_made_table_in_three_languages(spec: str, answer: str, expected: str, passed: bool) -> None:
    checks = parse_checks(spec)
    assert all(passes(check, answer, [expected] if expected else []) for check in checks) is passed


def test_a_number_is_read_with_a_comma_or_a_point() -> None:
    assert (number("3,5 %"), number("-2.25"), number("no number")) == (3.5, -2.25, None)


def test_the_checks_passed_measure_is_pass_fail_on_the_questions_that_assert_checks() -> None:
    checks = parse_checks(r"contains:30 jours; regex:\d+ €")
    scored = score_question(Inputs(answer="30 jours, frais de 5 € inclus.", checks=checks))
    assert scored.values["checks_passed"] == 1.0
    assert scored.signatures["checks_passed"].startswith("checks_passed|match:fold|regex:0.1s|version:")
    assert score_question(Inputs(answer="30 jours.", checks=checks)).values["checks_passed"] == 0.0
    assert "checks_passed" not in score_question(Inputs(answer="30 jours.")).values
    assert "checks_passed" not in score_question(Inputs(checks=checks)).values  # no answer: nothing to check
    assert (MEASURES["checks_passed"].binary, MEASURES["checks_passed"].higher_is_better) == (True, True)


def test_a_pattern_that_backtracks_catastrophically_fails_its_check_in_bounded_time() -> None:
    check = parse_checks("regex:^(a+)+$")[0]
    started = time.monotonic()
    assert passes(check, "a" * 40 + "!") is False
    assert time.monotonic() - started < 5   # unbounded, (a+)+ on 40 a's would take hours


@pytest.mark.parametrize(("spec", "message"), [
    ("contain:30 jours", "unknown check"),
    ("contains:", "the check contains needs an argument"),
    ("regex:(unclosed", "the check regex cannot be read"),
    ('json_schema:{"type": "objet"}', "the check json_schema cannot be read"),
    ("json_schema:{type: object}", "the schema is not JSON"),
    ("length:40..10", "the lower bound is above the upper one"),
    ("length:short", "bounds are MIN..MAX"),
    ("number_close:-1", "a tolerance is a number of at least 0"),
])
def test_a_bad_check_is_an_error_naming_where_and_the_check(spec: str, message: str) -> None:
    with pytest.raises(EvalError) as caught:
        parse_checks(f"contains:ok; {spec}", where="suite.csv, row 3, checks")
    assert message in str(caught.value)
    assert caught.value.where == "suite.csv, row 3, checks"
    assert caught.value.found == spec


SUITE_CSV = """question;expected_answer;sources;checks
What is the refund window?;30 days;Terms of Sale;"contains:30 days; not_contains:I don't know"
How long is the warranty?;3 ans;;"regex:\\d+ ans; number_close:0"
Who founded the company?;;;contains_any:Marie|玛丽
"""


def test_checks_from_a_suite_csv_run_in_a_campaign_and_take_part_in_comparisons_and_exports(tmp_path) -> None:
    from evalcore.campaigns import campaign_results, get_manager
    from evalcore.campaigns.export import export_campaign
    from evalcore.compare import compare_campaigns
    from evalcore.suites import create_suite, get_suite
    from evalcore.suites.csvfile import export_suite_csv, parse_suite_csv
    from evalcore.testing import FakeOpenAIServer
    from tests.conftest import write_dataset
    from tests.test_abstention import ABSTAIN, launch, scripted

    report = parse_suite_csv(SUITE_CSV.encode(), source="checks.csv")
    assert report.ok, report.report_lines()
    assert [case.checks for case in report.cases] == [
        ("contains:30 days", "not_contains:I don't know"), (r"regex:\d+ ans", "number_close:0"),
        ("contains_any:Marie|玛丽",)]
    data = write_dataset(tmp_path / "data", ABSTAIN)
    manager = get_manager(tmp_path / "checks.db")
    suite = create_suite(manager.store, name="checks", target_id="default", cases=report.cases)
    assert get_suite(manager.store, suite.id).cases == tuple(report.cases)  # kept as written
    assert parse_suite_csv(export_suite_csv(suite.cases).encode()).cases == report.cases  # and exported back
    with FakeOpenAIServer(scripted({"refund": "Within 30 days.", "warranty": "La garantie dure 3 ans.",
                                    "founded": "玛丽创立了公司。"})) as server:
        good = launch(manager, data, server, suite_id=suite.id)
    with FakeOpenAIServer(scripted({"refund": "I don't know, maybe 30 days.", "warranty": "Deux ans.",
                                    "founded": "Nobody knows."})) as server:
        bad = launch(manager, data, server, suite_id=suite.id)
    assert [r.outcome.measures["checks_passed"] for r in campaign_results(manager.store, good)] == [1.0, 1.0, 1.0]
    assert [r.outcome.measures["checks_passed"] for r in campaign_results(manager.store, bad)] == [0.0, 0.0, 0.0]
    delta = next(m for m in compare_campaigns(manager.store, good, bad).measures if m.measure == "checks_passed")
    assert (delta.mean_a, delta.mean_b, delta.test) == (1.0, 0.0, "mcnemar-exact")
    exported = export_campaign(manager.store, good, "csv")
    assert "checks_passed" in exported.splitlines()[0]
    from evalcore.gates.checks import campaign_checks, parse_gate

    gate = [parse_gate("checks_passed=1.0")]
    assert [c.passed for c in campaign_checks(gate, campaign_results(manager.store, good))] == [True]
    assert [c.passed for c in campaign_checks(gate, campaign_results(manager.store, bad))] == [False]
    manager.close()


def test_a_bad_check_in_a_suite_csv_rejects_its_line_naming_the_check() -> None:
    from evalcore.suites.csvfile import parse_suite_csv

    report = parse_suite_csv(b"question;expected_answer;sources;checks\nQ1;A;;regex:(oops\nQ2;A;;contains:A\n")
    assert [case.question for case in report.cases] == ["Q2"]
    assert report.rejected[0][0] == 2
    assert "the check regex cannot be read" in report.rejected[0][1]
    assert "regex:(oops" in report.rejected[0][1]


def test_checks_from_a_dataset_column_run_in_a_campaign_and_a_bad_one_refuses_the_launch(tmp_path) -> None:
    from evalcore.campaigns import campaign_results, get_manager
    from evalcore.campaigns.launching import LaunchRequest
    from evalcore.targets import TargetConfig
    from evalcore.testing import FakeOpenAIServer
    from tests.conftest import write_dataset
    from tests.test_abstention import ABSTAIN, launch, scripted

    checked = {**ABSTAIN, "queries": {**ABSTAIN["queries"], "answerable": [None, None, None, None],
                                      "checks": ["contains:30 days", r"regex:\d+ ans", None, ""]}}
    data = write_dataset(tmp_path / "data", checked)
    manager = get_manager(tmp_path / "checks.db")
    with FakeOpenAIServer(scripted({"refund": "Within 30 days.", "warranty": "Three years.",
                                    "founded": "Marie."})) as server:
        campaign = launch(manager, data, server)
    measures = {r.question.qid: r.outcome.measures for r in campaign_results(manager.store, campaign)}
    assert (measures[1]["checks_passed"], measures[2]["checks_passed"]) == (1.0, 0.0)
    assert "checks_passed" not in measures[3]
    assert "checks_passed" not in measures[4]
    broken = {**checked, "queries": {**checked["queries"], "checks": ["contains:30 days", "regx:\\d+", None, None]}}
    bad = write_dataset(tmp_path / "bad", broken)
    config = TargetConfig.of(knowledge_base=str(bad), retriever="bm25", generator="extractive")
    with pytest.raises(EvalError) as caught:
        manager.launch(LaunchRequest(config=config, dataset=str(bad)))
    assert "unknown check" in str(caught.value)
    assert "question 2: checks" in str(caught.value)
    manager.close()
