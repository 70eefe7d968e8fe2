"""What people read never shows a raw value: every page (each campaign, section and comparison tab) and every
command's output over a store with finished, failing, failed, judged and labelled campaigns says `—` or words, never
`None`, `nan`, a `(s)` plural or a status as stored (`succeeded_with_failures`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from evalcore.campaigns import get_manager, list_campaigns
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.question_labels import set_label
from evalcore.cli import COMMANDS, main
from evalcore.compare import compare_campaigns
from evalcore.store.campaign_statuses import CampaignStatus
from evalcore.suites import Case, create_suite
from evalcore.targets import TargetConfig
from evalcore.testing import FakeOpenAIServer
from tests.test_campaigns import FakeTarget
from tests.test_dashboard import page_test

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest
# One worker runs the module: its store of every kind of campaign is made once.
pytestmark = pytest.mark.xdist_group("raw-values")

STORED_STATUSES = sorted(status.value for status in CampaignStatus if "_" in status.value)
RAW = re.compile(r"\bNone\b|\bnan\b|\bNaN\b|\(s\)|" + "|".join(STORED_STATUSES))
# Commands that serve, run workers, move the store or call a model: nothing of theirs is read on a sample store.
NOT_WALKED = {"dashboard": "serves pages (walked through AppTest)", "serve": "serves the API",
              "worker": "runs queued campaigns", "store": "moves the store to PostgreSQL",
              "testset": "asks a model for questions", "corpus": "imports documents into a dataset folder"}


def raw_words(where: str, text: str) -> list[str]:
    """Each raw value in the text, with where it is and the text around it."""
    return [f"{where}: …{text[max(m.start() - 60, 0):m.end() + 30]!r}…" for m in RAW.finditer(text)]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Campaigns of every kind people meet: two keyword ones (a comparison kept), a judged and labelled one, one
    whose questions partly failed (an unmapped source in each answer), one that failed; and a suite."""
    db = str(tmp_path_factory.mktemp("raw") / "evalcore.db")
    manager = get_manager(db)
    ids = {f"top{k}": manager.launch(LaunchRequest(
        dataset="default", config=TargetConfig.from_dict({"retriever": "bm25", "embedding_top_k": k}), limit=8,
        name=f"keyword top {k}")) for k in (2, 5)}

    def judge(path: str, body: dict) -> str:
        return json.dumps({"score": 1 + len(body["messages"][1]["content"]) % 5, "reason": "scripted"})

    with FakeOpenAIServer(judge) as server:
        config = TargetConfig.from_dict({"retriever": "bm25", "judge_model": "judge-mini", "judge_api_key_env": "",
                                         "judge_base_url": server.base_url})
        ids["judged"] = manager.launch(LaunchRequest(dataset="default", config=config, judges=("relevance",),
                                                     limit=6, name="judged"))
        assert manager.wait(ids["judged"], timeout=120).status == CampaignStatus.SUCCEEDED
    ids["failing"] = manager.launch(LaunchRequest(dataset="default", target=FakeTarget(fail=lambda qid: qid % 3 == 0),
                                                  limit=8, name="some failed"))
    ids["failed"] = manager.launch(LaunchRequest(dataset="default", target=FakeTarget(fail=lambda qid: True),
                                                 limit=8, name="all failed", max_failed_share=0.3))
    for campaign_id in ids.values():
        manager.wait(campaign_id, timeout=120)
    statuses = {c.id: c.status for c in list_campaigns(manager.store)}
    assert statuses[ids["failing"]] == CampaignStatus.SUCCEEDED_WITH_FAILURES
    assert statuses[ids["failed"]] == CampaignStatus.FAILED
    qid = next(r for r in manager.store.read("SELECT qid FROM results WHERE campaign_id = ? LIMIT 1",
                                             (ids["judged"],)))["qid"]
    set_label(manager.store, ids["judged"], int(qid), "relevance", "4", note="checked")
    compare_campaigns(manager.store, ids["top2"], ids["top5"])
    create_suite(manager.store, tenant="default", name="refunds", target_id="default",
                 cases=[Case("What is the refund window?", "30 days", ("Terms of Sale",))])
    yield {"db": db, **ids}
    manager.close()


