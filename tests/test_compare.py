"""Comparison: verdicts, statistics and warnings on hand-built campaigns; sweep; CLI faces."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from evalcore.campaigns import Campaign, CampaignStatus, Outcome, Question, QuestionResult, RunOptions, Source
from evalcore.campaigns.compared import ComparedRows
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.compare import campaign_pairs as stored_module
from evalcore.compare import compare_campaigns, compare_results, stats, sweep_results
from evalcore.compare import comparison as comparison_module
from evalcore.compare.comparison import Passage
from evalcore.errors import EvalError
from evalcore.judges import Verdict
from evalcore.language.text import counted
from evalcore.store import Store
from evalcore.store.packing import ANSWER, RANKED
from evalcore.targets import Retrieved
from tests.conftest import as_stored_before_packing


def verdict(score, model="m1"):
    return Verdict("score", model, "h1", "1", "judge.score|test", 3.0, score, "r", "pass" if score >= 3 else "fail")


def row(qid, question, measures=None, judge=None, error=None, relevant=None, retrieved=(), answer="an answer",
        expected_sources=(), sources=()):
    asked = Question(qid, qid, question, relevant={int(k): v for k, v in (relevant or {}).items()} or None,
                     expected_sources=tuple(expected_sources))
    outcome = Outcome(answer=None if error else answer, error=error, measures=dict(measures or {}),
                      judges={} if judge is None else {"score": verdict(judge)},
                      retrieved=tuple(Retrieved(p, f"doc {p}", "", 1.0, {}) for p in retrieved),
                      sources=tuple(Source(s["id"], s["title"]) for s in sources))
    return QuestionResult(asked, outcome)


def campaign(cid, config=None, dataset_hash="d1", status="succeeded", source="default"):
    return Campaign(id=cid, name=cid, tenant="default", kind="dataset", source=source, suite_id=None, target_id=None,
                    status=CampaignStatus(status), error=None, total=10, finished=10, failed=0, created_at=0.0,
                    started_at=0.0, ended_at=1.0, heartbeat=1.0, session_finished=0, cancel_requested=False,
                    config={"top_k": 5, "retriever": "bm25", **(config or {})}, dataset_hash=dataset_hash,
                    use_judge=False, judges=(), cache=True, cache_hits=0, options=RunOptions(concurrency=1), stage=None)


A_ROWS = [
    row(1, "Q one", {"coverage": 0.8}, judge=3),
    row(2, "Q two", {"coverage": 0.5}),
    row(3, "Q three", {"sources_found": 1.0}),
    row(4, "Q four", {"coverage": 0.5}, judge=4),
    row(5, "Q five", {"coverage": 1.0}),
    row(7, "Q seven", {"coverage": 0.1}),
    row(8, "Q eight", error="timeout after 240 s"),
    row(9, "Q nine", {"ndcg@10": 0.5}, relevant={"10": 1, "11": 2, "12": 0}, retrieved=(10, 99, 12)),
    row(10, "Q ten"),
]
B_ROWS = [
    row(1, "Q one", {"coverage": 0.6}, judge=5),
    row(2, "Q  two", {"coverage": 0.25}),   # whitespace differences do not make another question
    row(3, "Q three", {"sources_found": 1.0}),
    row(4, "Q four", {"coverage": 0.75}),
    row(6, "Q six", {"coverage": 0.3}),
    row(7, "Q seven changed", {"coverage": 0.9}),
    row(8, "Q eight", {"coverage": 0.4}),
    row(9, "Q nine", {"ndcg@10": 1.0}, relevant={"10": 1, "11": 2, "12": 0}, retrieved=(11, 10)),
    row(10, "Q ten"),
]


@pytest.fixture(scope="module")
def comparison():
    return compare_results(campaign("A"), A_ROWS, campaign("B", {"top_k": 10}), B_ROWS)


def by_question(comparison):
    return {(q.qid, q.question, q.verdict): q for q in comparison.questions}


def test_verdicts_follow_judge_then_coverage_then_sources(comparison):
    verdicts = {(q.qid, q.question): (q.verdict, q.basis) for q in comparison.questions}
    assert verdicts[(1, "Q one")] == ("better", "judge.score")          # coverage fell, the judge decides
    assert verdicts[(2, "Q two")] == ("worse", "coverage")
    assert verdicts[(3, "Q three")] == ("same", "sources_found")
    assert verdicts[(4, "Q four")] == ("better", "coverage")            # judge only on one side
    assert verdicts[(5, "Q five")] == ("removed", None)
    assert verdicts[(6, "Q six")] == ("new", None)
    assert verdicts[(7, "Q seven")] == ("removed", None)                # same id, other text
    assert verdicts[(7, "Q seven changed")] == ("new", None)
    assert verdicts[(8, "Q eight")] == ("better", "error")              # failed in A, answered in B
    assert verdicts[(9, "Q nine")] == ("better", "ndcg@10")
    assert verdicts[(10, "Q ten")] == ("unscored", None)
    assert comparison.verdicts == {"better": 4, "worse": 1, "same": 1, "removed": 2, "new": 2, "unscored": 1}


def test_relevant_passages_entering_and_leaving(comparison):
    nine = next(q for q in comparison.questions if q.qid == 9)
    assert nine.entered == (Passage(11, "doc 11"),)
    assert nine.left == ()                    # 12 has label 0, 99 is not relevant
    assert nine.answer_changed is False


def test_measure_statistics_by_hand(comparison):
    coverage = next(m for m in comparison.measures if m.measure == "coverage")
    # common questions with coverage on both sides: q1 (0.8 -> 0.6), q2 (0.5 -> 0.25), q4 (0.5 -> 0.75)
    assert coverage.n == 3
    assert coverage.mean_a == pytest.approx(0.6)
    assert coverage.mean_b == pytest.approx(1.6 / 3)
    assert coverage.delta == pytest.approx(-0.2 / 3)
    # |sum| of +-0.2 +-0.25 +-0.25 is never below the observed 0.2: every assignment is as extreme.
    assert coverage.p_value == pytest.approx(1.0)
    assert coverage.randomization == "exact"
    assert coverage.significant is False
    assert coverage.binary is False
    assert coverage.ci_low <= coverage.delta <= coverage.ci_high
    assert -0.25 <= coverage.ci_low
    assert coverage.ci_high <= 0.25
    judge = next(m for m in comparison.measures if m.measure == "judge.score")
    assert judge.n == 1
    assert judge.delta == 2.0


def test_binary_measure_uses_exact_mcnemar():
    a_rows = [row(i, f"q{i}", {"sources_found": 0.0}) for i in range(14)]
    b_rows = [row(i, f"q{i}", {"sources_found": 1.0 if i < 11 else 0.0}) for i in range(13)]
    b_rows.append(row(13, "q13", {"sources_found": 0.0}))
    b_rows[12].outcome.measures["sources_found"] = 1.0
    a_rows[0].outcome.measures["sources_found"] = 1.0    # q0 passes on both sides: concordant, not counted
    result = compare_results(campaign("A"), a_rows, campaign("B"), b_rows)
    found = next(m for m in result.measures if m.measure == "sources_found")
    assert found.binary
    assert found.test == "mcnemar-exact"
    assert (found.mcnemar.only_a, found.mcnemar.only_b) == (0, 11)
    assert found.p_value == pytest.approx(binomtest(0, 11, 0.5).pvalue)
    assert found.significant
    assert found.improved


def test_judge_pass_fail_is_compared_with_mcnemar(comparison):
    passes = next(m for m in comparison.measures if m.measure == "judge.score:pass")
    assert passes.binary
    assert passes.n == 1
    assert passes.mcnemar.p_value == 1.0


def test_lower_is_better_measures_improve_when_they_fall():
    a_rows = [row(i, f"q{i}", {"graded.holes": 5.0 + i % 3}) for i in range(30)]
    b_rows = [row(i, f"q{i}", {"graded.holes": 1.0 + i % 2}) for i in range(30)]
    holes = compare_results(campaign("A"), a_rows, campaign("B"), b_rows).measures[0]
    assert holes.delta < 0
    assert holes.significant
    assert holes.improved
    assert not holes.higher_is_better
    assert holes.randomization == "sampled"


def test_the_seed_is_recorded_and_results_repeat():
    a_rows = [row(i, f"q{i}", {"coverage": (i * 37 % 11) / 10}) for i in range(25)]
    b_rows = [row(i, f"q{i}", {"coverage": (i * 53 % 11) / 10}) for i in range(25)]
    first = compare_results(campaign("A"), a_rows, campaign("B"), b_rows, seed=11, resamples=2000).to_dict()
    again = compare_results(campaign("A"), a_rows, campaign("B"), b_rows, seed=11, resamples=2000).to_dict()
    assert first == again
    assert first["seed"] == 11
    assert first["resamples"] == 2000
    json.dumps(first)


def test_warnings(comparison):
    assert comparison.warnings == []
    assert comparison.config_diff == {"top_k": [5, 10]}
    other_judge = [replace(r, outcome=replace(r.outcome, judges={"score": verdict(4, model="m2")})) for r in B_ROWS]
    noisy = compare_results(campaign("A"), A_ROWS, campaign("B", {"top_k": 3, "retriever": "vector"},
                            dataset_hash="d2", status="interrupted", source="other"), other_judge)
    text = " | ".join(noisy.warnings)
    assert "differ in 2 settings (retriever, top_k)" in text
    assert "dataset content differs" in text
    assert "judge score used a different model or prompt" in text
    assert "different question sets" in text
    assert "interrupted" in text
    nothing = compare_results(campaign("A"), A_ROWS[:1], campaign("A2"), B_ROWS[4:5])
    assert any("no question in common" in w for w in nothing.warnings)
    assert not any("identical" in note for note in nothing.notes)   # nothing in common: nothing to attribute
    same = compare_results(campaign("A"), A_ROWS, campaign("A2"), A_ROWS)
    assert same.notes[0] == "the configurations are identical: differences come from non-determinism"
    judged = compare_results(campaign("A"), A_ROWS, replace(campaign("A2"), judges=("claims",)), A_ROWS)
    assert judged.notes[0] == ("the configurations are identical but the judges differ (A: none; B: claims): the "
                               "other differences come from non-determinism")


def test_expected_sources_found_and_lost():
    a = row(1, "q", {"sources_found": 0.0}, expected_sources=["Warranty", "FAQ"],
            sources=[{"id": 1, "title": "Orvane Support FAQ"}])
    b = row(1, "q", {"sources_found": 0.0}, expected_sources=["Warranty", "FAQ"],
            sources=[{"id": 2, "title": "Warranty Policy"}])
    question = compare_results(campaign("A"), [a], campaign("B"), [b]).questions[0]
    assert question.sources_entered == ("Warranty",)
    assert question.sources_left == ("FAQ",)


def test_sweep_table_and_series():
    runs = []
    for k, shift in ((3, 0.0), (5, 0.2), (10, 0.4)):
        rows = [row(i, f"q{i}", {"recall": min(1.0, 0.3 + shift + (i % 5) / 10)}) for i in range(20)]
        runs.append((campaign(f"c{k}", {"top_k": k}), rows))
    sweep = sweep_results(runs, resamples=2000)
    assert sweep.key == "top_k"
    assert sweep.warnings == []
    assert sweep.baseline == "c3"
    assert [r.value for r in sweep.table] == [3, 5, 10]
    series = sweep.series["recall"]
    assert [p["x"] for p in series] == [3, 5, 10]
    assert series[0]["mean"] < series[1]["mean"] < series[2]["mean"]
    assert all(p["ci_low"] <= p["mean"] <= p["ci_high"] for p in series)
    assert all(p["count"] == 20 for p in series)
    assert sweep.table[0].deltas is None
    assert sweep.table[2].deltas["recall"].significant
    mixed = sweep_results([runs[0], (campaign("x", {"top_k": 5, "retriever": "vector"}), runs[1][1])], resamples=500)
    assert mixed.key is None
    assert "vary 2" in mixed.warnings[0]
    assert [r.value for r in mixed.table] == ["retriever=bm25 top_k=3", "retriever=vector top_k=5"]
    with pytest.raises(EvalError):
        sweep_results(runs[:1])


@pytest.fixture
def stored(monkeypatch, tmp_path):
    """Campaigns served through the campaigns module's contract functions, as the comparison reads them (the
    command line's --db, e.db, an empty store)."""
    Store(tmp_path / "e.db").close()
    records = {"A": (campaign("A"), A_ROWS), "B": (campaign("B", {"top_k": 10}), B_ROWS),
               "C": (campaign("C", {"top_k": 20}), B_ROWS)}

    def get_campaign(store, cid, tenant=None):
        if cid not in records:
            raise EvalError(f"no campaign {cid!r}")
        return records[cid][0]

    monkeypatch.setattr(comparison_module, "get_campaign", get_campaign)
    monkeypatch.setattr(stored_module, "get_campaign", get_campaign)   # compare_campaigns reads the pair there
    monkeypatch.setattr("evalcore.campaigns.find_campaign", lambda store, text, tenant=None: get_campaign(store, text))
    monkeypatch.setattr(comparison_module, "campaign_results",
                        lambda store, cid, offset=0, limit=None, detail=True: records[cid][1])
    monkeypatch.setattr(comparison_module, "read_compared", lambda store, cid, **_: ComparedRows.of(records[cid][1]))
    return records


