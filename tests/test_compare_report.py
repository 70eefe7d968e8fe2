"""Exports that explain themselves: context in titles, CSV lines and file names; the HTML report; default pairs."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from evalcore.cli import main
from evalcore.compare import Paired, QuestionDiff, compare_campaigns, compare_results, saved_comparisons, sweep_results
from evalcore.compare.charts import delta_figure, scatter_figure
from evalcore.compare.export_context import comparison_context, slug
from evalcore.compare.pairing import by_questions, default_pair, previous
from evalcore.compare.report import comparison_report
from evalcore.judges import Verdict
from evalcore.store import Store
from tests.htmlreport import network_sources, table_with
from tests.test_compare import A_ROWS, B_ROWS, campaign, stored_campaign

DAY = dt.date(2025, 6, 1)
HOSTILE = "<b>bold</b> & <script>alert(1)</script>"
SOURCES = {("dataset", "default"): "dataset default", ("suite", "s1"): "suite refunds"}


def dated(cid: str, created: float, *, kind: str = "dataset", source: str = "default", dataset_hash: str = "d1",
          name: str | None = None):
    """A campaign record created at `created` on these questions."""
    return replace(campaign(cid, dataset_hash=dataset_hash, source=source), kind=kind, created_at=created,
                   name=name or cid)


def hostile_pair():
    """A comparison of two campaigns with markup in their names, differing in top_k."""
    a = dated("A", 1.0, name=f"baseline {HOSTILE}")
    b = replace(dated("B", 2.0, name="candidate, top 10"), config={**a.config, "top_k": 10})
    return a, b, compare_results(a, A_ROWS, b, B_ROWS, resamples=500)


def test_the_default_pair_is_the_newest_on_the_same_questions_not_the_two_newest():
    campaigns = [dated("suite-run", 9.0, kind="suite", source="s1"), dated("new", 8.0, dataset_hash="d2"),
                 dated("other-content", 7.0), dated("same-content", 6.0, dataset_hash="d2"), dated("old", 5.0),
                 dated("lone", 4.0, source="elsewhere")]
    a, b = default_pair(campaigns)
    assert (a.id, b.id) == ("same-content", "new")  # same dataset content preferred over the newer other content
    assert [c.id for c in by_questions(campaigns)[("dataset", "default")]] == ["new", "other-content", "same-content",
                                                                              "old"]
    a, b = default_pair([dated("edited", 3.0, dataset_hash="d9"), dated("x", 2.0), dated("y", 1.0)])
    assert (a.id, b.id) == ("y", "x")  # the dataset changed since: the newest pair on the same content
    a, b = default_pair([dated("x", 2.0, dataset_hash="d9"), dated("y", 1.0)])
    assert (a.id, b.id) == ("y", "x")  # no pair on the same content: the same questions (the comparison warns)
    assert default_pair([dated("suite-run", 9.0, kind="suite", source="s1"), dated("data", 8.0)]) is None


def test_a_campaign_that_ends_is_compared_by_the_rule_of_the_default_pair():
    campaigns = [dated("new", 8.0, dataset_hash="d2"), dated("other-content", 7.0), dated("same-content", 6.0,
                 dataset_hash="d2"), dated("lone", 4.0, source="elsewhere")]
    newest, earlier = campaigns[0], campaigns[1:]
    assert default_pair(campaigns) == (previous(newest, earlier), newest)
    assert previous(dated("edited", 9.0, dataset_hash="d7"), campaigns).id == "new"  # no same content: the newest
    assert previous(dated("suite-run", 9.0, kind="suite", source="s1"), campaigns) is None


@pytest.mark.parametrize(("name", "expected"), [
    ("bm25 · extractive", "bm25-extractive"),
    ("Hybrid_RRF top_k=30", "hybrid-rrf-top-k-30"),
    ("路由器 检索 v2", "路由器-检索-v2"),
    ("../../etc/passwd", "etc-passwd"),
    ("a" * 80, "a" * 24),
    ("<>:|?*", ""),
])
def test_names_become_short_readable_file_name_pieces(name, expected):
    assert slug(name) == expected


def test_file_names_name_both_campaigns_and_the_date():
    a, b, comparison = hostile_pair()
    context = comparison_context(comparison, a, b, SOURCES, DAY)
    # A long name keeps its start and its end; a name that does not show the changed setting's value gets it.
    assert context.file_stem("compare") == "compare_baseline-b-1-script-5_vs_candidate-top-10_2025-06-01"
    assert context.file_stem("scatter", "ndcg@10").startswith("scatter_baseline")
    long = comparison_context(comparison, replace(a, name="x" * 200), replace(b, name="<>"), SOURCES, DAY)
    assert long.file_stem("questions") == f"questions_{'x' * 24}-5_vs_b-10_2025-06-01"  # a name with no letter: its id
    assert len(long.file_stem("scatter", "graded.top3_max_relevance")) < 100
    swept = comparison_context(comparison, replace(a, name="bm25 · extractive · embedding_top_k=3"),
                               replace(b, name="bm25 · extractive · embedding_top_k=10"), SOURCES, DAY)
    # Names alike for longer than a file name keeps: each is told by its end, where they differ.
    assert swept.file_stem("compare") == "compare_embedding-top-k-3-5_vs_embedding-top-k-10_2025-06-01"


def test_each_pair_of_a_sweep_gets_its_own_file_names_with_the_changed_value():
    a, b, comparison = hostile_pair()  # top_k 5 → 10
    baseline = replace(a, name="baseline quick start")
    stems = {comparison_context(replace(comparison, config_diff={"embedding_top_k": [30, k]}), baseline,
                                replace(b, id=f"B{k}", name=f"topk sweep · embedding_top_k={k}"), SOURCES,
                                DAY).file_stem("report") for k in (3, 5, 10)}
    assert stems == {f"report_baseline-quick-start-30_vs_topk-sweep-top-k-{k}_2025-06-01" for k in (3, 5, 10)}
    # The same name on both sides: the value tells them apart; with nothing changed, a short id.
    same = comparison_context(comparison, replace(a, name="run"), replace(b, name="run"), SOURCES, DAY)
    assert same.file_stem("compare") == "compare_run-5_vs_run-10_2025-06-01"
    unchanged = replace(comparison, config_diff={})
    same = comparison_context(unchanged, replace(a, name="run"), replace(b, name="run"), SOURCES, DAY)
    assert same.file_stem("compare") == "compare_run-a_vs_run-b_2025-06-01"


def test_csv_context_columns_say_everything_on_one_line_each():
    a, b, comparison = hostile_pair()
    facts = comparison_context(comparison, replace(a, name="two\nlines"), b, SOURCES, DAY).csv_columns()
    assert facts["context: A"] == "two lines"
    assert facts["context: B"] == "candidate, top 10"
    assert facts["context: changed"] == "top_k 5 → 10"
    assert facts["context: questions"] == "dataset default"
    assert facts["context: n"] == "7 questions in common"
    assert facts["context: exported"] == "2025-06-01"
    assert "sign-flip randomization" in facts["context: test"]
    assert "500 resamples" in facts["context: test"]
    assert facts["context: A id"] == "A"
    assert facts["context: verdicts by"]


def test_chart_titles_carry_the_context_as_escaped_text():
    a, b, comparison = hostile_pair()
    title = delta_figure(comparison, comparison_context(comparison, a, b, SOURCES, DAY)).layout.title
    assert title.text == "B − A per measure, each scale on its own axis (95% paired bootstrap interval; * p &lt; 0.05)"
    lines = title.subtitle.text.split("<br>")  # the context under the title, on lines of its own
    assert lines[0] == ("A: baseline &lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;alert(1)&lt;/script&gt; · "
                        "B: candidate, top 10 · questions: dataset default")
    assert lines[1:] == [("changed: top_k 5 → 10 · n: 7 questions in common · test: sign-flip randomization (exact), "
                         "mcnemar-exact"), "exported: 2025-06-01"]


def test_identical_points_are_drawn_once_with_their_count():
    a = np.array([1.0] * 41 + [0.5] * 3 + [0.2, 0.3 + 1e-12])
    b = np.array([1.0] * 41 + [0.7] * 3 + [0.1, 0.3])
    values = Paired(np.arange(46), a, b)
    a_, b_, comparison = hostile_pair()
    figure = scatter_figure(values, "ndcg@10", comparison_context(comparison, a_, b_, SOURCES, DAY))
    [points] = figure.data
    counts = [int(row[0].split()[0]) for row in points.customdata]
    assert counts == [41, 3, 1, 1]
    assert list(points.text) == ["41", "3", "", ""]
    assert list(points.x) == [1.0, 0.5, 0.2, 0.3 + 1e-12]
    assert list(points.y) == [1.0, 0.7, 0.1, 0.3]
    assert points.marker.size[0] > points.marker.size[1] > points.marker.size[2]
    assert "(s)" not in points.hovertemplate
    assert ([row[0] for row in points.customdata][1:3] == ["3 questions",
                                                                                              "1 question"])
    assert points.customdata[0][1].endswith(", …")  # ids cut in the hover
    assert points.customdata[1][1] == "41, 42, 43"
    assert list(points.marker.color) == ["#607d8b", "#2e7d32", "#c62828", "#607d8b"]  # same, better, worse
    assert "n: 46 questions with ndcg@10 in both" in figure.layout.title.subtitle.text


def test_the_report_is_one_offline_file_with_names_settings_verdicts_and_questions():
    a, b, comparison = hostile_pair()
    text = comparison_report(comparison, a, b, SOURCES, today=DAY)
    assert text.startswith("<!DOCTYPE html>")
    assert network_sources(text) == []
    assert text.count("<script") == 1 + 1  # plotly.js inlined once, then the delta chart
    assert "Plotly.newPlot" in text
    assert "cdn.plot.ly/plotly" not in text.split("</head>")[1]
    assert HOSTILE not in text
    assert (("baseline &lt;b&gt;bold&lt;/b&gt; &amp; "
                                    "&lt;script&gt;alert(1)&lt;/script&gt;") in text)
    assert table_with(text, ["setting", "A", "B"])[1] == ["top_k", "5", "10"]
    verdicts = table_with(text, ["worse", "better", "new", "removed", "unscored", "same"])
    assert verdicts[1] == ["1", "4", "2", "2", "1", "1"]
    assert f"Verdicts by {comparison.basis_reason}." in text
    questions = table_with(text, ["qid", "question", "verdict"])
    # Changes first.
    assert len(questions) == 1 + len(comparison.questions)
    assert questions[1][:3] == ["2", "Q two", "worse"]
    measures = table_with(text, ["measure", "n", "A", "B", "B − A"])
    assert {row[0] for row in measures[1:]} == {m.measure for m in comparison.measures}
    for warning in comparison.power_warnings:
        assert warning in text


def test_a_sweep_report_adds_the_sweep_table_and_chart():
    a, b, comparison = hostile_pair()
    c = replace(dated("C", 3.0, name="top 20"), config={**a.config, "top_k": 20})
    sweep = sweep_results([(a, A_ROWS), (b, B_ROWS), (c, B_ROWS)], resamples=500)
    text = comparison_report(comparison, a, b, SOURCES, sweep=sweep, sweep_campaigns=[a, b, c], today=DAY)
    assert "Sweep over top_k" in text
    assert text.count("Plotly.newPlot") == 2
    assert network_sources(text) == []
    rows = table_with(text, ["campaign", "id", "top_k"])
    assert [row[:3] for row in rows[1:]] == [[a.name, "A", "5"], [b.name, "B", "10"], ["top 20", "C", "20"]]


def test_cli_writes_the_report_of_a_comparison_and_of_a_sweep(tmp_path: Path, capsys):
    db = tmp_path / "e.db"
    with Store(db) as store:
        coverage = [(i * 37 % 11) / 10 for i in range(30)]
        for cid, top_k, shift in (("A", 5, 0.0), ("B", 10, 0.1), ("C", 20, 0.2)):
            stored_campaign(store, cid, [min(1.0, c + shift * (i % 2)) for i, c in enumerate(coverage)], top_k=top_k)
    report = tmp_path / "out" / "a-vs-b.html"
    assert main(["compare", "A", "B", "--db", str(db), "--resamples", "200", "--report", str(report)]) == 0
    assert f"wrote {report}" in capsys.readouterr().err
    text = report.read_text(encoding="utf-8")
    assert network_sources(text) == []
    assert "<h1>B against A</h1>" in text
    assert table_with(text, ["setting", "A", "B"])[1] == ["top_k", "5", "10"]
    assert len(table_with(text, ["qid", "question", "verdict"])) == 31
    assert main(["compare", "A", "B", "C", "--db", str(db), "--resamples", "200", "--json", "--report",
                 str(report)]) == 0
    assert capsys.readouterr().out.startswith("{")  # the report's note goes to stderr, not into the JSON
    text = report.read_text(encoding="utf-8")
    assert "<h1>C against A</h1>" in text
    assert "Sweep over top_k" in text
    assert main(["compare", "A", "B", "--db", str(db), "--report", str(report / "x.html")]) == 2
    assert "cannot write the report" in capsys.readouterr().err


def judged(rows, verdicts):
    """The rows with these judges' verdicts (by qid; a question not listed keeps none)."""
    return [replace(r, outcome=replace(r.outcome, judges=verdicts.get(r.question.qid, {}))) for r in rows]


