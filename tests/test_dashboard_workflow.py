"""The analyst's workflow in the dashboard (AppTest): names in every list and picker, renaming, duplicate
imports that ask, a suite download that is the CLI's export, and progress bars that count the index build."""

from __future__ import annotations

import io
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import ui
from evalcore.campaigns import get_campaign, get_manager, list_campaigns
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.suites import Case, create_suite, list_suites, parse_suite_csv
from evalcore.targets import TargetConfig

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")
CSV = "question;expected answer;sources\nWhat is the refund window?;30 days;Terms of Sale\n"


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A suite with a campaign and two dataset campaigns, one named at launch."""
    db = str(tmp_path_factory.mktemp("workflow") / "evalcore.db")
    manager = get_manager(db)
    suite = create_suite(manager.store, name="Refund questions", target_id="default",
                         cases=[Case("What is the refund window?", "30 days", ("Terms of Sale",)),
                                Case("Quel est le délai de rétractation ?", "14 jours", ("CGV",))])
    bm25 = TargetConfig.of(retriever="bm25")
    ids = {"suite_id": suite.id,
           "suite": manager.launch(LaunchRequest(suite_id=suite.id, config=bm25, name="suite baseline")),
           "named": manager.launch(LaunchRequest(dataset="default", config=bm25, limit=5, name="keyword baseline")),
           "made": manager.launch(LaunchRequest(dataset="default",
                                                config=TargetConfig.of(retriever="bm25", embedding_top_k=7), limit=5))}
    for key in ("suite", "named", "made"):
        assert manager.wait(ids[key], timeout=120).status == "succeeded"
    yield {"db": db, **ids}
    manager.close()


def page_test(db: str, monkeypatch: pytest.MonkeyPatch, page: str) -> AppTest:
    """An AppTest session on one page of the app, over the given database."""
    monkeypatch.setenv("EVALCORE_DB", db)
    at = AppTest.from_file(APP, default_timeout=60).run()
    return at.switch_page(page).run()


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def unescape(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


def test_the_campaign_list_shows_names_sources_settings_and_measures(named: dict,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(named["db"], monkeypatch, "pages/campaigns.py")
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table.columns[:5]) == ["name", "dataset / suite", "status", "created", "progress"]
    assert {"retriever", "reranker", "generator", "top-k", "ndcg@10", "coverage", "id"} <= set(table.columns)
    rows = table.set_index("id")
    assert rows.loc[named["named"], "name"] == "keyword baseline"
    assert rows.loc[named["made"], "name"] == "bm25 · top 7 · extractive"
    assert rows.loc[named["made"], "top-k"] == "7"
    assert rows.loc[named["suite"], "dataset / suite"] == "suite Refund questions"  # the suite's name, not its id
    assert rows.loc[named["named"], "dataset / suite"] == "dataset default"
    assert 0 <= float(rows.loc[named["named"], "ndcg@10"]) <= 1
    labels = at.selectbox(key="campaign_id-pick").options
    assert any(label.startswith("suite baseline · suite Refund questions · succeeded · ") for label in labels)
    at.text_input(key="campaigns-search").set_value("refund").run()  # search: only the suite's campaign is left
    assert list(at.dataframe[0].value["id"]) == [named["suite"]]
    assert at.selectbox[0].value == named["suite"]
    at.text_input(key="campaigns-search").set_value("no such thing").run()
    assert "No campaign matches" in at.info[0].value


def test_a_campaign_is_renamed_from_the_campaigns_page(named: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(named["db"], monkeypatch, "pages/campaigns.py")
    at.selectbox(key="campaign_id-pick").set_value(named["made"]).run()
    at.text_input(key=f"name-{named['made']}").set_value("  top seven,\n first try ")
    at.button(key=f"FormSubmitter:rename-{named['made']}-Rename").click().run()
    assert_clean(at)
    assert get_campaign(get_manager(named["db"]).store, named["made"]).name == "top seven, first try"
    assert "Renamed to top seven, first try." in unescape(at.success[0].value)
    assert at.dataframe[0].value.set_index("id").loc[named["made"], "name"] == "top seven, first try"
    at.text_input(key=f"name-{named['made']}").set_value("   ")
    at.button(key=f"FormSubmitter:rename-{named['made']}-Rename").click().run()
    assert "a campaign name is 1 to 200 characters" in unescape(at.error[0].value)


def test_the_run_page_lists_suites_by_name_with_their_settings_and_names_campaigns(
        named: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page_test(named["db"], monkeypatch, "pages/run.py")
    starts = next(s for s in at.selectbox if s.label == "Start from")
    assert any(option.startswith("campaign on dataset default: keyword baseline · ") for option in starts.options)
    at.radio[0].set_value("suite").run()
    assert_clean(at)
    suites = at.dataframe[0].value
    assert suites["name"][0] == "Refund questions"
    assert suites["dataset"][0] == "default"
    assert suites["cases"][0] == 2
    assert suites["retriever"][0] == "hybrid RRF · USE embeddings"
    assert suites["last campaign"][0] == "succeeded"
    assert 0 <= float(suites["coverage"][0]) <= 1
    assert at.selectbox(key="suite_id-pick").options == [f"Refund questions · 2 cases · {named['suite_id']}"]
    # The past campaigns on this suite come first among the past configurations.
    starts = next(s for s in at.selectbox if s.label == "Start from")
    past = [o for o in starts.options if o.startswith("campaign on ")]
    assert past[0].startswith("campaign on suite Refund questions: suite baseline · ")


def test_a_campaign_launched_from_the_run_page_has_the_name_given(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/run.py")
    at.text_input(key="campaign-name").set_value("my first look")
    at.number_input(key="limit").set_value(3)
    at.selectbox(key="sweep_key").set_value("embedding_top_k")
    at.text_input(key="sweep_values").set_value("3, 10")
    at.button(key="FormSubmitter:launch-Launch").click().run()
    assert_clean(at)
    names = sorted(c.name for c in list_campaigns(get_manager(db).store))
    assert names == ["my first look · embedding_top_k=10", "my first look · embedding_top_k=3"]


def uploader(at: AppTest) -> Any:
    """The Suites page's CSV uploader (its key changes after each import, which empties it)."""
    imports = at.session_state["suite-imports"] if "suite-imports" in at.session_state else 0  # noqa: SIM401 (no .get)
    return at.file_uploader(key="suite_csv" + (f"-{imports}" if imports else ""))


