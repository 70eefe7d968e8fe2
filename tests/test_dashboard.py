"""The dashboard through Streamlit's AppTest: every page renders, and the main interactions work."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import socket
import sqlite3
import sys
import zipfile
from functools import partial
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

import ui
from evalcore.campaigns import get_manager, list_campaigns
from evalcore.campaigns.launching import LaunchRequest
from evalcore.judges import Verdict
from evalcore.suites import Case, create_suite, list_suites
from evalcore.targets import TargetConfig
from tests.conftest import TINY, write_dataset
from tests.csvsafety import assert_safe_csv
from tests.htmlreport import network_sources, table_with
from ui import csv_bytes, escape_md

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGES = ["pages/datasets.py", "pages/suites.py", "pages/run.py", "pages/campaigns.py", "pages/compare.py",
         "pages/traces.py"]
# Small and fast: keyword retrieval only, 12 questions of the sample dataset.
QUICK = {"retriever": "bm25"}


TRICKY = "<b>bold</b> **not bold** [link](http://x) :red[red]"


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A database with two dataset campaigns differing in one key, then (the newest) a suite campaign with user
    text in markup: the two newest campaigns did not ask the same questions."""
    db = str(tmp_path_factory.mktemp("dashboard") / "evalcore.db")
    manager = get_manager(db)
    suite = create_suite(manager.store, tenant="default", name="tricky", target_id="default",
                         cases=[Case(TRICKY, "30 days", ("Terms",)),
                                Case("What is the refund window for EU customers?", "30 days", ("Terms of Sale",))])
    ids = {f"top{k}": manager.launch(LaunchRequest(dataset="default",
                                                   config=TargetConfig.from_dict({**QUICK, "embedding_top_k": k}),
                                     limit=12, name=f"keyword top {k}")) for k in (2, 30)}
    ids["suite"] = manager.launch(LaunchRequest(suite_id=suite.id, config=TargetConfig.from_dict(QUICK)))
    for campaign_id in ids.values():
        assert manager.wait(campaign_id, timeout=120).status == "succeeded"
    yield {"db": db, **ids}
    manager.close()


def page_test(db: str, monkeypatch: pytest.MonkeyPatch, page: str = "pages/datasets.py", timeout: float = 60,
              **query: str) -> AppTest:
    """An AppTest session on one page of the app, over the given database; with query parameters, a new session
    opened on a link (a reload, a pasted address)."""
    monkeypatch.setenv("EVALCORE_DB", db)
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.query_params.update(query)
    at.run()
    if page != "pages/datasets.py":
        at.switch_page(page).run()
    return at


