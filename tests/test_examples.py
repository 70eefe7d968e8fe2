"""The example notebooks run end to end on a real Jupyter kernel, so they never rot."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))


def test_the_readme_and_the_api_page_lead_to_the_examples() -> None:
    assert len(NOTEBOOKS) == 3
    assert "](examples/)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](../examples/)" in (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_the_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel is a new process: it finds evalcore through PYTHONPATH and writes its campaigns to a fresh database.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "examples.db"))
    book = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in book.cells if cell.cell_type == "code"), "commit without outputs"
    NotebookClient(book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [output for cell in book.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    shown = [output.get("data", {}) for output in outputs if output.output_type in ("execute_result", "display_data")]
    assert shown, "the notebook shows nothing"
    if path.stem == "compare-retrievers":
        assert any("application/vnd.vegalite.v5+json" in data for data in shown)
        assert any("<table" in data.get("text/html", "") for data in shown)