def test_a_second_import_under_the_same_name_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/suites.py")
    for attempt in range(2):
        uploader(at).set_value(("refunds.csv", CSV.encode(), "text/csv")).run()
        button = at.button(key="import-import")
        if attempt == 0:
            button.click().run()
            # Imported: the uploader is empty again, so nothing warns that the suite just made already exists.
            assert uploader(at).value in (None, [])
            assert not at.warning
            assert "import-import" not in [b.key for b in at.button]
            assert "Imported 1 case into refunds" in unescape(at.success[0].value)
    # The second time: the page says a suite has the name and waits for a choice (or another name).
    assert "A suite named refunds already exists" in unescape(at.warning[0].value)
    assert at.button(key="import-import").disabled
    at.radio(key="import-existing").set_value("keep both").run()
    at.button(key="import-import").click().run()
    assert_clean(at)
    assert sorted(s.name for s in list_suites(get_manager(db).store)) == ["refunds", "refunds (2)"]
    uploader(at).set_value(("refunds.csv", CSV.encode(), "text/csv")).run()
    at.text_input(key="import-name").set_value("refunds, EU").run()  # another name: nothing to choose
    assert not at.warning
    assert not at.button(key="import-import").disabled
    at.text_input(key="import-name").set_value("refunds").run()
    at.radio(key="import-existing").set_value("replace").run()
    at.button(key="import-import").click().run()
    assert "replacing the cases of refunds" in unescape(at.success[0].value)
    assert len(list_suites(get_manager(db).store)) == 2


def test_the_sample_suite_asks_when_it_was_added_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    at = page_test(db, monkeypatch, "pages/suites.py")
    next(b for b in at.button if b.label == "Add the sample suite").click().run()
    assert [s.name for s in list_suites(get_manager(db).store)] == ["sample"]  # one click the first time
    next(b for b in at.button if b.label == "Add the sample suite").click().run()
    assert_clean(at)
    assert "A suite named sample already exists" in unescape(at.warning[0].value)
    assert len(list_suites(get_manager(db).store)) == 1  # nothing imported before a choice
    at.radio(key="sample-existing").set_value("keep both").run()
    at.button(key="sample-import").click().run()
    assert sorted(s.name for s in list_suites(get_manager(db).store)) == ["sample", "sample (2)"]


