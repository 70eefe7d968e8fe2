"""The retrieval and extractive generator's shortcuts give exactly what the plain computation gives."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.targets.retrievers import _rounded


@pytest.mark.parametrize("scale", [1e-6, 1e-2, 1.0, 30.0, 1e4])
def test_single_precision_values_round_to_six_decimals_as_python_rounds_them(scale: float) -> None:
    rng = np.random.default_rng(int(scale * 1e6) % 1000)
    values = (rng.random(100_000) * scale).astype(np.float32)
    assert _rounded(values) == [round(value, 6) for value in values.tolist()]


def test_exact_halves_round_to_even_as_python_rounds_them() -> None:
    # Multiples of 1/128 are the single-precision values whose sixth decimal is followed by an exact 5.
    values = (np.arange(0, 40 * 128, dtype=np.float64) / 128).astype(np.float32)
    assert _rounded(values) == [round(value, 6) for value in values.tolist()]


def test_random_single_precision_bit_patterns_round_as_python_rounds_them() -> None:
    rng = np.random.default_rng(7)
    values = rng.integers(0, 0x47C35000, 200_000, dtype=np.uint32).view(np.float32)  # 0 up to 100,000
    assert _rounded(values) == [round(value, 6) for value in values.tolist()]


def test_double_precision_values_are_rounded_by_python() -> None:
    values = np.array([0.1234565, 2.675e-6, 1 / 3])
    assert _rounded(values) == [round(value, 6) for value in values.tolist()]


def test_a_query_opening_on_a_frequent_term_whose_scores_hold_negative_zeros_sums_as_adding_to_zeros() -> None:
    # The first whole row is copied rather than added to zeros: its -0.0 must come out as the +0.0 the sum makes.
    from evalcore.targets.bm25 import Bm25Index

    size = 64
    columns = [np.arange(0, size, 2), np.arange(1, size, 3), np.arange(5)]
    indptr = np.cumsum([0, *(len(column) for column in columns)])
    indices = np.concatenate(columns).astype(np.int32)
    data = np.linspace(-2, 2, indices.size).astype(np.float32)
    data[: len(columns[0]): 3] = np.float32(-0.0)
    index = Bm25Index.of({"a": 0, "b": 1, "c": 2}, {"data": data, "indices": indices, "indptr": indptr,
                                                    "num_docs": size})
    for query in (["a"], ["a", "b", "a"], ["c", "a"], ["a", "c", "b"]):
        expected = np.zeros(size, dtype=np.float32)
        for term in ({"a": 0, "b": 1, "c": 2}[token] for token in query):
            np.add.at(expected, indices[indptr[term]:indptr[term + 1]], data[indptr[term]:indptr[term + 1]])
        assert index.scores(query).tobytes() == expected.tobytes(), query
    assert 0 in index._dense  # the whole-row path was taken
