"""The public Python API: its names against its reference page, its tables against the exports, its display."""

from __future__ import annotations

import csv
import importlib
import io
import json
import math
import pkgutil
import random
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import pytrec_eval
from rouge_score import rouge_scorer

import evalcore as ec
from evalcore.campaigns import campaign_aggregates, get_manager
from evalcore.campaigns.export import export_campaign
from evalcore.compare import compare_campaigns
from evalcore.errors import EvalError
from evalcore.language.text import tokenize
from tests.test_metrics_cli import ORACLE_NAMES, write_random_trec

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ec.CampaignView, ec.CampaignView]:
    """Two campaigns on the sample: the quick start, and the same with two passages per question."""
    db = tmp_path_factory.mktemp("notebook") / "nb.db"
    a = ec.run(db=db, progress=False, name="<b>baseline</b>")
    b = ec.run(db=db, config=ec.configuration(embedding_top_k=2), progress=False)
    return db, a, b


def test_the_public_names_are_the_reference_pages() -> None:
    documented = set(re.findall(r"^### `(\w+)`$", PAGE, re.MULTILINE))
    assert documented == set(ec.__all__) - {"__version__"}
    for module in pkgutil.iter_modules(ec.__path__):  # a subpackage imported later must not hide a public name
        importlib.import_module(f"evalcore.{module.name}") if module.name != "__main__" else None
    assert [name for name in ec.__all__ if type(getattr(ec, name)).__name__ == "module"] == []


def test_importing_evalcore_loads_nothing_heavy() -> None:
    code = ("import evalcore, sys; "
            "print(sorted(m for m in ('pandas', 'numpy', 'evalcore.campaigns') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def documented_columns(frame: pd.DataFrame) -> list[str]:
    """The frame's columns that the reference page does not name (in backticks)."""
    return [column for column in frame.columns if f"`{column}`" not in PAGE]


def test_results_are_the_csv_export(pair) -> None:
    db, a, _ = pair
    frame = a.results()
    exported = list(csv.DictReader(io.StringIO(export_campaign(get_manager(db).store, a.id, "csv"))))
    assert list(frame.columns) == list(exported[0])
    assert len(frame) == len(exported) == a.record.total
    for row, line in zip(frame.to_dict("records"), exported, strict=True):
        assert row["qid"] == int(line["qid"])
        assert row["answer"] == line["answer"]
        for measure in ("ndcg@10", "rougel", "coverage"):
            assert (row[measure] is None or math.isnan(row[measure])) == (line[measure] == "")
            assert line[measure] == "" or row[measure] == pytest.approx(float(line[measure]), abs=1e-12)
    assert documented_columns(frame.iloc[:, :12]) == []
    assert ec.to_arrow(frame).num_rows == len(frame)


def test_aggregates_are_the_campaigns_means(pair) -> None:
    db, a, _ = pair
    frame = a.aggregates().set_index("measure")
    stored = campaign_aggregates(get_manager(db).store, a.id)
    assert set(frame.index) == set(stored)
    for name, value in stored.items():
        assert (frame.loc[name, "mean"], frame.loc[name, "n"]) == (pytest.approx(value.mean), value.count)
    assert not frame.loc["graded.holes", "higher_is_better"]
    assert frame.loc["ndcg@10", "panel"] == "retrieval"
    assert documented_columns(a.aggregates()) == []


def test_comparison_tables_are_the_comparisons(pair) -> None:
    db, a, b = pair
    view = ec.comparison(a.id, b.id, db=db)
    record = compare_campaigns(get_manager(db).store, a.id, b.id)
    measures = view.measures().set_index("measure")
    for m in record.measures:
        assert (measures.loc[m.measure, "delta"], measures.loc[m.measure, "significant"]) == \
            (pytest.approx(m.delta), m.significant)
    questions = view.questions()
    assert list(questions["verdict"]) == [q.verdict for q in record.questions]
    assert view.transitions().iloc[:, 1:].to_numpy().sum() == sum(q.verdict not in ("new", "removed")
                                                                  for q in record.questions)
    for frame in (view.measures(), questions, ec.list_campaigns(db=db)):
        assert documented_columns(frame) == []
        assert ec.to_arrow(frame).schema.names == list(frame.columns)
    worse = {check.name.split()[0]: check.passed for check in view.worse(["ndcg@10", "rougel"])}
    assert worse == {m.measure: not (m.significant and not m.improved) for m in record.measures
                     if m.measure in ("ndcg@10", "rougel")}


def test_a_comparison_shows_itself_and_its_chart(pair) -> None:
    db, a, b = pair
    view = ec.comparison(a.id, b.id, db=db)
    shown = view._repr_html_()
    assert "&lt;b&gt;baseline&lt;/b&gt;" in shown
    assert "<b>baseline" not in shown  # names are text, not markup
    assert "<table" in shown
    assert "ndcg@10" in shown
    bundle = view.chart()._repr_mimebundle_()
    spec = bundle["application/vnd.vegalite.v5+json"]
    assert spec["$schema"].endswith("vega-lite/v5.json")
    assert all(isinstance(panel["width"], int) for panel in spec["vconcat"])  # one panel per scale, sized
    points = {point["measure"]: point["delta"] for panel in spec["vconcat"] for point in panel["data"]["values"]}
    deltas = view.measures().set_index("measure")["delta"]
    assert all(points[name] == pytest.approx(deltas[name]) for name in points)
    assert "<script" not in json.dumps(spec)
    assert "http" not in shown  # nothing to fetch
    figure = view.figure()
    assert {trace.type for trace in figure.data} >= {"scatter"}
    assert "<table" in a._repr_html_()
    assert "&lt;b&gt;" in a._repr_html_()
    stages = a.chart()._repr_mimebundle_()["application/vnd.vegalite.v5+json"]["data"]["values"]
    assert sum(row["questions"] for row in stages) == a.record.total
    assert sum(sum(trace.x) for trace in a.figure().data) == a.record.total


def test_a_background_run_is_a_handle(pair) -> None:
    db, a, _ = pair
    handle = ec.run(db=db, background=True, limit=10, progress=False)
    assert isinstance(handle, ec.RunHandle)
    done = handle.wait(progress=False)
    assert handle.done
    assert done.record.finished == 10
    assert done.id == handle.id
    assert ec.campaign(a.id, db=db).record.finished == a.record.total


def test_a_sweep_runs_one_campaign_per_value(tmp_path) -> None:
    view = ec.run_sweep("embedding_top_k=2,5", db=tmp_path / "s.db", limit=15, progress=False)
    table = view.table()
    assert list(table["embedding_top_k"]) == ["2", "5"]
    assert table["ndcg@10"].notna().all()
    assert view.chart("ndcg@10").title.startswith("ndcg@10 by embedding_top_k")
    assert "<table" in view._repr_html_()
    with pytest.raises(EvalError, match="no such measure"):
        view.chart("ndcg@11")
    again = ec.sweep(*table["id"], db=tmp_path / "s.db").table()
    assert list(again["ndcg@10"]) == list(table["ndcg@10"])


def test_score_trec_equals_pytrec_eval(tmp_path) -> None:
    qrels, run = write_random_trec(tmp_path, random.Random(7), queries=200)
    oracle = pytrec_eval.RelevanceEvaluator(qrels, set(ORACLE_NAMES.values())).evaluate(run)
    frame = ec.score_trec(tmp_path / "qrels", tmp_path / "run").set_index("qid")
    assert set(frame.index) == set(run)
    for name, oracle_name in ORACLE_NAMES.items():
        assert frame[name].to_dict() == pytest.approx({q: oracle[q][oracle_name] for q in run}, abs=1e-9)
    assert documented_columns(frame.reset_index()) == []


def test_score_texts_equals_rouge_score() -> None:
    hypotheses = ["The refund window is 30 days.", "Le délai est de 14 jours."]
    references = [["Refunds are accepted within 30 days."], "14 jours."]
    frame = ec.score_texts(hypotheses, references, ids=["a", "b"])
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=type("T", (), {"tokenize": staticmethod(tokenize)})())
    expected = [scorer.score(refs if isinstance(refs, str) else refs[0], hyp)["rougeL"].fmeasure
                for hyp, refs in zip(hypotheses, references, strict=True)]
    assert list(frame["id"]) == ["a", "b"]
    assert list(frame["rougel"]) == pytest.approx(expected)
    assert documented_columns(frame) == []
    with pytest.raises(EvalError, match="as many reference lists as answers"):
        ec.score_texts(["one"], [])


