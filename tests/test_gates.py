"""Quality gates on the command line: every exit code, the reasons, the JUnit XML and the step summary."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from evalcore.campaigns import CampaignStatus, campaign_aggregates, campaign_results, get_manager, list_campaigns
from evalcore.cli import main
from evalcore.compare import compare_campaigns, row_values
from evalcore.compare.stats import bootstrap_ci
from evalcore.errors import EvalError
from evalcore.gates import Check, Exit, exit_code, gates_from_toml, parse_gate, worse_checks
from evalcore.store import Store
from evalcore.targets import TargetConfig
from tests.conftest import write_dataset

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = "default"


@contextmanager
def stored(db: Path) -> Iterator[Store]:
    """The store the commands of this process use for db (a second writer would find it locked)."""
    yield get_manager(db).store


def run(capsys: pytest.CaptureFixture, db: Path, *argv: str) -> tuple[int, str]:
    """`run` on the built-in sample with BM25 (the quick start: no model), returning the exit code and stdout."""
    code = main(["run", "--dataset", SAMPLE, "--db", str(db), *argv])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, float]]:
    """A database holding one quick-start campaign on the sample, its id and its per-measure means."""
    db = tmp_path_factory.mktemp("gates") / "gates.db"
    assert main(["run", "--dataset", SAMPLE, "--db", str(db), "--name", "baseline"]) == 0
    with stored(db) as store:
        (campaign,) = list_campaigns(store)
        means = {name: value.mean for name, value in campaign_aggregates(store, campaign.id).items()}
    return db, campaign.id, means


def copy_db(source: Path, tmp_path: Path) -> Path:
    """A copy of a database (SQLite's online backup: the write-ahead log included), so each test adds its own
    campaigns."""
    target = tmp_path / "copy.db"
    with sqlite3.connect(source) as reader, sqlite3.connect(target) as writer:
        reader.backup(writer)
    return target


def test_a_run_passes_its_gates_and_fails_under_a_mark(baseline, tmp_path, capsys, monkeypatch) -> None:
    db, _, means = baseline
    db = copy_db(db, tmp_path)
    ndcg = means["ndcg@10"]
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out = run(capsys, db, "--fail-under", f"ndcg@10={ndcg - 0.01:.4f}", "--junit", str(tmp_path / "ok.xml"))
    assert code == Exit.PASSED == 0
    assert "checks: 1 of 1 passed; exit code 0 (passed)" in out
    case = ET.parse(tmp_path / "ok.xml").getroot().find("testsuite/testcase")
    assert case is not None
    assert case.get("name") == f"ndcg@10 >= {ndcg - 0.01:.4f}".rstrip("0")
    assert case.find("failure") is None

    code, out = run(capsys, db, "--fail-under", f"ndcg@10={ndcg + 0.01:.4f}", "--fail-under", "rougel=0",
                    "--junit", str(tmp_path / "fail.xml"))
    assert code == Exit.GATE_FAILED == 4
    failed = [line for line in out.splitlines() if line.startswith("gate failed")]
    assert failed == [f"gate failed: ndcg@10 >= {ndcg + 0.01:.4f}".rstrip("0")
                      + f": ndcg@10: mean {ndcg:.4g} over 83 questions, under the mark {ndcg + 0.01:.4f}".rstrip("0")]
    root = ET.parse(tmp_path / "fail.xml").getroot()
    assert (root.get("tests"), root.get("failures")) == ("2", "1")
    assert [case.find("failure") is not None for case in root.iter("testcase")] == [True, False]
    text = summary.read_text(encoding="utf-8")
    assert text.count("### evalcore run") == 2  # appended, once per run
    assert "**exit code 4: gate failed**" in text
    assert "| **FAIL** |" in text
    assert "| pass |" in text


def test_the_gate_mean_is_the_campaigns_aggregate(baseline) -> None:
    db, campaign_id, means = baseline
    with stored(db) as store:
        rows = campaign_results(store, campaign_id)
    from evalcore.gates import campaign_checks

    (check,) = campaign_checks([parse_gate("ndcg@10=0")], rows)
    assert check.value == pytest.approx(means["ndcg@10"], abs=1e-12)
    values = [row_values(row)["ndcg@10"] for row in rows if "ndcg@10" in row_values(row)]
    (lower,) = campaign_checks([parse_gate("ndcg@10=0", "lower")], rows)
    assert lower.value == pytest.approx(bootstrap_ci(values)[0])
    assert lower.value < check.value


def test_the_lower_bound_fails_a_mean_that_passes(baseline, tmp_path, capsys) -> None:
    db, _, means = baseline
    db = copy_db(db, tmp_path)
    mark = f"ndcg@10={means['ndcg@10'] - 0.005:.4f}"  # under the mean, above its pessimistic bound
    assert run(capsys, db, "--fail-under", mark)[0] == 0
    code, out = run(capsys, db, "--fail-under", mark, "--gate-bound", "lower")
    assert code == 4
    assert "pessimistic 95% bound" in out
    assert "under the mark" in out


def test_the_gates_table_of_a_configuration(baseline, tmp_path, capsys) -> None:
    db, _, means = baseline
    db = copy_db(db, tmp_path)
    config = tmp_path / "gated.toml"
    config.write_text(f'retriever = "bm25"\ngenerator = "extractive"\n\n[gates]\nbound = "mean"\n'
                      f'fail_under = {{ "ndcg@10" = {means["ndcg@10"] + 0.01:.4f}, coverage = 0.1 }}\n',
                      encoding="utf-8")
    assert TargetConfig.from_toml(config) == TargetConfig.of(retriever="bm25", generator="extractive")
    assert [g.measure for g in gates_from_toml(config)] == ["ndcg@10", "coverage"]
    code, out = run(capsys, db, "--config", str(config))
    assert code == 4
    assert "checks: 1 of 2 passed" in out
    # --fail-under adds to the table, and replaces the mark of a measure it names
    assert run(capsys, db, "--config", str(config), "--fail-under", "ndcg@10=0.1")[0] == 0


@pytest.mark.parametrize(("argv", "says"), [
    (["--fail-under", "ndcg@11=0.7"], "unknown measure"),
    (["--fail-under", "ndcg@10"], "expected MEASURE=VALUE"),
    (["--fail-under", "ndcg@10=high"], "expected MEASURE=VALUE"),
])
def test_a_bad_gate_is_an_error_before_anything_runs(tmp_path, capsys, argv, says) -> None:
    db = tmp_path / "bad.db"
    assert main(["run", "--dataset", SAMPLE, "--db", str(db), *argv]) == Exit.ERROR == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert says in err
    assert len(err.splitlines()) == 1
    with stored(db) as store:
        assert list_campaigns(store) == []


@pytest.mark.parametrize("table", ['fail_under = { "ndcg@10" = "high" }', 'bound = "upper"', 'ndcg = 0.7'])
def test_a_bad_gates_table_names_the_file(tmp_path, capsys, table) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(f"[gates]\n{table}\n", encoding="utf-8")
    assert main(["run", "--dataset", SAMPLE, "--db", str(tmp_path / "x.db"), "--config", str(config)]) == 2
    assert f"{config}: [gates]: invalid [gates] table" in capsys.readouterr().err


def test_compare_fails_on_a_significant_regression_only(baseline, tmp_path, capsys, monkeypatch) -> None:
    db, good, _ = baseline
    db = copy_db(db, tmp_path)
    # One passage per question: nDCG@10 can only drop, on many questions.
    assert run(capsys, db, "--set", "embedding_top_k=1", "--name", "top1")[0] == 0
    with stored(db) as store:
        bad = next(c.id for c in list_campaigns(store) if c.name == "top1")
        comparison = compare_campaigns(store, good, bad)
    deltas = {m.measure: m for m in comparison.measures}
    assert deltas["ndcg@10"].significant
    assert not deltas["ndcg@10"].improved
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit = tmp_path / "compare.xml"
    code = main(["compare", good, bad, "--db", str(db), "--fail-if-worse", "ndcg@10,rougel", "--junit", str(junit)])
    out = capsys.readouterr().out
    worse = sorted(name for name in ("ndcg@10", "rougel") if deltas[name].significant and not deltas[name].improved)
    assert code == Exit.WORSE == 5
    assert sorted(line.split()[2] for line in out.splitlines() if line.startswith("regression failed")) == worse
    cases = {case.get("name"): case.find("failure") is None for case in ET.parse(junit).getroot().iter("testcase")}
    assert cases == {f"{name} not significantly worse": name not in worse for name in ("ndcg@10", "rougel")}
    assert "**exit code 5: worse**" in summary.read_text(encoding="utf-8")
    # The other way round nothing is worse; `headline` names the measures that decide verdicts.
    assert main(["compare", bad, good, "--db", str(db), "--fail-if-worse", "headline"]) == 0
    assert "regression failed" not in capsys.readouterr().out
    assert main(["compare", good, bad, "--db", str(db), "--fail-if-worse", "judge.score"]) == 2
    assert "not compared" in capsys.readouterr().err
    with pytest.raises(EvalError, match="no measure to check"):  # `headline` must name something
        worse_checks(replace(comparison, measures=[]), ["headline"])


def test_the_exit_code_of_every_outcome() -> None:
    gate = Check("gate", "ndcg@10 >= 0.7", False, "under")
    worse = Check("regression", "ndcg@10 not significantly worse", False, "worse")
    question = Check("question", "q1", False, "timed out")
    ok = Check("gate", "rougel >= 0.1", True, "fine")
    assert exit_code(CampaignStatus.SUCCEEDED, [ok]) == Exit.PASSED
    assert exit_code(CampaignStatus.SUCCEEDED_WITH_FAILURES, [ok, question]) == Exit.QUESTIONS_FAILED
    assert exit_code(CampaignStatus.SUCCEEDED_WITH_FAILURES, [gate, question]) == Exit.GATE_FAILED
    assert exit_code(None, [worse, ok]) == Exit.WORSE
    for status in (CampaignStatus.FAILED, CampaignStatus.CANCELLED, CampaignStatus.INTERRUPTED):
        assert exit_code(status, [ok]) == Exit.CAMPAIGN_FAILED == status.exit_code
    for status in (CampaignStatus.SUCCEEDED, CampaignStatus.SUCCEEDED_WITH_FAILURES):
        assert exit_code(status, []) == status.exit_code


def test_failed_questions_are_test_cases(tmp_path, capsys) -> None:
    data = write_dataset(tmp_path / "tiny")
    results = tmp_path / "answers.jsonl"  # a results file answering question 1 only: 2 and 3 fail
    results.write_text(json.dumps({"qid": 1, "ranked_ids": [10], "answer": "30 days."}) + "\n", encoding="utf-8")
    config = tmp_path / "file.toml"
    config.write_text(f'kind = "results_file"\nresults_path = "{results}"\n', encoding="utf-8")
    junit = tmp_path / "run.xml"
    code = main(["run", "--dataset", str(data), "--config", str(config), "--db", str(tmp_path / "f.db"),
                 "--fail-under", "recall=0", "--junit", str(junit), "--max-failed-share", "1"])
    assert code == Exit.QUESTIONS_FAILED == 3, capsys.readouterr()
    suites = {suite.get("name").split(": ")[-1]: suite for suite in ET.parse(junit).getroot()}
    assert suites["gates"].get("failures") == "0"
    assert [case.get("name").split()[0] for case in suites["questions"]] == ["q2", "q3"]


def doc_blocks(language: str) -> list[str]:
    """The fenced blocks of one language in the CI page, in order."""
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


class Build:
    """One build of the documented job: its `run:` steps in GitHub's shell, the Actions cache as a folder."""

    def __init__(self, tmp_path: Path) -> None:
        (self.job,) = [yaml.safe_load(block) for block in doc_blocks("yaml")]
        self.cache, self.tmp, self.count = tmp_path / "actions-cache", tmp_path, 0

    def run(self, config: str) -> tuple[int, str]:
        """Check out (a fresh folder with evalcore.toml), restore, run the steps until one fails, save on success."""
        self.count += 1
        checkout = self.tmp / f"build{self.count}"
        checkout.mkdir()
        (checkout / "evalcore.toml").write_text(config, encoding="utf-8")
        if self.cache.exists():
            shutil.copytree(self.cache, checkout / ".evalcore")
        env = {**os.environ, "GITHUB_SHA": f"{self.count:040x}", "GITHUB_STEP_SUMMARY": str(self.tmp / "summary.md"),
               "PYTHONPATH": str(ROOT), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        env.pop("EVALCORE_DB", None)
        output = ""
        for step in self.job["jobs"]["evaluate"]["steps"]:
            if "run" not in step or step["name"] == "Install":  # the test environment is installed already
                continue
            done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=checkout,
                                  env=env, capture_output=True, text=True, check=False, timeout=300)
            output += done.stdout + done.stderr
            if done.returncode:
                return done.returncode, output
        shutil.rmtree(self.cache, ignore_errors=True)
        shutil.copytree(checkout / ".evalcore", self.cache)  # the job saves on main: these builds are main's
        return 0, output


def test_the_first_commands_of_the_ci_page_run_as_written_on_the_sample(tmp_path) -> None:
    """Each line of the page's first block, in a fresh folder: exit 0, as the page says (no model needed)."""
    commands = [line for line in doc_blocks("bash")[0].splitlines() if line.strip()]
    assert len(commands) == 4
    assert not any("judge" in line for line in commands)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALCORE_DB": str(tmp_path / "ci.db"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command in commands:
        done = subprocess.run(["bash", "--noprofile", "--norc", "-c", command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=False, timeout=300)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    assert (tmp_path / "run.xml").is_file()
    assert (tmp_path / "compare.xml").is_file()


@pytest.mark.long
def test_the_ci_job_of_the_docs_runs_as_written(tmp_path) -> None:
    config = doc_blocks("toml")[0]
    assert "[gates]" in config
    build = Build(tmp_path)
    code, out = build.run(config)
    assert code == 0
    assert "no baseline yet" in out
    code, out = build.run(config)  # the same configuration again: compared, nothing worse
    assert code == 0
    assert "checks: " in out
    assert "regression failed" not in out
    # One passage per question: nDCG@10 falls under the gate's mark, and the run step fails the build.
    code, out = build.run("embedding_top_k = 1\n" + config)
    assert code == Exit.GATE_FAILED
    assert "gate failed: ndcg@10 >= 0.7" in out
    # Two passages: over the mark, but significantly worse than the last saved baseline.
    code, out = build.run("embedding_top_k = 2\n" + config)
    assert code == Exit.WORSE
    assert "regression failed: ndcg@10 is significantly worse: " in out
    assert "not significantly worse" not in out
    assert sorted(path.name for path in (tmp_path / "build4").glob("evalcore-*.xml")) == \
        ["evalcore-compare.xml", "evalcore-run.xml"]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.count("### evalcore run") == 4
    assert summary.count("### evalcore compare") == 2


def test_a_sweep_gates_each_campaign(tmp_path, capsys) -> None:
    code, out = run(capsys, tmp_path / "sweep.db", "--sweep", "embedding_top_k=1,30", "--fail-under", "ndcg@10=0.7",
                    "--junit", str(tmp_path / "sweep.xml"))
    assert code == Exit.GATE_FAILED
    failed = [line for line in out.splitlines() if line.startswith("gate failed")]
    assert len(failed) == 1
    assert "bm25 · top 1 · extractive: ndcg@10 >= 0.7" in failed[0]
    cases = [case.get("name") for case in ET.parse(tmp_path / "sweep.xml").getroot().iter("testcase")]
    assert len(cases) == 2
    assert all(name.endswith(": ndcg@10 >= 0.7") for name in cases)
