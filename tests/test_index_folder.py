"""One index folder per host: a corpus is indexed once per tokenizer and chunking, whatever the store or process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.targets import TargetConfig, knowledge
from evalcore.targets.knowledge import build_knowledge_base, clear_memo, index_dir
from evalcore.testing.multilingual_corpus import corpus

ROOT = Path(__file__).resolve().parent.parent


def test_the_index_folder_is_the_setting_else_the_users_cache(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.setenv("EVALCORE_INDEX_DIR", str(tmp_path / "mine"))
    assert index_dir() == tmp_path / "mine"
    monkeypatch.delenv("EVALCORE_INDEX_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert index_dir() == tmp_path / "cache" / "evalcore" / "indexes"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert index_dir() == Path.home() / ".cache" / "evalcore" / "indexes"


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[Path]]:
    """The index builds of this process (their folders), in a fresh index folder."""
    monkeypatch.setenv("EVALCORE_INDEX_DIR", str(tmp_path / "indexes"))
    clear_memo()
    done: list[Path] = []
    build = knowledge._build

    def counted(*args: object, **kwargs: object) -> knowledge.KnowledgeBase:
        kb = build(*args, **kwargs)  # type: ignore[arg-type]
        done.append(kb.folder)
        return kb

    monkeypatch.setattr(knowledge, "_build", counted)
    yield done
    clear_memo()


def test_stores_in_different_folders_share_one_build(builds: list[Path], tmp_path: Path,
                                                     tiny_dataset: Path) -> None:
    managers = [CampaignManager(tmp_path / name / "evalcore.db") for name in ("first", "second")]
    config = TargetConfig.of(retriever="bm25", generator="extractive")
    try:
        # Launched together: the second finds the build under way and waits for it.
        ids: dict[int, str] = {}

        def launch(number: int) -> None:
            ids[number] = managers[number].launch(LaunchRequest(dataset=str(tiny_dataset), config=config, cache=False))

        launches = [threading.Thread(target=launch, args=(number,)) for number in range(len(managers))]
        for thread in launches:
            thread.start()
        for thread in launches:
            thread.join()
        ended = [manager.wait(ids[number], timeout=60) for number, manager in enumerate(managers)]
        assert [campaign.status.value for campaign in ended] == ["succeeded", "succeeded"]
        clear_memo()  # a third store, later: read from the disk, not this process's memory
        third = CampaignManager(tmp_path / "third" / "evalcore.db")
        try:
            assert third.wait(third.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, cache=False)),
                              timeout=60).status.value == "succeeded"
        finally:
            third.close()
    finally:
        for manager in managers:
            manager.close()
    assert len(builds) == 1
    assert builds[0].parent == tmp_path / "indexes"
    assert not any((tmp_path / name / "index").exists() for name in ("first", "second", "third"))


def test_another_process_reads_the_index_built_here(builds: list[Path], tmp_path: Path) -> None:
    built = build_knowledge_base(corpus(), chunk_size=None)
    assert len(builds) == 1
    assert not built.loaded_from_cache
    code = ("import json\nfrom evalcore.targets.knowledge import build_knowledge_base\n"
            "from evalcore.testing.multilingual_corpus import corpus\n"
            "kb = build_knowledge_base(corpus(), chunk_size=None)\n"
            "print(json.dumps([kb.loaded_from_cache, str(kb.folder)]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    loaded, folder = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded
    assert Path(folder) == built.folder
    # Other chunking settings are another index, beside it.
    other = build_knowledge_base(corpus(), chunk_size=8, chunk_overlap=2)
    assert len(builds) == 2
    assert other.folder.parent == built.folder.parent
    assert other.folder != built.folder
