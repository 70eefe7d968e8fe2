"""Project rules that a reader relies on: typed engine, clean lint, documented settings, working CLI help."""

from __future__ import annotations

import ast
import collections
import graphlib
import importlib
import pkgutil
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from evalcore.cli import build_parser
from evalcore.store.measure_codes import CODED_NAMES

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "app.py", *(ROOT / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"),
           *(ROOT / "evalcore").rglob("*.py")]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.long
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
    {"runtime"},  # the bottom of layer 0, which the rest of it may use: what is built on first use, memory, C loops
    {"errors", "language", "formats"},
    {"store", "models"},
    {"access"},  # above the store, which keeps its API keys and sessions
    {"datasets", "judges", "jobs", "costs"},
    {"metrics"},
    {"targets", "suites", "diagnosis", "telemetry"},
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


# What the top of evalcore/ holds besides its packages: the package's own two files and the one error type every
# layer raises (`from evalcore.errors import EvalError`).
TOP_MODULES = {"__init__.py", "__main__.py", "errors.py"}


def test_the_top_of_the_engine_shows_its_concepts() -> None:
    """Every module of evalcore/ sits in the package of its concept; a module at the top says nothing of where it
    belongs."""
    loose = sorted(path.name for path in (ROOT / "evalcore").glob("*.py") if path.name not in TOP_MODULES)
    assert loose == []


def test_each_module_name_is_used_once_in_the_engine() -> None:
    """A module's name says what it holds: one name in two packages (a `worker` that is a statistics process and one
    that is a command, two `records` of different things) says neither, and a search for it finds both."""
    where = collections.defaultdict(list)
    for path in sorted((ROOT / "evalcore").rglob("*.py")):
        if path.name not in {"__init__.py", "__main__.py"}:
            where[path.stem].append(path.relative_to(ROOT).as_posix())
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


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
    # Their names are imported on first use (evalcore.runtime.lazy): a name in __all__ with no submodule behind it would
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
    from evalcore.targets.target_config import key_reference

    text = (ROOT / "docs" / "targets.md").read_text(encoding="utf-8")
    table = text.split("<!-- keys:start -->\n", 1)[1].split("<!-- keys:end -->", 1)[0]
    assert table == key_reference(), "run: python -m evalcore config keys, and paste it between the markers"


def script_state(tree: ast.Module) -> set[str]:
    """The names a page script binds at its top level as it runs (assignments, loops, `with ... as`, `:=`): its
    state; names in capitals (constants, type aliases) and imports are not state."""
    bound: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
    return {name for name in bound if not name.lstrip("_")[:1].isupper()}