def test_bad_input_is_an_eval_error(tmp_path) -> None:
    with pytest.raises(EvalError, match="embedding_top_kk"):
        ec.configuration(embedding_top_kk=3)
    bad = tmp_path / "cases.csv"
    bad.write_text("question;expected answer;sources\n;no question here;\nWhat is it?;It.;\n", encoding="utf-8")
    with pytest.raises(EvalError) as raised:
        ec.load_suite(bad, db=tmp_path / "x.db")
    assert raised.value.problems[0].startswith(f"{bad}:2: ")
    with pytest.raises(EvalError, match="at least two"):
        ec.sweep("one", db=tmp_path / "x.db")
    good = tmp_path / "good.csv"
    good.write_text("What is the refund window?;30 days.;\n", encoding="utf-8")
    suite = ec.load_suite(good, db=tmp_path / "x.db")
    assert ec.load_suite(suite.id, db=tmp_path / "x.db").cases == suite.cases
    assert isinstance(ec.to_arrow(pd.DataFrame({"a": [1]})), pa.Table)


def test_a_suite_from_its_csv_runs(tmp_path) -> None:
    suite = ec.load_suite(ROOT / "dataset" / "samples" / "suite.csv", name="sample suite", db=tmp_path / "s.db")
    done = ec.run(suite=suite.id, config=ec.configuration("quick"), db=tmp_path / "s.db", progress=False)
    assert done.record.kind == "suite"
    assert done.record.finished == len(suite.cases)
    means = done.aggregates().set_index("measure")["mean"]
    assert done.summary().mean_coverage == pytest.approx(means["coverage"])
    with pytest.raises(EvalError, match="already exists"):
        ec.load_suite(ROOT / "dataset" / "samples" / "suite.csv", name="sample suite", db=tmp_path / "s.db")