def assert_clean(at: AppTest) -> None:
    """No exception and no error box on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def unescape(markdown: str) -> str:
    """Markdown text as a reader sees it (the app backslash-escapes user text)."""
    return re.sub(r"\\(.)", r"\1", markdown)


def texts(at: AppTest) -> str:
    """Every plain text, code block, caption and markdown of the page, joined."""
    parts = [e.value for kind in (at.text, at.code, at.caption, at.markdown, at.success, at.warning, at.info)
             for e in kind]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders(page: str, filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, page)
    assert_clean(at)
    assert at.title


def test_opens_on_the_sample_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(str(tmp_path / "empty.db"), monkeypatch)
    assert_clean(at)
    assert at.title[0].value == "Datasets"
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Questions"]) >= 80
    assert int(metrics["Passages"]) >= 300


def parquet_bytes(columns: dict[str, list]) -> bytes:
    """One Parquet file in memory."""
    out = io.BytesIO()
    pq.write_table(pa.table(columns), out)
    return out.getvalue()


def upload(at: AppTest, files: list[tuple[str, bytes, str]], name: str) -> AppTest:
    """Fill the dataset upload form and submit it."""
    at.file_uploader(key="upload_files").set_value(files)
    at.text_input[0].set_value(name)
    at.button(key="FormSubmitter:upload-Validate and save").click()
    return at.run()


def test_bad_dataset_upload_shows_the_loader_messages_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(tmp_path / "uploads"))
    at = page_test(str(tmp_path / "db.sqlite"), monkeypatch)
    broken = {**TINY, "corpus": {**TINY["corpus"], "text": [None, *TINY["corpus"]["text"][1:]]},
              "answers": {"id": TINY["answers"]["id"]}}
    files = [(f"{name}.parquet", parquet_bytes(columns), "application/octet-stream")
             for name, columns in broken.items()]
    upload(at, [*files, ("notes.parquet", b"hello", "application/octet-stream")], "broken")
    assert not at.exception
    errors = unescape("\n".join(e.value for e in at.error))
    assert "corpus.parquet row 0 column 'text'" in errors
    assert "null" in errors
    assert "answers.parquet: missing column 'text'" in errors
    assert "notes.parquet" in errors
    assert "unexpected file" in errors
    assert "**queries.parquet**: no problem found" in unescape("\n".join(e.value for e in at.success))
    assert not (tmp_path / "uploads").exists()


def test_valid_zip_upload_is_saved_and_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(tmp_path / "uploads"))
    at = page_test(str(tmp_path / "db.sqlite"), monkeypatch)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:  # as macOS's Finder zips a folder
        for name, columns in TINY.items():
            zipped.writestr(f"export/tiny/{name}.parquet", parquet_bytes(columns))
            zipped.writestr(f"__MACOSX/export/tiny/._{name}.parquet", b"\x00\x05\x16\x07")
        zipped.writestr("export/tiny/.DS_Store", b"\x00")
    upload(at, [("tiny.zip", archive.getvalue(), "application/zip")], "tiny")
    assert_clean(at)
    saved = tmp_path / "uploads" / "uploads-tiny"
    assert sorted(p.name for p in saved.iterdir()) == sorted(f"{n}.parquet" for n in TINY)
    assert at.selectbox[0].value == str(saved)  # the new dataset is picked and shown
    assert at.metric[0].value == "3"


def test_ambiguous_or_empty_uploads_are_refused_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(tmp_path / "uploads"))
    at = page_test(str(tmp_path / "db.sqlite"), monkeypatch)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:  # two versions of the dataset side by side
        for folder, question in (("old", "Old question?"), ("new", "New question?")):
            for name, columns in {**TINY, "queries": {**TINY["queries"], "text": [question, "b", "c"]}}.items():
                zipped.writestr(f"{folder}/{name}.parquet", parquet_bytes(columns))
    upload(at, [("two.zip", archive.getvalue(), "application/zip")], "two")
    errors = unescape("\n".join(e.value for e in at.error))
    assert "queries.parquet" in errors
    assert (("given twice with different content (old/queries.parquet and "
                                            "new/queries.parquet)") in errors)
    upload(at, [], "none")
    assert "no file chosen" in unescape("\n".join(e.value for e in at.error))
    assert not at.exception
    assert not (tmp_path / "uploads").exists()


def test_each_pick_of_a_dataset_applies_and_unlabeled_datasets_render(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    uploads = tmp_path / "uploads"
    write_dataset(uploads / "uploads-a")
    write_dataset(uploads / "uploads-b", {**TINY, "qrels": {"qid": [], "pid": []}})  # no question is labeled
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(uploads))
    at = page_test(str(tmp_path / "db.sqlite"), monkeypatch)
    # Every second pick used to be dropped (the selectbox's index changed its identity).
    for ref in (str(uploads / "uploads-a"), str(uploads / "uploads-b"), "default", str(uploads / "uploads-b")):
        at.selectbox[0].set_value(ref).run()
        assert_clean(at)
        assert at.selectbox[0].value == ref
        assert unescape(at.caption[0].value).startswith(str(Path(ref) if ref != "default" else "")), at.caption[0].value
    assert "no question has a relevant passage" in texts(at)
    assert "No qrels: this question is unlabeled for retrieval." in texts(at)


def test_upload_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(tmp_path / "uploads"))
    monkeypatch.setenv("EVALCORE_UPLOAD_MB", "0")
    at = page_test(str(tmp_path / "db.sqlite"), monkeypatch)
    upload(at, [("queries.parquet", parquet_bytes(TINY["queries"]), "application/octet-stream")], "big")
    assert "the limit is 0 MB" in unescape("\n".join(e.value for e in at.error))
    assert not (tmp_path / "uploads").exists()


CSV = (
    "question;expected answer;sources\n"
    "What is the refund window?;30 days;Terms of Sale\n"
    ";an answer without a question;\n"
    '"=HYPERLINK(""http://x"")";formula-looking question;a|b\n'
)


def test_csv_import_reports_each_line_and_imports_the_valid_ones(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/suites.py")
    at.file_uploader(key="suite_csv").set_value(("cases.csv", CSV.encode(), "text/csv")).run()
    report = "\n".join(c.value for c in at.code)
    assert "line 3: rejected: empty question" in report
    import_button = next(b for b in at.button if b.label.startswith("Import 2 case"))
    assert import_button.disabled  # nothing is imported from a file with errors unless chosen
    at.radio[0].set_value("the valid lines").run()
    next(b for b in at.button if b.label.startswith("Import 2 case")).click().run()
    assert_clean(at)
    suites = list_suites(get_manager(db).store)
    assert [s.name for s in suites] == ["cases"]
    assert [c.question for c in suites[0].cases] == ["What is the refund window?", '=HYPERLINK("http://x")']
    assert "Imported 2 cases" in unescape(texts(at))
    assert [d.label for d in at.download_button] == ["CSV to import (;)", "CSV for analysis (,)"]


def test_the_sample_suite_is_one_click_away(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/suites.py")
    next(b for b in at.button if b.label == "Add the sample suite").click().run()
    assert_clean(at)
    [suite] = list_suites(get_manager(db).store)
    assert suite.name == "sample"
    assert len(suite.cases) >= 10
    assert len(at.data_editor[0].value) == len(suite.cases)


@pytest.mark.long
def test_the_selected_suite_launches_from_the_suites_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/suites.py")
    next(b for b in at.button if b.label == "Add the sample suite").click().run()
    [suite] = list_suites(get_manager(db).store)
    at.session_state[f"cases-{suite.id}"] = {"edited_rows": {0: {"question": "unsaved"}}, "added_rows": [],
                                             "deleted_rows": []}
    at.run()
    assert next(b for b in at.button if b.label == "Launch").disabled  # a campaign runs the saved suite
    at.session_state[f"cases-{suite.id}"] = {"edited_rows": {}, "added_rows": [], "deleted_rows": []}
    at.run()
    launch = next(b for b in at.button if b.label == "Launch")
    assert not launch.disabled
    launch.click().run()
    assert_clean(at)
    [campaign] = list_campaigns(get_manager(db).store)
    assert (campaign.suite_id, campaign.total) == (suite.id, len(suite.cases))
    assert at.session_state["campaign_id"] == campaign.id == at.session_state["launched"][0]
    assert f"Launched a campaign of sample ({campaign.id})" in unescape(texts(at))
    get_manager(db).wait(campaign.id, timeout=120)


def test_launch_a_campaign_on_the_sample_dataset_and_see_it_finish(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/run.py")
    at.number_input(key="limit").set_value(10)  # everything else as a newcomer finds it
    at.button(key="FormSubmitter:launch-Launch").click().run()
    assert_clean(at)
    [campaign_id] = at.session_state["launched"]
    finished = get_manager(db).wait(campaign_id, timeout=120)
    assert finished.status == "succeeded"
    assert finished.config["retriever"] == "bm25"  # the quick start
    at.switch_page("pages/campaigns.py").run()
    assert_clean(at)
    assert "succeeded" in at.selectbox[0].value or campaign_id == at.selectbox[0].value
    labels = [m.label for m in at.metric]
    assert {"precision", "recall", "ndcg@10", "mrr", "map", "bleu4", "rougel", "Answered"} <= set(labels)
    # One question in full at a time (not one expander of tables per question): the picker lists all ten.
    assert len(at.selectbox(key="question-" + campaign_id + "-pick").options) == 10
    assert len([t for t in at.text if t.value.startswith("Question: ")]) == 1
    at.checkbox(key=f"confirm-{campaign_id}").check().run()
    next(b for b in at.button if b.label == "Delete").click().run()
    assert_clean(at)
    assert list_campaigns(get_manager(db).store) == []
    assert "No campaign yet." in texts(at)


def test_the_run_page_estimates_the_cost_before_launching(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/run.py")
    at.number_input(key="limit").set_value(4)
    at.number_input(key="cfg-quick-max_cost").set_value(2.5)
    at.button(key="FormSubmitter:launch-Estimate the cost").click().run()
    assert_clean(at)
    said = unescape("\n".join(info.value for info in at.info))
    # The quick start's extractive generator calls no model: nothing to pay, said as an amount, not "no price".
    assert "estimate: 0 for 4 questions" in said
    assert "from the prompts of 4 questions" in said
    assert "launched" not in at.session_state
    assert list_campaigns(get_manager(db).store) == []


def test_an_invalid_configuration_is_a_readable_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(str(tmp_path / "db.sqlite"), monkeypatch, "pages/run.py")
    at.selectbox(key="cfg-quick-generator").set_value("openai")
    at.button(key="FormSubmitter:launch-Launch").click().run()
    assert not at.exception
    message = unescape("\n".join(e.value for e in at.error))
    assert "model" in message
    assert "required when generator is openai" in message
    assert "Traceback" not in message


def test_a_launch_shows_its_campaign_at_once_and_a_target_failing_its_check_fails_it_on_the_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_DASHBOARD_WORKER", "process")  # as the dashboard runs: a worker process
    db = str(tmp_path / "db.sqlite")
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    at = page_test(db, monkeypatch, "pages/run.py")
    try:
        at.number_input(key="limit").set_value(5)
        at.selectbox(key="cfg-quick-generator").set_value("openai")
        at.text_input(key="cfg-quick-model").set_value("gone")
        at.text_input(key="cfg-quick-base_url").set_value(gone)
        at.text_input(key="cfg-quick-api_key_env").set_value("")
        at.button(key="FormSubmitter:launch-Launch").click().run()
        assert_clean(at)  # launched: the model is asked by the worker, not before the page comes back
        [campaign_id] = at.session_state["launched"]
        done = get_manager(db).wait(campaign_id, timeout=90)
        assert done.status == "failed"
        at.run()
        shown = unescape(texts(at))
        assert "setup failed" in shown
        assert "unreachable" in shown
        assert gone in shown
    finally:
        get_manager(db).close()


@pytest.mark.parametrize("headers", ["{not json", "[1, 2]", "42"])
def test_agent_headers_that_are_no_json_object_are_a_readable_message(headers: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(str(tmp_path / "db.sqlite"), monkeypatch, "pages/run.py")
    at.text_area(key="cfg-quick-agent_headers").set_value(headers)
    at.button(key="FormSubmitter:launch-Launch").click().run()
    assert not at.exception  # "[1, 2]" used to raise a TypeError
    message = unescape("\n".join(e.value for e in at.error))
    assert "agent_headers" in message
    assert "JSON" in message
    assert "launched" not in at.session_state


def test_sweep_launches_one_campaign_per_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/run.py")
    at.number_input(key="limit").set_value(5)
    at.selectbox(key="sweep_key").set_value("embedding_top_k")
    at.text_input(key="sweep_values").set_value("3, 10")
    at.button(key="FormSubmitter:launch-Launch").click().run()
    assert_clean(at)
    launched = at.session_state["launched"]
    assert len(launched) == 2
    configs = {c.config["embedding_top_k"] for c in list_campaigns(get_manager(db).store)}
    assert configs == {3, 10}


def picker(at: AppTest, label: str) -> object:
    """The selectbox with this label."""
    return next(box for box in at.selectbox if box.label == label)


def vega_charts(at: AppTest) -> list[tuple[str, dict, pd.DataFrame]]:
    """Each Vega-Lite chart of the page: its title, its spec and the data the browser draws."""
    found = []
    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec.get("title", {})
        data = pa.ipc.open_stream(chart.proto.data.data).read_all().to_pandas() if chart.proto.data.data else \
            pd.DataFrame(spec.get("data", {}).get("values", []))
        found.append((title.get("text", "") if isinstance(title, dict) else str(title), spec, data))
    return found


def chart_titles(at: AppTest) -> list[str]:
    """The titles of the page's Vega-Lite charts, in page order."""
    return [title for title, _, _ in vega_charts(at)]


