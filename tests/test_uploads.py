"""Dataset uploads through the engine: validated whole, saved only when valid."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from evalcore.datasets import load_dataset
from evalcore.datasets.uploads import validate_upload


@pytest.fixture
def upload_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(tmp_path / "uploads"))
    return tmp_path / "uploads"


def _zip(tiny: Path, prefix: str, skip: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for file in sorted(tiny.glob("*.parquet")):
            if file.name != skip:
                archive.writestr(f"{prefix}{file.name}", file.read_bytes())
        archive.writestr("__MACOSX/._corpus.parquet", b"resource fork")
    return buffer.getvalue()


def test_a_zip_with_a_nested_folder_is_saved_and_loads(tiny_dataset: Path, upload_dir: Path) -> None:
    saved, problems = validate_upload([("export.zip", _zip(tiny_dataset, "export/"))], "mine")
    assert problems == {}
    assert load_dataset(saved).name == "uploads-mine"


def test_problems_are_filed_per_file_and_nothing_is_saved(tiny_dataset: Path, upload_dir: Path) -> None:
    saved, problems = validate_upload([("export.zip", _zip(tiny_dataset, "", skip="qas.parquet"))], "broken")
    assert saved is None
    assert any("missing file" in line for line in problems["qas.parquet"])
    assert not (upload_dir / "uploads-broken").exists()


def test_not_a_zip_and_bad_names_are_refused(upload_dir: Path) -> None:
    assert "not a readable zip file" in validate_upload([("x.zip", b"plain text")], "x")[1]["x.zip"][0]
    assert "lowercase" in validate_upload([("x.zip", b"")], "../etc")[1][""][0]


def test_an_upload_is_saved_under_a_dataset_id_the_api_accepts(tiny_dataset: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """One name rule: `my_data` is saved as uploads-my_data, which the API's dataset_id takes."""
    from fastapi.testclient import TestClient

    from tests.test_api import make_api

    app, keys, targets = make_api(tmp_path)
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(app.state.dataset_root))
    saved, problems = validate_upload([("export.zip", _zip(tiny_dataset, ""))], "my_data")
    assert problems == {}
    assert saved is not None
    assert Path(saved).name == "uploads-my_data"
    with TestClient(app) as client:
        created = client.post("/api/v1/evaluation", headers={"Authorization": f"Bearer {keys['admin']}"},
                              json={"dataset_id": "uploads-my_data", "knowledge_base_id": targets["fast"]})
        assert created.status_code in (200, 201), created.text
        app.state.manager.wait(created.json()["data"]["task"]["id"], timeout=60)
