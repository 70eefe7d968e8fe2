"""`compare A B` on a kept pair reads the kept comparison's head alone and prints what the computed comparison
printed: the same text and JSON, its tolerances as they were decided, without numpy, the statistics or the measure
registry in the process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.campaigns import get_campaign
from evalcore.cli import main
from evalcore.compare import compare_campaigns, saved_comparisons
from evalcore.errors import EvalError
from evalcore.store import open_store

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = 60


def values(i: int, side: str) -> dict[str, float]:
    """A question's measures: 0-1 ones, a pass/fail one (its test is McNemar's), some moving from A to B."""
    shift = 0.0 if side == "A" else (i % 3 - 1) / 10
    coverage = (i * 37 % 11) / 10
    return {"coverage": min(1.0, max(0.0, coverage + shift)), "recall": 1.0 - coverage,
            "ndcg@10": (i * 7 % 10) / 10 + (0.05 if side == "B" and i % 4 == 0 else 0.0),
            "exact_match": float((i + (side == "B")) % 5 == 0)}


def store_pair(db: Path | str, *, moved: bool = True) -> None:
    """Campaigns A and B of QUESTIONS questions; without `moved`, B's values are A's (every verdict the same)."""
    with open_store(db) as store:
        for cid, top_k in (("A", 5), ("B", 10)):
            side = cid if moved else "A"

            def insert(conn, cid=cid, top_k=top_k, side=side):
                conn.execute("INSERT INTO campaigns (id, tenant, kind, source, status, total, finished, failed, "
                             "created_at, ended_at, config, dataset_hash) VALUES (?, 'default', 'dataset', 'default', "
                             "'succeeded', ?, ?, 0, 0, 1.0, ?, 'd1')", (cid, QUESTIONS, QUESTIONS,
                                                                      json.dumps({"top_k": top_k})))
                conn.executemany("INSERT INTO campaign_questions (campaign_id, position, qid, question, refs, "
                                 "expected_sources) VALUES (?, ?, ?, ?, '[]', '[]')",
                                 [(cid, i, i, f"question {i}") for i in range(QUESTIONS)])
                conn.executemany("INSERT INTO results (campaign_id, position, qid, answer, retrieved, sources, "
                                 "measures, signatures, judges, created_at) VALUES (?, ?, ?, 'an answer', '[]', '[]', "
                                 "?, '{}', '{}', 0)",
                                 [(cid, i, i, json.dumps(values(i, side))) for i in range(QUESTIONS)])

            store.write(insert)


def cli(db: Path | str, *extra: str, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    """`python -m evalcore compare A B` on the store, in a process of its own."""
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "evalcore", "compare", "A", "B",
               "--db", str(db), "--resamples", "500", *extra]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done


def forget(db: Path | str) -> None:
    """Delete every kept comparison: the next compare computes."""
    with open_store(db) as store:
        store.write(lambda conn: conn.execute("DELETE FROM comparisons"))


def kept_head(db: Path | str) -> dict[str, object]:
    """The JSON of the kept comparison's head."""
    with open_store(db) as store:
        return dict(json.loads(store.read("SELECT data FROM comparisons")[0]["data"].partition("\n")[0]))


def test_a_kept_pair_prints_what_the_computed_one_printed(db: str) -> None:  # SQLite and PostgreSQL
    store_pair(db)
    computed = cli(db).stdout
    assert "tolerance: a change of" in computed   # the kept tolerances are in what is compared
    assert "mcnemar" in computed
    assert "better   q" in computed
    assert cli(db).stdout == computed
    assert kept_head(db)["tolerances"] == {"coverage": 0.01}
    computed_json = cli(db, "--json").stdout   # kept since the first run
    forget(db)
    assert cli(db, "--json").stdout == computed_json


def test_asked_tolerances_on_a_kept_pair_decide_as_on_a_computed_one(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    store_pair(db)
    cli(db)   # computed and kept
    kept = cli(db, "--tolerance", "0.001", "--tolerance", "coverage=0.15").stdout
    forget(db)
    computed = cli(db, "--tolerance", "0.001", "--tolerance", "coverage=0.15").stdout
    assert kept == computed
    assert "coverage under 0.15" in kept


def test_a_pair_kept_before_its_tolerances_were_kept_prints_the_same(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    store_pair(db)
    computed = cli(db).stdout
    with open_store(db) as store:
        data = store.read("SELECT data FROM comparisons")[0]["data"]
        head, _, lines = data.partition("\n")
        older = json.loads(head)
        del older["tolerances"]
        store.write(lambda conn: conn.execute("UPDATE comparisons SET data = ?", (f"{json.dumps(older)}\n{lines}",)))
    assert cli(db).stdout == computed   # the measure registry's defaults, as they were decided with


def test_the_text_report_reads_the_lines_of_moved_questions_only_when_there_are_some(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    read: list[str] = []
    later = saved_comparisons.Later.read

    def counted(self: saved_comparisons.Later) -> object:
        read.append(self.part)
        return later(self)

    monkeypatch.setattr(saved_comparisons.Later, "read", counted)
    for moved, expected in ((False, []), (True, ["lines"])):
        db = tmp_path / f"{moved}.db"
        store_pair(db, moved=moved)
        assert main(["compare", "A", "B", "--db", str(db), "--resamples", "500"]) == 0
        computed = capsys.readouterr().out
        read.clear()
        assert main(["compare", "A", "B", "--db", str(db), "--resamples", "500"]) == 0
        assert capsys.readouterr().out == computed
        assert read == expected   # the lines once when some verdict moved; the per-measure values never


def test_a_comparison_replaced_while_it_is_read_says_so(db: str) -> None:  # SQLite and PostgreSQL
    store_pair(db)
    with open_store(db) as store:
        first = compare_campaigns(store, "A", "B", resamples=500)
        a, b = get_campaign(store, "A"), get_campaign(store, "B")
        kept = saved_comparisons.find(store, a, b, seed=0, resamples=500, read_later=True)
        assert kept is not None
        assert list(kept.questions) == list(first.questions)
        assert dict(kept.paired).keys() == dict(first.paired).keys()
        again = saved_comparisons.find(store, a, b, seed=0, resamples=500, read_later=True)
        assert again is not None
        store.write(lambda conn: conn.execute("DELETE FROM comparisons"))
        with pytest.raises(EvalError, match="changed while it was read"):
            list(again.questions)
        with pytest.raises(EvalError, match="ask for it again"):
            dict(again.paired)
    # Read at once (the faces other than the command line), it outlives its store.
    with open_store(db) as store:
        compare_campaigns(store, "A", "B", resamples=500)
        whole = compare_campaigns(store, "A", "B", resamples=500)
    assert list(whole.questions) == list(first.questions)


def test_a_kept_pair_is_printed_without_numpy_the_statistics_or_the_registry(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    store_pair(db)
    cli(db)
    done = cli(db, importtime=True)
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert {"evalcore.compare.saved_comparisons", "evalcore.compare.deltas", "evalcore.campaigns.trust"} <= imported
    assert done.stdout.startswith("A (baseline)")
    assert "mcnemar" in done.stdout
    left_out = {"numpy", "scipy", "pandas", "pyarrow", "jieba", "evalcore.metrics.registry",
                "evalcore.metrics.retrieval", "evalcore.metrics.bleu_rouge", "evalcore.metrics.similarity",
                "evalcore.compare.comparison", "evalcore.compare.stats", "evalcore.compare.measure_stats",
                "evalcore.compare.clusters", "evalcore.gates.checks", "evalcore.campaigns.listing"}
    assert sorted(left_out & imported) == []
