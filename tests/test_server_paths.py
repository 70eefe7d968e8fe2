"""The server's folders are the local operator's business: a signed-in key sees a dataset by its name and
content hash, and the comparison printed (and passed on) names the dataset, not where it was read from."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.access.api_keys import create_key
from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.datasets import load_dataset
from evalcore.store import Store
from evalcore.targets import TargetConfig
from tests.test_dashboard_access import assert_clean, captions, open_app, sign_in

SAMPLES = str(Path("dataset/samples").resolve())


def test_the_datasets_page_shows_a_server_path_to_the_local_operator_only(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db.sqlite")
    local = open_app(db, monkeypatch)  # no key yet: the local operator
    assert_clean(local)
    assert SAMPLES in captions(local)
    with Store(db) as store:
        secret = create_key(store, tenant="acme", role="viewer")[1]
    viewer = sign_in(open_app(db, monkeypatch), secret)
    assert_clean(viewer)
    shown = captions(viewer)
    assert SAMPLES not in shown
    assert str(Path.cwd()) not in shown
    assert f"default · content hash {load_dataset('default').content_hash[:12]}" in shown


def test_compare_names_the_dataset_not_its_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db.sqlite")
    manager = CampaignManager(db)
    try:
        ids = [manager.wait(manager.launch(LaunchRequest(dataset=SAMPLES,
                                                         config=TargetConfig.of(retriever="bm25", chunking=chunking),
                                           limit=2)), timeout=60).id for chunking in ("none", "tokens")]
    finally:
        manager.close()
    capsys.readouterr()
    assert main(["compare", *ids, "--db", db]) == 0
    printed = capsys.readouterr().out
    assert SAMPLES not in printed
    assert "dataset default" in printed