def test_the_suite_download_is_the_cli_export_and_imports_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    served: dict[str, bytes] = {}  # what the page hands the browser, by file id
    keep = MemoryMediaFileStorage.load_and_get_id

    def load(storage: MemoryMediaFileStorage, data: str | bytes, *args: object, **kwargs: object) -> str:
        file_id = keep(storage, data, *args, **kwargs)
        served[file_id] = data if isinstance(data, bytes) else Path(data).read_bytes()
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", load)
    db = str(tmp_path / "db.sqlite")
    cases = [Case("Quel est le délai ?", "14 jours", ("CGV", "Règlement")), Case("=1+1 ?", "a;b \"c\"\nd", ()),
             Case("路由器的默认地址是什么？", None, ("路由器手册",))]
    suite = create_suite(get_manager(db).store, name="round trip", target_id="default", cases=cases)
    at = page_test(db, monkeypatch, "pages/suites.py")
    at.selectbox(key="suite_id-pick").set_value(suite.id).run()
    data = served[at.download_button(key="suite-download").proto.url.rsplit("/", 1)[-1].split(".")[0]]
    exported = tmp_path / "exported.csv"
    assert main(["suites", "export", suite.id, "--out", str(exported), "--db", db]) == 0
    assert data == exported.read_bytes()
    assert parse_suite_csv(data).cases == list(cases)
    analysis = served[at.download_button(key="suite-download-analysis").proto.url.rsplit("/", 1)[-1].split(".")[0]]
    table = pd.read_csv(io.BytesIO(analysis), keep_default_na=False)  # an analyst's one call
    assert list(table.columns) == ["question", "expected_answer", "sources"]
    assert len(table) == len(cases)
    assert table["question"].tolist() == ["Quel est le délai ?", "'=1+1 ?", "路由器的默认地址是什么？"]
    assert parse_suite_csv(analysis).cases == list(cases)
    assert main(["suites", "import", str(exported), "--name", "round trip", "--target", "default", "--keep-both",
                 "--db", db]) == 0
    imported = next(s for s in list_suites(get_manager(db).store) if s.name == "round trip (2)")
    assert imported.cases == suite.cases


def test_the_progress_bar_counts_the_index_build_then_the_questions(named: dict) -> None:
    campaign = get_campaign(get_manager(named["db"]).store, named["named"])
    building = replace(campaign, status=campaign.status.RUNNING, ended_at=None, finished=0,
                       stage="embedding the corpus with use", stage_done=128, stage_total=305,
                       pace_rate=64.0, pace_at=None, pace_done=128)
    text = ui.progress_text(building)
    assert "preparing the knowledge base: embedding the corpus with use 128/305 chunks" in text
    assert building.progress().share == pytest.approx(128 / 305)


def test_the_question_browser_finds_questions_by_their_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "db.sqlite"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert len(at.selectbox(key="dataset-question").options) >= 80
    at.text_input(key="dataset-find").set_value("REFUND").run()
    found = at.selectbox(key="dataset-question").options
    assert found
    assert all("refund" in option.casefold() for option in found)
    at.text_input(key="dataset-find").set_value("no question says this").run()
    assert_clean(at)
    assert "No question matches." in [c.value for c in at.caption]


def test_the_questions_of_a_campaign_come_a_page_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_campaigns import FakeTarget, many_questions
    from tests.test_dashboard import open_section

    db = str(tmp_path / "db.sqlite")
    manager = get_manager(db)
    campaign_id = manager.launch(LaunchRequest(dataset=str(many_questions(tmp_path / "many", 130)),
                                               target=FakeTarget()))
    assert manager.wait(campaign_id, timeout=60).status == "succeeded"
    at = page_test(db, monkeypatch, "pages/campaigns.py")
    picker = at.selectbox(key=f"question-{campaign_id}-pick")
    overview = next(df.value for df in at.dataframe if "latency s" in df.value.columns)  # the questions' table
    assert len(picker.options) == 100
    assert len(overview) == 100  # a page of questions
    at.number_input(key=f"page-{campaign_id}").set_value(2).run()
    assert_clean(at)
    picker = at.selectbox(key=f"question-{campaign_id}-pick")
    assert len(picker.options) == 30
    assert picker.options[0].startswith("101 · ok · Question number 101")
    assert [t.value for t in at.text if t.value.startswith("Question: ")] == [("Question: Question number 101 about "
                                                                               "refunds?")]
    # The filter is kept while another section of the campaign is open.
    at.text_input(key="campaign-filter-pick").set_value("number 12").run()
    assert len(at.selectbox(key=f"question-{campaign_id}-pick").options) == 11  # 12 and 120-129
    open_section(at, "Configuration", "campaign-section")
    assert "campaign-filter-pick" not in [box.key for box in at.text_input]
    assert at.json
    open_section(at, "Questions", "campaign-section")
    assert at.text_input(key="campaign-filter-pick").value == "number 12"
    assert len(at.selectbox(key=f"question-{campaign_id}-pick").options) == 11