def retrieval(score, reason):
    return Verdict("retrieval", "m1", "h1", "1", "judge.retrieval|m1", 3.0, score, reason,
                   "pass" if score >= 3 else "fail")


def grounded(passed, reason):
    return Verdict("groundedness_pro", "m1", "h2", "1", "judge.groundedness_pro|m1", None, 1.0 if passed else 0.0,
                   reason, "pass" if passed else "fail")


def judged_pair():
    """A comparison whose question 1 was judged in both campaigns, and question 4 in A only."""
    a, b = dated("A", 1.0), replace(dated("B", 2.0), config={"top_k": 10})
    a_rows = judged(A_ROWS, {1: {"retrieval": retrieval(2, f"A misses it {HOSTILE}"), "groundedness_pro":
                                 grounded(False, "unsupported")}, 4: {"retrieval": retrieval(4, "fine")}})
    b_rows = judged(B_ROWS, {1: {"retrieval": retrieval(5, "B finds it"), "groundedness_pro": grounded(True, "ok")}})
    return a, b, compare_results(a, a_rows, b, b_rows, resamples=200)


def test_the_report_gives_each_judged_questions_judge_results_under_our_names_or_the_evaluators():
    a, b, comparison = judged_pair()
    ours = comparison_report(comparison, a, b, SOURCES, today=DAY)
    assert network_sources(ours) == []
    assert HOSTILE not in ours
    assert "A misses it &lt;b&gt;bold&lt;/b&gt;" in ours
    rows = table_with(ours, ["qid", "question", "verdict", "A: retrieval"])
    assert rows[0] == ["qid", "question", "verdict", "A: retrieval", "A: retrieval_reason", "A: retrieval_result",
                       "A: retrieval_threshold", "A: groundedness_pro", "A: groundedness_pro_reason",
                       "A: groundedness_pro_result", "A: groundedness_pro_threshold", "B: retrieval",
                       "B: retrieval_reason", "B: retrieval_result", "B: retrieval_threshold", "B: groundedness_pro",
                       "B: groundedness_pro_reason", "B: groundedness_pro_result", "B: groundedness_pro_threshold"]
    by_qid = {row[0]: dict(zip(rows[0], row, strict=False)) for row in rows[1:]}
    assert sorted(by_qid) == ["1", "4"]  # only the judged questions
    one = by_qid["1"]
    assert (one["A: retrieval"], one["A: retrieval_result"], one["A: retrieval_threshold"]) == ("2", "fail", "3")
    assert one["A: retrieval_reason"] == f"A misses it {HOSTILE}"  # the reason as text, never as markup
    assert (one["B: retrieval"], one["B: retrieval_reason"], one["B: groundedness_pro"]) == ("5", "B finds it", "True")
    assert (one["A: groundedness_pro"], one["A: groundedness_pro_threshold"]) == ("False", "")
    assert by_qid["4"]["B: retrieval"] == ""
    assert by_qid["4"]["A: retrieval_reason"] == "fine"  # no B verdict
    assert "fields under evalcore's names" in ours

    theirs = comparison_report(comparison, a, b, SOURCES, today=DAY, names="evaluator")
    rows = table_with(theirs, ["qid", "question", "verdict", "A: retrieval"])
    assert rows[0][3:9] == ["A: retrieval", "A: gpt_retrieval", "A: retrieval_reason", "A: retrieval_result",
                            "A: retrieval_threshold", "A: groundedness_pro_label"]
    one = dict(zip(rows[0], next(row for row in rows[1:] if row[0] == "1"), strict=False))
    assert (one["A: gpt_retrieval"], one["B: gpt_retrieval"], one["B: retrieval_threshold"]) == ("2", "5", "3")
    assert (one["A: groundedness_pro_label"], one["B: groundedness_pro_reason"]) == ("False", "ok")
    assert "A: groundedness_pro_result" not in one
    assert "fields under the evaluators' documented names" in theirs


