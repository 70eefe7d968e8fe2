"""Links to what a page shows (the selection in the URL's query parameters, through sign-in), and every page at its
address for every role."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.util import calc_hash

from evalcore.access.api_keys import create_key
from evalcore.campaigns import get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.store import Store
from evalcore.suites import Case, create_suite
from evalcore.targets import TargetConfig
from tests.test_dashboard import assert_clean, page_test

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGES = {"pages/datasets.py": "Datasets", "pages/suites.py": "Suites", "pages/run.py": "Run a campaign",
         "pages/campaigns.py": "Campaigns", "pages/compare.py": "Compare", "pages/traces.py": "Traces"}
RESERVED = "This page is reserved to the workspace's administrators"


def two_campaigns(db: str) -> dict[str, str]:
    """Two finished keyword campaigns of 8 questions in the database (top 2 then top 5, the newest), by name."""
    manager = get_manager(db)
    ids = {f"top{k}": manager.launch(LaunchRequest(
        dataset="default", config=TargetConfig.from_dict({"retriever": "bm25", "embedding_top_k": k}), limit=8,
        name=f"keyword top {k}")) for k in (2, 5)}
    for campaign_id in ids.values():
        assert manager.wait(campaign_id, timeout=120).status == "succeeded"
    return {"db": db, **ids}


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A database with two campaigns (two_campaigns), no key: the local admin."""
    filled = two_campaigns(str(tmp_path_factory.mktemp("links") / "evalcore.db"))
    yield filled
    get_manager(filled["db"]).close()


def opened(db: str, monkeypatch: pytest.MonkeyPatch, page: str, **query: str) -> AppTest:
    """A new session (a reload, a pasted link) opened on a page with these query parameters."""
    return page_test(db, monkeypatch, page, **query)


def picker(at: AppTest, label: str) -> object:
    return next(box for box in at.selectbox if box.label == label)


def link(at: AppTest) -> str:
    """The link the sidebar gives to copy (AppTest shows the sidebar of the app's first page only)."""
    return next(code.value for code in at.sidebar.code)


