"""A question's result packed in binary (schema version 28 on) reads back to the last bit, and a campaign's packed rows
read, export, sum and compare exactly as the same rows stored as JSON before."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest

from evalcore.campaigns import CampaignManager, campaign_aggregates
from evalcore.campaigns.export import export_csv, export_jsonl, export_trec
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.result_rows import ResultWriter, read_lines, read_results
from evalcore.compare import compare_campaigns
from evalcore.compare.json_text import comparison_text
from evalcore.judges.verdict import JudgeResult
from evalcore.store import Connection, Store, TextDictionary, comparison_rows, figure_rows, result_table
from evalcore.store.measure_codes import coded
from evalcore.store.packing import (
    ANSWER,
    MARKS,
    MEASURES,
    RANKED,
    Ranked,
    pack_ranked,
    pack_row,
    pack_values,
    sections,
    unpack_ranked,
    unpack_values,
)
from evalcore.targets import TargetConfig
from tests.conftest import write_dataset

BM25 = [11.044711, 10.421133, 7.5, 2.000001, 0.3]  # raw scores, six digits at most, falling
NORM = [float(struct.unpack("<f", struct.pack("<f", value / BM25[0]))[0]) for value in BM25]  # as float32 numbers
RANKED_LISTS = [
    Ranked([3, 70000, 12, 5, 0], NORM, {"bm25": BM25, "bm25_norm": [round(score, 6) for score in NORM]}),  # BM25
    Ranked([1, 2], [0.8125, 0.5], {"vector": [0.8125, 0.5]}),  # cosine similarities
    Ranked([1, 2], [0.1 + 0.2, 1e-300], {"rrf": [0.1 + 0.2, 1e-300], "bm25": [None, 3.5]}),  # float64, a missing stage
    Ranked([1, 2, 3], [3.0, 1.5, 2.0], {"bm25": [3.0, 1.5, 2.0]}),  # not falling
    Ranked([4], [-0.0], {"x": [0.0]}),  # zeros of both signs
    Ranked([4, 5], [1, 2], {"x": [1, 2]}),  # integers, as a results file may give
    Ranked([4], [math.nan], {}),
    Ranked([], [], {}),
]


def same(a: object, b: object) -> bool:
    """Equal to the last bit: floats by their bytes (NaN and zeros' signs included), lists and dicts item by item."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("ranked", RANKED_LISTS)
def test_a_ranked_list_reads_back_to_the_last_bit(ranked: Ranked) -> None:
    back = unpack_ranked(pack_ranked(ranked))
    assert same(list(back), list(ranked))


# Each list's bytes as the packer wrote them when its checks were made once per list (written by that code): a change to
# how a list is checked or packed must leave every stored byte as it was.
PACKED_BEFORE = [
    ("050303700c0500001100000000010000000204626d32354de78ea20503daad5fa18392ecf0092c531909626d32355f6e6f726d4e06500088"
     "8888"),
    "020101020106766563746f724e06460000503f0000003f",
    ("02010102020372726644343333333333d33f59f3f8c21f6ea50104626d32354a0a5b6e756c6c2c332e355d44343333333333d33f59f3f8"
     "c21f6ea501"),
    "03010102030104626d32354e0646000040400000c03f00000040",
    "0101040101784d00014600000080",
    "020104050101784a055b312c325d4a055b312c325d",
    "010104004a055b4e614e5d",
    "0001004a025b5d",
    "020101020104626d323546000000800000c03f460000003f0000803e",
    "03010102030104626d32354dc08db70103404042420f0f4a125b496e66696e6974792c302e352c4e614e5d",
    "020101020201734e0601744e06460000003f0000803e",
    "020107080104626d32354dbfbde2ff0704be9ef87f460000803f0000003f",
]
MORE_LISTS = [
    Ranked([1, 2], [0.5, 0.25], {"bm25": [-0.0, 1.5]}),  # a stage's zero of the minus sign: not millionths
    Ranked([1, 2, 3], [math.inf, 0.5, math.nan], {"bm25": [3.0, 2.0, 1.0]}),  # final scores not finite
    Ranked([1, 2], [0.5, 0.25], {"s": [0.5, 0.25], "t": [0.5, 0.25]}),  # stages that are the final scores
    Ranked([7, 8], [1.0, 0.5], {"bm25": [2146.999999, 1e-06]}),  # millionths at their limit
]


@pytest.mark.parametrize(("ranked", "before"), list(zip(RANKED_LISTS + MORE_LISTS, PACKED_BEFORE, strict=True)))
def test_a_ranked_list_packs_to_the_bytes_it_did(ranked: Ranked, before: str) -> None:
    packed = pack_ranked(ranked)
    assert packed.hex() == before
    assert same(list(unpack_ranked(packed)), list(ranked))


def test_a_bm25_list_takes_a_fraction_of_its_json() -> None:
    packed = pack_ranked(RANKED_LISTS[0])
    # Keys in three byte planes (one passage id is above 65,535), raw scores as falls in millionths, final scores as
    # float32 steps from the raw ones, four bits each: 58 bytes, where the JSON form took 130.
    assert len(packed) == 58


VALUES = {"precision": 0.03333333333333333, "recall": 1.0, "mrr": 0.5, "ndcg@3": -0.0, "bleu1": math.nan,
          "bleu2": math.inf, "graded.holes": 29.0, "graded.total_retrieved_documents": 30,
          "judge.score": None, "checks_passed": True, "rubric.tone": "pass", "exact_match": "fail",
          "judge.refusal": "unknown", "custom": [1, "a"], "ndcg@10": 2049.0, "map": 1 / 1024, "rouge1": -7,
          "rouge2": 2**40}


def test_measures_and_marks_read_back_to_the_last_bit_in_their_order() -> None:
    assert same(unpack_values(pack_values(VALUES)), VALUES)
    assert same(unpack_values(pack_values(VALUES)), VALUES)  # a second read takes the layout kept from the first


def test_a_row_of_floats_reads_back_to_the_last_bit() -> None:
    values = {"precision": 0.1, "recall": 1.0, "mrr": -0.0, "ndcg@3": math.nan, "bleu1": math.inf, "map": 1 / 1024,
              "ndcg@10": 2049.0, "graded.holes": 29.0, "custom": 2048.0}
    assert same(unpack_values(pack_values(values)), values)


def test_marks_of_an_enum_read_back_as_their_values() -> None:
    marks = {"graded.holes": JudgeResult.PASS, "graded.fidelity": JudgeResult.FAIL, "custom": JudgeResult.UNKNOWN}
    assert unpack_values(pack_values(marks)) == {name: mark.value for name, mark in marks.items()}


def test_a_pass_or_fail_mark_takes_its_tag_alone() -> None:
    # The mark's code and tag after the count; a JudgeResult was written as its JSON text before ('"pass"', 7 bytes).
    assert len(pack_values({"graded.holes": JudgeResult.PASS, "graded.fidelity": JudgeResult.FAIL})) == 1 + 2 + 2


def test_a_row_of_floats_is_smaller_than_its_json() -> None:
    values = {"precision": 0.03333333333333333, "recall": 1.0, "mrr": 0.5, "graded.holes": 29.0}
    assert len(pack_values(values)) == 1 + 4 + 4 + 8 + 3 * 2
    assert len(json.dumps(coded(values))) > 2 * len(pack_values(values))


def _as_before(store: Store, campaign_id: str) -> None:
    """A campaign's packed rows rewritten as a store before packed rows holds them: JSON columns, the answer plain."""
    rows = store.read("SELECT position, answer, packed FROM results WHERE campaign_id = ?", (campaign_id,))
    answers = result_table.answer_cells(store, [row["answer"] for row in rows], [row["packed"] for row in rows])
    plain = []
    for row, answer in zip(rows, answers, strict=True):
        parts = sections(row["packed"])
        ranked = unpack_ranked(parts[RANKED])
        retrieved = json.dumps({"k": ranked.keys, "s": ranked.scores, "st": ranked.stages}, separators=(",", ":"))
        plain.append((answer, retrieved,
                      json.dumps(coded(unpack_values(parts[MEASURES]))), json.dumps(coded(unpack_values(parts[MARKS]))),
                      campaign_id, row["position"]))
    store.write(lambda conn: conn.executemany(
        "UPDATE results SET answer = ?, retrieved = ?, measures = ?, results = ?, packed = NULL "
        "WHERE campaign_id = ? AND position = ?", plain))


def _answers_packed(store: Store, campaign_id: str) -> None:
    """A campaign's rows written again by a writer holding a dictionary learnt from their answers (a tiny corpus
    learns none from its passages): their answers packed."""
    results = read_results(store, campaign_id)
    writer = ResultWriter(store, campaign_id)
    writer.dictionary = TextDictionary.learnt(r.outcome.answer or "" for r in results * 3)
    rows, passages, signatures = writer.rows([(r.question, r.outcome) for r in results])
    store.write(lambda conn: writer.write(conn, rows, passages, signatures, {}))
    store.write(lambda conn: result_table.set_attempts(conn, campaign_id, [(r.question.position, r.attempts)
                                                                          for r in results]))


def _what_faces_read(store: Store, a: str, b: str) -> list[Any]:
    def forget(conn: Connection) -> None:  # figures and comparisons kept in the store: computed again
        for campaign_id in (a, b):
            figure_rows.delete_figures(conn, campaign_id)
            comparison_rows.delete_comparisons_of(conn, campaign_id)

    store.write(forget)
    return [export_csv(store, a), export_jsonl(store, a), export_trec(store, a),
            [r.to_dict() for r in read_results(store, b)], [r.to_dict() for r in read_results(store, b, detail=False)],
            read_lines(store, a), {name: (m.mean, m.count) for name, m in campaign_aggregates(store, a).items()},
            comparison_text(compare_campaigns(store, a, b))]


def test_packed_rows_read_export_sum_and_compare_as_the_same_rows_stored_before(db: str, tmp_path: Path) -> None:
    dataset = str(write_dataset(tmp_path / "tiny"))
    manager = CampaignManager(db)
    try:
        a = manager.launch(LaunchRequest(dataset=dataset, config=TargetConfig.of(retriever="bm25")))
        b = manager.launch(LaunchRequest(dataset=dataset, config=TargetConfig.of(retriever="bm25",
                                                                                   keyword_threshold=0.5)))
        manager.wait(a)
        manager.wait(b)
        store = manager.store
        _answers_packed(store, a)
        packed = [sections(row["packed"]) for row in store.read("SELECT packed FROM results WHERE campaign_id = ?",
                                                                (a,))]
        assert any(ANSWER in parts for parts in packed)
        assert all(RANKED in parts for parts in packed)
        read = _what_faces_read(store, a, b)
        _as_before(store, a)
        _as_before(store, b)
        assert not store.read("SELECT packed FROM results WHERE packed IS NOT NULL")
        before = _what_faces_read(store, a, b)
        for got, want in zip(read, before, strict=True):
            assert got == want
    finally:
        manager.close()


@pytest.mark.parametrize("seed", range(4))
def test_a_packed_value_splits_back_into_its_sections(seed: int) -> None:
    import random

    rng = random.Random(seed)
    for _ in range(500):
        tags = rng.sample([ANSWER, RANKED, MEASURES, MARKS], rng.randrange(1, 5))
        parts = {tag: rng.randbytes(rng.choice([0, 1, 127, 128, 129, 300, 16_400])) for tag in tags}
        value = pack_row(parts.items())
        assert sections(value) == parts
        assert sections(memoryview(value)) == parts