def test_compare_campaigns_loads_through_the_contract(stored, tmp_path):
    # These campaigns exist only behind the contract, not in the database: nothing is kept for them.
    with Store(tmp_path / "e.db") as store:
        result = compare_campaigns(store, "A", "B", resamples=500)
        assert store.read("SELECT count(*) AS n FROM comparisons")[0]["n"] == 0
    assert result.a.id == "A"
    assert result.b.id == "B"
    assert result.verdicts["better"] == 4


def test_cli_compare_text_json_and_sweep(stored, tmp_path, capsys):
    db = str(tmp_path / "e.db")
    assert main(["compare", "A", "B", "--db", db, "--resamples", "500"]) == 0
    text = capsys.readouterr().out
    assert "config top_k: 5 -> 10" in text
    assert "coverage" in text
    assert "better   q1 Q one" in text
    assert main(["compare", "A", "B", "--json", "--db", db, "--resamples", "500"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdicts"]["worse"] == 1
    assert data["seed"] == 0
    assert main(["compare", "A", "B", "C", "--db", db, "--resamples", "500"]) == 0
    assert "sweep over top_k" in capsys.readouterr().out
    assert main(["compare", "A", "nope", "--db", db]) == 2
    assert "no campaign 'nope'" in capsys.readouterr().err


def test_a_campaign_compared_with_itself_is_all_same_and_never_significant():
    result = compare_results(campaign("A"), A_ROWS, campaign("A"), A_ROWS, resamples=500)
    assert set(result.verdicts) <= {"same", "unscored"}
    assert all(m.delta == 0 for m in result.measures)
    assert all(m.p_value == 1.0 for m in result.measures)
    assert all(not m.significant for m in result.measures)
    assert result.notes == [("A and B are the same campaign: every question is the same, no difference can be "
                             "significant")]


def test_no_common_question_has_no_measure_and_no_misleading_note():
    result = compare_results(campaign("A"), A_ROWS[:2], campaign("B"), [row(50, "Other", {"coverage": 1.0})])
    assert result.measures == []
    assert result.verdicts == {"removed": 2, "new": 1}
    assert any("no question in common" in w for w in result.warnings)
    assert not any("identical" in n for n in result.notes)
    other_data = compare_results(campaign("A"), A_ROWS, campaign("B", dataset_hash="d2"), A_ROWS)
    assert not any("identical" in n for n in other_data.notes)   # the data changed, not chance


def test_one_question_has_no_interval_and_is_not_significant():
    result = compare_results(campaign("A"), [row(1, "Q", {"coverage": 0.0})], campaign("B"),
                             [row(1, "Q", {"coverage": 1.0})])
    (entry,) = result.measures
    assert (entry.n, entry.delta, entry.ci_low, entry.ci_high) == (1, 1.0, None, None)
    assert entry.p_value == 1.0
    assert not entry.significant


def test_a_measure_on_one_side_only_is_named_in_the_notes():
    result = compare_results(campaign("A"), [row(1, "Q", {"coverage": 0.5})], campaign("B", {"top_k": 10}),
                             [row(1, "Q", {"coverage": 0.5}, judge=4)])
    assert [m.measure for m in result.measures] == ["coverage"]
    assert "judge.score is measured only in B (1 question): not compared" in result.notes


def test_a_failed_question_names_the_error_and_moves_no_passage():
    a = [row(1, "Q", {"ndcg@10": 1.0}, relevant={"10": 1}, retrieved=(10,), expected_sources=("doc",),
             sources=({"id": "10", "title": "doc 10"},))]
    b = [row(1, "Q", error="HTTP 500", relevant={"10": 1}, expected_sources=("doc",))]
    (entry,) = compare_results(campaign("A"), a, campaign("B"), b).questions
    assert (entry.verdict, entry.basis, entry.error_b) == ("worse", "error", "HTTP 500")
    assert entry.left == ()
    assert entry.sources_left is None


@pytest.mark.parametrize("resamples", [0, -5])
def test_resamples_below_one_are_refused(resamples):
    with pytest.raises(EvalError, match="resamples"):
        compare_results(campaign("A"), A_ROWS, campaign("B"), B_ROWS, resamples=resamples)
    with pytest.raises(EvalError, match="resamples"):
        sweep_results([(campaign("A"), A_ROWS), (campaign("B"), B_ROWS)], resamples=resamples)


def test_cli_refuses_zero_resamples_and_shows_failures(stored, tmp_path, capsys):
    db = str(tmp_path / "e.db")
    with pytest.raises(SystemExit) as raised:
        main(["compare", "A", "B", "--db", db, "--resamples", "0"])
    assert raised.value.code == 2
    assert "at least 1" in capsys.readouterr().err
    assert main(["compare", "A", "B", "--db", db, "--resamples", "500"]) == 0
    assert "[failed in A: timeout after 240 s]" in capsys.readouterr().out


# --- comparisons kept in the store -----------------------------------------------------------------

def stored_campaign(store, cid, coverage, *, status="succeeded", top_k=5):
    """A finished campaign written straight through the store's schema: one question per coverage value."""
    def insert(conn):
        conn.execute("INSERT INTO campaigns (id, tenant, kind, source, status, total, finished, failed, created_at, "
                     "ended_at, config, dataset_hash) VALUES (?, 'default', 'dataset', 'default', ?, ?, ?, 0, 0, 1.0, "
                     "?, 'd1')", (cid, status, len(coverage), len(coverage), json.dumps({"top_k": top_k})))
        conn.executemany("INSERT INTO campaign_questions (campaign_id, position, qid, question, refs, "
                         "expected_sources) "
                         "VALUES (?, ?, ?, ?, '[]', '[]')", [(cid, i, i, f"q{i}") for i in range(len(coverage))])
        conn.executemany("INSERT INTO results (campaign_id, position, qid, answer, retrieved, sources, measures, "
                         "signatures, judges, created_at) VALUES (?, ?, ?, 'an answer', '[]', '[]', ?, '{}', '{}', 0)",
                         [(cid, i, i, json.dumps({"coverage": c, "recall": 1.0 - c})) for i, c in enumerate(coverage)])
    store.write(insert)


@pytest.fixture
def two_stored(tmp_path):
    with Store(tmp_path / "e.db") as store:
        coverage = [(i * 37 % 11) / 10 for i in range(30)]
        stored_campaign(store, "A", coverage)
        stored_campaign(store, "B", [min(1.0, max(0.0, c + (i % 3 - 1) / 10)) for i, c in enumerate(coverage)],
                        top_k=10)
        yield store


def kept(store):
    return [(r["a_id"], r["b_id"], r["seed"]) for r in store.read("SELECT * FROM comparisons ORDER BY seed")]


def test_a_comparison_is_computed_once_and_read_back(two_stored, monkeypatch):
    first = compare_campaigns(two_stored, "A", "B", resamples=500)
    assert kept(two_stored) == [("A", "B", "0")]

    def no_results(*args, **kwargs):
        raise AssertionError("a stored comparison must not read the results again")

    monkeypatch.setattr(comparison_module, "campaign_results", no_results)
    monkeypatch.setattr(comparison_module, "read_compared", no_results)
    again = compare_campaigns(two_stored, "A", "B", resamples=500)
    assert again.to_dict() == first.to_dict()
    assert again.paired.keys() == first.paired.keys() == {"coverage", "recall"}
    for name, values in first.paired.items():
        assert all((x == y).all() for x, y in zip(values, again.paired[name], strict=False))
        assert all(x.dtype == y.dtype for x, y in zip(values, again.paired[name], strict=False))
    # Another effect size only changes the questions needed: no recomputation either.
    wider = compare_campaigns(two_stored, "A", "B", resamples=500, effect=0.1)
    assert [m.n_required for m in wider.measures] == [m.with_effect(0.1).n_required for m in first.measures]
    assert wider.effect == 0.1
    assert all(m.effect == 0.1 for m in wider.measures)


def test_a_changed_campaign_is_compared_again_and_replaces_what_was_kept(two_stored, monkeypatch):
    first = compare_campaigns(two_stored, "A", "B", resamples=500)
    two_stored.write(lambda conn: conn.execute(
        "UPDATE results SET measures = '{\"coverage\": 1.0, \"recall\": 0.0}' WHERE campaign_id = 'B'"))
    assert compare_campaigns(two_stored, "A", "B", resamples=500).to_dict() == first.to_dict()   # same version
    two_stored.write(lambda conn: conn.execute("UPDATE campaigns SET ended_at = 2.0 WHERE id = 'B'"))   # e.g. retried
    changed = compare_campaigns(two_stored, "A", "B", resamples=500)
    assert changed.to_dict() != first.to_dict()
    assert next(m for m in changed.measures if m.measure == "coverage").mean_b == 1.0
    assert kept(two_stored) == [("A", "B", "0")]
    compare_campaigns(two_stored, "A", "B", seed=7, resamples=500)
    compare_campaigns(two_stored, "B", "A", resamples=500)
    assert kept(two_stored) == [("A", "B", "0"), ("B", "A", "0"), ("A", "B", "7")]
    two_stored.write(lambda conn: conn.execute("DELETE FROM campaigns WHERE id = 'B'"))
    assert kept(two_stored) == []


def test_a_running_campaign_is_compared_but_not_kept(two_stored):
    two_stored.write(lambda conn: conn.execute("UPDATE campaigns SET status = 'running', heartbeat = 9e9 "
                                               "WHERE id = 'B'"))
    assert compare_campaigns(two_stored, "A", "B", resamples=500).b.status == "running"
    assert kept(two_stored) == []


@pytest.mark.parametrize("seed", [-1, 1.5, True])
def test_a_seed_numpy_cannot_take_is_refused(seed):
    with pytest.raises(EvalError, match="seed"):
        compare_results(campaign("A"), A_ROWS, campaign("B"), B_ROWS, seed=seed)


def test_cli_compare_shows_power_and_takes_an_effect(stored, tmp_path, capsys):
    db = str(tmp_path / "e.db")
    assert main(["compare", "A", "B", "--db", db, "--resamples", "500", "--effect", "0.1"]) == 0
    text = capsys.readouterr().out
    assert "power (paired t, 80% at alpha 0.05)" in text
    assert "questions needed to see ±0.1" in text
    coverage = next(line for line in text.splitlines() if line.startswith("  coverage"))
    assert "n = 3 can detect ±" in coverage
    assert "±0.1 needs" in coverage
    assert "1 paired question: no test can detect a difference" in text
    assert "warning: no difference found on coverage, but with n = 3" in text
    assert main(["compare", "A", "B", "--json", "--db", db, "--resamples", "500", "--effect", "0.1"]) == 0
    data = json.loads(capsys.readouterr().out)
    entry = next(m for m in data["measures"] if m["measure"] == "coverage")
    assert data["effect"] == 0.1
    assert entry["effect"] == 0.1
    assert entry["n_required"] > 3
    assert entry["mde"] > 0.1
    assert data["power_warnings"]
    assert data["power"] == 0.8
    assert data["alpha"] == 0.05
    with pytest.raises(SystemExit) as raised:
        main(["compare", "A", "B", "--db", db, "--effect", "0"])
    assert raised.value.code == 2
    assert "expected a positive number, found '0'" in capsys.readouterr().err


def test_api_compare_reports_power_for_an_effect(two_stored, tmp_path):
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    app = create_app(two_stored.path)
    key = create_key(app.state.store, tenant="default", role="viewer")[1]
    with TestClient(app) as client:
        answer = client.get("/api/v1/compare?a=A&b=B&effect=0.05", headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 200, answer.text
        comparison = answer.json()["data"]["comparison"]
        expected = compare_campaigns(two_stored, "A", "B", effect=0.05).to_dict()
        assert comparison["effect"] == 0.05
        assert comparison["power_warnings"] == expected["power_warnings"]
        for got, want in zip(comparison["measures"], expected["measures"], strict=False):
            assert {k: got[k] for k in ("mde", "mde_bootstrap", "n_required", "effect", "sd_diff", "power_note")} == \
                {k: want[k] for k in ("mde", "mde_bootstrap", "n_required", "effect", "sd_diff", "power_note")}
        bad = client.get("/api/v1/compare?a=A&b=B&effect=0", headers={"Authorization": f"Bearer {key}"})
        assert bad.status_code == 422
        assert "effect" in bad.text


def test_compare_page_shows_what_each_measure_could_detect(two_stored, monkeypatch):
    from tests.test_dashboard import assert_clean, chart_titles, open_section, page_test, picker, unescape, vega_charts

    at = page_test(str(two_stored.path), monkeypatch, "pages/compare.py")
    assert_clean(at)
    comparison = compare_campaigns(two_stored, picker(at, "A (baseline)").value, picker(at, "B (candidate)").value)
    table = next(df.value for df in at.dataframe if "mde" in df.value.columns).set_index("measure")
    for m in comparison.measures:
        assert table.loc[m.measure, "mde"] == (f"±{m.mde:.3g}" if m.mde is not None else "")
        assert table.loc[m.measure, "n_required"] == (f"{m.n_required:,}" if m.n_required else "")
    assert "None" not in table.astype(str).to_numpy()  # nothing missing is shown as the word None
    # One warning line names the measures; the reasons, one per measure, are folded under it.
    [summary] = [unescape(w.value) for w in at.warning if w.value.startswith("No difference found on")]
    weak = [m.measure for m in comparison.measures if m.under_powered]
    assert summary.startswith(f"No difference found on {counted(len(weak), 'measure')} ")
    assert summary.endswith(", ".join(weak) + ".")
    [folded] = [e for e in at.expander if e.label.startswith("What each of them could have seen")]
    shown = unescape("\n".join(m.value for m in folded.markdown))
    assert all(w in shown for w in comparison.power_warnings)
    assert comparison.power_warnings
    [deltas] = [data for title, _, data in vega_charts(at) if title.startswith("B − A per measure")]
    assert deltas["detects"].str.startswith("n = 30 can detect ±").any()
    assert deltas["needs"].str.startswith("±0.02 needs ").any()
    at.number_input(key="effect").set_value(0.5).run()
    assert_clean(at)
    table = next(df.value for df in at.dataframe if "mde" in df.value.columns).set_index("measure")
    coverage = next(m for m in comparison.measures if m.measure == "coverage")
    assert table.loc["coverage", "n_required"] == f"{coverage.with_effect(0.5).n_required:,}"
    [deltas] = [data for title, _, data in vega_charts(at) if title.startswith("B − A per measure")]
    assert deltas["needs"].str.startswith("±0.5 needs ").any()
    # No ndcg@10.
    assert [title.split(" per ")[0] for title in chart_titles(open_section(at, "Per question"))] == ["recall"]
    # No failure-stage chart: these rows were stored without stages (as before attribution existed).
    assert not chart_titles(open_section(at, "Failure stages"))
    assert any(c.value.startswith("No failure stage: neither campaign has one") for c in at.caption)


def basis_rows(ndcg: float, rouge: float, judge: float | None = None) -> list:
    return [row(i, f"q{i}", {"ndcg@10": ndcg + i / 100, "rougel": rouge + i / 100}, judge=judge) for i in range(6)]


def test_the_verdict_basis_follows_what_changed():
    # A generator change: ROUGE-L decides (no AI score), even though nDCG@10 moved the other way.
    generation = compare_results(campaign("A", {"generator": "extractive"}), basis_rows(0.8, 0.2),
                                 campaign("B", {"generator": "openai"}), basis_rows(0.5, 0.6))
    assert generation.basis == "rougel"
    assert {q.verdict for q in generation.questions} == {"better"}
    assert "generation-side" in generation.basis_reason
    assert "generator" in generation.basis_reason
    # With the AI score on both sides, it decides a generation-side change.
    judged = compare_results(campaign("A", {"temperature": 0.0}), basis_rows(0.8, 0.6, judge=4),
                             campaign("B", {"temperature": 0.7}), basis_rows(0.8, 0.2, judge=2))
    assert judged.basis == "judge.score"
    assert {q.verdict for q in judged.questions} == {"worse"}
    # A retrieval change: nDCG@10 decides, whatever the answers did.
    retrieval = compare_results(campaign("A", {"retriever": "bm25"}), basis_rows(0.8, 0.2),
                                campaign("B", {"retriever": "vector"}), basis_rows(0.5, 0.6))
    assert retrieval.basis == "ndcg@10"
    assert {q.verdict for q in retrieval.questions} == {"worse"}
    assert retrieval.to_dict()["basis_reason"].startswith("ndcg@10: a retrieval-side setting changed (retriever)")
    # Asked for: that measure alone; one absent from both sides is refused, naming those present.
    asked = compare_results(campaign("A", {"retriever": "bm25"}), basis_rows(0.8, 0.2),
                            campaign("B", {"retriever": "vector"}), basis_rows(0.5, 0.6), basis="rougel")
    assert asked.basis == "rougel"
    assert {q.verdict for q in asked.questions} == {"better"}
    with pytest.raises(EvalError, match="no common question has coverage") as refused:
        compare_results(campaign("A"), basis_rows(0.8, 0.2), campaign("B"), basis_rows(0.5, 0.6), basis="coverage")
    assert "ndcg@10" in refused.value.expected


def test_a_lower_is_better_basis_calls_a_fall_better():
    a_rows = [row(1, "q", {"graded.holes": 3.0})]
    b_rows = [row(1, "q", {"graded.holes": 1.0})]
    (entry,) = compare_results(campaign("A"), a_rows, campaign("B"), b_rows, basis="graded.holes").questions
    assert (entry.verdict, entry.basis) == ("better", "graded.holes")


def test_cli_compare_prints_the_basis_and_takes_one(stored, tmp_path, capsys):
    db = str(tmp_path / "e.db")
    assert main(["compare", "A", "B", "--db", db, "--resamples", "500"]) == 0
    # top_k is the sampling setting: a generation-side change, judged by the AI score both campaigns have.
    assert "(by judge.score: a generation-side setting changed (top_k))" in capsys.readouterr().out
    assert main(["compare", "A", "B", "--db", db, "--resamples", "500", "--basis", "coverage"]) == 0
    assert "(by coverage, as asked)" in capsys.readouterr().out


def test_a_campaign_that_ends_is_compared_with_the_previous_one_in_the_background(tmp_path, tiny_dataset):
    from evalcore.campaigns import CampaignManager
    from evalcore.compare import compare_with_previous
    from tests.test_campaigns import FakeTarget

    manager = CampaignManager(tmp_path / "after.db")
    manager.after_each(compare_with_previous)
    manager.after_each(compare_with_previous)  # once per hook
    try:
        first = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=FakeTarget()))
        manager.wait(first, timeout=30)
        second = manager.launch(LaunchRequest(dataset=str(tiny_dataset), target=FakeTarget()))
        manager.wait(second, timeout=30)
        deadline = time.monotonic() + 30
        while not kept(manager.store) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert kept(manager.store) == [(first, second, "0")]  # the first had nothing before it

        def no_results(*args, **kwargs):
            raise AssertionError("the comparison was kept: nothing to read again")

        original = comparison_module.campaign_results
        comparison_module.campaign_results = no_results
        try:
            assert compare_campaigns(manager.store, first, second).verdicts
        finally:
            comparison_module.campaign_results = original
    finally:
        manager.close()


def test_every_measure_is_resampled_with_the_same_questions():
    # ndcg@10 on every question that has a measure (one failed in both is left out), rougel on a third of them.
    rng = __import__("random").Random(4)
    a_rows, b_rows = [], []
    for n in range(60):
        values = [{"ndcg@10": round(rng.random(), 2), **({"rougel": round(rng.random(), 2)} if n % 3 == 0 else {})}
                  for _ in range(2)]
        a_rows.append(row(n, f"Q{n}", values[0]))
        b_rows.append(row(n, f"Q{n}", values[1]))
    a_rows.append(row(99, "Q99", error="timeout"))
    b_rows.append(row(99, "Q99", error="timeout"))
    result = compare_results(campaign("A"), a_rows, campaign("B", {"top_k": 10}), b_rows, resamples=500, seed=2)
    deltas = {m.measure: m for m in result.measures}
    diffs = {name: paired.b - paired.a for name, paired in result.paired.items()}
    alone = stats.bootstrap_ci(diffs["ndcg@10"], resamples=500, seed=2)
    assert (deltas["ndcg@10"].ci_low, deltas["ndcg@10"].ci_high) == (pytest.approx(alone[0], abs=1e-12),
                                                                     pytest.approx(alone[1], abs=1e-12))
    table = np.column_stack([diffs["ndcg@10"], np.full(60, np.nan)])
    table[::3, 1] = diffs["rougel"]
    shared = stats.bootstrap_table(table, resamples=500, seed=2)[1]
    assert (deltas["rougel"].ci_low, deltas["rougel"].ci_high) == (shared.low, shared.high)


def written_campaign(store, cid, shift, *, top_k):
    """A finished campaign written by the runner's own writer: ranked lists with scores, graded labels, judges."""
    from evalcore.campaigns.questions import insert_questions
    from evalcore.campaigns.result_rows import ResultWriter

    asked = [Question(i, i, f"q{i}", relevant={i: 2, i + 1: 1}, references=("ref",)) for i in range(12)]
    outcomes = [Outcome(answer=f"answer {i}",
                        measures={"ndcg@10": ((i + shift) % 5) / 4, "rougel": (i * shift % 7) / 7},
                        judges={"score": verdict(1 + (i + shift) % 5)},
                        retrieved=tuple(Retrieved(p, f"doc-{p:09d}", f"text {p}", 1.0 / (k + 1), {"bm25": 9.0 - k})
                                        for k, p in enumerate(range(i + shift % 2, i + 4))))
                for i in range(12)]
    writer = ResultWriter(store, cid)
    rows, passages, signatures = writer.rows(list(zip(asked, outcomes, strict=False)))

    def insert(conn):
        conn.execute("INSERT INTO campaigns (id, tenant, kind, source, status, total, finished, failed, created_at, "
                     "ended_at, config, dataset_hash) VALUES (?, 'default', 'dataset', 'default', 'succeeded', 12, 0, "
                     "0, 0, 1.0, ?, 'd1')", (cid, json.dumps({"top_k": top_k})))
        insert_questions(conn, cid, asked)
        writer.write(conn, rows, passages, signatures, {})

    store.write(insert)


# The rows written_pair's callers change to older shapes: A's first question's ranked list, B's second question's
# measures and B's sixth question's answer are written to their plain columns, as before packed rows.
OLDER_ROWS = (("A", 0, (RANKED,)), ("B", 1, ()), ("B", 5, (ANSWER,)))


def written_pair(store, edits):
    """Campaigns A and B written by the runner's writer, then rows changed to shapes older versions stored
    (`edits`: SQL statements with their parameters; the rows of OLDER_ROWS first stored as before packed rows)."""
    written_campaign(store, "A", 0, top_k=5)
    written_campaign(store, "B", 1, top_k=10)

    def change(conn) -> None:
        for campaign, position, drop in OLDER_ROWS:
            as_stored_before_packing(conn, "campaign_id = ? AND position = ?", (campaign, position), drop)
        for sql, params in edits:
            conn.execute(sql, params)

    store.write(change)


def test_a_comparison_reads_less_of_the_results_and_finds_the_same(tmp_path):
    from evalcore.campaigns import campaign_results, get_campaign

    with Store(tmp_path / "e.db") as store:
        written_campaign(store, "A", 0, top_k=5)
        written_campaign(store, "B", 1, top_k=10)
        full = [campaign_results(store, cid) for cid in ("A", "B")]
        lean = [campaign_results(store, cid, detail=False) for cid in ("A", "B")]
        expected = compare_results(get_campaign(store, "A"), full[0], get_campaign(store, "B"), full[1], resamples=300)
        result = compare_campaigns(store, "A", "B", resamples=300)
    assert result.questions == expected.questions
    assert result.measures == expected.measures
    assert any(q.entered or q.left for q in result.questions)
    for whole, read in zip(full[0], lean[0], strict=False):
        assert [(h.pid, h.title, h.text) for h in read.outcome.retrieved] == \
               [(h.pid, h.title, h.text) for h in whole.outcome.retrieved]
        assert whole.outcome.retrieved[1].score == 0.5
        assert read.outcome.retrieved[1].score == 0.0
        assert (read.question, read.outcome.measures, read.outcome.judges) == \
               (whole.question, whole.outcome.measures, whole.outcome.judges)
        assert whole.outcome.signatures
        assert not read.outcome.signatures


def test_a_comparison_decodes_every_stored_shape_of_a_row_as_a_row_by_row_read_does(tmp_path):
    # A comparison decodes each JSON column for every row at once; rows as older versions stored them (a ranked list
    # of whole passages, a measure under its former name, a context of its own, sources kept empty or left out) and
    # a failed question must read exactly as a row-by-row read gives them, and compare to the last digit the same.
    from evalcore.campaigns import campaign_results, get_campaign

    old_ranked = json.dumps([{"pid": 7, "title": "doc-000000007", "text": "text 7", "score": 0.9, "stages": {}}])
    context = json.dumps([{"pid": 3, "title": "doc-000000003", "text": "text 3", "score": 0.5, "stages": {}}])
    sources = json.dumps([{"id": 3, "title": "doc-000000003", "file_name": "a.pdf"}])
    with Store(tmp_path / "e.db") as store:
        written_pair(store, [
            ("UPDATE results SET retrieved = ? WHERE campaign_id = 'A' AND position = 0", (old_ranked,)),
            ("UPDATE results SET measures = ? WHERE campaign_id = 'B' AND position = 1",
             ('{"ndcg@10":0.25,"graded.total_groundtruth_documents":2,"rougel":null}',)),
            ("UPDATE results SET sources = '[]', context = ? WHERE campaign_id = 'A' AND position = 2", (context,)),
            ("UPDATE results SET sources = '', context = ? WHERE campaign_id = 'B' AND position = 3", (context,)),
            ("UPDATE results SET sources = ? WHERE campaign_id = 'A' AND position = 4", (sources,)),
            ("UPDATE results SET error = 'timeout', answer = NULL WHERE campaign_id = 'B' AND position = 5", ()),
        ])
        full = [campaign_results(store, cid) for cid in ("A", "B")]
        lean = [campaign_results(store, cid, detail=False) for cid in ("A", "B")]
        expected = compare_results(get_campaign(store, "A"), full[0], get_campaign(store, "B"), full[1])
        result = compare_campaigns(store, "A", "B")
    for whole, read in zip(full[0] + full[1], lean[0] + lean[1], strict=True):
        assert [(h.pid, h.title, h.text) for h in read.outcome.retrieved] == \
               [(h.pid, h.title, h.text) for h in whole.outcome.retrieved]
        assert replace(read.outcome, retrieved=(), context=()) == \
            replace(whole.outcome, retrieved=(), context=(), signatures={})
        assert (read.question, read.attempts) == (whole.question, whole.attempts)
    assert lean[1][1].outcome.measures["graded.total_ground_truth_documents"] == 2
    assert lean[0][2].outcome.sources == ()
    assert lean[0][4].outcome.sources[0].file_name == "a.pdf"
    assert result.to_dict() == expected.to_dict()
    assert all(np.array_equal(x, y) for name in expected.paired
               for x, y in zip(result.paired[name], expected.paired[name], strict=True))


def same_rows(read, built):
    """Two ComparedRows hold the same questions (verdicts compared in their JSON shape)."""
    from evalcore.judges.verdict import verdicts_json

    for name in ("keys", "texts", "answers", "errors", "diagnosis", "queries", "values", "relevant", "found",
                 "has_sources", "setups"):
        assert getattr(read, name) == getattr(built, name), name
    assert [[read.passages[k] for k in keys] for keys in read.ranked] == \
        [[built.passages[k] for k in keys] for keys in built.ranked]
    assert [verdicts_json(v) for v in read.judges] == [verdicts_json(v) for v in built.judges]


def test_the_comparison_read_gives_what_the_records_give_and_builds_no_verdict_it_need_not(tmp_path):
    # read_compared reads only a comparison's columns; it must equal ComparedRows.of the records on every shape: an
    # older verdict's JSON (keys missing), a claims verdict, expected sources of a suite, ranked lists of whole
    # passages, renamed measures, a failed question. Verdicts stored as their records write them stay JSON text.
    from evalcore.campaigns import campaign_results, get_campaign
    from evalcore.campaigns.compared import read_compared
    from evalcore.judges.verdict import StoredVerdicts

    old_verdict = json.dumps({"score": {"judge": "score", "model": "m0", "score": 4, "result": "pass"}})
    claims = verdict(3).to_dict() | {"claims": [{"claim": "c", "verdict": "supported", "passage": 1,
                                                 "passage_id": None}]}
    old_ranked = json.dumps([{"pid": 7, "title": "doc-000000007", "text": "text 7", "score": 0.9, "stages": {}}])
    sources = json.dumps([{"id": 3, "title": "doc-000000003", "file_name": "a.pdf"}])
    with Store(tmp_path / "e.db") as store:
        written_pair(store, [
            ("UPDATE results SET judges = ? WHERE campaign_id = 'A' AND position = 1", (old_verdict,)),
            ("UPDATE results SET judges = ? WHERE campaign_id = 'B' AND position = 2", (json.dumps({"c": claims}),)),
            ("UPDATE results SET retrieved = ? WHERE campaign_id = 'A' AND position = 0", (old_ranked,)),
            ("UPDATE results SET measures = ? WHERE campaign_id = 'B' AND position = 1",
             ('{"ndcg@10":0.25,"graded.total_groundtruth_documents":2,"rougel":null}',)),
            ("UPDATE results SET sources = ? WHERE campaign_id = 'A' AND position = 4", (sources,)),
            ("UPDATE campaign_questions SET expected_sources = '[\"a.pdf\", \"b.pdf\"]' WHERE position IN (4, 6)",
             ()),
            ("UPDATE results SET error = 'timeout', answer = NULL WHERE campaign_id = 'B' AND position = 5", ()),
        ])
        for cid in ("A", "B"):
            same_rows(read_compared(store, cid), ComparedRows.of(campaign_results(store, cid, detail=False)))
            # Read with the rest pending: the statistics' part at once, the rest (sources found included) on finish.
            pending = read_compared(store, cid, pending=True)
            built = ComparedRows.of(campaign_results(store, cid, detail=False))
            assert pending.keys == built.keys
            assert pending.values == built.values
            assert not pending.answers
            pending.finish()
            same_rows(pending, built)
        read = read_compared(store, "A")
        full = [campaign_results(store, cid) for cid in ("A", "B")]
        expected = compare_results(get_campaign(store, "A"), full[0], get_campaign(store, "B"), full[1])
        result = compare_campaigns(store, "A", "B")
    assert isinstance(read.judges[0], StoredVerdicts)
    assert read.judges[0]._read is None
    assert not isinstance(read.judges[1], StoredVerdicts)
    assert read.judges[1]["score"].model == "m0"
    assert read.found[4] == {"a.pdf"}
    assert read.has_sources[6]
    assert not read.found[6]
    assert not read.has_sources[5]
    assert result.to_dict() == expected.to_dict()
    assert [q.sources_entered for q in result.questions][4] == ()
    assert result.questions[4].sources_left == ("a.pdf",)


def test_cli_compare_on_a_kept_pair_imports_only_what_it_uses(two_stored, tmp_path):
    # The report (pandas, plotly), the pipeline, the datasets' loader (pyarrow), what launches a campaign and
    # scipy.stats take seconds to import; printing a kept comparison needs none of them, nor numpy, the statistics,
    # the measure registry (every measure's module) or the checks: what computes a comparison loads them.
    compare_campaigns(two_stored, "A", "B")
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "evalcore", "compare", "A", "B", "--db",
                           str(tmp_path / "e.db")], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parent.parent)
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert "evalcore.compare.campaign_pairs" in imported   # what reads the kept comparison: the list is that command's
    assert done.stdout.startswith("A (baseline)")
    heavy = {"pandas", "plotly", "pyarrow", "scipy", "scipy.stats", "scipy.optimize", "jieba", "numpy",
             "evalcore.compare.report", "evalcore.compare.comparison", "evalcore.compare.stats",
             "evalcore.compare.measure_stats", "evalcore.metrics.registry", "evalcore.metrics.retrieval",
             "evalcore.metrics.bleu_rouge", "evalcore.gates.checks", "evalcore.campaigns.listing",
             "evalcore.targets.rag", "evalcore.campaigns.runner", "evalcore.campaigns.campaign_dataset",
             "evalcore.campaigns.questions", "evalcore.campaigns.rejudging",
             "evalcore.compare.pairwise_job", "evalcore.judges.running", "evalcore.models.http",
             # a sweep's module, the gates' reports (an XML library) and the suites' CSV files: not for a kept pair
             "evalcore.compare.sweep", "evalcore.gates.reports", "xml.etree.ElementTree", "evalcore.suites.csvfile"}
    assert sorted(heavy & imported) == []


