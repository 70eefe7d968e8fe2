"""Project rules that a reader relies on: typed engine, clean lint, documented settings, working CLI help."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "app.py", ROOT / "ui.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "evalcore").rglob("*.py")]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, check=False)


def test_engine_type_checks() -> None:
    result = _run("mypy", "evalcore")
    assert result.returncode == 0, result.stdout


def test_lint_is_clean() -> None:
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout


def test_engine_never_imports_streamlit() -> None:
    offenders = [p for p in (ROOT / "evalcore").rglob("*.py") if re.search(r"^\s*(import|from) streamlit", p.read_text(), re.MULTILINE)]
    assert offenders == []


def test_every_environment_setting_is_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    names = {name for path in SOURCES for name in re.findall(r"environ(?:\.get|\.setdefault)?\(?\[?\"(EVALCORE_[A-Z_]+)\"", path.read_text())}
    assert names, "no settings found: the pattern is stale"
    assert sorted(name for name in names if name not in readme) == []


def _commands(parser) -> list[list[str]]:
    paths = []
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        for name, sub in action.choices.items():
            paths.append([name])
            paths += [[name, *rest] for rest in _commands(sub)]
    return paths


@pytest.mark.parametrize("command", _commands(build_parser()), ids=" ".join)
def test_every_command_has_working_help(command: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([*command, "--help"])
    assert done.value.code == 0
    assert "usage:" in capsys.readouterr().out
