"""Project rules that a reader relies on: typed engine, clean lint, documented settings, working CLI help."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from evalcore.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "app.py", *(ROOT / "ui").glob("*.py"), *(ROOT / "pages").glob("*.py"),
           *(ROOT / "evalcore").rglob("*.py")]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, check=False)


def test_engine_type_checks() -> None:
    """The engine and the dashboard (its helpers, router and pages), strictly."""
    result = _run("mypy", "evalcore", "ui", "app.py", "pages")
    assert result.returncode == 0, result.stdout


def test_lint_is_clean() -> None:
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout


def test_engine_never_imports_streamlit() -> None:
    offenders = [p for p in (ROOT / "evalcore").rglob("*.py") if re.search(r"^\s*(import|from) streamlit",
                                                                           p.read_text(), re.MULTILINE)]
    assert offenders == []


# The engine's layers, lowest first: a package may import only from layers below its own (and itself).
# ARCHITECTURE.md explains each; a new package must be placed here.
LAYERS = (
    {"lazy"},  # the bottom of layer 0, which the rest of it may use: what is built on first use
    {"errors", "text", "csvcells", "relevance", "lifecycle", "shapes", "compiled", "memory"},
    {"store", "models", "access"},
    {"keys", "datasets", "judges", "jobs"},
    {"metrics"},
    {"targets", "suites", "diagnosis"},
    {"campaigns", "documents", "testsets"},
    {"compare"},
    {"gates"},
    {"api", "notebook"},
    {"cli"},
    {"__main__", "testing", "__init__"},  # __init__: the public API, re-exporting (lazily) from any layer
)


def _layer(component: str) -> int:
    return next(number for number, members in enumerate(LAYERS) if component in members)


def _imported(path: Path) -> set[str]:
    """The evalcore modules a file imports, at the top or inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from evalcore import x` takes x (a package, or __version__), not the public API of evalcore/__init__
            names |= ({node.module} if node.module != "evalcore" else set()) \
                | {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in names if name.startswith("evalcore.") or name == "evalcore"}


def _component(module: str) -> str:
    parts = module.split(".")
    return parts[1].removesuffix(".py") if len(parts) > 1 else "__init__"


def test_each_package_imports_only_the_layers_below() -> None:
    engine = ROOT / "evalcore"
    offenders = []
    for path in sorted(engine.rglob("*.py")):
        own = _component("evalcore." + ".".join(path.relative_to(engine).with_suffix("").parts))
        for module in _imported(path):
            other = _component(module)
            if other in {"__version__"}:
                continue
            if other != own and _layer(other) >= _layer(own):
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_every_environment_setting_is_documented() -> None:
    readme = "".join(path.read_text() for path in DOCS)
    names = {name for path in SOURCES
             for name in re.findall(r"environ(?:\.get|\.setdefault)?\(?\[?\"(EVALCORE_[A-Z_]+)\"", path.read_text())}
    assert names, "no settings found: the pattern is stale"
    assert sorted(name for name in names if name not in readme) == []


# The specification documents live outside the repository: code, UI text and docs name the concepts instead.
OUTSIDE_DOCUMENTS = re.compile(r"\bDESIGN(?:\.md| section| §)|\bSTYLE\.md\b|\bseeds?[ -]0\d\d\b", re.IGNORECASE)


def test_nothing_names_the_documents_the_project_was_specified_from() -> None:
    texts = [*SOURCES, *(ROOT / "tests").glob("*.py"), *(ROOT / "bench").glob("*.py"), *DOCS,
             ROOT / "ARCHITECTURE.md", *(ROOT / "evalcore").rglob("*.txt")]
    found = [f"{path.relative_to(ROOT)}:{number}" for path in texts
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if OUTSIDE_DOCUMENTS.search(line) and path.name != "test_project.py"]
    assert found == []


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


def test_the_command_table_names_every_command_of_every_module() -> None:
    from evalcore.cli import COMMANDS

    parser = build_parser()
    registered = set(parser._subparsers._group_actions[0].choices)
    assert registered == set(COMMANDS)
    for command, module in COMMANDS.items():  # each command's parser comes from its module alone
        assert command in build_parser(command)._subparsers._group_actions[0].choices, module


def test_the_overview_lists_the_commands_as_the_full_parser_does_without_importing_them() -> None:
    from evalcore.cli import overview

    assert overview().format_help() == build_parser().format_help()
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "evalcore", "--help"], capture_output=True,
                          text=True, check=True, cwd=ROOT)
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert "usage: python -m evalcore" in done.stdout
    assert sorted(name for name in imported if name.startswith(("evalcore.cli.", "numpy", "evalcore.campaigns"))) == []


def test_the_readme_is_a_front_door_linking_every_topic() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 220
    linked = set(re.findall(r"\]\((docs/[a-z-]+\.md)\)", readme))
    assert linked == {f"docs/{path.name}" for path in DOCS[1:]}


def test_links_between_documents_point_at_files_that_exist() -> None:
    broken = [f"{path.relative_to(ROOT)} -> {target}" for path in DOCS
              for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
              if not (path.parent / target).exists()]
    assert broken == []


@pytest.mark.parametrize("package", ["evalcore.campaigns", "evalcore.compare", "evalcore.datasets", "evalcore.metrics",
                                     "evalcore.judges", "evalcore.targets"])
def test_every_export_of_a_lazy_package_resolves(package: str) -> None:
    # Their names are imported on first use (evalcore.lazy): a name in __all__ with no submodule behind it would
    # only fail when some face first asked for it.
    module = importlib.import_module(package)
    assert [name for name in module.__all__ if getattr(module, name, None) is None] == []
    # Importing a submodule binds its name in the package: an export named like its module must stay the export.
    for submodule in pkgutil.iter_modules(module.__path__):
        importlib.import_module(f"{package}.{submodule.name}")
    assert [name for name in module.__all__ if isinstance(getattr(module, name), types.ModuleType)] == []
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def test_the_key_table_in_the_docs_is_the_declared_one() -> None:
    from evalcore.targets.config import key_reference

    text = (ROOT / "docs" / "targets.md").read_text(encoding="utf-8")
    table = text.split("<!-- keys:start -->\n", 1)[1].split("<!-- keys:end -->", 1)[0]
    assert table == key_reference(), "run: python -m evalcore config keys, and paste it between the markers"
