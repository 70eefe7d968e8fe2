"""Graded document retrieval: the worked example and hand-checked edge cases."""

from __future__ import annotations

import math

import pytest

from evalcore.errors import EvalError
from evalcore.judges import JudgeResult
from evalcore.metrics import GRADED_MEASURES, MEASURES, graded_retrieval_scores, higher_is_better

WORKED = {"d1": 4, "d2": 2, "d3": 1}
WORKED_RUN = [("d2", 0.9), ("d9", 0.8), ("d1", 0.7)]


def test_worked_example() -> None:
    scores = graded_retrieval_scores(WORKED, WORKED_RUN)
    assert round(scores["ndcg@3"], 3) == 0.604
    assert round(scores["xdcg@3"], 2) == 43.88
    assert round(scores["fidelity"], 3) == 0.927
    assert scores["top1_relevance"] == 2
    assert scores["top3_max_relevance"] == 4
    assert scores["holes"] == 1
    assert round(scores["holes_ratio"], 3) == 0.333
    assert scores["total_retrieved_documents"] == 3
    assert scores["total_ground_truth_documents"] == 3


def test_exact_values_of_the_worked_example() -> None:
    scores = graded_retrieval_scores(WORKED, WORKED_RUN)
    ideal = 15 + 3 / math.log2(3) + 1 / 2
    assert scores["ndcg@3"] == pytest.approx((3 + 15 / 2) / ideal, abs=1e-12)
    assert scores["xdcg@3"] == pytest.approx(25 * (2 + 4 * 0.36) / 1.96, abs=1e-12)
    assert scores["fidelity"] == pytest.approx((7 + 31) / (31 + 7 + 3), abs=1e-12)


def test_default_thresholds_and_directions() -> None:
    scores = graded_retrieval_scores(WORKED, WORKED_RUN)
    assert scores["ndcg@3_result"] == "pass"  # 0.604 >= 0.5
    assert scores["xdcg@3_result"] == "fail"  # 43.88 < 50
    # A top-1 threshold of 50 (a 0-100 mark) could never pass on 0..4; ours is 3, three quarters up the scale.
    assert scores["top1_relevance_threshold"] == 3
    assert scores["top1_relevance_result"] == "fail"  # top-1 is label 2
    assert scores["top3_max_relevance_threshold"] == 3
    assert scores["top3_max_relevance_result"] == "pass"
    assert scores["total_ground_truth_documents_threshold"] == 1
    assert scores["holes_higher_is_better"] is False
    assert scores["holes_result"] == "fail"
    assert scores["ndcg@3_higher_is_better"] is True


def test_thresholds_override_and_unknown_names() -> None:
    scores = graded_retrieval_scores(WORKED, WORKED_RUN, thresholds={"xdcg@3": 40, "holes": 1})
    assert scores["xdcg@3_result"] == "pass"
    assert scores["holes_result"] == "pass"
    with pytest.raises(EvalError, match="ndcg_threshold, xdcg_threshold"):
        graded_retrieval_scores(WORKED, WORKED_RUN, thresholds={"ndcg@5": 0.5})


def test_thresholds_under_the_evaluators_documented_names() -> None:
    documented = {"ndcg_threshold": 0.7, "xdcg_threshold": 40, "fidelity_threshold": 0.95,
                  "top1_relevance_threshold": 2, "top3_max_relevance_threshold": 5,
                  "total_retrieved_documents_threshold": 4, "total_ground_truth_documents_threshold": 3,
                  "total_groundtruth_documents": 9}  # the name stored before: the last one given wins
    scores = graded_retrieval_scores(WORKED, WORKED_RUN, thresholds=documented)
    assert [scores[f"{name}_result"] for name in ("ndcg@3", "xdcg@3", "fidelity", "top1_relevance",
                                                   "top3_max_relevance", "total_retrieved_documents")] == \
        ["fail", "pass", "fail", "pass", "fail", "fail"]
    assert scores["total_ground_truth_documents_threshold"] == 9


def test_ties_keep_input_order_and_repeats_count_once() -> None:
    tied = graded_retrieval_scores({"a": 4, "b": 1}, [("b", 1.0), ("a", 1.0), ("b", 0.5)])
    assert tied["top1_relevance"] == 1
    assert tied["total_retrieved_documents"] == 2


def test_nothing_retrieved() -> None:
    scores = graded_retrieval_scores(WORKED, [])
    assert scores["ndcg@3"] == 0.0
    assert scores["xdcg@3"] == 0.0
    assert scores["fidelity"] == 0.0
    assert scores["top1_relevance"] is None
    assert scores["top1_relevance_result"] == "unknown"
    assert scores["holes_ratio"] is None
    assert scores["holes"] == 0