def test_a_report_of_unjudged_campaigns_has_no_judge_table():
    a, b, comparison = hostile_pair()
    plain = [replace(q, judges_a={}, judges_b={}) for q in comparison.questions]
    text = comparison_report(replace(comparison, questions=plain), a, b, SOURCES, today=DAY)
    assert "Judge results per question" not in text
    assert "A: score" not in text


def test_judge_verdicts_survive_a_stored_comparison():
    _, _, comparison = judged_pair()
    one = next(q for q in comparison.questions if q.qid == 1)
    back = QuestionDiff.from_dict(json.loads(json.dumps(one.to_dict())))
    assert back.judges_a == one.judges_a
    assert back.judges_b["retrieval"].reason == "B finds it"
    unjudged = next(q for q in comparison.questions if q.qid == 2)
    assert "judges_a" not in unjudged.to_dict()
    assert QuestionDiff.from_dict(unjudged.to_dict()) == unjudged


def test_cli_writes_the_report_with_the_judge_results_under_either_names(tmp_path: Path):
    db = tmp_path / "e.db"
    with Store(db) as store:
        for cid, score in (("A", 2), ("B", 4)):
            stored_campaign(store, cid, [0.5] * 6)
            verdicts = json.dumps({"retrieval": retrieval(score, f"{cid} says <i>so</i>").to_dict()})
            store.write(lambda conn, v=verdicts, c=cid: conn.execute(
                "UPDATE results SET judges = ? WHERE campaign_id = ? AND qid = 0", (v, c)))
    report = tmp_path / "report.html"
    for names, column in (("project", "A: retrieval"), ("evaluator", "A: gpt_retrieval")):
        assert main(["compare", "A", "B", "--db", str(db), "--resamples", "200", "--report", str(report),
                     "--names", names]) == 0
        text = report.read_text(encoding="utf-8")
        rows = table_with(text, ["qid", "question", "verdict", "A: retrieval"])
        one = dict(zip(rows[0], rows[1], strict=False))
        assert len(rows) == 2
        assert (one[column], one["B: retrieval_reason"]) == ("2", "B says <i>so</i>")
        assert "B says &lt;i&gt;so&lt;/i&gt;" in text