def shown_text(at: AppTest) -> list[tuple[str, str]]:
    """Every text the page shows, by kind: titles, text, captions, alerts, metrics, pickers' options, tabs, and every
    table cell (a missing cell is shown as "None" by the table)."""
    found = [(kind, str(e.value)) for kind in ("title", "subheader", "markdown", "caption", "text", "code", "info",
                                               "warning", "success", "error", "exception")
             for e in at.get(kind)]
    found += [("metric", f"{m.label} {m.value} {m.proto.help}") for m in at.metric]
    found += [("selectbox", " | ".join(map(str, box.options))) for box in at.selectbox]
    found += [("tab", tab.label) for tab in at.tabs]
    for table in at.dataframe:
        frame = table.value if isinstance(table.value, pd.DataFrame) else pd.DataFrame(table.value)
        found += [("table", f"{column}: {'None' if pd.isna(value) else value}")
                  for column in frame.columns for value in frame[column]
                  if not isinstance(value, (list, dict, tuple)) and (pd.isna(value) or isinstance(value, str))]
    return found


def walk(at: AppTest, where: str) -> list[str]:
    """The raw values of the page as it is now."""
    assert not at.exception, [e.value for e in at.exception]
    return [line for kind, text in shown_text(at) for line in raw_words(f"{where} {kind}", text)]


def opened(db: str, monkeypatch: pytest.MonkeyPatch, page: str, **query: str) -> AppTest:
    return page_test(db, monkeypatch, page, timeout=90, **query)


def test_every_page_shows_no_raw_value(world: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    found: list[str] = []
    for page in ("pages/datasets.py", "pages/suites.py", "pages/run.py", "pages/traces.py"):
        found += walk(opened(world["db"], monkeypatch, page), page)
    for name in ("top2", "judged", "failing", "failed"):
        for section in ("Questions", "Failure stages", "Labels", "Configuration"):
            at = opened(world["db"], monkeypatch, "pages/campaigns.py", campaign=world[name], section=section)
            found += walk(at, f"campaigns {name} {section}")
    for a, b in (("top2", "top5"), ("top5", "failing"), ("judged", "top2")):
        for section in ("Measures", "Per question", "Failure stages", "Questions", "Pairwise judge"):
            at = opened(world["db"], monkeypatch, "pages/compare.py", a=world[a], b=world[b], section=section,
                        questions="dataset:default")
            found += walk(at, f"compare {a}/{b} {section}")
    at = opened(world["db"], monkeypatch, "pages/compare.py", mode="sweep", questions="dataset:default",
                campaigns=f"{world['top2']},{world['top5']}")
    found += walk(at, "compare sweep")
    assert not found, "\n".join(found)


def commands(world: dict, tmp_path: Path) -> list[list[str]]:
    """Every command that reads the store or a dataset, as an analyst types it, each campaign named."""
    db = ["--db", world["db"]]
    out = [["campaigns", "list", *db]]  # --json is for programs: the stored values, as the API gives them
    for name in ("top2", "judged", "failing", "failed"):
        out += [["campaigns", "show", world[name], *db], ["campaigns", "export", world[name], "--format", "csv",
                                                          "--out", str(tmp_path / f"{name}.csv"), *db]]
    out += [["compare", world["top2"], world["top5"], "--resamples", "200", *db],
            ["compare", world["top5"], world["failing"], "--resamples", "200", *db],
            ["compare", world["top2"], world["top5"], world["judged"], "--resamples", "200", *db],
            ["labels", "export", world["judged"], *db], ["labels", "agreement", world["judged"], *db],
            ["suites", "list", *db], ["keys", "list", *db], ["traces", "list", *db],
            ["traces", "settings", "--tenant", "default", *db], ["dataset", "stats", "default"],
            ["dataset", "check", "default"], ["config", "show"], ["ask", "What is the refund window?"],
            ["score", "--help"], ["score-text", "--help"],
            ["run", "--dataset", "default", "--limit", "3", "--set", "retriever=bm25", "--name", "walked", *db],
            ["rejudge", world["judged"], "--help"], ["measures"], ["measures", "--python"]]
    return out


def test_every_command_prints_no_raw_value(world: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argvs = commands(world, tmp_path)
    assert {argv[0] for argv in argvs} | set(NOT_WALKED) == set(COMMANDS)  # a new command is walked or said why not
    found: list[str] = []
    for argv in argvs:
        try:
            main(argv)
        except SystemExit:  # --help
            pass
        captured = capsys.readouterr()
        found += raw_words(" ".join(argv[:3]), captured.out + captured.err)
    assert not found, "\n".join(found)
