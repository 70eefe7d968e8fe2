"""Failure attribution: each stage from hand-built campaigns, stored and counted, and how stages move in comparisons."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow
import pytest

from evalcore.campaigns import CampaignManager, campaign_diagnosis, campaign_results, get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.compare import compare_campaigns
from evalcore.compare.charts import STAGE_COLORS
from evalcore.diagnosis import NOT_ATTRIBUTED, STAGES, Evidence, GenerationMarks, Stage, StageCounts, attribute
from evalcore.store import MIGRATIONS, Store
from evalcore.targets import Retrieved, TargetAnswer, TargetConfig
from evalcore.testing import FakeOpenAIServer, Reply
from tests.conftest import write_dataset

MARKS = GenerationMarks(rougel=0.3, coverage=0.5)
TITLES = {10: "Terms of Sale", 11: "Warranty", 12: "Shipping", 13: "Careers"}
TEXTS = {10: "Refunds are accepted within 30 days of delivery.", 11: "The warranty lasts 3 years.",
         12: "Shipping takes 2 days.", 13: "We are hiring engineers."}
RIGHT, WRONG = "Refunds are accepted within 30 days.", "Our office is in Lyon."


def hit(pid: int | None, score: float = 1.0, text: str | None = None) -> Retrieved:
    return Retrieved(pid, TITLES.get(pid, "") if pid is not None else "", text or TEXTS.get(pid, ""), score,
                     {"bm25": score})


def evidence(retrieved: Sequence[int | None], context: Sequence[int | None] | None = None, *,
             relevant: dict[int, int] | None = None, measures: dict[str, float] | None = None,
             sources: tuple[str, ...] = (), judged: str | None = None) -> Evidence:
    hits = [hit(pid) for pid in retrieved]
    given = hits if context is None else [hit(pid) for pid in context]
    return Evidence({10: 3} if relevant is None else relevant, sources, hits, given,
                    {"rougel": 0.6, "coverage": 1.0} if measures is None else measures, judged)


@pytest.mark.parametrize(("case", "stage"), [
    (evidence([11, 12]), Stage.RETRIEVAL_MISS),
    (evidence([]), Stage.RETRIEVAL_MISS),
    (evidence([11, 12, 10], [11, 12]), Stage.RANKING_MISS),  # reranked below the context's cut
    (evidence([11, 10], measures={"rougel": 0.1, "coverage": 0.0}), Stage.GENERATION_MISS),
    (evidence([10], measures={"rougel": 0.1, "coverage": 1.0}), Stage.OK),  # a long right answer: coverage passes
    (evidence([10], measures={"rougel": 0.45, "coverage": 0.0}), Stage.OK),  # a paraphrase: ROUGE-L passes
    (evidence([10], measures={}), Stage.OK),  # nothing to check the answer against: not a generation miss
    (evidence([10], measures={"rougel": 0.9, "coverage": 1.0}, judged="fail"), Stage.GENERATION_MISS),
    (evidence([10], measures={"rougel": 0.0, "coverage": 0.0}, judged="pass"), Stage.OK),
    (evidence([10], measures={"rougel": 0.0}, judged="unknown"), Stage.GENERATION_MISS),  # unreadable: words decide
    (evidence([10], relevant={10: 0, 11: 0}), Stage.UNLABELED),  # judged, but nothing relevant
    (evidence([10], relevant={}), Stage.UNLABELED),
    (evidence([10, 11], [11], relevant={10: 1, 11: 2}), Stage.OK),  # any relevant passage in the context
])
def test_each_stage(case: Evidence, stage: Stage) -> None:
    assert attribute(case, MARKS) is stage


def test_an_error_is_failed_whatever_else() -> None:
    case = evidence([10])
    assert attribute(Evidence(case.relevant, (), case.retrieved, case.context, case.measures, error="boom"), MARKS) \
        is Stage.FAILED


def test_suite_expected_sources_play_the_qrels() -> None:
    suite = {"relevant": {}, "sources": ("terms of sale", "Unknown manual")}
    assert attribute(evidence([11, 10], [11, 10], **suite), MARKS) is Stage.OK  # one expected source is enough
    assert attribute(evidence([11, 10], [11], **suite), MARKS) is Stage.RANKING_MISS
    assert attribute(evidence([11, 12], **suite), MARKS) is Stage.RETRIEVAL_MISS
    # An HTTP agent's own ids match an expected source given as an id.
    agent = [Retrieved(None, "", "", 1.0, {}, "doc-7")]
    assert attribute(Evidence({}, ("DOC-7",), agent, agent, {}), MARKS) is Stage.OK


def test_results_file_contexts_are_matched_by_text() -> None:
    ranked = [hit(11), hit(10)]
    chunk = hit(None, text="Refunds are accepted   within 30 days")  # part of passage 10, spaces aside
    other = hit(None, text="Shipping takes 2 days.")
    assert attribute(Evidence({10: 1}, (), ranked, [other, chunk], {"coverage": 1.0}), MARKS) is Stage.OK
    assert attribute(Evidence({10: 1}, (), ranked, [other], {"coverage": 1.0}), MARKS) is Stage.RANKING_MISS


def test_counts_list_every_stage_in_order() -> None:
    counts = StageCounts.of([("ok", 3), (None, 2), ("retrieval miss", 1)])
    assert list(counts.counts) == list(STAGES)
    assert counts.to_dict() == {"retrieval miss": 1, "ranking miss": 0, "generation miss": 0, "ok": 3,
                                "unlabeled": 0, "failed": 0, NOT_ATTRIBUTED: 2}
    assert (counts.total, counts.labeled) == (6, 4)


DATASET = {
    "queries": {"id": [1, 2, 3, 4, 5, 6], "text": [f"Refund question {q}?" for q in range(1, 7)]},
    "corpus": {"id": list(TEXTS), "text": list(TEXTS.values()), "title": list(TITLES.values())},
    "answers": {"id": [100], "text": ["Refunds are accepted within 30 days."]},
    "qrels": {"qid": [1, 2, 3, 4, 6], "pid": [10, 10, 10, 10, 10]},
    "qas": {"qid": [1, 2, 3, 4, 5, 6], "aid": [100] * 6},
}
# Per question: (retrieved after rerank, context, answer); None fails the question.
Script = dict[int, tuple[list[int], list[int], str] | None]
A_SCRIPT: Script = {
    1: ([11, 12], [11], WRONG),                 # retrieval miss
    2: ([11, 12, 10], [11, 12], WRONG),         # ranking miss: the reranker pushed 10 out of the top 2
    3: ([10, 11], [10, 11], WRONG),             # generation miss
    4: ([10], [10], RIGHT),                     # ok
    5: ([10], [10], RIGHT),                     # unlabeled (no qrels)
    6: None,                                    # failed
}
B_SCRIPT: Script = {1: ([10], [10], RIGHT), 2: ([10, 11], [10], RIGHT), 3: ([10], [10], WRONG),
                    4: ([11, 10], [11], RIGHT), 5: ([11], [11], WRONG), 6: ([10], [10], RIGHT)}


class ScriptedTarget:
    """A target returning, per question, the chosen ranked list, context and answer (or failing)."""

    def __init__(self, script: Script) -> None:
        self.config = TargetConfig()
        self.script = script

    def check(self) -> None:
        pass

    def prepare(self, passages: Sequence, progress: Callable[[int, int], None] | None = None) -> None:
        pass

    def answer(self, question: str, qid: int | None = None) -> TargetAnswer:
        scripted = self.script[qid]
        if scripted is None:
            raise RuntimeError("scripted failure")
        retrieved, context, answer = scripted
        hits = [hit(pid, score=1.0 / rank) for rank, pid in enumerate(retrieved, 1)]
        return TargetAnswer(answer, hits, context=[hit(pid, score=1.0 / rank) for rank, pid in
                                                   enumerate(context, 1)])

    def chat_model(self) -> None:
        return None


def make_two(tmp: Path) -> tuple[CampaignManager, dict[str, str], Path]:
    """Campaigns A and B over the same six questions in a new database: its manager, their ids, its path."""
    data = write_dataset(tmp / "six", DATASET)
    manager = get_manager(tmp / "diagnosis.db")
    ids = {}
    for name, script in (("A", A_SCRIPT), ("B", B_SCRIPT)):
        ids[name] = manager.launch(LaunchRequest(dataset=str(data), target=ScriptedTarget(script), concurrency=2,
                                                 name=name))
        manager.wait(ids[name], timeout=60)
    return manager, ids, tmp / "diagnosis.db"


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory):
    """make_two's campaigns, shared by the tests that only read them (no API key: the dashboard opens)."""
    manager, ids, db = make_two(tmp_path_factory.mktemp("diagnosis"))
    yield manager, ids, db
    manager.close()


