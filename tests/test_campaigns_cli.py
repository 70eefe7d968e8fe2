"""The `run` and `campaigns` commands on the real built-in pipeline, and the export formats."""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import re
from pathlib import Path

import pytest

from evalcore.campaigns.manager import run_options
from evalcore.cli import main
from evalcore.errors import EvalError
from evalcore.store import Store
from evalcore.suites import Case, create_suite
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import save_target
from tests.conftest import TINY, write_dataset
from tests.csvsafety import assert_safe_csv


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A dataset whose first question looks like a spreadsheet formula, a BM25 config, a db path."""
    tables = {**TINY,
              "queries": {**TINY["queries"],
                          "text": ["=HYPERLINK(\"x\") refund window?", *TINY["queries"]["text"][1:]]}}
    data = write_dataset(tmp_path / "formula", tables)
    config = tmp_path / "bm25.toml"
    config.write_text('retriever = "bm25"\nembedding_top_k = 3\n', encoding="utf-8")
    return data, config, tmp_path / "cli.db"


def run_json(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, dict]:
    """Run a command with --json; return its exit code and parsed output."""
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_run_then_list_show_export_delete(setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture) -> None:
    data, config, db = setup
    code, report = run_json(capsys, "run", "--dataset", str(data), "--config", str(config), "--db", str(db))
    assert code == 0
    campaign = report["campaign"]
    assert campaign["status"] == "succeeded"
    assert campaign["config"]["retriever"] == "bm25"
    assert report["aggregates"]["recall"]["count"] == 3
    assert report["aggregates"]["bleu1"]["count"] == 2
    campaign_id = campaign["id"]

    assert main(["campaigns", "list", "--db", str(db)]) == 0
    assert campaign_id in capsys.readouterr().out
    assert main(["campaigns", "show", campaign_id, "--db", str(db)]) == 0
    shown = capsys.readouterr().out
    assert "status: succeeded" in shown
    assert '"retriever": "bm25"' in shown
    assert "ndcg@10" in shown

    assert main(["campaigns", "export", campaign_id, "--format", "csv", "--db", str(db)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [row["qid"] for row in rows] == ["1", "2", "3"]
    assert rows[0]["question"].startswith("'=HYPERLINK")  # neutralised for spreadsheets
    assert float(rows[0]["recall"]) >= 0.0

    out = db.parent / "run.trec"
    assert main(["campaigns", "export", campaign_id, "--format", "trec", "--out", str(out), "--db", str(db)]) == 0
    lines = [line.split() for line in out.read_text().splitlines()]
    assert lines
    assert all(len(fields) == 6 for fields in lines)
    assert all(fields[1] == "Q0" for fields in lines)
    assert all(fields[5] == campaign_id for fields in lines)
    first = [fields for fields in lines if fields[0] == "1"]
    assert [int(fields[3]) for fields in first] == list(range(1, len(first) + 1))
    scores = [float(fields[4]) for fields in first]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == len(scores)

    assert main(["campaigns", "export", campaign_id, "--format", "jsonl", "--db", str(db)]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["qid"] for r in results] == [1, 2, 3]
    assert any(r["retrieved"] for r in results)

    assert main(["campaigns", "cancel", campaign_id, "--db", str(db)]) == 2
    assert "nothing to cancel" in capsys.readouterr().err
    assert main(["campaigns", "delete", campaign_id, "--db", str(db)]) == 0
    assert main(["campaigns", "show", campaign_id, "--db", str(db)]) == 2
    assert "no campaign" in capsys.readouterr().err


def test_run_prints_the_dataset_statistics_and_the_server_logs_them(
        setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture, caplog: pytest.LogCaptureFixture) -> None:
    data, config, db = setup
    with caplog.at_level(logging.INFO, logger="evalcore.campaigns"):
        assert main(["run", "--dataset", str(data), "--config", str(config), "--db", str(db)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("dataset "))
    assert line.startswith(f"dataset {data.name}: 3 questions, 5 passages, ")
    assert "relevant passages per labeled question" in line
    assert "answer coverage 66.67% (2/3)" in line
    assert "languages: passages with Han 20%" in line
    logged = [record.getMessage() for record in caplog.records if record.name == "evalcore.campaigns"]
    assert len(logged) == 1
    assert logged[0].endswith(line.removeprefix("dataset "))


def test_resume_and_retry_from_the_command_line(setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture) -> None:
    data, config, db = setup
    code, report = run_json(capsys, "run", "--dataset", str(data), "--config", str(config), "--db", str(db))
    campaign_id = report["campaign"]["id"]
    with Store(db) as store:  # as if the process died after the first question, with the third failed
        store.write(lambda conn: conn.execute("DELETE FROM results WHERE campaign_id = ? AND position = 1",
                                              (campaign_id,)))
        store.write(lambda conn: conn.execute(
            "UPDATE results SET error = 'timed out after 240 s' WHERE campaign_id = ? AND position = 2",
            (campaign_id,)))
        store.write(lambda conn: conn.execute("UPDATE campaigns SET status = 'interrupted' WHERE id = ?",
                                              (campaign_id,)))
    code, report = run_json(capsys, "campaigns", "resume", campaign_id, "--db", str(db))
    assert code == 3
    assert report["campaign"]["finished"] == 3
    assert report["summary"]["failed"] == 1
    code, report = run_json(capsys, "campaigns", "retry-failed", campaign_id, "--db", str(db))
    assert code == 0
    assert report["summary"]["failed"] == 0
    assert main(["campaigns", "resume", campaign_id, "--db", str(db)]) == 2
    assert "nothing to run" in capsys.readouterr().err
    # A concurrency below 1 once dispatched nothing and spun forever.
    assert main(["campaigns", "retry-failed", campaign_id, "--concurrency", "-1", "--db", str(db)]) == 2
    assert "concurrency: expected a value in [1, 256], found -1" in capsys.readouterr().err


def test_user_mistakes_exit_2_with_one_line(setup: tuple[Path, Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    data, _, db = setup
    bad = tmp_path / "bad.toml"
    bad.write_text('retriever = "grep"\n', encoding="utf-8")
    assert main(["run", "--dataset", str(data), "--config", str(bad), "--db", str(db)]) == 2
    assert "retriever" in capsys.readouterr().err
    assert main(["run", "--dataset", str(tmp_path / "nowhere"), "--db", str(db)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    for limit in ("0", "-2"):  # not "every question" nor "all but the last two"
        assert main(["run", "--dataset", str(data), "--limit", limit, "--db", str(db)]) == 2
        assert capsys.readouterr().err.startswith("error: limit: the question limit must be at least 1")


@pytest.mark.parametrize("seconds", ["nan", "inf", "-inf", "-5", "0", "soon"])
def test_a_time_limit_that_is_not_a_finite_positive_number_is_refused(
        setup: tuple[Path, Path, Path], seconds: str, capsys: pytest.CaptureFixture) -> None:
    data, _, db = setup
    with pytest.raises(SystemExit) as raised:
        main(["run", "--dataset", str(data), f"--time-limit={seconds}", "--db", str(db)])
    assert raised.value.code == 2
    assert f"expected a number of seconds above 0, found {seconds!r}" in capsys.readouterr().err
    assert not db.exists()  # refused before anything ran


@pytest.mark.parametrize("seconds", [math.nan, math.inf, -1.0, 0.0])
def test_the_engine_refuses_a_time_limit_that_would_switch_the_limit_off(seconds: float) -> None:
    with pytest.raises(EvalError, match=r"time_limit: expected a value in \(0, 86400\]") as raised:
        run_options(TargetConfig(), None, seconds, None, 1, "dataset")
    assert raised.value.where == "time_limit"


def test_export_creates_missing_folders_and_names_an_unwritable_path(
        setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture) -> None:
    data, config, db = setup
    campaign_id = run_json(capsys, "run", "--dataset", str(data), "--config", str(config), "--db",
                           str(db))[1]["campaign"]["id"]
    out = db.parent / "new" / "folder" / "run.csv"
    assert main(["campaigns", "export", campaign_id, "--format", "csv", "--out", str(out), "--db", str(db)]) == 0
    assert out.read_text(encoding="utf-8").startswith("qid,question")
    capsys.readouterr()
    assert main(["campaigns", "export", campaign_id, "--format", "csv", "--out", str(db.parent), "--db", str(db)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {db.parent}: cannot write the export")


def test_resume_finds_a_moved_dataset_given_with_dataset(
        setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture) -> None:
    data, config, db = setup
    campaign_id = run_json(capsys, "run", "--dataset", str(data), "--config", str(config), "--db",
                           str(db))[1]["campaign"]["id"]
    with Store(db) as store:  # as if the process died after two questions
        store.write(lambda conn: conn.execute("DELETE FROM results WHERE campaign_id = ? AND position = 2",
                                              (campaign_id,)))
        store.write(lambda conn: conn.execute("UPDATE campaigns SET status = 'interrupted' WHERE id = ?",
                                              (campaign_id,)))
    moved = data.rename(data.parent / "moved")
    assert main(["campaigns", "resume", campaign_id, "--db", str(db)]) == 2
    assert "--dataset PATH" in capsys.readouterr().err
    code, report = run_json(capsys, "campaigns", "resume", campaign_id, "--dataset", str(moved), "--db", str(db))
    assert code == 0
    assert report["campaign"]["finished"] == 3
    assert report["campaign"]["options"]["dataset_path"] == str(moved.resolve())  # the next resume finds it too


def test_report_groups_retrieval_then_generation_measures(
        setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture) -> None:
    data, config, db = setup
    assert main(["run", "--dataset", str(data), "--config", str(config), "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    retrieval, generation = lines.index("Retrieval measures"), lines.index("Generation measures")
    stages = next(n for n, line in enumerate(lines) if line.startswith("failure attribution"))
    names = [line.split()[0] for line in lines[:stages] if line.startswith("  ") and not line.startswith("  measure")]
    assert retrieval < generation
    assert names[:12] == ["precision", "recall", "ndcg@3", "ndcg@10", "mrr", "map",
                          "bleu1", "bleu2", "bleu4", "rouge1", "rouge2", "rougel"]
    # Graded qrels (labels 1-3): graded retrieval has its panel; reference answers give coverage too.
    graded = lines.index("Graded document retrieval measures")
    assert (generation < graded < lines.index("Coverage and sources measures") < lines.index("Abstention measures")
            < stages)
    assert names[12:15] == ["exact_match", "graded.ndcg@3", "graded.xdcg@3"]
    assert names[-2:] == ["coverage", "false_abstention"]


def test_campaigns_have_names_given_made_and_changed(setup: tuple[Path, Path, Path],
                                                      capsys: pytest.CaptureFixture) -> None:
    data, config, db = setup
    _, report = run_json(capsys, "run", "--dataset", str(data), "--config", str(config), "--db", str(db))
    assert report["campaign"]["name"] == "bm25 · top 3 · extractive"  # made from what tells configurations apart
    _, named = run_json(capsys, "run", "--dataset", str(data), "--name", "  my   baseline ", "--db", str(db))
    assert named["campaign"]["name"] == "my baseline"
    assert main(["campaigns", "list", "--db", str(db)]) == 0
    listing = capsys.readouterr().out
    assert "my baseline" in listing
    assert "bm25 · top 3 · extractive" in listing
    assert main(["campaigns", "rename", named["campaign"]["id"], "hybrid, first try", "--db", str(db)]) == 0
    assert "renamed" in capsys.readouterr().out
    _, shown = run_json(capsys, "campaigns", "show", named["campaign"]["id"], "--db", str(db))
    assert shown["campaign"]["name"] == "hybrid, first try"
    capsys.readouterr()
    assert main(["campaigns", "rename", named["campaign"]["id"], "   ", "--db", str(db)]) == 2
    assert "name" in capsys.readouterr().err


def test_run_sweep_launches_one_campaign_per_value_then_compares(setup: tuple[Path, Path, Path],
                                                                 capsys: pytest.CaptureFixture) -> None:
    data, config, db = setup
    code = main(["run", "--dataset", str(data), "--config", str(config), "--sweep", "embedding_top_k=1,3",
                 "--db", str(db)])
    out = capsys.readouterr().out
    assert code == 0
    assert "sweep over embedding_top_k" in out
    _, campaigns = run_json(capsys, "campaigns", "list", "--db", str(db))
    assert sorted(c["config"]["embedding_top_k"] for c in campaigns) == [1, 3]
    assert all(c["config"]["retriever"] == "bm25" for c in campaigns)  # the rest of --config is kept
    assert sorted(c["name"] for c in campaigns) == ["bm25 · top 1 · extractive", "bm25 · top 3 · extractive"]
    for bad in ("embedding_top_k=3,3", "nokey=1,2", "embedding_top_k=5", "=1,2"):
        assert main(["run", "--dataset", str(data), "--sweep", bad, "--db", str(db)]) == 2
        assert "error:" in capsys.readouterr().err


# Line breaks of every kind followed by formula starts, inside a question and its expected answer.
ATTACKS = [Case("What is the refund window?\r=HYPERLINK(\"x\")", "30 days\r@SUM(1+1)"),
           Case("Quel est le délai ?\n+33 1 23", "14 jours\r\n-5\r\t=1"),
           Case("=2+2", "\r@\n=")]


def test_csv_export_keeps_one_record_per_question_and_neutralises_every_line(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "cli.db"
    with Store(db) as store:
        config = TargetConfig.of(knowledge_base=str(write_dataset(tmp_path / "tiny")), retriever="bm25")
        suite = create_suite(store, tenant="default", name="attacks", target_id=save_target(store, config),
                             cases=ATTACKS)
    code, report = run_json(capsys, "run", "--suite", "attacks", "--db", str(db))  # a suite by its name
    assert code == 0
    assert report["campaign"]["suite_id"] == suite.id
    assert report["campaign"]["finished"] == len(ATTACKS)
    assert main(["campaigns", "export", report["campaign"]["id"], "--format", "csv", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert_safe_csv(text, len(ATTACKS))
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert rows[0]["expected_answer"] == "30 days\r'@SUM(1+1)"


def test_compare_heads_a_and_b_with_their_names(setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture) -> None:
    data, config, db = setup
    ids = [run_json(capsys, "run", "--dataset", str(data), "--config", str(config), "--name", name, "--db", str(db))[1]
           ["campaign"]["id"] for name in ("first try", "second try")]
    assert main(["campaigns", "rename", ids[1], "second, renamed", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["compare", *ids, "--db", str(db), "--resamples", "200"]) == 0
    head = capsys.readouterr().out.splitlines()[:2]
    assert head[0].startswith(f"A (baseline) first try  ({ids[0]})")
    assert head[1].startswith(f"B            second, renamed  ({ids[1]})")  # the name as it is now


def run_process(argv: list[str], *, terminal: bool, cwd: Path) -> tuple[int, str]:
    """`python -X importtime -m evalcore ARGV` as a whole process, its standard error on a pseudo-terminal or a pipe:
    the exit code and what it wrote there."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, "-X", "importtime", "-m", "evalcore", *argv]
    if not terminal:
        done = subprocess.run(command, check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
        return done.returncode, done.stderr
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))   # a new one has no columns
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=follower, env=env, cwd=cwd)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:   # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


