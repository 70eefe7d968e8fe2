"""A question's measures and pass/fail marks are stored with short codes for the measures' names; they read, and the
store's sums read, exactly as rows stored with the names (as before schema version 27) do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.result_rows import read_results
from evalcore.metrics.graded import stored_column, stored_values
from evalcore.store import Store, result_sums
from evalcore.store.measure_codes import CODED_NAMES, coded, named
from evalcore.store.packing import MARKS, MEASURES, pack_row, sections, unpack_values
from evalcore.targets import TargetConfig
from tests.conftest import write_dataset


def test_coded_names_read_back_as_the_names_in_their_order() -> None:
    values = {"recall": 0.25, "graded.total_ground_truth_documents": 3.0, "my.measure": 1.0, "~odd": 0.5, "mrr": 1.0}
    stored = coded(values)
    assert list(named(stored).items()) == list(values.items())
    assert stored["~b"] == 0.25
    assert stored["~~my.measure"] == 1.0
    assert all(key.startswith("~") for key in stored)


def test_a_row_stored_with_names_reads_as_it_did() -> None:
    values = {"precision": 0.1, "judge.score": 4.0}
    assert named(dict(values)) == values
    assert stored_values(json.dumps(values)) == values
    assert stored_values("{}") == {}


def test_a_column_of_coded_and_named_rows_reads_the_names() -> None:
    values = {"precision": 0.1, "graded.holes": 2.0}
    texts = [json.dumps(coded(values)), None, json.dumps(values), "{}"]
    assert stored_column(texts) == [values, None, values, {}]


def test_each_listed_measure_has_its_own_code_of_one_character() -> None:
    codes = list(coded(dict.fromkeys(CODED_NAMES, 0.0)))
    assert len(set(codes)) == len(CODED_NAMES)
    assert {len(code) for code in codes} == {2}


def _sums(store: Store, campaign_id: str, names: list[str]) -> tuple[list[tuple[str, float, int]], list[float]]:
    aggregates = [(row["name"], row["mean"], row["n"]) for row in result_sums.measure_aggregates(store, campaign_id)]
    means = result_sums.measure_means(store, names, [campaign_id])[0]
    return aggregates, [means[f"m{i}"] for i in range(len(names))]


def _with_names(store: Store, campaign_id: str, positions: list[int], rename: Any = lambda values: values) -> None:
    """Rewrite these packed rows as a store before packed rows holds them: the measures and marks as JSON, under the
    names `rename` gives (as they are: their codes; `named`: their names in full, as before codes)."""
    rows = store.read("SELECT position, packed FROM results WHERE campaign_id = ? ORDER BY position", (campaign_id,))
    plain = []
    for row in rows:
        if row["position"] in positions:
            parts = sections(row["packed"])
            rest = pack_row((tag, data) for tag, data in parts.items() if tag not in (MEASURES, MARKS))
            plain.append((json.dumps(rename(coded(unpack_values(parts[MEASURES])))),
                          json.dumps(rename(coded(unpack_values(parts[MARKS])))), rest, campaign_id, row["position"]))
    store.write(lambda conn: conn.executemany(
        "UPDATE results SET measures = ?, results = ?, packed = ? WHERE campaign_id = ? AND position = ?", plain))


def test_a_campaign_stores_codes_and_reads_and_sums_its_measures_as_with_names(db: str, tmp_path: Path) -> None:
    dataset = str(write_dataset(tmp_path / "tiny"))
    manager = CampaignManager(db)
    try:
        campaign_id = manager.launch(LaunchRequest(dataset=dataset, config=TargetConfig.of(retriever="bm25")))
        manager.wait(campaign_id)
        store = manager.store
        stored = store.read("SELECT measures, results, packed FROM results WHERE campaign_id = ?", (campaign_id,))
        assert all(row["measures"] == "{}" for row in stored)  # packed (schema version 28 on)
        assert any(unpack_values(sections(row["packed"])[MARKS]) for row in stored)
        names = ["recall", "mrr", "graded.ndcg@3", "absent"]
        results = [(r.outcome.measures, r.outcome.results) for r in read_results(store, campaign_id)]
        sums = _sums(store, campaign_id, names)
        assert "recall" in {name for name, _, _ in sums[0]}
        assert sums[1][3] is None
        _with_names(store, campaign_id, [0])  # a coded row and packed ones
        assert _sums(store, campaign_id, names) == sums
        assert [(r.outcome.measures, r.outcome.results) for r in read_results(store, campaign_id)] == results
        _with_names(store, campaign_id, [1], named)  # a row of each form
        assert _sums(store, campaign_id, names) == sums
        assert [(r.outcome.measures, r.outcome.results) for r in read_results(store, campaign_id)] == results
        _with_names(store, campaign_id, list(range(2, len(stored))), named)  # coded and named rows only
        assert all(row["measures"] != "{}" for row in store.read("SELECT measures FROM results"))
        assert _sums(store, campaign_id, names) == sums
        assert [(r.outcome.measures, r.outcome.results) for r in read_results(store, campaign_id)] == results
    finally:
        manager.close()