def test_each_question_stores_its_stage(two) -> None:
    manager, ids, _ = two
    stages = {r.question.qid: r.outcome.diagnosis for r in campaign_results(manager.store, ids["A"])}
    assert stages == {1: "retrieval miss", 2: "ranking miss", 3: "generation miss", 4: "ok", 5: "unlabeled",
                      6: "failed"}
    assert campaign_diagnosis(manager.store, ids["A"]).to_dict() == {stage: 1 for stage in STAGES[:-1]}
    row = manager.store.read("SELECT diagnosis FROM results WHERE campaign_id = ? AND qid = 2", (ids["A"],))[0]
    assert row["diagnosis"] == "ranking miss"  # stored: lists and comparisons count it without recomputing


def test_transitions_add_up_to_the_common_questions(two) -> None:
    manager, ids, _ = two
    comparison = compare_campaigns(manager.store, ids["A"], ids["B"])
    cells = {(cell.a, cell.b): cell.qids for cell in comparison.transitions}
    assert cells == {("retrieval miss", "ok"): (1,), ("ranking miss", "ok"): (2,),
                     ("generation miss", "generation miss"): (3,), ("ok", "ranking miss"): (4,),
                     ("unlabeled", "unlabeled"): (5,), ("failed", "ok"): (6,)}
    common = [q for q in comparison.questions if q.verdict not in ("new", "removed")]
    assert sum(cell.count for cell in comparison.transitions) == len(common) == 6
    data = comparison.to_dict()
    assert {"a": "retrieval miss", "b": "ok", "count": 1, "qids": [1]} in data["transitions"]
    assert data["questions"][1]["diagnosis_a"] == "ranking miss"
    assert data["questions"][1]["diagnosis_b"] == "ok"
    again = compare_campaigns(manager.store, ids["A"], ids["B"])  # read back from the store
    assert again.transitions == comparison.transitions


