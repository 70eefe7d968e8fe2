"""The package's build (pyproject.toml says the rest): its dependencies read from the requirements files, the C loops
built beside their sources when a compiler is there, and the dashboard and the sample dataset copied into the package,
so that `pip install .` gives every face from any folder."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from types import ModuleType

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
C_SOURCES = ("evalcore/metrics/trec_scan.c", "evalcore/metrics/trec_label.c", "evalcore/metrics/overlaps.c",
             "evalcore/compare/resample.c", "evalcore/targets/extract.c", "evalcore/targets/bm25.c")
# What the package carries beyond evalcore/: the dashboard runs from evalcore/dashboard (app.py finds pages/ and
# ui/ beside it), the sample is evalcore/datasets/samples.
COPIES = {"app.py": "dashboard", "pages/*.py": "dashboard/pages", "ui/*.py": "dashboard/ui",
          ".streamlit/config.toml": "dashboard/.streamlit",
          "dataset/samples/*.parquet": "datasets/samples", "dataset/samples/suite.csv": "datasets/samples",
          "dataset/samples/conversations.csv": "datasets/samples"}


def requirements(name: str) -> list[str]:
    """The requirements a requirements file lists. Its `-r FILE` lines (the files it adds to, whose requirements the
    package has already) and its `-e .` line (this project, for a checkout's install) are for pip."""
    found = []
    for line in (HERE / name).read_text(encoding="utf-8").splitlines():
        line = line.split(" #")[0].strip()
        if line.startswith("-"):
            if not line.startswith(("-r ", "-e .")):
                raise SystemExit(f"{name}: {line!r}: a requirements file here holds requirements, -r FILE and -e .")
        elif line and not line.startswith("#"):
            found.append(line)
    return found


def _compiled() -> ModuleType:
    """evalcore/runtime/compiled.py, which names the libraries (read from its file: the package is not installed
    yet)."""
    spec = importlib.util.spec_from_file_location("evalcore_compiled", HERE / "evalcore" / "runtime" / "compiled.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CLibrary(Extension):
    """A plain C library for ctypes (no Python module inside), named as evalcore/runtime/compiled.py looks for it."""

    def __init__(self, source: str) -> None:
        super().__init__(source.removesuffix(".c").replace("/", ".") + "_library", [source], optional=True)
        self.file_name: str = _compiled().prebuilt_name(HERE / source)


class BuildLibraries(build_ext):
    """Build each C library under its own name; a failure leaves the numpy path (the extensions are optional)."""

    def build_extension(self, ext: Extension) -> None:
        if self.compiler.compiler_type == "unix":
            ext.extra_compile_args = ["-std=c11"]  # as compiled.FLAGS; no -ffast-math (IEEE rounding is relied on)
        super().build_extension(ext)

    def get_ext_filename(self, fullname: str) -> str:
        ext = self.ext_map.get(fullname)
        if isinstance(ext, CLibrary):
            return os.path.join(*fullname.split(".")[:-1], ext.file_name)
        return str(super().get_ext_filename(fullname))

    def get_export_symbols(self, ext: Extension) -> list[str]:
        return list(ext.export_symbols)  # no PyInit_ function: not a Python module


class BuildWithDashboard(build_py):
    """The package, plus the dashboard and the sample dataset copied in (an editable install runs them from the
    checkout instead)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        package = Path(self.build_lib) / "evalcore"
        for folder in {package / target for target in COPIES.values()}:
            shutil.rmtree(folder, ignore_errors=True)  # nothing left from an earlier build in the same folder
        for pattern, target in COPIES.items():
            (package / target).mkdir(parents=True, exist_ok=True)
            for path in sorted(HERE.glob(pattern)):
                shutil.copy2(path, package / target / path.name)


setup(
    install_requires=requirements("requirements.txt"),
    extras_require={extra: requirements(f"requirements-{extra}.txt") for extra in ("local", "postgres", "dev")},
    ext_modules=[CLibrary(source) for source in C_SOURCES] if os.name == "posix" else [],
    cmdclass={"build_ext": BuildLibraries, "build_py": BuildWithDashboard},
)
