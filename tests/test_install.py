"""The package as a user installs it: the wheel built from this checkout (without network) declares its dependencies,
extras and command, carries its compiled loops, dashboard and sample; installed into a fresh virtual environment it
runs every face (the command line, a notebook started in examples/, the API, the dashboard) from a folder outside
the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import venv
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from evalcore.runtime import compiled
from evalcore.testing.served_dashboard import free_port

ROOT = Path(__file__).resolve().parent.parent
# One worker runs the module: the wheel is built and installed once.
pytestmark = pytest.mark.xdist_group("install")
# What a source distribution leaves out (MANIFEST.in): the wheel is built from what a user would download.
LEFT_OUT = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", ".evalcore", ".*_cache",
                                  ".hypothesis", ".benchmarks", "bench", "docs", "tests", "examples", "*.so",
                                  "uploads-*")
EXTRAS = ("local", "postgres", "dev")
# Whether the wheel's build finds a working C compiler ($CC honoured: CC=/bin/false builds none).
_BUILT_WITH_C = compiled.toolchain() is not None and os.name == "posix"


@dataclass(frozen=True)
class Installed:
    wheel: Path
    bin: Path
    work: Path  # a folder outside the checkout, with an examples/ folder
    env: dict[str, str]

    def run(self, *command: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        """A command of the virtual environment, run in the work folder; it must succeed."""
        done = subprocess.run([str(self.bin / command[0]), *command[1:]], cwd=cwd or self.work,
                              env={**self.env, **env}, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done


def _pip(*arguments: str | Path, python: str | Path = sys.executable) -> None:
    done = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "--no-input", "-q",
                           *map(str, arguments)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel, built with this interpreter's setuptools from a copy of the checkout, installed with no index into a
    new virtual environment that sees this interpreter's packages (the dependencies, already installed)."""
    base = tmp_path_factory.mktemp("install")
    shutil.copytree(ROOT, base / "source", ignore=LEFT_OUT)
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", base / "dist", base / "source")
    [wheel] = (base / "dist").glob("evalcore-*.whl")
    venv.create(base / "venv", system_site_packages=True, with_pip=False)
    bin = base / "venv" / "bin"
    _pip("install", "--no-index", wheel, python=bin / "python")
    (base / "work" / "examples").mkdir(parents=True)
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("EVALCORE_", "STREAMLIT_")) and name != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([str(bin), env.get("PATH", "")])  # as `activate` does
    return Installed(wheel, bin, base / "work", env)


def _metadata(wheel: Path) -> tuple[list[str], str]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(name for name in names if name.endswith(".dist-info/METADATA"))).decode()
        scripts = archive.read(next(name for name in names if name.endswith(".dist-info/entry_points.txt"))).decode()
    return metadata.splitlines(), scripts


def _listed(name: str) -> list[str]:
    """A requirements file's requirements (its `-r` and `-e` lines are for pip)."""
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "-"))]


def test_the_wheel_declares_the_requirements_files_extras_and_command_and_carries_every_face(
        installed: Installed) -> None:
    metadata, scripts = _metadata(installed.wheel)
    required = [line.removeprefix("Requires-Dist: ") for line in metadata if line.startswith("Requires-Dist: ")]
    assert [line for line in required if ";" not in line] == _listed("requirements.txt")
    for extra in EXTRAS:
        assert f"Provides-Extra: {extra}" in metadata
        assert [line.split(";")[0] for line in required if line.endswith(f'extra == "{extra}"')] == \
            _listed(f"requirements-{extra}.txt")
    assert "evalcore = evalcore.__main__:run" in scripts
    with zipfile.ZipFile(installed.wheel) as archive:
        names = set(archive.namelist())
    # Every C loop of the package, built where a compiler answers; without one the install succeeds all the same.
    from evalcore.runtime.compiled import prebuilt_name

    sources = sorted((ROOT / "evalcore").rglob("*.c"))
    assert len(sources) >= 6
    libraries = {str(source.parent.relative_to(ROOT) / prebuilt_name(source)) for source in sources}
    assert {name for name in names if name.endswith(".so")} == (libraries if _BUILT_WITH_C else set())
    assert {"evalcore/dashboard/app.py", "evalcore/dashboard/ui/__init__.py", "evalcore/dashboard/pages/run.py",
            "evalcore/dashboard/.streamlit/config.toml", "evalcore/datasets/samples/queries.parquet",
            "evalcore/datasets/samples/suite.csv"} <= names