def test_a_campaigns_link_opens_that_campaign_its_section_and_question(two: dict,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    at = opened(two["db"], monkeypatch, "pages/campaigns.py")
    assert_clean(at)
    assert picker(at, "Campaign").value == two["top5"]  # no link: the newest
    assert at.query_params["campaign"] == two["top5"]
    assert at.query_params["section"] == "Questions"
    picker(at, "Campaign").set_value(two["top2"]).run()
    picker(at, "Question").set_value("5").run()
    assert at.query_params["campaign"] == two["top2"]
    assert at.query_params["question"] == "5"

    again = opened(two["db"], monkeypatch, "pages/campaigns.py", campaign=two["top2"], question="5",
                   section="Configuration")
    assert_clean(again)
    assert picker(again, "Campaign").value == two["top2"]  # not the newest
    assert again.session_state["campaign-section"] == "Configuration"
    assert again.json  # the configuration section is the one drawn
    again.session_state["campaign-section"] = "Questions"
    again.run()
    assert picker(again, "Question").value == "5"
    assert again.query_params["section"] == "Questions"


def test_the_sidebar_gives_the_link_to_copy(two: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = opened(two["db"], monkeypatch, "pages/datasets.py")
    assert link(at) == "/datasets?dataset=default&question=0"  # the browser's address where it has one (browser test)
    assert "Link to this view" in at.sidebar.caption[-1].value
    at.selectbox(key="dataset-question").set_value(2).run()  # the question ids of the sample are numbers
    assert at.query_params["dataset"] == "default"
    assert at.query_params["question"] == "2"
    again = opened(two["db"], monkeypatch, "pages/datasets.py", dataset="default", question="2")
    assert again.selectbox(key="dataset-question").value == 2


def test_a_link_naming_what_does_not_exist_opens_the_default_view(two: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = opened(two["db"], monkeypatch, "pages/campaigns.py", campaign="nope", section="Elsewhere", question="x")
    assert_clean(at)
    assert picker(at, "Campaign").value == two["top5"]
    assert at.session_state["campaign-section"] == "Questions"
    assert at.query_params["campaign"] == two["top5"]
    at = opened(two["db"], monkeypatch, "pages/compare.py", a="nope", tolerance="-3", effect="many", basis="nothing")
    assert_clean(at)
    assert picker(at, "A (baseline)").value == two["top2"]
    assert at.query_params["effect"] == "0.02"


def test_a_comparisons_link_opens_its_pair_options_and_tab(two: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = opened(two["db"], monkeypatch, "pages/compare.py")
    assert_clean(at)
    assert (picker(at, "A (baseline)").value, picker(at, "B (candidate)").value) == (two["top2"], two["top5"])
    assert at.query_params["a"] == two["top2"]
    assert at.query_params["section"] == "Measures"
    assert at.query_params["questions"] == "dataset:default"
    assert at.query_params["mode"] == "pair"

    swapped = opened(two["db"], monkeypatch, "pages/compare.py", mode="pair", questions="dataset:default",
                     a=two["top5"], b=two["top2"], basis="rougel", tolerance="0.05", effect="0.1", section="Questions")
    assert_clean(swapped)
    assert (picker(swapped, "A (baseline)").value, picker(swapped, "B (candidate)").value) == (two["top5"], two["top2"])
    assert picker(swapped, "Decide each question's verdict by").value == "rougel"
    assert swapped.number_input(key="tolerance-rougel").value == 0.05
    assert swapped.number_input(key="effect").value == 0.1
    assert swapped.session_state["compare-section"] == "Questions"
    assert [box.label for box in swapped.multiselect] == ["Verdicts"]  # the Questions section is the one drawn
    assert {name: swapped.query_params[name] for name in ("a", "b", "basis", "tolerance", "effect")} == {
        "a": two["top5"], "b": two["top2"], "basis": "rougel", "tolerance": "0.05", "effect": "0.1"}


def test_a_sweeps_link_keeps_its_campaigns(two: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    at = opened(two["db"], monkeypatch, "pages/compare.py", mode="sweep", campaigns=f"{two['top5']},{two['top2']}")
    assert_clean(at)
    assert at.radio[0].value == "sweep"
    assert at.multiselect[0].value == [two["top5"], two["top2"]]
    assert at.query_params["campaigns"] == f"{two['top5']},{two['top2']}"


def test_the_link_survives_the_sign_in_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    filled = two_campaigns(str(tmp_path / "evalcore.db"))
    with Store(filled["db"]) as store:
        _, secret = create_key(store, tenant="default", role="admin", capability="full-access")
    monkeypatch.setenv("EVALCORE_DB", filled["db"])
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(campaign=filled["top2"], question="3", section="Questions")
    at._page_hash = calc_hash("campaigns")  # the address /campaigns, as a browser opens it (AppTest has no URL)
    at.run()
    assert [t.value for t in at.title] == ["Sign in"]
    at.text_input(key="sign-in-key").set_value(secret)
    at.button(key="FormSubmitter:sign-in-Sign in").click()
    at.run()
    assert_clean(at)
    assert [t.value for t in at.title] == ["Campaigns"]
    assert picker(at, "Campaign").value == filled["top2"]
    assert picker(at, "Question").value == "3"
    assert at.query_params["campaign"] == filled["top2"]
    get_manager(filled["db"]).close()


@pytest.mark.parametrize("role", ["admin", "viewer"])
def test_every_page_opens_at_its_address_for_every_role(role: str, two: dict, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    db = str(tmp_path / "evalcore.db")
    with Store(db) as store:
        _, secret = create_key(store, tenant="default", role=role, capability="run_evaluations")
    monkeypatch.setenv("EVALCORE_DB", db)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="sign-in-key").set_value(secret)
    at.button(key="FormSubmitter:sign-in-Sign in").click()
    at.run()
    for page, title in PAGES.items():
        at.switch_page(page).run()
        assert_clean(at)
        assert [t.value for t in at.title] == [title], page  # the page itself, never another
        reserved = RESERVED in "\n".join(i.value for i in at.info)
        assert reserved == (role == "viewer" and page in {"pages/suites.py", "pages/run.py"}), page


def test_the_run_pages_link_keeps_its_questions(two: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(two["db"]) as store:
        suite = create_suite(store, tenant="default", name="linked", target_id="default",
                             cases=[Case("What is the refund window?", "30 days", ("Terms of Sale",))])
    at = opened(two["db"], monkeypatch, "pages/run.py")
    assert_clean(at)
    assert (at.query_params["questions"], at.query_params["dataset"]) == ("dataset", "default")
    again = opened(two["db"], monkeypatch, "pages/run.py", questions="suite", suite=suite.id)
    assert_clean(again)
    assert again.radio(key="run-origin").value == "suite"
    assert picker(again, "Suite").value == suite.id
    assert again.query_params["suite"] == suite.id
    assert "dataset" not in again.query_params
