"""Stored text stays text on every page: hostile Markdown and HTML in every stored field render literally."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

import ui
from evalcore.campaigns import get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.models import ChatReply
from evalcore.suites import Case, create_suite
from evalcore.targets import Retrieved, TargetAnswer, TargetConfig
from evalcore.targets.saved_targets import save_target
from tests.conftest import TINY, write_dataset
from tests.test_dashboard import vega_charts

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")
# A link, an image, raw HTML, a code span, math, bold, a colour directive, an entity and a newline.
HOSTILE = "[a](http://e.test) ![i](http://e.test/i) <img src=x> <b>b</b> `t` $x$ **s** :red[r] &amp;\nz"
FLAT = " ".join(HOSTILE.split())
MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


class HostileModel:
    """A judge model whose name and reasons are hostile text."""

    def __init__(self, name: str) -> None:
        self.name = name

    def chat(self, messages: Sequence[Any], *, temperature: float | None = None, max_tokens: int | None = None,
             schema: dict[str, Any] | None = None) -> ChatReply:
        return ChatReply(json.dumps({"score": 4, "reason": HOSTILE}), 10, 5, False)


class HostileTarget:
    """A target answering hostile text with hostile passage titles, failing on questions that ask it to."""

    def __init__(self, model: str) -> None:
        self.config = TargetConfig.from_dict({"retriever": "bm25", "model": model,
                                              "base_url": f"http://127.0.0.1:9/{HOSTILE}"})
        self.model = HostileModel(model)

    def check(self) -> None:
        """Nothing to reach."""

    def prepare(self, passages: Sequence[Any], progress: Callable[[int, int], None] | None = None) -> None:
        """Nothing to index."""

    def answer(self, question: str, qid: int | None = None) -> TargetAnswer:
        if question.startswith("fail"):
            raise RuntimeError(HOSTILE)
        return TargetAnswer(HOSTILE, [Retrieved(None, HOSTILE, HOSTILE, 1.0, {"bm25": 1.0})], notes=[HOSTILE])

    def chat_model(self) -> HostileModel:
        return self.model


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A store where every field a user or a model can fill holds hostile text, and a dataset full of it."""
    home = tmp_path_factory.mktemp("hostile")
    db = str(home / "evalcore.db")
    manager = get_manager(db)
    target_id = save_target(manager.store, TargetConfig.from_dict({"model": HOSTILE}), name=HOSTILE)
    suite = create_suite(manager.store, name=HOSTILE, target_id=target_id,
                         cases=[Case(HOSTILE, HOSTILE, (HOSTILE,)), Case(f"fail {HOSTILE}", HOSTILE, ())])
    ids = {"db": db, "uploads": str(home / "uploads"), "suite": suite.id, "target": target_id}
    for n, model in enumerate((HOSTILE, f"{HOSTILE} 2")):
        campaign_id = manager.launch(LaunchRequest(suite_id=suite.id, target=HostileTarget(model), use_judge=True,
                                                   name=f"{n} {HOSTILE}"))
        assert manager.wait(campaign_id, timeout=60).status == "succeeded_with_failures"  # the failing question
        ids[f"campaign{n}"] = campaign_id
    tables = {**TINY, "queries": {**TINY["queries"], "text": [HOSTILE, "b", "c"]},
              "corpus": {**TINY["corpus"], "title": [HOSTILE] * 5},
              "answers": {**TINY["answers"], "text": [HOSTILE, "x", "y"]}}
    write_dataset(home / "uploads" / "uploads-hostile", tables)
    yield ids
    manager.close()


def markdown_values(at: AppTest) -> list[str]:
    """Every value the page renders as Markdown: bodies, labels, tooltips, alerts, progress text."""
    values = [e.value for kind in (at.title, at.header, at.subheader, at.caption, at.markdown, at.success, at.info,
                                   at.warning, at.error) for e in kind]
    values += [e.label for e in at.expander] + [t.label for t in at.tabs]
    for node in walk(at._tree):
        values += [str(v) for v in (getattr(node, "label", None), getattr(node, "help", None)) if v]
    values += [p.proto.text for p in at.get("progress")]
    for table in at.table:  # st.table renders each cell and header as Markdown
        values += [str(column) for column in table.value.columns] + [str(v) for v in table.value.to_numpy().ravel()]
    return values


def walk(node: Any) -> Iterator[Any]:
    """Every element of the page (main and sidebar), depth first."""
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child)


def rendered(markdown: str) -> tuple[str, str]:
    """The HTML a CommonMark renderer makes of a value, and its visible text."""
    html = MARKDOWN.render(markdown)
    return html, unescape(re.sub(r"<[^>]+>", "", html))


def assert_inert(markdown: str) -> None:
    """No link, image, raw HTML, code span, math or colour directive comes from stored text."""
    html, _ = rendered(markdown)
    assert not re.search(r"<a |<img|<b>|<code>t</code>|<em>", html), (markdown, html)
    assert not re.search(r"(?<!\\)\$|(?<!\\):red|https?:/", markdown), markdown


def plain_values(at: AppTest) -> str:
    """What the page shows as plain text: st.text, st.code, options of pickers, table cells, editors."""
    parts = [e.value for kind in (at.text, at.code) for e in kind]
    parts += [str(o) for box in (*at.selectbox, *at.multiselect) for o in box.options]
    parts += [df.value.to_csv(sep="\t") for df in (*at.dataframe, *at.data_editor)]
    return "\n".join(parts)