def test_a_comparison_the_cli_computes_is_kept_for_the_next_one(two_stored, tmp_path):
    # The kept comparison is written on the store's writer thread while the command prints; the command's process
    # ends without closing the store, and the write must still land (it was lost with the thread once).
    command = [sys.executable, "-m", "evalcore", "compare", "A", "B", "--db", str(tmp_path / "e.db"), "--resamples",
               "500"]
    first = subprocess.run(command, capture_output=True, text=True, check=True,
                           cwd=Path(__file__).resolve().parent.parent)
    assert kept(two_stored) == [("A", "B", "0")]
    again = subprocess.run(command, capture_output=True, text=True, check=True,
                           cwd=Path(__file__).resolve().parent.parent)
    assert again.stdout == first.stdout


def test_the_report_of_a_kept_comparison_decodes_only_the_questions_it_shows(two_stored):
    from evalcore.cli.compare import SHOWN_VERDICTS, format_comparison
    from evalcore.compare.deltas import KeptQuestions

    computed = compare_campaigns(two_stored, "A", "B", resamples=500)
    kept = compare_campaigns(two_stored, "A", "B", resamples=500)
    assert isinstance(kept.questions, KeptQuestions)
    assert kept.questions._records is None
    shown = kept.questions.with_verdicts(SHOWN_VERDICTS)
    assert 0 < len(shown) < len(kept.questions)   # some questions changed, not all
    assert shown == [q for q in computed.questions if q.verdict in SHOWN_VERDICTS]
    assert format_comparison(kept) == format_comparison(computed)
    assert kept.questions._records is None
    assert kept.tolerance_note == computed.tolerance_note
    assert list(kept.questions) == list(computed.questions)
    assert kept.questions.with_verdicts(SHOWN_VERDICTS) == shown   # from the decoded records now
