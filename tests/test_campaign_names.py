"""Campaign names and lists on every face: named at launch, renamed, listed with their dataset or suite name,
status, date, key settings and headline measures, searchable and sortable."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from evalcore.campaigns import get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.listing import HEADLINE, Settings, campaign_rows, dataset_label, search_rows, sort_rows
from evalcore.cli import build_parser, main
from evalcore.errors import EvalError
from evalcore.suites import Case, create_suite
from evalcore.targets import TargetConfig
from evalcore.targets.target_config import Snapshot
from tests.test_api import Api, error_of, suite_body, wait_done

BM25 = TargetConfig.of(retriever="bm25", chunking="none")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """Two dataset campaigns (5 and 9 retrieved chunks) and a suite campaign, on the tiny dataset."""
    from tests.conftest import write_dataset

    tmp = tmp_path_factory.mktemp("names")
    data = str(write_dataset(tmp / "tiny"))
    db = str(tmp / "names.db")
    manager = get_manager(db)
    suite = create_suite(manager.store, name="Refund questions", target_id="default",
                         cases=[Case("What is the refund window?", "30 days", ("Terms of Sale",))])
    config = TargetConfig.from_dict({**BM25.to_dict(), "knowledge_base": data})
    ids = {"k5": manager.launch(LaunchRequest(dataset=data,
                                              config=TargetConfig.from_dict({**config.to_dict(),
                                                                             "embedding_top_k": 5}))),
           "k9": manager.launch(LaunchRequest(dataset=data,
                                              config=TargetConfig.from_dict({**config.to_dict(), "embedding_top_k": 9}),
                                name="nine chunks")),
           "suite": manager.launch(LaunchRequest(suite_id=suite.id, config=config))}
    for campaign_id in ids.values():
        assert manager.wait(campaign_id, timeout=120).status == "succeeded"
    yield db, ids
    manager.close()


def test_rows_name_the_suite_the_dataset_the_settings_and_the_headline_measures(filled: tuple) -> None:
    db, ids = filled
    rows = {row.campaign.id: row for row in campaign_rows(get_manager(db).store)}
    assert rows[ids["suite"]].source_name == "Refund questions"  # the suite's name, not its id
    assert rows[ids["k5"]].source_name == "tiny"
    assert rows[ids["k9"]].campaign.name == "nine chunks"
    assert rows[ids["k5"]].campaign.name == "bm25 · top 5 · extractive"
    assert rows[ids["k9"]].settings == Settings("bm25", "none", "extractive", 9)
    assert {"ndcg@10", "rougel"} <= set(rows[ids["k5"]].headline) <= set(HEADLINE)
    assert {"coverage", "sources_found"} <= set(rows[ids["suite"]].headline)
    assert "ndcg@10" not in rows[ids["suite"]].headline
    assert all(0 <= value <= 1 for row in rows.values() for value in row.headline.values())
    assert [r.campaign.id for r in search_rows(list(rows.values()), "REFUND")] == [ids["suite"]]
    assert [r.campaign.id for r in search_rows(list(rows.values()), "nine bm25")] == [ids["k9"]]
    by_name = sort_rows(list(rows.values()), "name")
    assert [r.campaign.name for r in by_name] == sorted((r.campaign.name for r in rows.values()), key=str.casefold)
    by_k = sort_rows(list(rows.values()), "top_k", reverse=True)
    assert [r.settings.top_k for r in by_k] == [30, 9, 5]  # the suite runs the default top-k
    # Campaigns without a measure come last whichever the direction.
    for reverse in (False, True):
        assert sort_rows(list(rows.values()), "sources_found", reverse)[0].campaign.id == ids["suite"]
        assert sort_rows(list(rows.values()), "ndcg@10", reverse)[-1].campaign.id == ids["suite"]
    with pytest.raises(EvalError, match="sort"):
        sort_rows(list(rows.values()), "colour")


def test_settings_of_other_targets_and_dataset_labels() -> None:
    hybrid = TargetConfig.of(retriever="hybrid", reranker="http", rerank_url="http://x", rerank_top_k=12,
                             generator="openai", model="gpt-4o-mini", base_url="http://x")
    assert Settings.of(Snapshot(hybrid.to_dict()).target) == Settings("hybrid RRF · USE embeddings", "http",
                                                                      "gpt-4o-mini", 12)
    assert Settings.of(Snapshot({"kind": "http_agent"}).target).retriever == "HTTP agent"
    assert dataset_label("/srv/dataset/samples") == "default"
    assert dataset_label("dataset/uploads-x") == "uploads-x"
    assert HEADLINE[0] == "ndcg@10"


def test_cli_list_shows_names_sources_settings_and_measures_searched_and_sorted(
        filled: tuple, capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = filled
    assert main(["campaigns", "list", "--db", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header[:5] == ["name", "dataset/suite", "status", "created", "progress"]
    assert {"retriever", "reranker", "generator", "top-k", "ndcg@10", "coverage", "id"} <= set(header)
    assert "suite Refund questions" in "\n".join(lines)
    assert ids["suite"] in "\n".join(lines)
    assert main(["campaigns", "list", "--search", "nine", "--db", db]) == 0
    [only] = capsys.readouterr().out.splitlines()[1:]
    assert only.startswith("nine chunks")
    assert ids["k9"] in only
    assert main(["campaigns", "list", "--sort", "top_k", "--json", "--db", db]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [c["settings"]["top_k"] for c in listed] == [5, 9, 30]
    assert main(["campaigns", "list", "--sort", "name", "--reverse", "--db", db]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("nine chunks")
    assert main(["campaigns", "show", ids["suite"], "--db", db]) == 0
    assert "(suite Refund questions, tenant default)" in capsys.readouterr().out.splitlines()[0]


def campaign_positionals() -> dict[str, tuple[argparse.ArgumentParser, list[argparse.Action]]]:
    """Each command (`campaigns show`, `labels set`, ...), its parser and its positional arguments whose metavar is
    CAMPAIGN."""
    def walk(parser: argparse.ArgumentParser, words: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
        yield words, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{words} {name}".strip())

    return {words: (parser, [a for a in parser._actions if a.metavar == "CAMPAIGN" and not a.option_strings])
            for words, parser in walk(build_parser(), "")}


def test_every_command_naming_a_campaign_resolves_it_with_the_one_resolver() -> None:
    commands = {words: found for words, found in campaign_positionals().items() if found[1]}
    assert {"campaigns show", "campaigns export", "campaigns rename", "labels set", "compare", "rejudge"} <= set(
        commands)
    for words, (parser, actions) in commands.items():
        assert {action.dest for action in actions} <= set(parser.get_default("campaign_arguments")), words


@pytest.mark.parametrize("command", [["campaigns", "show"], ["campaigns", "export", "--format", "csv"],
                                     ["labels", "agreement"], ["campaigns", "recompute-abstention"]])
def test_commands_take_a_campaign_by_its_name_or_the_start_of_it(command: list[str], filled: tuple,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = filled
    for given in ("nine chunks", "NINE", ids["k9"]):
        capsys.readouterr()
        assert main([*command, given, "--db", db]) == 0, capsys.readouterr().err
        out = capsys.readouterr()
        assert "no campaign" not in out.err


def test_an_ambiguous_or_unknown_campaign_is_the_same_message_for_every_command(
        filled: tuple, capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = filled
    shared = os.path.commonprefix([ids["k5"], ids["k9"]])
    assert shared
    assert not ids["suite"].startswith(shared)
    messages = set()
    for command in (["campaigns", "show", shared], ["labels", "export", shared], ["compare", ids["suite"], shared],
                    ["rejudge", shared], ["campaigns", "delete", shared]):
        assert main([*command, "--db", db]) == 2
        messages.add(capsys.readouterr().err)
    [message] = messages
    assert f"{shared!r} names 2 campaigns" in message
    assert "nine chunks" in message
    assert ids["k5"] in message
    assert "give more of the name, or the id" in message
    assert main(["labels", "export", "try1", "--db", db]) == 2
    assert "no campaign 'try1' (as an id, a name or the start of one)" in capsys.readouterr().err
    assert len(get_manager(db).store.read("SELECT id FROM campaigns")) == 3  # nothing deleted


def test_api_names_at_launch_renames_and_lists_with_names(api: Api) -> None:
    task = api.call("POST", "/api/v1/evaluation", json={"knowledge_base_id": api.targets["fast"], "name": "first try"})
    task_id = task.json()["data"]["task"]["id"]
    suite = api.call("POST", "/api/v1/eval-suites", json=suite_body(api, n=1)).json()["data"]["suite"]
    run = api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs", json={"name": "suite try"}).json()["data"]["run"]
    assert run["name"] == "suite try"
    wait_done(api, f"/api/v1/eval-suites/runs/{run['id']}", lambda d: d["run"]["status"])
    wait_done(api, f"/api/v1/evaluation?task_id={task_id}", lambda d: d["task"]["status"])
    listed = {c["id"]: c for c in api.call("GET", "/api/v1/campaigns", "viewer").json()["data"]["campaigns"]}
    assert listed[task_id]["name"] == "first try"
    assert listed[task_id]["source_name"] == "default"
    assert listed[run["id"]]["source_name"] == suite["name"]
    assert listed[run["id"]]["settings"] == {"retriever": "bm25", "reranker": "none", "generator": "extractive",
                                             "top_k": 30}
    assert {"ndcg@10", "rougel"} <= set(listed[task_id]["headline"])
    found = api.call("GET", "/api/v1/campaigns?search=SUITE%20try", "viewer").json()["data"]["campaigns"]
    assert [c["id"] for c in found] == [run["id"]]
    by_name = api.call("GET", "/api/v1/campaigns?sort=name", "viewer").json()["data"]["campaigns"]
    assert [c["name"] for c in by_name] == ["first try", "suite try"]
    assert error_of(api.call("GET", "/api/v1/campaigns?sort=colour", "viewer"), 422)["field"] == "sort"

    renamed = api.call("PATCH", f"/api/v1/campaigns/{task_id}", json={"name": "  hybrid,\n second try "})
    assert renamed.status_code == 200
    assert renamed.json()["data"]["campaign"]["name"] == "hybrid, second try"
    assert (api.call("GET", f"/api/v1/campaigns/{task_id}", "viewer").json()["data"]["campaign"]["name"]
            == "hybrid, second try")
    error_of(api.call("PATCH", f"/api/v1/campaigns/{task_id}", "viewer", json={"name": "x"}), 403)
    error_of(api.call("PATCH", f"/api/v1/campaigns/{task_id}", "other", json={"name": "x"}), 404)
    assert error_of(api.call("PATCH", f"/api/v1/campaigns/{task_id}", json={"name": "   "}), 422)["field"] == "name"
    assert error_of(api.call("PATCH", f"/api/v1/campaigns/{task_id}", json={"name": "x" * 201}), 422)["field"] == "name"
    by_its_name = api.call("GET", "/api/v1/campaigns/hybrid%2C%20SECOND", "viewer")  # the start of its name
    assert by_its_name.status_code == 200
    assert by_its_name.json()["data"]["campaign"]["id"] == task_id
    assert api.call("GET", f"/api/v1/campaigns/{quote(run['name'])}/results", "viewer").json()["data"]["total"] == 1
    error_of(api.call("GET", "/api/v1/campaigns/suite%20try", "other"), 404)  # another tenant's names are not seen
    openapi = api.call("GET", "/openapi.json", None).json()
    assert "patch" in openapi["paths"]["/api/v1/campaigns/{campaign_id}"]


def test_dataset_label_of_paths(tmp_path: Path) -> None:
    assert dataset_label(str(tmp_path / "samples")) == "default"
    assert dataset_label("default") == "default"


def test_a_sweep_is_one_request_per_value_named_after_it_and_a_suite_only_one_after_another() -> None:
    from evalcore.campaigns.launching import linked_target, sweep_requests

    base = LaunchRequest(dataset="default", config=TargetConfig.of(retriever="bm25"), target_id="t1", name="base")
    swept = sweep_requests(base, "embedding_top_k", [5, 10], one_after_another=False)
    assert [r.config.retrieval.embedding_top_k for r in swept if r.config] == [5, 10]
    assert [r.name for r in swept] == ["base · embedding_top_k=5", "base · embedding_top_k=10"]
    assert {r.target_id for r in swept} == {None}  # each value is another configuration than the saved one
    suite = LaunchRequest(suite_id="s1", config=TargetConfig())
    with pytest.raises(EvalError, match="one campaign at a time"):
        sweep_requests(suite, "top_p", [0.5, 0.9], one_after_another=False)
    assert len(sweep_requests(suite, "top_p", [0.5, 0.9], one_after_another=True)) == 2
    config = TargetConfig.of(retriever="bm25")
    assert linked_target("t1", config, [config.run_on("local")]) == "t1"  # where it runs is no other configuration
    assert linked_target("t1", config, [TargetConfig.of(retriever="vector")]) is None
    assert linked_target(None, config, [config]) is None  # a preset or a past campaign links to nothing