def test_only_label_min_makes_ratios_absent() -> None:
    scores = graded_retrieval_scores({"a": 0}, [("a", 1.0)])
    assert scores["ndcg@3"] is None
    assert scores["fidelity"] is None
    assert scores["fidelity_result"] == "unknown"


def test_other_scale_shifts_to_its_minimum() -> None:
    # On 1..5 the same relative labels give the same values as on 0..4.
    shifted = {doc: label + 1 for doc, label in WORKED.items()}
    one_based = graded_retrieval_scores(shifted, WORKED_RUN, label_min=1, label_max=5)
    zero_based = graded_retrieval_scores(WORKED, WORKED_RUN)
    for name in ("ndcg@3", "xdcg@3", "fidelity", "holes_ratio"):
        assert one_based[name] == pytest.approx(zero_based[name])
    assert one_based["top1_relevance_threshold"] == 4


def test_perfect_ranking_scores_top_marks() -> None:
    scores = graded_retrieval_scores({"a": 4, "b": 4, "c": 4}, [("a", 3), ("b", 2), ("c", 1)])
    assert scores["ndcg@3"] == pytest.approx(1.0)
    assert scores["xdcg@3"] == pytest.approx(100.0)
    assert scores["fidelity"] == pytest.approx(1.0)


@pytest.mark.parametrize(("labels", "low", "high"), [({"a": 5}, 0, 4), ({"a": -1}, 0, 4), ({"a": 1}, 3, 3)])
def test_bad_labels_or_scale(labels: dict[str, int], low: int, high: int) -> None:
    with pytest.raises(EvalError):
        graded_retrieval_scores(labels, [("a", 1.0)], label_min=low, label_max=high)


@pytest.mark.parametrize(
    ("labels", "retrieved", "message"),
    [
        ({"a": 1.5}, [("a", 1.0)], "not an integer"),  # used to be scored as relevance 1.5
        ({"a": True}, [("a", 1.0)], "not an integer"),
        ({"a": 1}, [("a", float("nan")), ("b", 1.0)], "retrieved\\[0\\]"),  # NaN made the order arbitrary
        ({"a": 1}, ["a", "b"], "pair"),  # bare ids used to crash with a TypeError
        ({"a": 1}, [("a", "high")], "numeric score"),
    ],
)
def test_bad_labels_or_retrieved_items_are_clear_errors(labels: dict, retrieved: list, message: str) -> None:
    with pytest.raises(EvalError, match=message):
        graded_retrieval_scores(labels, retrieved)


def test_integral_float_labels_are_integers() -> None:
    scores = graded_retrieval_scores({doc: float(label) for doc, label in WORKED.items()}, WORKED_RUN)
    assert scores["top1_relevance"] == 2
    assert isinstance(scores["top1_relevance"], int)
    assert scores["ndcg@3"] == graded_retrieval_scores(WORKED, WORKED_RUN)["ndcg@3"]


def test_a_graded_measure_passes_in_the_direction_the_registry_declares() -> None:
    # One home for a direction: the evaluator-shaped output says what the registry's measure says.
    scores = graded_retrieval_scores(WORKED, WORKED_RUN, thresholds={"holes": 1, "ndcg@3": 0.7})
    for name in GRADED_MEASURES:
        measure = MEASURES[f"graded.{name}"]
        assert scores[f"{name}_higher_is_better"] is measure.higher_is_better
        assert scores[f"{name}_result"] == measure.result(scores[name], scores[f"{name}_threshold"])
    assert {m.name for m in MEASURES.values() if not m.higher_is_better} == {
        "hallucination", "false_abstention", "graded.holes", "graded.holes_ratio"}
    assert (scores["holes_result"], scores["ndcg@3_result"]) == ("pass", "fail")  # 1 hole <= 1; 0.604 < 0.7


def test_a_pass_mark_is_reached_from_the_measure_side() -> None:
    holes, ndcg = MEASURES["graded.holes"], MEASURES["ndcg@10"]
    assert [holes.result(v, 1) for v in (0, 1, 2, None)] == [JudgeResult.PASS, JudgeResult.PASS, JudgeResult.FAIL,
                                                             JudgeResult.UNKNOWN]
    assert [ndcg.result(v, 0.5) for v in (0.4, 0.5, 0.6)] == [JudgeResult.FAIL, JudgeResult.PASS, JudgeResult.PASS]
    assert not higher_is_better("hallucination")
    assert higher_is_better("judge.groundedness:pass")


def test_every_graded_measure_has_its_scale_under_its_current_name() -> None:
    # The ground-truth total was renamed; its scale stayed under the old name and it was drawn as a 0-1 share.
    assert {MEASURES[f"graded.{name}"].scale for name in ("total_retrieved_documents", "total_ground_truth_documents",
                                                          "holes")} == {"count"}