def test_the_progress_bar_is_drawn_on_a_terminal_and_tqdm_is_not_even_imported_elsewhere(
        setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data, config, db = setup
    argv = ["run", "--dataset", str(data), "--config", str(config), "--db", str(db)]
    code, shown = run_process(argv, terminal=True, cwd=tmp_path)
    assert code == 0
    assert "questions: 100%|" in shown
    assert "3/3 questions" in shown
    assert any(re.search(r"\|\s+tqdm$", line.rstrip()) for line in shown.splitlines())   # -X importtime's lines
    code, written = run_process(argv, terminal=False, cwd=tmp_path)
    assert code == 0
    assert "%|" not in written
    assert not any(re.search(r"\|\s+tqdm(\.\w+)*$", line.rstrip()) for line in written.splitlines())


def test_a_run_without_a_sweep_or_gates_does_not_load_the_comparison(setup: tuple[Path, Path, Path],
                                                                      tmp_path: Path) -> None:
    """The sweep's table and the gates' statistics are loaded where they are used: a plain run imports none of the
    comparison's modules (a second of a campaign's start, compiled from source)."""
    data, config, db = setup
    code, written = run_process(["run", "--dataset", str(data), "--config", str(config), "--db", str(db)],
                                terminal=False, cwd=tmp_path)
    assert code == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in written.splitlines() if line.startswith("import time:")}
    assert "evalcore.campaigns.runner" in imported  # the lines are read right
    assert not imported & {"evalcore.cli.compare", "evalcore.compare.comparison", "evalcore.compare.sweep",
                           "evalcore.compare.stats", "evalcore.compare.deltas"}
