"""Retrieval measures against pytrec_eval (trec_eval) on random cases, plus hand-checked tables."""

from __future__ import annotations

import math
import random

import pytest
import pytrec_eval

from evalcore.errors import EvalError
from evalcore.metrics import RETRIEVAL_MEASURES, retrieval_scores

ORACLE_NAMES = {
    "precision": "set_P", "recall": "set_recall", "ndcg@3": "ndcg_cut_3",
    "ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "map": "map",
}


def random_case(rng: random.Random) -> tuple[set[int], dict[int, int], list[int | None]]:
    """Relevant set, all judgements, and a ranked list with misses and duplicates."""
    pool = rng.randint(1, 30)
    judged = rng.sample(range(pool), rng.randint(1, pool))
    relevant = {doc for doc in judged if rng.random() < 0.4}
    labels = {doc: (1 if doc in relevant else 0) for doc in judged}
    ranked: list[int | None] = []
    for _ in range(rng.choice([0, 1, 2, 5, 10, 15, 30])):
        roll = rng.random()
        ranked.append(None if roll < 0.15 else rng.randrange(pool + 5))
    return relevant, labels, ranked


def oracle_run(ranked: list[int | None]) -> dict[str, float]:
    """The same ranking for trec_eval: first occurrences only, misses as unique unjudged ids."""
    run: dict[str, float] = {}
    for position, doc in enumerate(ranked):
        name = f"miss{position}" if doc is None else f"d{doc}"
        run.setdefault(name, float(len(ranked) - position))
    return run


def test_random_cases_equal_pytrec_eval() -> None:
    rng = random.Random(7)
    cases = [random_case(rng) for _ in range(1500)]
    qrels = {f"q{i}": {f"d{d}": label for d, label in labels.items()} for i, (_, labels, _) in enumerate(cases)}
    run = {f"q{i}": oracle_run(ranked) for i, (_, _, ranked) in enumerate(cases)}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, set(ORACLE_NAMES.values())).evaluate(run)
    assert any(not ranked for _, _, ranked in cases)
    assert any(None in ranked for _, _, ranked in cases)
    for i, (relevant, labels, ranked) in enumerate(cases):
        ours = retrieval_scores(relevant, ranked)
        assert ours == retrieval_scores(labels, ranked)  # a label mapping means label >= 1
        expected = oracle.get(f"q{i}", dict.fromkeys(ORACLE_NAMES.values(), 0.0))
        for name, oracle_name in ORACLE_NAMES.items():
            assert ours[name] == pytest.approx(expected[oracle_name], abs=1e-9), (i, name)


def test_one_question_gives_the_bits_of_the_batch_path() -> None:
    # A campaign scores one question at a time on a scalar path; TREC files go through batch_scores. Both must store
    # the same bits for the same ranking (long lists too, past the discounts tabulated at first).
    import numpy as np

    from evalcore.metrics.retrieval import batch_scores, relevance_flags, relevant_set

    rng = random.Random(11)
    cases = [random_case(rng) for _ in range(1500)]
    cases += [({rng.randrange(400) for _ in range(rng.randint(0, 40))}, {}, [rng.randrange(400) for _ in range(300)])
              for _ in range(50)]
    flat, offsets, num_rel = [], [0], []
    for relevant, _, ranked in cases:
        flat += relevance_flags(relevant_set(relevant), ranked)
        offsets.append(len(flat))
        num_rel.append(len(relevant))
    batch = batch_scores(np.array(offsets), np.array(flat, dtype=bool), np.array(num_rel))
    for i, (relevant, _, ranked) in enumerate(cases):
        ours = retrieval_scores(relevant, ranked)
        assert list(ours) == list(RETRIEVAL_MEASURES)
        assert [value.hex() for value in ours.values()] == [float(batch[name][i]).hex() for name in ours], i


def test_misses_stay_at_their_rank() -> None:
    # Dropping misses before scoring (a known defect of the original tool) would make every score 1.0 here.
    scores = retrieval_scores({1}, [None, None, 1])
    assert scores["precision"] == pytest.approx(1 / 3)
    assert scores["mrr"] == pytest.approx(1 / 3)
    assert scores["ndcg@3"] == pytest.approx(1 / math.log2(4))
    assert scores["map"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(("relevant", "ranked"), [({"ab"}, "ab"), ("ab", ["ab"])])
def test_a_bare_string_is_not_a_list_of_ids(relevant: object, ranked: object) -> None:
    # "ab" used to be read as the documents "a" and "b".
    with pytest.raises(EvalError, match="not a string"):
        retrieval_scores(relevant, ranked)  # type: ignore[arg-type]


def test_duplicates_collapse_to_first_rank() -> None:
    assert retrieval_scores({1, 2}, [1, 1, 2]) == retrieval_scores({1, 2}, [1, 2])


@pytest.mark.parametrize(
    ("relevant", "ranked", "expected"),
    [
        ({1, 2}, [], dict.fromkeys(RETRIEVAL_MEASURES, 0.0)),
        ({1}, [3, 4], dict.fromkeys(RETRIEVAL_MEASURES, 0.0)),
        ({1, 2, 3}, [1, 9, 2], {"precision": 2 / 3, "recall": 2 / 3, "mrr": 1.0, "map": (1 + 2 / 3) / 3,
                                "ndcg@3": (1 + 0.5) / (1 + 1 / math.log2(3) + 0.5),
                                "ndcg@10": (1 + 0.5) / (1 + 1 / math.log2(3) + 0.5)}),
        # IDCG uses every relevant document, not just the retrieved length (as trec_eval does).
        ({1, 2, 3, 4}, [1], {"precision": 1.0, "recall": 0.25, "mrr": 1.0, "map": 0.25,
                             "ndcg@3": 1 / (1 + 1 / math.log2(3) + 0.5),
                             "ndcg@10": 1 / (1 + 1 / math.log2(3) + 0.5 + 1 / math.log2(5))}),
    ],
)
def test_hand_checked(relevant: set[int], ranked: list[int], expected: dict[str, float]) -> None:
    assert retrieval_scores(relevant, ranked) == pytest.approx(expected, abs=1e-12)


def test_bounds_and_permutation_of_misses() -> None:
    rng = random.Random(3)
    for _ in range(200):
        relevant, _, ranked = random_case(rng)
        scores = retrieval_scores(relevant, ranked)
        assert all(0.0 <= value <= 1.0 for value in scores.values())
        # Moving every relevant hit to the top never lowers a rank-sensitive measure.
        ordered = sorted(ranked, key=lambda doc: doc not in relevant)
        better = retrieval_scores(relevant, ordered)
        for name in ("ndcg@3", "ndcg@10", "mrr", "map"):
            assert better[name] >= scores[name] - 1e-12