def judged_store(store: Store) -> None:
    """Campaigns A and B whose questions 0 and 3 were judged (a 1-5 judge and a pass/fail one)."""
    for cid, score in (("A", 2), ("B", 4)):
        stored_campaign(store, cid, [0.5] * 6)
        verdicts = json.dumps({"retrieval": retrieval(score, f"{cid} says 好 <i>so</i>").to_dict(),
                               "groundedness_pro": grounded(score > 3, "ok").to_dict()})
        store.write(lambda conn, v=verdicts, c=cid: conn.execute(
            "UPDATE results SET judges = ? WHERE campaign_id = ? AND qid IN (0, 3)", (v, c)))


def test_a_kept_comparison_gives_its_judge_verdicts_back_unchanged_decoding_only_those_read(tmp_path, monkeypatch):
    with Store(tmp_path / "e.db") as store:
        judged_store(store)
        computed = compare_campaigns(store, "A", "B", resamples=200)
        judged = dict(next(q for q in computed.questions if q.qid == 0).judges_b)  # decoded before counting
        decoded: list[str] = []
        read = Verdict.from_dict
        monkeypatch.setattr(Verdict, "from_dict", classmethod(lambda cls, data: decoded.append(data["judge"]) or
                                                              read(data)))
        kept = compare_campaigns(store, "A", "B", resamples=200)
        assert json.dumps(kept.to_dict()) == json.dumps(computed.to_dict())
        assert decoded == []
        first = next(q for q in kept.questions if q.qid == 0)
        assert first.judges_b == judged
        assert first.judges_b["retrieval"].reason == "B says 好 <i>so</i>"
        assert (decoded == ["retrieval",
                                                                                          "groundedness_pro"])