def test_transitions_leave_out_questions_one_side_did_not_ask(two, tmp_path: Path) -> None:
    manager, ids, _ = two
    data = write_dataset(tmp_path / "six", DATASET)
    first_four = manager.launch(LaunchRequest(dataset=str(data), target=ScriptedTarget(A_SCRIPT), limit=4))
    manager.wait(first_four, timeout=60)
    comparison = compare_campaigns(manager.store, first_four, ids["B"])
    assert comparison.verdicts["new"] == 2
    assert sum(cell.count for cell in comparison.transitions) == 4


def test_cli_show_run_and_compare_print_the_stages(two, capsys: pytest.CaptureFixture) -> None:
    _, ids, db = two
    assert main(["campaigns", "show", ids["A"], "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "failure attribution (4 of 6 questions labeled)" in out
    assert "  retrieval miss       1   16.7%" in out
    assert "  failed               1   16.7%" in out
    assert main(["campaigns", "show", ids["A"], "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["diagnosis"]["generation miss"] == 1
    assert main(["compare", ids["A"], ids["B"], "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "failure stages, A (rows) -> B (columns), 6 common questions:" in out
    assert "  retrieval miss -> ok: 1 (q1)" in out
    assert "  ok -> ranking miss: 1 (q4)" in out
    row = next(line for line in out.splitlines() if line.startswith("  generation miss   "))
    assert row.split()[-6:] == ["0", "0", "1", "0", "0", "0"]  # rows and columns in stage order
    assert main(["compare", ids["A"], ids["B"], "--db", str(db), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["transitions"]) == 6


def test_api_detail_results_and_compare_carry_the_stages(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    manager, ids, db = make_two(tmp_path)  # its own database: a key turns the dashboard's sign-in on
    manager.close()
    app = create_app(db)
    headers = {"Authorization": f"Bearer {create_key(app.state.store, tenant='default', role='viewer')[1]}"}
    with TestClient(app) as client:
        detail = client.get(f"/api/v1/campaigns/{ids['A']}", headers=headers).json()["data"]
        assert detail["diagnosis"] == {stage: 1 for stage in STAGES[:-1]}
        results = client.get(f"/api/v1/campaigns/{ids['A']}/results", headers=headers).json()["data"]["results"]
        assert [r["diagnosis"] for r in results] == ["retrieval miss", "ranking miss", "generation miss", "ok",
                                                     "unlabeled", "failed"]
        comparison = client.get(f"/api/v1/compare?a={ids['A']}&b={ids['B']}", headers=headers).json()["data"]
        cells = comparison["comparison"]["transitions"]
        assert sum(cell["count"] for cell in cells) == 6
        assert (cells[0] == {"a": "retrieval miss", "b": "ok",
                                                                           "count": 1, "qids": [1]})


def test_a_reranker_pushing_the_relevant_passage_out_of_the_context(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "rerank",
                         DATASET | {"queries": {"id": [1],
                                                "text": [("Are refunds accepted within 30 days of delivery, and what "
                                                          "about warranty and shipping?")]},
                                    "qrels": {"qid": [1], "pid": [10]},
                                    "qas": {"qid": [1], "aid": [100]}})

    def reply(path: str, body: dict) -> Reply | str:
        if path.endswith("/rerank"):  # the relevant passage last, the others first
            last = [i for i, text in enumerate(body["documents"]) if "Refunds" in text]
            order = [i for i in range(len(body["documents"])) if i not in last] + last
            return Reply.json({"results": [{"index": i, "relevance_score": 0.9 - 0.1 * rank}
                                           for rank, i in enumerate(order)]})
        return WRONG

    manager = get_manager(tmp_path / "rerank.db")
    with FakeOpenAIServer(reply) as server:
        stages = {}
        for reranker in ("none", "http"):
            config = TargetConfig.of(knowledge_base=str(data), retriever="bm25", keyword_threshold=0.0,
                                     reranker=reranker, rerank_url=f"{server.root_url}/rerank", rerank_threshold=0.0,
                                     context_top_k=1, generator="openai", base_url=server.base_url, model="m",
                                     api_key_env="")
            campaign_id = manager.launch(LaunchRequest(dataset=str(data), config=config))
            manager.wait(campaign_id, timeout=60)
            result = campaign_results(manager.store, campaign_id)[0]
            stages[reranker] = (result.outcome.diagnosis, [h.pid for h in result.outcome.context])
    assert stages["none"] == ("generation miss", [10])
    assert stages["http"][0] == "ranking miss"
    assert stages["http"][1] != [10]
    manager.close()


def test_rows_stored_before_attribution_read_as_not_attributed(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    for script in MIGRATIONS[:7]:
        conn.executescript(script)
    conn.execute("PRAGMA user_version = 7")
    conn.execute("INSERT INTO campaigns (id, tenant, kind, source, status, total, created_at, config) "
                 "VALUES ('old', 'default', 'dataset', 'x', 'succeeded', 1, 0, '{}')")
    conn.execute("INSERT INTO campaign_questions VALUES ('old', 0, 1, 'q?', NULL, '[]', '{\"10\": 1}', '[]')")
    conn.execute("INSERT INTO results (campaign_id, position, qid, answer, retrieved, sources, measures, signatures, "
                 "judges, created_at) VALUES ('old', 0, 1, 'a', '[]', '[]', '{}', '{}', '{}', 0)")
    conn.commit()
    conn.close()
    with Store(db) as store:
        result = campaign_results(store, "old")[0]
        assert (result.outcome.diagnosis, result.question.answerable) == (None, None)
        assert campaign_diagnosis(store, "old").counts[NOT_ATTRIBUTED] == 1


@pytest.mark.parametrize(("score", "stage"), [(1, "generation miss"), (5, "ok")])
def test_an_agent_judged_by_the_ai_score(tiny_dataset: Path, tmp_path: Path, score: int, stage: str) -> None:
    from tests.test_judging import AGENT_REPLY, verdict_for

    def reply(path: str, body: dict) -> Reply | str:
        return Reply.json(AGENT_REPLY) if path.endswith("/agent") else verdict_for(body, score)

    manager = get_manager(tmp_path / "agent.db")
    with FakeOpenAIServer(reply) as server:
        config = TargetConfig.of(kind="http_agent", agent_url=f"{server.root_url}/agent", judge_model="judge",
                                 judge_base_url=server.base_url, judge_api_key_env="")
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, judges=("score",)))
        manager.wait(campaign_id, timeout=60)
    results = campaign_results(manager.store, campaign_id)
    # The agent's sources are its context: passage 10 answers question 1, and question 2's passage is not among them.
    assert [r.outcome.diagnosis for r in results[:2]] == [stage, "retrieval miss"]
    assert results[0].outcome.measures["coverage"] == 1.0  # the words pass: the AI score decided
    manager.close()


def test_campaigns_page_shows_the_stages_and_their_questions(two, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_dashboard import assert_clean, open_section, page_test

    _, ids, db = two
    at = page_test(str(db), monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(ids["A"]).run()
    assert not at.get("vega_lite_chart")  # the failure stages are a section of their own, drawn when opened
    open_section(at, "Failure stages", "campaign-section")
    assert_clean(at)
    chart = next(c.proto for c in at.get("vega_lite_chart") if '"stage"' in c.proto.spec)
    data = pyarrow.ipc.open_stream(chart.data.data).read_all().to_pandas()  # what the browser draws
    assert list(zip(data["stage"], data["questions"], strict=True)) == [(s, 1) for s in STAGES[:-1]]
    assert json.loads(chart.spec)["encoding"]["color"]["scale"]["range"][0] == STAGE_COLORS["retrieval miss"]
    picker = at.selectbox(key=f"stage-{ids['A']}")
    assert picker.options == [f"{stage} (1)" for stage in STAGES[:-1]]
    picker.set_value("ranking miss").run()
    table = next(df.value for df in at.dataframe if list(df.value.columns)[:3] == ["qid", "question", "answer"]
                 and len(df.value) == 1)
    assert table["qid"].tolist() == [2]


def test_compare_page_shows_the_transitions_and_the_questions_behind_them(two, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_dashboard import assert_clean, open_section, page_test, picker, vega_charts

    _, ids, db = two
    at = page_test(str(db), monkeypatch, "pages/compare.py")
    picker(at, "A (baseline)").set_value(ids["A"]).run()
    picker(at, "B (candidate)").set_value(ids["B"]).run()
    open_section(at, "Failure stages")
    assert_clean(at)
    matrix = next(df.value for df in at.dataframe if "stage in A" in df.value.columns).set_index("stage in A")
    assert matrix.loc["retrieval miss", "B: ok"] == 1
    assert int(matrix.values.sum()) == 6
    [data] = [data for title, _, data in vega_charts(at) if title.startswith("Failure stage of each common question")]
    bars = {(row.bar, row.stage): row.questions for row in data.itertuples()}
    assert (bars[("A", "ok")], bars[("B", "ok")], bars[("A", "failed")]) == (1, 3, 1)
    assert ("B", "failed") not in bars
    picker = at.selectbox(key="compare-transition-pick")
    assert picker.options[0] == "retrieval miss → ok (1)"  # questions that moved come first
    picker.set_value(next(c for c in picker.options if c.startswith("ok → ranking miss"))).run()
    moved = next(df.value for df in at.dataframe if "stage B" in df.value.columns and len(df.value) == 1)
    assert moved[["qid", "stage A", "stage B"]].values.tolist() == [[4, "ok", "ranking miss"]]


def test_exports_carry_the_stage(two) -> None:
    from evalcore.campaigns.export import export_campaign

    manager, ids, _ = two
    header, *rows = export_campaign(manager.store, ids["A"], "csv").splitlines()
    column = header.split(",").index("diagnosis")
    assert [row.split(",")[column] for row in rows[:2]] == ["retrieval miss", "ranking miss"]
    lines = export_campaign(manager.store, ids["A"], "jsonl").splitlines()
    assert json.loads(lines[-1])["diagnosis"] == "failed"


def test_the_html_report_holds_the_stages_and_the_transition_table(two) -> None:
    from evalcore.campaigns import get_campaign
    from evalcore.compare.export_context import source_names
    from evalcore.compare.report import comparison_report

    manager, ids, _ = two
    a, b = get_campaign(manager.store, ids["A"]), get_campaign(manager.store, ids["B"])
    comparison = compare_campaigns(manager.store, a.id, b.id)
    text = comparison_report(comparison, a, b, source_names(manager.store, [a, b]))
    section = text.split("<h2>Failure stages: A → B</h2>", 1)[1].split("<h2>", 1)[0]
    assert "Failure stage of each common question, in A and in B" in section  # the chart's title
    assert "<th>stage in A</th>" in section
    assert "<th>B: ok</th>" in section
    assert "<th>stage A</th>" in text  # and every question's stage in the last table


def test_a_cell_of_thousands_of_moved_questions_names_its_first_twenty() -> None:
    from evalcore.cli.compare import transition_lines
    from evalcore.diagnosis import Transition

    lines = transition_lines([Transition("ranking miss", "retrieval miss", tuple(range(280, 2560))),
                              Transition("ok", "ranking miss", (4, 9))])
    assert lines[-2] == ("  ranking miss -> retrieval miss: 2280 (" + " ".join(f"q{q}" for q in range(280, 300))
                         + " ... and 2260 more: --json lists them all)")
    assert lines[-1] == "  ok -> ranking miss: 2 (q4 q9)"
