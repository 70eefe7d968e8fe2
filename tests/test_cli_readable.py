"""The CLI as people read it: `compare` takes names or their start, `run` says what to type next, a sweep's table
shows the headline measures by their full names."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from evalcore.cli import main
from tests.test_campaigns_cli import setup  # noqa: F401  (the fixture)


def run_named(capsys: pytest.CaptureFixture, data: Path, config: Path, db: Path, name: str) -> tuple[str, str]:
    """Run a named campaign; its id and what the command printed."""
    assert main(["run", "--dataset", str(data), "--config", str(config), "--name", name, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.startswith(f"campaign {name!r} (")]
    return line.split("(")[-1].rstrip(")"), out


def test_run_prints_the_name_the_id_and_the_compare_command_to_type(setup, capsys) -> None:  # noqa: F811
    data, config, db = setup
    first, out = run_named(capsys, data, config, db, "baseline bm25")
    # nothing to compare with yet; the store named by --db is named again, so the command runs as printed
    assert out.splitlines()[-1] == f"next: python -m evalcore campaigns show {first} --db {db}"
    second, out = run_named(capsys, data, config, db, "top 3 again")
    command = out.splitlines()[-1]
    assert command == f"next: python -m evalcore compare 'baseline bm25' 'top 3 again' --db {db}"
    assert main([*shlex.split(command)[4:], "--resamples", "200"]) == 0   # typed as printed
    head = capsys.readouterr().out.splitlines()
    assert f"({first})" in head[0]
    assert f"({second})" in head[1]


def test_compare_takes_a_unique_start_of_a_name_and_lists_the_candidates_of_an_ambiguous_one(setup,  # noqa: F811
                                                                                             capsys) -> None:
    data, config, db = setup
    ids = [run_named(capsys, data, config, db, name)[0] for name in ("top-k 3", "top-k 10", "baseline")]
    code = main(["compare", "base", "TOP-K 10", "--db", str(db), "--resamples", "200", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (result["a"]["id"], result["b"]["id"]) == (ids[2], ids[1])
    assert main(["compare", "top-k", "baseline", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "'top-k' names 2 campaigns" in err
    assert f"top-k 3 ({ids[0]})" in err
    assert f"top-k 10 ({ids[1]})" in err
    assert main(["compare", "nothing like it", "baseline", "--db", str(db)]) == 2
    assert "no campaign 'nothing like it'" in capsys.readouterr().err


def test_a_sweep_table_shows_the_headline_measures_by_full_name_and_the_rest_on_request(setup,  # noqa: F811
                                                                                        capsys) -> None:
    data, config, db = setup
    argv = ["run", "--dataset", str(data), "--config", str(config), "--sweep", "embedding_top_k=1,3", "--db", str(db)]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    header = out[out.index(next(line for line in out if line.startswith("sweep over embedding_top_k"))) + 1]
    assert header.split() == ["value", "ndcg@10", "rougel", "coverage"]  # those deciding verdicts, in panel order
    assert any(line.endswith("more measures: --measures M1,M2,... or --all") for line in out)
    assert max(len(line) for line in out
               if not line.startswith(("campaign", "next", "configuration", "dataset "))) < 120
    ids = [line.split("(")[-1].rstrip(")") for line in out if line.startswith("campaign '")]
    assert main(["compare", *ids, ids[0], "--db", str(db), "--all", "--resamples", "200"]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    assert "graded.total_retrieved_documents" in header.split()
    assert "graded.holes" in header.split()
    assert header.split().index("precision") < header.split().index("bleu1")  # panel order, not alphabetical
    assert main(["compare", *ids, ids[0], "--db", str(db), "--measures", "recall,precision"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == ["value", "precision", "recall"]
    assert main(["compare", *ids, ids[0], "--db", str(db), "--measures", "nope"]) == 2
    assert "no campaign of the sweep has this measure" in capsys.readouterr().err


def test_setting_top_k_says_it_is_the_generators_sampling_not_the_retrieval_depth(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "notes.db")
    assert main(["run", "--dataset", "default", "--db", db, "--set", "retriever=bm25", "--set", "top_k=5",
                 "--estimate"]) == 0
    note = capsys.readouterr().err
    assert "top_k is the generator's sampling from the k likeliest tokens (unused by the extractive generator)" in note
    assert "embedding_top_k" in note
    assert main(["run", "--dataset", "default", "--db", db, "--sweep", "top_k=1,2", "--set", "generator=openai",
                 "--set", "model=gpt-4o-mini", "--estimate"]) == 0
    swept = capsys.readouterr().err
    assert "top_k is the generator's sampling" in swept
    assert "unused by the extractive generator" not in swept  # a model samples: the key does something there
    assert main(["run", "--dataset", "default", "--db", db, "--set", "embedding_top_k=5", "--estimate"]) == 0
    assert "top_k is" not in capsys.readouterr().err  # the retrieval depth itself: nothing to say
