"""Verdicts that matter: a tolerance per measure, the tests' disagreement in words, one power line for no change."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from evalcore.cli import main
from evalcore.cli.compare import format_comparison
from evalcore.compare import compare_results
from evalcore.errors import EvalError
from evalcore.metrics import MEASURES
from tests.test_compare import campaign, row

A, B = campaign("A"), campaign("B", {"generator": "openai"})


def rouge_rows(values: list[float]) -> list:
    return [row(qid, f"q{qid}", {"rougel": value}) for qid, value in enumerate(values, start=1)]


def test_a_change_under_the_tolerance_is_the_same_and_the_counts_without_it_are_given() -> None:
    comparison = compare_results(A, rouge_rows([0.3333, 0.2, 0.5, 0.30]), B, rouge_rows([0.3273, 0.5, 0.3, 0.31]),
                                 resamples=200)
    assert comparison.basis == "rougel"
    assert MEASURES["rougel"].tolerance == 0.01
    # 0.3333 → 0.3273 is one word of noise: the same; 0.30 → 0.31 is exactly the smallest meaningful difference.
    assert [q.verdict for q in comparison.questions] == ["same", "better", "worse", "better"]
    assert comparison.strict_verdicts == {"worse": 2, "better": 2}
    assert comparison.tolerance_note == ("a change of rougel under 0.01 is the same (the smallest meaningful "
                                         "difference); counting every difference: better 2, worse 2, same 0")
    exact = comparison.with_tolerances({"rougel": 0})
    assert [q.verdict for q in exact.questions] == ["worse", "better", "worse", "better"]
    assert not exact.tolerance_note
    loose = comparison.with_tolerances({"rougel": 0.5})
    assert {q.verdict for q in loose.questions} == {"same"}
    assert loose.to_dict()["tolerance"] == {"rougel": 0.5}
    with pytest.raises(EvalError, match="tolerance of rougel"):
        comparison.with_tolerances({"rougel": -0.1})


def test_whole_number_and_pass_fail_measures_count_any_change() -> None:
    assert MEASURES["judge.score"].tolerance == 0
    assert MEASURES["sources_found"].tolerance == 0
    assert MEASURES["graded.holes"].tolerance == 0
    assert MEASURES["graded.xdcg@3"].tolerance == 1


def test_too_few_changed_questions_are_stated_in_words_when_the_interval_excludes_zero() -> None:
    a_rows = [row(qid, f"q{qid}", {"ndcg@10": 0.5}) for qid in range(1, 21)]
    b_rows = [row(qid, f"q{qid}", {"ndcg@10": 0.5 - 0.02 * (qid <= 5)}) for qid in range(1, 21)]
    comparison = compare_results(A, a_rows, campaign("B", {"top_k": 10}), b_rows, resamples=2000)
    [ndcg] = comparison.measures
    # Five changes, all the same way: the exact sign-flip test cannot go below 2 / 2^5 (the binomial test's p).
    assert ndcg.p_value == pytest.approx(binomtest(5, 5).pvalue) == pytest.approx(0.0625)
    assert not ndcg.significant
    assert ndcg.ci_high < 0
    assert (ndcg.changed, ndcg.one_way) == (5, True)
    expected = (f"ndcg@10: too few questions changed to be significant (5 of 20: p = 0.0625 is the smallest "
                f"possible), though every change went the same way and the 95% interval [{ndcg.ci_low:+.3g}, "
                f"{ndcg.ci_high:+.3g}] excludes 0: more questions would confirm it")
    assert comparison.disagreements == [expected]
    assert any(line.startswith("tests disagree on ndcg@10: too few") for line in format_comparison(comparison))


def test_measures_with_no_change_get_one_power_line() -> None:
    same = {"precision": 0.5, "recall": 0.5, "mrr": 1.0, "map": 0.5}
    a_rows = [row(qid, f"q{qid}", {**same, "ndcg@10": 0.1 * qid}) for qid in range(1, 8)]
    b_rows = [row(qid, f"q{qid}", {**same, "ndcg@10": 0.1 * qid + 0.01 * (qid % 3)}) for qid in range(1, 8)]
    lines = format_comparison(compare_results(A, a_rows, B, b_rows, resamples=200))
    power = lines[next(i for i, line in enumerate(lines) if line.startswith("power (")) + 1:]
    power = [line for line in power if line.startswith("  ")]
    assert [line.split()[0] for line in power] == ["ndcg@10", "the"]
    assert power[1] == "  the same in A and B on every question (nothing to test): map, mrr, precision, recall"


def test_a_long_measure_name_keeps_the_table_in_columns() -> None:
    long = "graded.total_ground_truth_documents"  # longer than the usual name column
    a_rows = [row(qid, f"q{qid}", {long: 2.0, "ndcg@10": 0.1 * qid}) for qid in range(1, 5)]
    b_rows = [row(qid, f"q{qid}", {long: 3.0, "ndcg@10": 0.2 * qid}) for qid in range(1, 5)]
    lines = format_comparison(compare_results(A, a_rows, B, b_rows, resamples=200))
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("measure ")):][:3]
    assert len({line.index(" n " if i == 0 else " 4 ") for i, line in enumerate(table)}) == 1, table


def test_the_cli_takes_a_tolerance_per_measure_or_for_all(tmp_path, capsys) -> None:
    from evalcore.store import Store
    from tests.test_compare import stored_campaign

    with Store(tmp_path / "evalcore.db") as store:
        stored_campaign(store, "A", [0.50, 0.50, 0.50])
        stored_campaign(store, "B", [0.505, 0.60, 0.40], top_k=10)
    db = str(tmp_path / "evalcore.db")
    assert main(["compare", "A", "B", "--db", db, "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "verdicts: better 1, same 1, worse 1" in out
    assert "counting every difference: better 2, worse 1" in out
    assert main(["compare", "A", "B", "--db", db, "--resamples", "200", "--tolerance", "coverage=0"]) == 0
    assert "verdicts: better 2, worse 1" in capsys.readouterr().out
    assert main(["compare", "A", "B", "--db", db, "--resamples", "200", "--tolerance", "0.2"]) == 0
    assert "verdicts: same 3" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["compare", "A", "B", "--db", db, "--tolerance", "nope=1"])
    assert "expected MEASURE=VALUE or VALUE" in capsys.readouterr().err


def test_the_compare_page_sets_the_tolerance_and_shows_both_counts(tmp_path, monkeypatch) -> None:
    from evalcore.store import Store
    from tests.test_compare import stored_campaign
    from tests.test_dashboard import assert_clean, page_test, picker, unescape

    with Store(tmp_path / "evalcore.db") as store:
        stored_campaign(store, "A", [0.50, 0.50, 0.50])
        stored_campaign(store, "B", [0.505, 0.60, 0.40], top_k=10)
    at = page_test(str(tmp_path / "evalcore.db"), monkeypatch, "pages/compare.py")
    picker(at, "A (baseline)").set_value("A").run()
    picker(at, "B (candidate)").set_value("B").run()
    assert_clean(at)
    counts = {m.label: m.value for m in at.metric}
    assert (counts["better"], counts["worse"], counts["same"]) == ("1", "1", "1")
    assert any("counting every difference: better 2, worse 1, same 0" in unescape(c.value) for c in at.caption)
    at.number_input(key="tolerance-coverage").set_value(0.0).run()
    assert_clean(at)
    counts = {m.label: m.value for m in at.metric}
    assert (counts["better"], counts["worse"], counts["same"]) == ("2", "1", "0")


def test_the_api_gives_both_counts_and_takes_a_tolerance(tmp_path) -> None:
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app
    from evalcore.store import Store
    from tests.test_compare import stored_campaign

    with Store(tmp_path / "evalcore.db") as store:
        stored_campaign(store, "A", [0.50, 0.50, 0.50])
        stored_campaign(store, "B", [0.505, 0.60, 0.40], top_k=10)
    app = create_app(tmp_path / "evalcore.db")
    key = create_key(app.state.store, tenant="default", role="viewer")[1]
    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(app) as client:
        comparison = client.get("/api/v1/compare?a=A&b=B", headers=headers).json()["data"]["comparison"]
        assert comparison["verdicts"] == {"same": 1, "better": 1, "worse": 1}
        assert comparison["verdicts_without_tolerance"] == {"better": 2, "worse": 1}
        assert comparison["tolerance"] == {"coverage": 0.01}
        assert "changed" in comparison["measures"][0]
        exact = client.get("/api/v1/compare?a=A&b=B&tolerance=0", headers=headers).json()["data"]["comparison"]
        assert exact["verdicts"] == {"better": 2, "worse": 1}
        assert exact["tolerance"] == {"coverage": 0.0}
        assert client.get("/api/v1/compare?a=A&b=B&tolerance=-1", headers=headers).status_code == 422


def judged_rows(scores: list[int], coverage: list[float], model: str) -> list:
    from evalcore.campaigns import Outcome, Question, QuestionResult
    from tests.test_compare import verdict

    return [QuestionResult(Question(qid, qid, f"q{qid}"),
                           Outcome(answer="an answer", measures={"judge.score": float(score), "coverage": value},
                                   judges={"score": verdict(score, model)}))
            for qid, (score, value) in enumerate(zip(scores, coverage, strict=True), start=1)]


@pytest.mark.parametrize("b_config", [{"generator": "openai"}, {}])
def test_a_judge_whose_model_differs_decides_no_verdict_and_the_reason_says_so(b_config: dict) -> None:
    a_rows = judged_rows([2, 2, 2, 2], [0.5, 0.5, 0.5, 0.4], "m1")
    b_rows = judged_rows([5, 5, 5, 5], [0.5, 0.5, 0.5, 0.6], "m2")   # another judge model: 5s where A's gave 2s
    comparison = compare_results(A, a_rows, campaign("B", b_config), b_rows, resamples=200)
    assert "judge score used a different model or prompt: its scores are not comparable" in comparison.warnings
    # Coverage decides: three the same, one better; never "better" on all four by the other judge's scores.
    assert [(q.verdict, q.basis) for q in comparison.questions] == [("same", "coverage")] * 3 + [("better",
                                                                                                  "coverage")]
    assert "judge.score decides nothing: its judges differ in model or prompt, so its scores are not comparable" \
        in comparison.basis_reason
    assert comparison.basis != "judge.score"
    # The same judge on both sides decides as before; asked for by name, it decides, with the caution said.
    same = compare_results(A, a_rows, campaign("B", b_config), judged_rows([5, 5, 5, 5], [0.5] * 4, "m1"),
                           resamples=200)
    assert same.basis == "judge.score"
    assert {q.verdict for q in same.questions} == {"better"}
    asked = compare_results(A, a_rows, campaign("B", b_config), b_rows, resamples=200, basis="judge.score")
    assert asked.basis_reason == ("judge.score, as asked (its judges differ in model or prompt: its scores are not "
                                  "comparable)")
