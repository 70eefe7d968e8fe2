"""The built-in sample dataset meets the shape the foundation issue asks for."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from evalcore.datasets import dataset_stats, load_dataset
from evalcore.language.text import tokenize

HAN = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def sample():
    return load_dataset("default")


def _language(text: str) -> str:
    if HAN.search(text):
        return "zh"
    return "fr" if re.search(r"[éèêàçôûœ]", text.lower()) else "en"


def test_sample_size_and_language_mix(sample) -> None:
    assert len(sample.passages) >= 300
    mix = Counter(_language(p.text) for p in sample.passages)
    assert 0.40 <= mix["en"] / len(sample.passages) <= 0.60
    assert 0.28 <= mix["zh"] / len(sample.passages) <= 0.40
    assert mix["fr"] >= 40
    assert all(p.title for p in sample.passages)


def test_passage_lengths(sample) -> None:
    lengths = [len(tokenize(p.text)) for p in sample.passages]
    # The tokenizer splits decimals' neighbours finer than words.
    assert min(lengths) >= 40
    assert max(lengths) <= 150 * 1.25


def test_questions_labels_and_answers(sample) -> None:
    questions = sample.questions
    assert len(questions) >= 80
    assert {_language(q.text) for q in questions} == {"en", "fr", "zh"}
    labeled = [q for q in questions if q.labels]
    assert len(questions) - len(labeled) == 8
    assert sum(1 for q in questions if not q.references) == 4
    for q in labeled:
        assert 1 <= len(q.relevant) <= 4
        assert set(q.labels.values()) <= {1, 2, 3}
        assert q.references, f"labeled question {q.qid} has no reference answer"
    assert sum(1 for q in questions if len(q.references) >= 2) >= 10
    assert sum(1 for q in questions if any(re.search(r"\d", r) for r in q.references)) >= 10


def test_sample_statistics(sample) -> None:
    stats = dataset_stats(sample)
    assert stats.distractor_passages > 100
    assert stats.label_distribution.keys() <= {"1", "2", "3"}
    assert 0.28 <= stats.han_share <= 0.40
