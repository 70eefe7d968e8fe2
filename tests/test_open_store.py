"""One way to open an existing store: only the commands that start a store (run, serve, keys create, suites import,
config save) make one; every other command refuses a path where there is none, and creates nothing there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.cli import main

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("argv", [
    ["store", "copy", "--from", "{missing}", "--to", "{tmp}/copy.db"],
    ["campaigns", "list", "--db", "{missing}"],
    ["labels", "export", "c1", "--db", "{missing}"],
    ["keys", "list", "--db", "{missing}"],
    ["compare", "a", "b", "--db", "{missing}"],
])
def test_a_command_that_reads_a_store_refuses_a_path_where_there_is_none(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "typo.db"
    args = [part.format(missing=missing, tmp=tmp_path) for part in argv]
    assert main(args) != 0
    err = capsys.readouterr().err
    assert "no database there" in err
    assert str(missing) in err
    assert "Traceback" not in err
    assert not missing.exists()
    assert not (tmp_path / "copy.db").exists()


def test_a_worker_on_a_mistyped_store_stops_at_once_saying_so(tmp_path: Path) -> None:
    missing = tmp_path / "no-folder" / "typo.db"
    done = subprocess.run([sys.executable, "-m", "evalcore", "worker", "--db", str(missing)], cwd=REPO,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode != 0, done.stderr
    assert "no database there" in done.stderr, done.stderr
    assert not missing.parent.exists()


def test_the_commands_that_start_a_store_still_make_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "new" / "evalcore.db"
    assert main(["keys", "create", "--tenant", "acme", "--role", "admin", "--db", str(db)]) == 0
    assert db.is_file()
    assert main(["keys", "list", "--db", str(db)]) == 0