def test_a_comparison_kept_in_the_earlier_format_is_computed_again_and_kept_anew(tmp_path):
    with Store(tmp_path / "e.db") as store:
        judged_store(store)
        computed = compare_campaigns(store, "A", "B", resamples=200)
        head = store.read("SELECT data FROM comparisons")[0]["data"].partition("\n")[0]   # before the questions' lines
        earlier = {**json.loads(head), "questions": [
            {**q.to_dict(), "verdict": "worse"} for q in computed.questions]}   # verdicts as objects, and stale
        store.write(lambda conn: conn.execute("UPDATE comparisons SET format = 5, data = ?", (json.dumps(earlier),)))
        again = compare_campaigns(store, "A", "B", resamples=200)
        assert json.dumps(again.to_dict()) == json.dumps(computed.to_dict())
        assert [row["format"] for row in store.read("SELECT format FROM comparisons")] == [saved_comparisons.FORMAT]


def test_a_kept_comparison_is_written_out_from_its_lines_without_decoding_a_question(tmp_path):
    # A kept comparison's questions are its stored lines: its JSON (the API's and compare --json's) is written from
    # them, equal to the text of the computed comparison and parsing to its to_dict; a face that reads a question
    # gets the same records. A verdict text stored with tabs and newlines in it still makes one line per question.
    from evalcore.compare.deltas import KeptQuestions
    from evalcore.compare.json_text import comparison_text

    with Store(tmp_path / "e.db") as store:
        judged_store(store)
        verdicts = json.dumps({"retrieval": retrieval(3, "tab\there").to_dict()}, indent="\t")
        store.write(lambda conn: conn.execute(
            "UPDATE results SET judges = ? WHERE campaign_id = 'B' AND qid = 1", (verdicts,)))
        from_records = compare_results(campaign_of(store, "A"), rows_of(store, "A"), campaign_of(store, "B"),
                                       rows_of(store, "B"), resamples=200)
        computed = compare_campaigns(store, "A", "B", resamples=200)
        kept = compare_campaigns(store, "A", "B", resamples=200)
        assert isinstance(kept.questions, KeptQuestions)
        assert kept.questions._records is None
        from evalcore.cli.compare import format_comparison

        assert format_comparison(kept) == format_comparison(computed) == format_comparison(from_records)
        text = comparison_text(kept)
        assert kept.questions._records is None   # written out, only the changed questions decoded for the report
        assert text == comparison_text(computed)   # the stored verdict texts as they are: equal as JSON only
        assert json.loads(text) == json.loads(comparison_text(from_records)) == json.loads(
            json.dumps(from_records.to_dict()))
        assert comparison_text(kept, lines=True) == comparison_text(computed, lines=True)
        assert json.loads(comparison_text(kept, lines=True)) == json.loads(text)
        assert list(kept.questions) == list(from_records.questions)
        assert kept.questions == computed.questions
        stored = store.read("SELECT data FROM comparisons")[0]["data"]
        assert stored.count("\n") == len(from_records.questions) == 6