def test_the_command_runs_a_campaign_on_the_shipped_sample_with_the_shipped_loops_and_no_compiler(
        installed: Installed) -> None:
    assert installed.run("evalcore", "--help").stdout.startswith("usage: evalcore ")
    cache = installed.work / "compiled-cache"
    ran = installed.run("evalcore", "run", "--dataset", "default", "--name", "installed",
                        CC="/bin/false", EVALCORE_COMPILED_CACHE=str(cache))
    assert "91 questions" in ran.stdout + ran.stderr
    assert "campaign 'installed'" in ran.stdout
    assert "next: evalcore campaigns show " in ran.stdout  # the command as it was installed, not `python -m`
    assert (installed.work / ".evalcore" / "evalcore.db").is_file()  # the store of the folder it ran in
    # The libraries built with the package load (nothing is compiled: there is no compiler), with numpy's values;
    # a wheel built without a compiler has none, and the numpy path runs.
    check = ("import json, os\n"
             "import numpy as np\n"
             "from evalcore.compare import stats\n"
             "from evalcore.metrics import trec, trec_scan\n"
             "from evalcore.targets import bm25, sentences\n"
             "libraries = [trec_scan._library(), trec._label_library(), stats._resampler(),\n"
             "             sentences.extract_library(), bm25.best_library()]\n"
             "columns = np.random.default_rng(5).random((1_001, 4))\n"
             "first = stats.bootstrap_means(columns, resamples=300, seed=2)\n"
             "os.environ['EVALCORE_COMPILED'] = '0'\n"
             "second = stats.bootstrap_means(columns, resamples=300, seed=2)\n"
             "print(json.dumps({'libraries': [library and library._name for library in libraries],\n"
             "                  'same': np.array_equal(first.view(np.uint64), second.view(np.uint64))}))")
    found = json.loads(installed.run("python", "-c", check, CC="/bin/false", EVALCORE_COMPILED_CACHE=str(cache)).stdout)
    site = installed.bin.parent / "lib"
    expected = [True] * 5 if _BUILT_WITH_C else [False] * 5
    assert [bool(path) and Path(path).is_relative_to(site) for path in found["libraries"]] == expected
    assert found["same"] is True
    assert not cache.exists()


def test_a_notebook_started_in_examples_imports_the_installed_package(installed: Installed) -> None:
    code = ("import nbformat\nfrom nbclient import NotebookClient\n"
            "book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(\n"
            "    'import evalcore as ec\\nprint(ec.__file__, len(ec.load_dataset(\"default\").questions))')])\n"
            "NotebookClient(book, timeout=120, kernel_name='python3').execute()\n"
            "print(book.cells[0].outputs[0]['text'])")
    printed = installed.run("python", "-c", code, cwd=installed.work / "examples").stdout.split()
    assert Path(printed[0]).is_relative_to(installed.bin.parent)
    assert printed[1] == "91"