def check_page(at: AppTest, literal_in_markdown: Sequence[str] = (), literal_in_plain: Sequence[str] = ()) -> None:
    """Nothing failed, every Markdown value is inert, and the hostile strings show as they are where expected."""
    assert not at.exception, [e.value for e in at.exception]
    values = markdown_values(at)
    for value in values:
        assert_inert(value)
    visible = "\n".join(rendered(value)[1] for value in values)
    for text in literal_in_markdown:
        assert text in visible, text
    plain = plain_values(at)
    for text in literal_in_plain:
        assert text in plain, text
    for chart in charts(at):
        assert "<b>b</b>" not in chart, chart[chart.find("<b>b</b>") - 300:][:600]
        assert "<img src=x>" not in chart, chart[chart.find("<b>b</b>") - 300:][:600]


def charts(at: AppTest) -> list[str]:
    """Each Plotly figure's specification as readable JSON text (Vega-Lite charts draw text as text)."""
    return [json.dumps(json.loads(c.proto.spec), ensure_ascii=False) for c in at.get("plotly_chart")]


def open_page(hostile: dict[str, str], monkeypatch: pytest.MonkeyPatch, page: str) -> AppTest:
    monkeypatch.setenv("EVALCORE_DB", hostile["db"])
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", hostile["uploads"])
    at = AppTest.from_file(APP, default_timeout=60).run()
    return at.switch_page(page).run() if page != "pages/datasets.py" else at


def test_datasets_page(hostile: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(hostile, monkeypatch, "pages/datasets.py")
    at.selectbox[0].set_value(str(Path(hostile["uploads"]) / "uploads-hostile")).run()
    check_page(at, literal_in_plain=[HOSTILE, f"1 · {ui.short(HOSTILE)}"], literal_in_markdown=[FLAT])
    # The question's passages and its reference answer: static tables, which render Markdown, so escaped.
    titles = next(table.value for table in at.table if "title" in table.value.columns)
    assert {rendered(title)[1].strip() for title in titles["title"]} == {FLAT}


def test_suites_page(hostile: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(hostile, monkeypatch, "pages/suites.py")
    at.selectbox[0].set_value(hostile["suite"]).run()
    # A suite's name is one line (spaces collapsed); everything else keeps its line breaks.
    check_page(at, literal_in_plain=[f"{FLAT} · 2 cases · {hostile['suite']}", f"{HOSTILE} · target_"])
    assert list(at.data_editor[0].value["question"]) == [HOSTILE, f"fail {HOSTILE}"]
    assert at.dataframe[0].value["name"][0] == FLAT
    assert at.dataframe[0].value["configuration"][0] == HOSTILE


def test_run_page(hostile: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(hostile, monkeypatch, "pages/run.py")
    at.radio[0].set_value("suite").run()
    check_page(at,
               literal_in_plain=[f"{FLAT} · 2 cases", f"{HOSTILE} · target_", f"campaign on suite {FLAT}: 0 {FLAT}"])
    assert at.text_input(key=f"cfg-{hostile['target']}-model").value == HOSTILE  # the suite's saved configuration


def test_campaigns_page(hostile: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(hostile, monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(hostile["campaign0"]).run()
    score = next(m for m in at.metric if m.label == "judge\\.score")
    assert_inert(score.help)
    assert FLAT in rendered(score.help)[1]  # the judge's signature names its model: shown as it is, not as code
    check_page(at, literal_in_markdown=[ui.short(HOSTILE, 100), FLAT],
               literal_in_plain=[f"0 {FLAT} · suite {FLAT} · succeeded with 1 failed · ", f"· {hostile['campaign0']}",
                                 f"Answer: {HOSTILE}", f"note: {HOSTILE}", "\t" + FLAT])
    judges = next(df.value for df in at.dataframe if "reason" in df.value.columns)
    assert set(judges["reason"]) == {HOSTILE}
    assert set(judges["model"]) == {HOSTILE}
    retrieved = next(df.value for df in at.dataframe if "hit" in df.value.columns)
    assert list(retrieved["title"]) == [HOSTILE]
    at.selectbox(key=f"question-{hostile['campaign0']}-pick").set_value("1").run()  # the failed question
    check_page(at, literal_in_plain=[f"RuntimeError: {HOSTILE}"])
    at.session_state["campaign-section"] = "Configuration"
    check_page(at.run())
    snapshot = json.loads(at.json[0].value)
    assert (snapshot["model"], snapshot["base_url"]) == (HOSTILE, f"http://127.0.0.1:9/{HOSTILE}")


def test_compare_page(hostile: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(hostile, monkeypatch, "pages/compare.py")
    check_page(at, literal_in_plain=[f"1 {FLAT} · {hostile['campaign1']}", f"{HOSTILE} 2"])
    at.radio[0].set_value("sweep").run()
    check_page(at)
    # The sweep over the model key: Vega-Lite draws text as text, the stored value as it is.
    [series] = [data for title, _, data in vega_charts(at) if " by model " in title]
    assert HOSTILE in list(series["x"])


def test_sidebar_progress_and_sign_in_texts_are_inert(hostile: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(hostile, monkeypatch, "pages/datasets.py")
    check_page(at)
    assert ui.escape_md("a\nb`c`") == "a b\\`c\\`"
    assert ui.chart_text("<a href='x'>&") == "&lt;a href='x'&gt;&amp;"