def test_the_api_writes_a_kept_comparisons_questions_as_stored_one_per_line(tmp_path):
    # The API's body is the same bytes computed and kept; its questions are the stored text as it is (one question
    # a line, tabs around each side's verdicts: JSON whitespace), and it parses to the computed comparison.
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    with Store(tmp_path / "e.db") as store:
        judged_store(store)
        expected = compare_results(campaign_of(store, "A"), rows_of(store, "A"), campaign_of(store, "B"),
                                   rows_of(store, "B")).to_dict()
    app = create_app(tmp_path / "e.db")
    key = create_key(app.state.store, tenant="default", role="viewer")[1]
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as client:
        computed, kept = (client.get("/api/v1/compare?a=A&b=B") for _ in range(2))
    assert computed.status_code == kept.status_code == 200
    assert kept.content == computed.content
    stored = app.state.store.read("SELECT data FROM comparisons")[0]["data"].partition("\n")[2]
    assert stored in kept.text
    assert stored.count("\n") == len(expected["questions"]) - 1
    assert "\t" in stored
    body = kept.json()["data"]["comparison"]
    assert json.dumps(body, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert any("judges_a" in q for q in body["questions"])
    assert any("judges_a" not in q for q in body["questions"])


def campaign_of(store: Store, cid: str):
    from evalcore.campaigns import get_campaign

    return get_campaign(store, cid)


def rows_of(store: Store, cid: str):
    from evalcore.campaigns import campaign_results

    return campaign_results(store, cid)