def open_section(at: AppTest, label: str, key: str = "compare-section") -> AppTest:
    """Open one of a page's sections (Compare's, or `campaign-section` on Campaigns: their tabs render only the
    open one), as a click on it does."""
    at.session_state[key] = label
    return at.run()


def test_compare_two_campaigns(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/compare.py")
    assert_clean(at)
    # The newest campaign ran a suite: the proposed pair is the two newest on the same dataset.
    assert picker(at, "Questions").value == ("dataset", "default")
    assert (picker(at, "A (baseline)").value, picker(at, "B (candidate)").value) == (filled["top2"], filled["top30"])
    assert all(option.startswith("dataset default · keyword top ") for option in picker(at, "A (baseline)").options)
    verdicts = {m.label for m in at.metric}
    assert {"better", "worse", "same", "new", "removed"} <= verdicts
    assert any("embedding_top_k" in str(df.value.to_dict()) for df in at.dataframe)  # the configuration difference
    # One section at a time: the deltas first, then the per-question scatter and the failure stages in A and B.
    assert [tab.label for tab in at.tabs] == ["Measures", "Per question", "Failure stages", "Questions",
                                             "Pairwise judge"]
    first, *panels = chart_titles(at)  # the deltas, one panel per scale: counts apart from 0-1 measures
    assert first.split(",")[0] == "B − A per measure"
    assert all(title.startswith("B − A: ") for title in panels)
    assert not at.get("plotly_chart")  # the page draws Vega-Lite; Plotly only for the downloads
    assert ([title.split(" (")[0] for title in chart_titles(open_section(at, "Per question"))]
            == ["ndcg@10 per question"])
    assert [title.split(" (")[0] for title in chart_titles(open_section(at, "Failure stages"))] == [
        "Failure stage of each common question, in A and in B"]
    assert not at.multiselect
    assert [box.label for box in open_section(at, "Questions").multiselect] == ["Verdicts"]
    assert any("verdict" in df.value.columns for df in at.dataframe)
    assert not chart_titles(at)
    open_section(at, "Measures")
    picker(at, "B (candidate)").set_value(filled["top2"]).run()  # B = A: every verdict "same" would say nothing
    assert_clean(at)
    assert "A and B are the same campaign" in texts(at)
    assert not vega_charts(at)
    at.radio[0].set_value("sweep").run()
    assert_clean(at)
    assert [title for title in chart_titles(at) if " by embedding_top_k " in title]


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict]:
    """Every download button a page makes, by key: its file name and its data (a callable runs when clicked)."""
    seen: dict[str, dict] = {}
    original = DeltaGenerator.download_button

    def record(container: DeltaGenerator, label: str, **kwargs: object) -> object:
        seen[str(kwargs["key"])] = kwargs
        return original(container, label, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", record)
    monkeypatch.setattr(st, "download_button", partial(record, st.download_button.__self__))
    return seen


def clicked(download: dict) -> bytes:
    """What the browser would receive on a click."""
    return download["data"]() if callable(download["data"]) else download["data"]


def test_compare_exports_name_both_campaigns_and_what_changed(filled: dict, monkeypatch: pytest.MonkeyPatch,
                                                              downloads: dict[str, dict], tmp_path: Path) -> None:
    figures: list = []
    monkeypatch.setenv("BROWSER_PATH", sys.executable)  # any existing file: the PNG renderer is replaced below
    monkeypatch.setattr(ui.charts, "png_bytes", lambda figure: figures.append(figure) or b"\x89PNG")
    at = page_test(filled["db"], monkeypatch, "pages/compare.py")
    assert_clean(at)
    stem = f"keyword-top-2_vs_keyword-top-30_{dt.datetime.now(dt.UTC).astimezone().date().isoformat()}"
    names = {key: str(d["file_name"]) for key, d in downloads.items()}
    assert names["deltas-png"] == f"compare_{stem}.png"
    assert names["deltas-html"] == f"compare_{stem}.html"
    assert names["report"] == f"report_{stem}.html"
    assert "questions-csv" not in names  # its section is closed
    assert all(len(name) < 100 for name in names.values())
    expected = ("keyword top 2", "keyword top 30", "embedding_top_k 2 → 30", "dataset default")
    chart = clicked(downloads["deltas-html"]).decode()
    # Plotly writes the figure as JSON: with orjson installed as it is, else with non-ASCII as \u escapes.
    assert all(text in chart or json.dumps(text)[1:-1] in chart for text in expected)
    clicked(downloads["deltas-png"])
    title = figures[0].layout.title  # the figure the PNG is drawn from
    assert all(text in title.subtitle.text for text in expected)
    assert title.text.startswith("B − A per measure")

    # The CSV opens as a table with no option; its context is in columns after the table's own, on every row.
    path = tmp_path / "measures.csv"
    path.write_bytes(clicked(downloads["measures-csv"]))
    table = pd.read_csv(path)
    shown = next(df.value for df in at.dataframe if "signature" in df.value.columns)
    own = [c for c in table.columns if not c.startswith("context: ")]
    assert own == list(shown.columns)
    assert list(table["measure"]) == list(shown["measure"])
    with path.open(encoding="utf-8-sig", newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == len(table)
    assert all(row["measure"] for row in rows)
    context = rows[-1]
    assert (context["context: A"], context["context: B"], context["context: changed"]) == expected[:3]
    assert context["context: A id"] == filled["top2"]
    assert "sign-flip randomization" in context["context: test"]
    assert table["context: A"].nunique() == 1
    counts = {m.label: m.value for m in at.metric}
    open_section(at, "Questions")
    assert str(downloads["questions-csv"]["file_name"]) == f"questions_{stem}.csv"
    questions = pd.read_csv(io.BytesIO(clicked(downloads["questions-csv"])))
    assert set(questions["context: verdicts shown"]) == {"better, worse, new, removed, unscored"}

    report = clicked(downloads["report"]).decode()
    assert network_sources(report) == []
    assert all(text in report for text in expected)
    verdicts = table_with(report, ["worse", "better", "new", "removed", "unscored", "same"])
    assert dict(zip(verdicts[0], verdicts[1], strict=False)) == {v: str(counts.get(v, 0)) for v in verdicts[0]}
    assert len(table_with(report, ["qid", "question", "verdict"])) == 1 + 12


def test_the_compare_report_gives_judge_results_under_the_evaluators_names_when_ticked(
        filled: dict, monkeypatch: pytest.MonkeyPatch, downloads: dict[str, dict], tmp_path: Path) -> None:
    db = str(tmp_path / "judged.db")
    with sqlite3.connect(filled["db"]) as source, sqlite3.connect(db) as copy:
        source.backup(copy)
        for campaign_id, score in ((filled["top2"], 2), (filled["top30"], 4)):
            verdict = Verdict("retrieval", "m1", "h1", "1", "judge.retrieval|m1", 3.0, score, f"<b>{score}</b>",
                              "pass" if score >= 3 else "fail")
            copy.execute("UPDATE results SET judges = ? WHERE campaign_id = ? AND position = 0",
                         (json.dumps({"retrieval": verdict.to_dict()}), campaign_id))
        copy.execute("DELETE FROM comparisons")
    at = page_test(db, monkeypatch, "pages/compare.py")
    assert_clean(at)
    first = table_with(clicked(downloads["report"]).decode(), ["qid", "question", "verdict", "A: retrieval"])
    assert len(first) == 2
    assert dict(zip(first[0], first[1], strict=False))["B: retrieval_reason"] == "<b>4</b>"
    names = at.checkbox(key="report-names")
    assert names.value is False
    assert "evaluators' names" in names.label
    names.check().run()
    assert_clean(at)
    report = clicked(downloads["report"]).decode()
    rows = table_with(report, ["qid", "question", "verdict", "A: retrieval"])
    assert dict(zip(rows[0], rows[1], strict=False))["A: gpt_retrieval"] == "2"
    assert network_sources(report) == []


def test_compare_reads_the_comparison_once_per_new_session(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The automatic verdict basis and the comparison shown are one cache entry: a new server process reads (or
    computes) the comparison once, not once for the basis picker and again for the page."""
    import evalcore.compare

    calls: list[object] = []
    original = evalcore.compare.compare_campaigns
    monkeypatch.setattr(evalcore.compare, "compare_campaigns",
                        lambda *args, **kwargs: calls.append(kwargs.get("basis")) or original(*args, **kwargs))
    st.cache_resource.clear()
    at = page_test(filled["db"], monkeypatch, "pages/compare.py")
    assert_clean(at)
    assert calls == [None]  # once, with the automatic basis


def test_compare_sections_keep_their_picks_while_another_is_open(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_section(page_test(filled["db"], monkeypatch, "pages/compare.py"), "Per question")
    assert picker(at, "Measure").value == "ndcg@10"
    picker(at, "Measure").set_value("mrr").run()
    open_section(at, "Questions")
    next(box for box in at.multiselect if box.label == "Verdicts").set_value(["same"]).run()
    [questions] = [df.value for df in at.dataframe if "verdict" in df.value.columns]
    assert set(questions["verdict"]) == {"same"}
    open_section(at, "Per question")
    assert picker(at, "Measure").value == "mrr"
    assert chart_titles(at)[0].startswith("mrr per question")
    open_section(at, "Questions")
    assert next(box for box in at.multiselect if box.label == "Verdicts").value == ["same"]
    # Another pair keeps the open section: the same sections for every pair.
    picker(at, "A (baseline)").set_value(filled["top30"]).run()
    picker(at, "B (candidate)").set_value(filled["top2"]).run()
    assert [box.label for box in at.multiselect] == ["Verdicts"]
    assert not chart_titles(at)
    assert_clean(at)


def test_the_scatter_shows_how_many_questions_share_a_point(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_section(page_test(filled["db"], monkeypatch, "pages/compare.py"), "Per question")
    [points] = [data for title, _, data in vega_charts(at) if " per question " in title]
    counts = list(points["count"])
    assert sum(counts) == 12
    assert max(counts) > 1  # each question counted once; some share a point
    assert list(points["label"]) == [str(c) if c > 1 else "" for c in counts]


def test_every_campaign_can_be_compared_listed_by_dataset_or_suite(filled: dict,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/compare.py")
    picker(at, "Questions").set_value("every dataset and suite").run()
    assert_clean(at)
    options = picker(at, "A (baseline)").options
    assert [o.split(" · ")[0] for o in options] == ["suite tricky", "dataset default", "dataset default"]
    assert (picker(at, "A (baseline)").value, picker(at, "B (candidate)").value) == (filled["top2"], filled["top30"])
    picker(at, "A (baseline)").set_value(filled["suite"]).run()
    assert_clean(at)
    assert "different question sets" in texts(at)


def test_png_export_is_disabled_with_a_reason_when_no_chromium(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    at = page_test(filled["db"], monkeypatch, "pages/compare.py")
    assert_clean(at)
    png = [b for b in at.button if b.label == "PNG"]
    assert png
    assert all(b.disabled for b in png)
    assert "apt-get install chromium" in png[0].help


def test_each_pick_of_a_campaign_applies(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/campaigns.py")
    assert [tab.label for tab in at.tabs] == ["Questions", "Failure stages", "Labels", "Configuration"]
    open_section(at, "Configuration", "campaign-section")
    names = {c.id: c.name for c in list_campaigns(get_manager(filled["db"]).store)}
    configs = {c.id: c.config for c in list_campaigns(get_manager(filled["db"]).store)}
    for campaign_id in (filled["top2"], filled["suite"], filled["top30"], filled["top2"]):
        at.selectbox[0].set_value(campaign_id).run()
        assert at.selectbox[0].value == campaign_id
        assert unescape(at.get("progress")[0].proto.text).startswith(names[campaign_id])
        assert any(campaign_id in unescape(c.value) for c in at.caption)  # the configuration's caption
        assert json.loads(at.json[0].value) == json.loads(json.dumps(configs[campaign_id]))  # its snapshot


def test_suite_results_mark_hits_by_the_expected_sources(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(filled["suite"]).run()
    assert_clean(at)
    # No qrels in a suite: a passage is a hit when its title contains an expected source (the cases' order).
    question = at.selectbox(key=f"question-{filled['suite']}-pick")
    for position, source in enumerate(("terms", "terms of sale")):
        question.set_value(str(position)).run()
        [retrieved] = [df.value for df in at.dataframe if "hit" in df.value.columns]
        assert list(retrieved["hit"]) == ["hit" if source in t.casefold() else "miss" for t in retrieved["title"]]
        assert retrieved["text"].str.len().gt(0).all()
    assert "hit" in set(retrieved["hit"])
    assert any(t.value.startswith("Retrieved sources: ") for t in at.text)


def test_campaign_actions_refuse_with_messages(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/campaigns.py")
    retry = next(b for b in at.button if b.label == "Retry failed")
    assert retry.disabled  # nothing failed
    assert next(b for b in at.button if b.label == "Cancel").disabled


def test_exports_offer_the_evaluators_names(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/campaigns.py")
    names = at.checkbox(key="export-names")
    assert names.label == "Judge fields under the evaluators' names"
    assert names.value is False
    names.check().run()
    assert_clean(at)


def test_abstention_is_recomputed_on_request(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/campaigns.py")
    next(b for b in at.button if b.label == "Recompute abstention").click().run()
    assert_clean(at)
    assert [unescape(s.value) for s in at.success] == ["Recomputed abstention: 0 questions changed."]


def test_user_text_is_shown_as_text_never_as_markup(filled: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(filled["db"], monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(filled["suite"]).run()
    assert_clean(at)
    question = at.selectbox(key=f"question-{filled['suite']}-pick")
    assert any(TRICKY in option for option in question.options)  # a picker shows plain text
    assert f"Question: {TRICKY}" in [t.value for t in at.text]
    assert not any("<b>" in m.value for m in at.markdown)


def test_the_run_form_has_an_input_for_every_configuration_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler's only once the operator listed schedulers (a picker of them, never a typed address)."""
    for listed, expected in (("", set(TargetConfig().to_dict()) - {"scheduler"}),
                             ("gpu=tcp://127.0.0.1:9", set(TargetConfig().to_dict()))):
        monkeypatch.setenv("EVALCORE_DASK_SCHEDULERS", listed)
        at = page_test(str(tmp_path / "db.sqlite"), monkeypatch, "pages/run.py")
        widgets = [w for kind in (at.selectbox, at.multiselect, at.number_input, at.text_input, at.text_area)
                   for w in kind]
        keys = {w.key.removeprefix("cfg-quick-") for w in widgets if w.key and w.key.startswith("cfg-quick-")}
        assert keys == expected
    labels = {w.key: w.label for w in at.number_input if w.key}
    assert labels["cfg-quick-top_k"] == "Sampling top-k"  # never taken for the chunks retrieved
    assert labels["cfg-quick-embedding_top_k"] == "Embedding top-k"


def test_suite_editor_enforces_the_case_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/suites.py")
    at.text_input[0].set_value("too many")
    rows = [{"question": f"question {n}"} for n in range(101)]
    at.session_state["cases-(new suite)"] = {"edited_rows": {}, "added_rows": rows, "deleted_rows": []}
    next(b for b in at.button if b.label == "Create").click().run()
    assert not at.exception
    assert "at most 100 cases" in unescape("\n".join(e.value for e in at.error))
    assert list_suites(get_manager(db).store) == []
    at.session_state["cases-(new suite)"] = {"edited_rows": {}, "added_rows": rows[:2], "deleted_rows": []}
    next(b for b in at.button if b.label == "Create").click().run()
    assert_clean(at)
    [suite] = list_suites(get_manager(db).store)
    assert len(suite.cases) == 2
    at.session_state[f"cases-{suite.id}"] = {"edited_rows": {0: {"question": "changed"}},
                                             "added_rows": [{"question": "third", "expected_sources": "A | B"}],
                                             "deleted_rows": []}
    next(b for b in at.button if b.label == "Save").click().run()
    assert_clean(at)
    [suite] = list_suites(get_manager(db).store)
    assert [c.question for c in suite.cases] == ["changed", "question 1", "third"]
    assert suite.cases[2].expected_sources == ("A", "B")
    assert len(at.data_editor[0].value) == 3  # the editor restarts from the saved rows, no duplicate


def test_exported_tables_neutralise_formulas_and_keep_numbers() -> None:
    frame = pd.DataFrame({"text": ["=1+1", "+33 6", "-x", "@SUM(A1)", "plain"], "value": [-1.5, 2, 3, 4, 5]})
    lines = csv_bytes(frame).decode("utf-8-sig").splitlines()
    assert lines == ["text,value", "'=1+1,-1.5", "'+33 6,2.0", "'-x,3.0", "'@SUM(A1),4.0", "plain,5.0"]
    broken = pd.DataFrame({"answer": ["30 days\r@SUM(1+1)", "a\n=1\r\n-2", None], "n": [1.0, float("nan"), 3.0]})
    rows = assert_safe_csv(csv_bytes(broken).decode("utf-8-sig"), len(broken))
    assert rows[1:] == [["30 days\r'@SUM(1+1)", "1.0"], ["a\n'=1\r\n'-2", ""], ["", "3.0"]]


def test_markdown_and_html_are_escaped() -> None:
    assert escape_md("<b>x</b> **y** [z](u)") == r"\<b\>x\</b\> \*\*y\*\* \[z\]\(u\)"


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="the sockets are found through /dev/fd")
def test_no_delay_turns_nagle_off_on_the_servers_sockets_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The listening socket (and so every connection it accepts later) and the connections already open
    send small writes at once; another program's socket in the process is left alone."""
    import socket

    def nodelay(sock: socket.socket) -> int:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)

    with socket.socket(socket.AF_INET) as listener, socket.socket(socket.AF_INET) as other:
        # protocol 0, as Streamlit's server binds it
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        other.bind(("127.0.0.1", 0))
        other.listen()
        monkeypatch.setattr(ui.serving, "_NO_DELAY", type(ui.serving._NO_DELAY)())
        port, get_option = listener.getsockname()[1], st.get_option
        monkeypatch.setattr(st, "get_option", lambda key: port if key == "server.port" else get_option(key))
        with socket.create_connection(listener.getsockname()) as before:
            opened, _ = listener.accept()
            assert nodelay(listener) == 0
            assert nodelay(opened) == 0
            ui.no_delay()
            with socket.create_connection(listener.getsockname()) as after:
                accepted, _ = listener.accept()
                assert nodelay(listener) == 1
                assert nodelay(opened) == 1
                assert nodelay(accepted) == 1
                assert nodelay(other) == 0
                before.sendall(b"x"), after.sendall(b"y")
                assert opened.recv(1) == b"x"
                assert accepted.recv(1) == b"y"  # the server's sockets still work
            accepted.close()
        opened.close()


def test_text_tables_are_static_and_escaped_when_short_and_a_grid_when_long() -> None:
    def page(rows: int) -> None:
        import pandas as pd

        import ui

        ui.text_table(pd.DataFrame({"text": [f"*{n}* [x](http://e.test)" for n in range(rows)]}))

    short_table = AppTest.from_function(page, args=(3,)).run()
    assert not short_table.dataframe
    assert ([unescape(v) for v in short_table.table[0].value["text"]] == [
        f"*{n}* [x](http://e.test)" for n in range(3)])
    assert all(v.startswith("\\*") for v in short_table.table[0].value["text"])  # shown as written, not as Markdown
    long_table = AppTest.from_function(page, args=(ui.STATIC_ROWS + 1,)).run()
    assert not long_table.table
    assert list(long_table.dataframe[0].value["text"])[-1] == "*20* [x](http://e.test)"


@pytest.mark.parametrize(("source", "trec"), [({"id": "doc 7", "title": "Terms"}, "1 Q0 doc_7 1 1 "),
                                              ({"title": "Terms"}, None)])
def test_an_agent_campaigns_trec_run_names_its_sources_or_says_why_there_is_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_dataset: Path, source: dict, trec: str | None) -> None:
    from evalcore.campaigns.export import export_campaign
    from evalcore.errors import EvalError
    from evalcore.testing import FakeOpenAIServer, Reply

    db = str(tmp_path / "db.sqlite")
    with FakeOpenAIServer(lambda path, body: Reply.json({"answer": "30 days", "sources": [source]})) as agent:
        config = TargetConfig.of(kind="http_agent", agent_url=f"{agent.root_url}/agent")
        campaign_id = get_manager(db).launch(LaunchRequest(dataset=str(tiny_dataset), config=config))
        assert get_manager(db).wait(campaign_id, timeout=60).status == "succeeded"
    store = get_manager(db).store
    at = page_test(db, monkeypatch, "pages/campaigns.py")
    assert_clean(at)
    button = at.download_button(key="export-trec")
    if trec is not None:
        assert export_campaign(store, campaign_id, "trec").startswith(trec)
        assert not button.disabled
    else:
        with pytest.raises(EvalError, match="no TREC run to write"):
            export_campaign(store, campaign_id, "trec")
        assert button.disabled
        assert "TREC run: no TREC run to write" in unescape(texts(at))


def test_a_script_changed_between_runs_runs_its_new_text(tmp_path: Path) -> None:
    """The tests keep each script's compiled code for the process (tests/conftest.py), keyed on its text: a script
    changed on disk runs as changed, in a new session and in one already open."""
    script = tmp_path / "app.py"
    script.write_text('import streamlit as st\nst.title("one")\n')
    opened = AppTest.from_file(str(script)).run()
    script.write_text('import streamlit as st\nst.title("two")\n')
    assert AppTest.from_file(str(script)).run().title[0].value == "two"
    assert opened.run().title[0].value == "two"