@contextmanager
def _serving(installed: Installed, command: list[str], url: str) -> Iterator[httpx.Response]:
    """A server of the virtual environment, started in the work folder; yields its first answer at url."""
    log = installed.work / f"{command[0]}-{command[1]}.log"
    with log.open("w") as output:
        server = subprocess.Popen([str(installed.bin / command[0]), *command[1:]], cwd=installed.work,
                                  env=installed.env, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, log.read_text()
            try:
                yield httpx.get(url, timeout=5)
                return
            except httpx.TransportError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
    finally:
        server.terminate()
        server.wait(30)


def test_the_api_serves_evaluation_tasks_on_the_shipped_sample(installed: Installed) -> None:
    db = str(installed.work / "api.db")
    key = installed.run("evalcore", "keys", "create", "--tenant", "default", "--role", "admin", "--db", db)
    (installed.work / "keyword.toml").write_text('retriever = "bm25"\n')  # no corpus to embed first
    target = installed.run("evalcore", "config", "save", "keyword.toml", "--db", db).stdout.split()[0]
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/v1"
    with _serving(installed, ["evalcore", "serve", "--port", str(port), "--db", db], f"{base}/health") as health:
        assert health.json()["success"] is True
        headers = {"Authorization": f"Bearer {key.stdout.split()[0]}"}
        task = httpx.post(f"{base}/evaluation", headers=headers, json={"knowledge_base_id": target}).json()
        task = task["data"]["task"]
        deadline = time.monotonic() + 120
        while task["status"] < 2 and time.monotonic() < deadline:
            time.sleep(0.3)
            task = httpx.get(f"{base}/evaluation", headers=headers, params={"task_id": task["id"]}).json()
            task = task["data"]["task"]
    assert (task["status"], task["total"], task["finished"]) == (2, 91, 91)


def test_the_dashboard_command_serves_the_installed_app(installed: Installed) -> None:
    port = free_port()
    command = ["evalcore", "dashboard", "--port", str(port), "--", "--server.headless", "true"]
    with _serving(installed, command, f"http://localhost:{port}/_stcore/health") as health:
        assert health.text == "ok"
    log = (installed.work / "evalcore-dashboard.log").read_text()
    assert f"localhost:{port}" in log
    # Its script and pages, from the package, on the sample (the address `dashboard` gives Streamlit).
    code = ("from streamlit import config\n"
            "from streamlit.testing.v1 import AppTest\n"
            "from evalcore.cli.dashboard import dashboard_app\n"
            "config.set_option('server.address', 'localhost')\n"
            "at = AppTest.from_file(str(dashboard_app()), default_timeout=60).run()\n"
            "print(dashboard_app(), [e.value for e in [*at.exception, *at.error]], at.title[0].value,\n"
            "      {m.label: m.value for m in at.metric}['Questions'])")
    # Its campaigns on threads of its own process, as in the other dashboard tests (a worker process outlives it).
    printed = installed.run("python", "-c", code, EVALCORE_DASHBOARD_WORKER="threads").stdout.split()
    assert Path(printed[0]).is_relative_to(installed.bin.parent)
    assert printed[1:] == ["[]", "Datasets", "91"]


def _dashboard_command(*argv: str) -> list[str]:
    from evalcore.cli import build_parser
    from evalcore.cli.dashboard import streamlit_command

    return streamlit_command(build_parser("dashboard").parse_args(["dashboard", *argv]))


def test_the_dashboard_command_runs_a_checkouts_app_with_its_settings_then_the_options_given() -> None:
    command = _dashboard_command("--port", "8600", "--", "--server.headless", "true", "--server.address", "0.0.0.0")
    assert command[:5] == [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py")]
    options = command[5:]
    # Streamlit reads .streamlit/config.toml only from the working folder: its settings go on the command line.
    assert options[:3] == ["--server.address=localhost", "--server.maxUploadSize=100", "--server.fileWatcherType=none"]
    assert "--browser.gatherUsageStats=false" in options
    assert options[-5:] == ["--server.port=8600", "--server.headless", "true", "--server.address", "0.0.0.0"]
    assert _dashboard_command("--host", "127.0.0.1")[-1] == "--server.address=127.0.0.1"


def test_a_copy_of_the_package_without_the_dashboard_says_how_to_get_it(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from evalcore.cli import dashboard, main

    monkeypatch.setattr(dashboard, "PACKAGE", tmp_path / "evalcore")
    assert main(["dashboard"]) == 2
    error = capsys.readouterr().err
    assert "the dashboard is not installed with this copy of evalcore" in error
    assert "pip install ." in error