def globals_read(function: ast.FunctionDef, state: set[str]) -> set[str]:
    """The script state a function reads without binding it itself (its arguments and its own assignments)."""
    own = {node.id for node in ast.walk(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    own |= {arg.arg for node in ast.walk(function) if isinstance(node, (ast.FunctionDef, ast.Lambda))
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
    return {node.id for node in ast.walk(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
            and node.id in state and node.id not in own}


def test_no_page_function_reads_the_scripts_state() -> None:
    """A page's functions take what they need (principal, store, the selection) as arguments: none reads a name the
    script binds as it runs, which may be assigned further down or not at all on this run."""
    files = [ROOT / "app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "ui").rglob("*.py")]
    found = {}
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        state = script_state(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and (names := globals_read(node, state)):
                found[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = sorted(names)
    assert found == {}


def test_the_script_state_check_finds_a_function_reading_a_later_global() -> None:
    tree = ast.parse("import ui\nLIMIT = 3\n\ndef section(campaign):\n    return store.read(campaign, LIMIT)\n\n"
                     "def fine(store):\n    return store\n\nstore = ui.store()\n")
    state = script_state(tree)
    assert state == {"store"}
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert globals_read(functions["section"], state) == {"store"}
    assert globals_read(functions["fine"], state) == set()


def test_the_measure_table_in_the_docs_is_the_declared_one() -> None:
    from evalcore.metrics.reference import filled

    text = (ROOT / "docs" / "measures.md").read_text(encoding="utf-8")
    assert filled(text) == text, "run: python -m evalcore.metrics.reference docs/measures.md"


# Where a measure's name may appear as a string of its own besides the module that declares it: the metrics
# package's exports (functions named like the measure they compute) and the campaign summary, a record whose three
# figures are fields of the API's shape; a test set's quality report, whose `recall` field (the baseline retriever's
# recall@10 over the set) is a field of its JSON shape, not the campaign measure. The store's codes for the names its
# rows keep are a fixed list of their own: a stored code must keep its meaning whatever the registry becomes.
SPELLED_ELSEWHERE = {"evalcore/store/measure_codes.py": set(CODED_NAMES),
                     "evalcore/metrics/__init__.py": {"answer_similarity", "coverage", "sources_found"},
                     "evalcore/campaigns/queries.py": {"sources_found", "coverage", "judge.score"},
                     "evalcore/testsets/quality.py": {"recall"}}


def test_no_measure_name_is_spelled_outside_its_declaration() -> None:
    """A face asks the registry (its panel, direction, verdict order, the side it judges) instead of naming a
    measure: a string that is exactly a measure's name, in any module but the one declaring it, is a second place
    that would have to change when the measure does. Names inside sentences (help, errors, docs) are examples."""
    from evalcore.metrics import MEASURES

    declared: dict[str, str] = {}
    for module in pkgutil.iter_modules(importlib.import_module("evalcore.metrics").__path__):
        for measure in getattr(importlib.import_module(f"evalcore.metrics.{module.name}"), "DECLARED", ()):
            declared[measure.name] = f"evalcore/metrics/{module.name}.py"
    names = set(MEASURES) | {name.removeprefix("graded.") for name in declared if name.startswith("graded.")}
    found = set()
    for path in SOURCES:
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names and where not in (
                    declared.get(node.value), declared.get(f"graded.{node.value}")):
                found.add((where, node.value))
    allowed = {(where, name) for where, spelled in SPELLED_ELSEWHERE.items() for name in spelled}
    assert sorted(found - allowed) == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _lazy_exports(path: Path) -> dict[str, str]:
    """name -> submodule of a package's `lazy_exports(__name__, {submodule: (names...)})`."""
    where: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "lazy_exports" and len(node.args) == 2 \
                and isinstance(node.args[1], ast.Dict):
            for key, names in zip(node.args[1].keys, node.args[1].values, strict=True):
                assert isinstance(key, ast.Constant)
                where |= {name.value: key.value for name in ast.walk(names) if isinstance(name, ast.Constant)}
    return where


def _import_graph() -> dict[str, set[str]]:
    """Module -> the evalcore modules it imports (see the test below for which imports count)."""
    modules = {_module_name(path): path for path in (ROOT / "evalcore").rglob("*.py")}
    lazy = {name: _lazy_exports(path) for name, path in modules.items() if path.name == "__init__.py"}

    def target(module: str, name: str) -> str | None:
        if f"{module}.{name}" in modules:
            return f"{module}.{name}"
        if name in lazy.get(module, {}):
            return f"{module}.{lazy[module][name]}"
        return module if module in modules else None

    def imports(node: ast.AST, package_init: bool) -> set[str]:
        found: set[str] = set()
        for child in ast.iter_child_nodes(node):
            if package_init and isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # a package's public names, spelled for the type checker: no module of it needs them
            if isinstance(child, ast.Import):
                found |= {alias.name for alias in child.names if alias.name in modules}
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and (child.module or "").startswith("evalcore"):
                found |= {t for alias in child.names if (t := target(child.module or "", alias.name))}
            found |= imports(child, package_init)
        return found

    return {name: imports(ast.parse(path.read_text(encoding="utf-8")), path.name == "__init__.py") - {name}
            for name, path in modules.items()}


def test_the_import_graph_of_the_engine_has_no_circle() -> None:
    """No module of evalcore/ reaches itself through the modules it imports.

    Every import counts: at the top of a module, inside a function (an import deferred to break a circle still
    ties the two modules together: neither can be understood, tested or moved without the other), and under
    TYPE_CHECKING (a type is a dependency as well). Two kinds do not: a package `__init__`'s TYPE_CHECKING block,
    which spells the public names of its lazy exports for the type checker, and the parent package a submodule's
    import runs first (Python's own order, not a choice of the code). `from package import name` counts as an
    import of the submodule that lazily provides the name.
    """
    graph = _import_graph()
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"an import circle: {' -> '.join(error.args[1])}")
    # A circle of two made up for the check, so that it is seen to catch one.
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter({**graph, "evalcore.errors": {"evalcore.metrics.measure"}}).prepare()


def _joined_asserts(path: Path) -> list[int]:
    """The lines of `assert a and b` statements in a file."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)]


def test_each_assert_checks_one_behaviour() -> None:
    """`assert a and b` says only that one of them failed: each behaviour gets its own line, so a failure names it."""
    found = [f"{path.name}:{line}" for path in sorted((ROOT / "tests").glob("*.py")) for line in _joined_asserts(path)]
    assert found == []


def test_the_one_behaviour_check_finds_a_joined_assert(tmp_path: Path) -> None:
    joined = tmp_path / "test_joined.py"
    joined.write_text("def test_x():\n    assert 1 == 1\n    assert 2 > 1 and 3 > 2\n", encoding="utf-8")
    assert _joined_asserts(joined) == [3]


# A string that is an SQL statement: its first word a statement's, followed by what makes it one (a table, a column
# list), so that prose such as "Select a campaign" or "Update the page" is not taken for one.
SQL_STATEMENT = re.compile(
    r"\s*(SELECT\s+(\S|$)|INSERT\s+(OR\s+[A-Z]+\s+)?INTO\s+\w|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s+\w|"
    r"CREATE\s+(TABLE|(UNIQUE\s+)?INDEX|VIEW|TRIGGER)\s|ALTER\s+TABLE\s|DROP\s+(TABLE|INDEX|VIEW)\s|"
    r"WITH\s+(RECURSIVE\s+)?\w+(\s*\([^)]*\))?\s+AS\s*\()")
# Modules outside the store that keep SQL of their own, each with what it holds and why.
SQL_OUTSIDE_STORE = {
    # The fault drill (a test aid) counts stored results and who owns each campaign while it kills processes and
    # restarts PostgreSQL, through a bare psycopg connection of its own: opening a Store there would itself put lapsed
    # campaigns back in the queue, changing what the drill measures, and the drill's reads must answer nothing
    # (not fail) while the database is down.
    "evalcore/testing/faults.py",
}


def _sql_statements(path: Path) -> list[int]:
    """The lines of a module's string constants (f-strings' literal parts included) that are SQL statements."""
    return sorted({node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and SQL_STATEMENT.match(node.value)})


def test_sql_is_written_only_in_the_store() -> None:
    """Every SQL statement sits in evalcore/store/, in a module named for the tables it reads and writes: the engine
    calls small functions there, so a table's queries are found, changed and checked against both backends in one
    place."""
    store = ROOT / "evalcore" / "store"
    found = [f"{path.relative_to(ROOT).as_posix()}:{line}" for path in SOURCES
             if store not in path.parents and path.relative_to(ROOT).as_posix() not in SQL_OUTSIDE_STORE
             for line in _sql_statements(path)]
    assert found == []


def test_the_sql_check_finds_a_statement_outside_the_store(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('"""Select a campaign to update."""\nQUERY = "Update the page"\n'
                       'def f(store, key):\n    return store.read(f"SELECT id FROM campaigns WHERE {key} = ?", (1,))\n'
                       'def g(conn):\n    conn.execute("""\n        UPDATE jobs SET status = ?""", ("x",))\n',
                       encoding="utf-8")
    assert _sql_statements(planted) == [4, 6]
