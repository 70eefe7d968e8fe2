"""Shared fixtures: tiny datasets written by the tests themselves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

TINY = {
    "queries": {"id": [1, 2, 3],
                "text": ["What is the refund window?", "Quel est le délai ?", "路由器的默认地址是什么？"]},
    "corpus": {
        "id": [10, 11, 12, 13, 14],
        "text": [
            "Refunds are accepted within 30 days of delivery.",
            "Refunds were accepted within 14 days under the old terms.",
            "Le délai de rétractation est de 14 jours calendaires.",
            "路由器的默认地址是 192.168.8.1，可以在浏览器中打开。",
            "This passage is a distractor about thermostats and café breaks.",
        ],
        "title": ["Terms of Sale (EU)", "Terms of Sale (2022)", "CGV France", "路由器手册", "Lumio T3 Manual"],
    },
    "answers": {"id": [100, 101, 102], "text": ["30 days.", "Thirty days after delivery.", "14 jours."]},
    "qrels": {"qid": [1, 1, 2, 3], "pid": [10, 11, 12, 13], "score": [3, 1, 2, 3]},
    "qas": {"qid": [1, 1, 2], "aid": [100, 101, 102]},
}


def write_dataset(folder: Path, tables: dict[str, dict[str, list]] | None = None) -> Path:
    """Write the five Parquet files (the tiny dataset unless tables are given)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, columns in (tables or TINY).items():
        pq.write_table(pa.table(columns), folder / f"{name}.parquet")
    return folder


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Path:
    """A valid three-question dataset folder (five passages) in three languages."""
    return write_dataset(tmp_path / "tiny")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The REST API served on loopback over a fresh database with its keys and saved targets, one per test module
    (tests.test_api.Api); a module needing more set-up defines its own."""
    from tests.test_api import Api, make_api, serve

    tmp = tmp_path_factory.mktemp("api")
    app, keys, targets = make_api(tmp)
    with serve(app) as url:
        yield Api(url, app, tmp / "api.db", keys, targets)
