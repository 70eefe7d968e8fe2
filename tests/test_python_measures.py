"""Measures in Python: registered by an entry point or the operator's setting, computed on every question of a
campaign, seen by every face, and failing one question at a time."""

from __future__ import annotations

import json
import math
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from evalcore.cli import main
from evalcore.errors import EvalError
from evalcore.metrics import registry
from evalcore.metrics.python_measures import Given, Passage, measure, value_of

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "measures_package"


@pytest.fixture
def own_measures(monkeypatch, tmp_path):
    """Registers measures as an operator does; the registry is read again without them afterwards."""
    def register(*, entry_point: bool = False, module: str | None = None, modules: str = "") -> None:
        if entry_point:  # what `pip install -e examples/measures_package` leaves on the path, without installing
            info = tmp_path / "site" / "evalcore_example_measures-0.1.0.dist-info"
            info.mkdir(parents=True)
            (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalcore-example-measures\nVersion: 0.1.0\n")
            (info / "entry_points.txt").write_text("[evalcore.measures]\nexample = evalcore_example_measures\n")
            monkeypatch.syspath_prepend(str(info.parent))
            monkeypatch.syspath_prepend(str(EXAMPLE))
        if module is not None:
            (tmp_path / "mods").mkdir(exist_ok=True)
            (tmp_path / "mods" / f"{modules.split(':')[0]}.py").write_text(textwrap.dedent(module))
            monkeypatch.syspath_prepend(str(tmp_path / "mods"))
            sys.modules.pop(modules.split(":")[0], None)
        monkeypatch.setenv("EVALCORE_MEASURES", modules)
        registry.load_python_measures()

    yield register
    monkeypatch.delenv("EVALCORE_MEASURES", raising=False)
    for path in [str(tmp_path / "site"), str(EXAMPLE), str(tmp_path / "mods")]:
        while path in sys.path:
            sys.path.remove(path)
    registry.load_python_measures()
    registry.check_python_measures()


OWN = """
    import time
    from evalcore.metrics.python_measures import measure

    SEEN = []

    @measure("answer_words", scale="number", higher_is_better=False, version="2")
    def answer_words(given):
        '''Words in the answer.'''
        SEEN.append(given)
        return len((given.answer or "").split())

    @measure("breaks_on_warranty", scale="pass-fail")
    def breaks_on_warranty(given):
        if "warranty" in given.question:
            return 1 / 0
        return True

    @measure("slow_on_refund", timeout_s=0.3)
    def slow_on_refund(given):
        if "refund" in given.question:
            time.sleep(3)
        return 0.5

    @measure("odd_values")
    def odd_values(given):
        return float("nan") if "refund" in given.question else "yes" if "warranty" in given.question else 2.0
"""


def test_the_example_package_registers_its_measures_through_its_entry_point(own_measures, capsys) -> None:
    own_measures(entry_point=True)
    registry.check_python_measures()
    assert registry.MEASURES["quotes_a_price"].binary
    assert registry.MEASURES["titles_cited"].scale == "number"
    assert registry.MEASURES["quotes_a_price"].signature.startswith(
        "quotes_a_price|python:evalcore_example_measures.quotes_a_price|v:1|version:")
    assert registry.panels(["quotes_a_price", "recall"]) == [("Retrieval", ["recall"]),
                                                             ("Measures in Python", ["quotes_a_price"])]
    assert main(["measures", "--python", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [row["measure"] for row in listed] == ["quotes_a_price", "titles_cited"]
    assert "entry point example = evalcore_example_measures" in listed[0]["doc"]
    given = Given("Price?", "It costs 30 € (see Terms of Sale).", ("30 €",),
                  (Passage(10, "Terms of Sale", "…", 1.0), Passage(11, "Warranty", "…", 0.5)), {10: 1}, True)
    scores = registry.score_question(registry.Inputs(answer=given.answer, passages=given.passages,
                                                     question=given.question, references=given.references))
    assert (scores.values["quotes_a_price"], scores.values["titles_cited"]) == (1.0, 1.0)


def test_a_measure_receives_the_question_and_one_that_fails_fails_only_itself_on_that_question(
        own_measures, tmp_path) -> None:
    from evalcore.campaigns import campaign_results, get_manager
    from evalcore.testing import FakeOpenAIServer
    from tests.conftest import write_dataset
    from tests.test_abstention import ABSTAIN, launch, scripted

    own_measures(module=OWN, modules="own_measures")
    data = write_dataset(tmp_path / "data", ABSTAIN)
    manager = get_manager(tmp_path / "own.db")
    with FakeOpenAIServer(scripted({"refund": "Within 30 days.", "warranty": "Three years from delivery.",
                                    "founded": "Marie."})) as server:
        campaign = launch(manager, data, server)
    results = {r.question.qid: r for r in campaign_results(manager.store, campaign)}
    assert results[1].outcome.error is None
    assert results[2].outcome.error is None
    assert [results[q].outcome.measures["answer_words"] for q in (1, 2)] == [3.0, 4.0]
    assert "breaks_on_warranty" not in results[2].outcome.measures
    assert results[1].outcome.measures["breaks_on_warranty"] == 1.0
    assert "measure breaks_on_warranty failed: raised ZeroDivisionError: division by zero" in results[2].outcome.notes
    assert "measure slow_on_refund failed: ran past its time limit of 0.3 s" in results[1].outcome.notes
    assert results[2].outcome.measures["slow_on_refund"] == 0.5
    assert "measure odd_values failed: returned nan, not a finite number" in results[1].outcome.notes
    assert any(note.startswith("measure odd_values failed: returned a str ('yes')")
               for note in results[2].outcome.notes)
    assert any("returned 2.0, outside 0-1" in note for note in results[3].outcome.notes)
    seen = sys.modules["own_measures"].SEEN
    refund = next(given for given in seen if given.question == "What is the refund window?")
    assert (refund.answer, refund.references, refund.labels, refund.answerable) == (
        "Within 30 days.", ("30 days.",), {10: 1}, True)
    passages = {passage.pid: (passage.title, passage.text) for passage in refund.passages}
    assert passages[11] == ("Warranty", "The warranty lasts 3 years from delivery.")  # what BM25 ranked
    manager.close()


def test_a_measure_in_python_goes_through_every_face(own_measures, tmp_path, monkeypatch, capsys) -> None:
    from evalcore.campaigns import campaign_aggregates, get_manager
    from evalcore.campaigns.export import export_campaign
    from evalcore.campaigns.result_rows import load_signatures
    from evalcore.compare import compare_campaigns
    from evalcore.gates.checks import campaign_checks, parse_gate
    from evalcore.testing import FakeOpenAIServer
    from tests.conftest import write_dataset
    from tests.test_abstention import ABSTAIN, launch, scripted

    own_measures(entry_point=True)
    data = write_dataset(tmp_path / "data", ABSTAIN)
    manager = get_manager(tmp_path / "faces.db")
    with FakeOpenAIServer(scripted({"refund": "Within 30 days, 5 € of fees.", "warranty": "Three years, $12.",
                                    "founded": "Marie."})) as server:
        priced = launch(manager, data, server)
    with FakeOpenAIServer(scripted({"refund": "Within 30 days.", "warranty": "Three years.",
                                    "founded": "Marie."})) as server:
        plain = launch(manager, data, server)
    aggregates = campaign_aggregates(manager.store, priced)
    assert (aggregates["quotes_a_price"].mean, aggregates["quotes_a_price"].count) == (0.5, 4)
    assert load_signatures(manager.store, priced)["quotes_a_price"] == registry.signature("quotes_a_price")
    delta = next(m for m in compare_campaigns(manager.store, plain, priced).measures if m.measure == "quotes_a_price")
    assert (delta.mean_a, delta.mean_b, delta.test) == (0.0, 0.5, "mcnemar-exact")
    gate = [parse_gate("quotes_a_price=0.5")]
    from evalcore.campaigns import campaign_results

    assert [c.passed for c in campaign_checks(gate, campaign_results(manager.store, priced))] == [True]
    assert [c.passed for c in campaign_checks(gate, campaign_results(manager.store, plain))] == [False]
    header = export_campaign(manager.store, priced, "csv").splitlines()[0]
    assert "quotes_a_price" in header
    assert "titles_cited" in header
    manager.close()
    from evalcore.notebook.views import CampaignView

    view = CampaignView(get_manager(tmp_path / "faces.db").store, priced)
    rows = view.aggregates().set_index("measure")
    assert (rows.loc["quotes_a_price", "panel"], rows.loc["quotes_a_price", "mean"]) == ("python", 0.5)
    assert "quotes_a_price" in view.results().columns
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "faces.db"))
    assert main(["campaigns", "show", priced]) == 0
    assert "quotes_a_price" in capsys.readouterr().out
    assert main(["compare", plain, priced, "--report", str(tmp_path / "report.html")]) in (0, 1)
    assert "quotes_a_price" in (tmp_path / "report.html").read_text(encoding="utf-8")
    from tests.test_dashboard import assert_clean, page_test, texts, unescape

    at = page_test(str(tmp_path / "faces.db"), monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(priced).run()
    assert_clean(at)
    assert {unescape(m.label) for m in at.metric} >= {"quotes_a_price", "titles_cited"}
    assert "Measures in Python" in unescape(texts(at))


DECLARE = "from evalcore.metrics.python_measures import measure\n"
BAD = {
    "import": ("import nowhere_to_be_found\n", "ModuleNotFoundError: No module named 'nowhere_to_be_found'"),
    "clash": (DECLARE + "@measure('recall')\ndef recall(given):\n    return 1.0\n", "its name is already a measure's"),
    "returns text": (DECLARE + "@measure('words')\ndef words(given) -> str:\n    return 'many'\n",
                     "its function is declared to return str, not a number"),
    "scale": (DECLARE + "@measure('words', scale='percent')\ndef words(given):\n    return 1\n",
              "its scale is not one of"),
    "nothing": ("VALUE = 3\n", "it declares no measure in Python"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_registration_is_an_error_naming_the_module_and_refuses_a_launch(own_measures, tmp_path,
                                                                                 case: str) -> None:
    from evalcore.campaigns import get_manager
    from evalcore.campaigns.launching import LaunchRequest
    from evalcore.targets import TargetConfig
    from tests.conftest import write_dataset
    from tests.test_abstention import ABSTAIN

    source, message = BAD[case]
    own_measures(module=source, modules="broken_measures")
    with pytest.raises(EvalError) as caught:
        registry.check_python_measures()
    assert message in str(caught.value)
    assert caught.value.where == "module broken_measures (EVALCORE_MEASURES)"
    assert "recall" in registry.MEASURES
    assert "words" not in registry.MEASURES  # the built-ins stay
    data = write_dataset(tmp_path / "data", ABSTAIN)
    manager = get_manager(tmp_path / "bad.db")
    with pytest.raises(EvalError, match="broken_measures"):
        manager.launch(LaunchRequest(config=TargetConfig.of(knowledge_base=str(data), retriever="bm25",
                                                            generator="extractive"), dataset=str(data)))
    manager.close()
    assert main(["measures"]) == 2


def test_values_are_checked_against_the_declared_scale() -> None:
    given = Given("q", "a", (), (), {}, None)
    def declared(returned: object, scale: str = "0-1") -> float | None:
        return value_of(measure("m", scale=scale)(lambda _: returned), given)
    assert (declared(True, "pass-fail"), declared(0, "pass-fail"), declared(-3.5, "number"), declared(None)) == (
        1.0, 0.0, -3.5, None)
    assert declared(0.25) == 0.25
    assert math.isclose(declared(7, "number") or 0, 7.0)
    for returned, scale in ((0.5, "pass-fail"), (1.5, "0-1"), (math.inf, "number"), ([1], "number")):
        with pytest.raises(Exception, match="returned"):
            declared(returned, scale)


def test_the_api_lists_the_measures_in_python_and_names_a_bad_registration(own_measures, tmp_path) -> None:
    import httpx

    from evalcore.access.api_keys import create_key
    from evalcore.api.app import create_app
    from tests.test_api import serve

    own_measures(entry_point=True)
    app: Any = create_app(tmp_path / "api.db")
    viewer = {"Authorization": f"Bearer {create_key(app.state.store, tenant='default', role='viewer')[1]}"}
    with serve(app) as url:
        listed = httpx.get(f"{url}/api/v1/measures", params={"python": "true"}, headers=viewer)
        assert listed.status_code == 200, listed.text
        rows = listed.json()["data"]["measures"]
        assert [(row["measure"], row["values"]) for row in rows] == [("quotes_a_price", "pass/fail (1/0)"),
                                                                     ("titles_cited", "numbers")]
        everything = httpx.get(f"{url}/api/v1/measures", headers=viewer).json()["data"]["measures"]
        assert everything[0]["measure"] == "precision"
        assert everything[-1]["measure"] == "titles_cited"
        own_measures(module="import nowhere_to_be_found\n", modules="broken_measures")
        refused = httpx.get(f"{url}/api/v1/measures", headers=viewer)
        assert refused.status_code == 422
        assert "broken_measures" in refused.json()["error"]["message"]
