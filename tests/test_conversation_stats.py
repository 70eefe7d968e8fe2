"""Comparisons of conversations: whole conversations resampled, checked by hand and by a coverage simulation."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.compare import stats
from evalcore.compare.clusters import cluster_bootstrap, cluster_sign_flip, cluster_sums, conversation_count
from evalcore.testing.coverage import simulate_coverage


def test_cluster_sums_keep_the_order_of_first_appearance() -> None:
    sums, sizes = cluster_sums(np.array([1.0, 2.0, 3.0, 4.0]), ["b", "a", "b", "c"])
    assert sums.tolist() == [4.0, 2.0, 4.0]
    assert sizes.tolist() == [2.0, 1.0, 1.0]
    assert conversation_count(["b", "a", "b", "c"]) == 3


def test_the_cluster_bootstrap_against_a_hand_computed_case() -> None:
    # Conversation A: two turns improved by 1; conversation B: one turn unchanged. Drawing two conversations with
    # replacement gives {A, A} (mean 4/4 = 1) with probability 1/4, {A, B} or {B, A} (2/3) with 1/2, {B, B} (0)
    # with 1/4: the 2.5th and 97.5th percentiles are 0 and 1, and the standard error is
    # sqrt(0.25 + 0.5 * 4/9 - (0.25 + 1/3)^2) = 0.3632.
    interval = cluster_bootstrap(np.array([1.0, 1.0, 0.0]), ["A", "A", "B"], resamples=20_000, seed=3)
    assert interval is not None
    assert (interval.low, interval.high) == (0.0, 1.0)
    assert interval.se == pytest.approx(np.sqrt(0.25 + 0.5 * 4 / 9 - (0.25 + 1 / 3) ** 2), abs=0.005)
    # Treating the three turns as independent gives the binomial standard error sqrt((2/3)(1/3)/3) = 0.272: smaller.
    (per_turn,) = stats.bootstrap_intervals([[1.0, 1.0, 0.0]], resamples=20_000, seed=3)
    assert per_turn is not None
    assert per_turn.se == pytest.approx(np.sqrt(2 / 27), abs=0.005)
    assert cluster_bootstrap(np.array([1.0, 2.0]), ["A", "A"]) is None  # one conversation: nothing to resample


def test_the_cluster_randomization_test_against_a_hand_computed_case() -> None:
    # Six turns, all improved by 1, in conversations of 3, 1 and 2 turns: flipping whole conversations gives sums
    # +-3 +-1 +-2, of which 6 and -6 (2 of the 8 assignments) reach the observed |sum| 6: p = 2/8.
    diffs = np.ones(6)
    assert cluster_sign_flip(diffs, ["x", "x", "x", "y", "z", "z"]) == (0.25, "exact")
    # As six independent turns: 2 of 64 assignments, p = 1/32, a "significant" result the conversations do not bear.
    assert stats.sign_flip_test(diffs.tolist()) == (1 / 32, "exact")
    # Sampled once 2^k exceeds the resamples, through the same stream as the per-question test of the sums.
    many = np.arange(1.0, 21.0)
    assert cluster_sign_flip(many, [f"c{i}" for i in range(20)], resamples=500, seed=1) == \
        stats.sign_flip_test(many.tolist(), resamples=500, seed=1)


def test_per_turn_intervals_are_too_narrow_where_conversation_level_ones_hold_coverage() -> None:
    # 200 simulated comparisons of 20 conversations of 5 turns, half the variance shared within a conversation.
    correlated = simulate_coverage(comparisons=200, conversations=20, turns=5, conversation_sd=1.0, turn_sd=1.0)
    assert correlated.per_turn < 0.85
    assert correlated.per_conversation > 0.9
    assert correlated.per_conversation_width > 1.5 * correlated.per_turn_width
    # Independent turns: both hold their coverage, and the conversation-level interval costs little width.
    independent = simulate_coverage(comparisons=200, conversations=20, turns=5, conversation_sd=0.0, turn_sd=1.0)
    assert independent.per_turn > 0.9
    assert independent.per_conversation > 0.88
    assert independent.per_conversation_width < 1.1 * independent.per_turn_width


def test_the_cost_difference_resamples_whole_conversations_too() -> None:
    from evalcore.compare.costs import cost_delta

    # Three conversations of two turns (the last question has no price in B: left out of the pairs).
    a = [(0.01, "USD")] * 7
    b = [(0.03, "USD"), (0.03, "USD"), (0.01, "USD"), (0.01, "USD"), (0.02, "USD"), (0.02, "USD"), (None, "")]
    labels = ["x", "x", "y", "y", "z", "z", "w"]
    clustered = cost_delta(a, b, seed=5, resamples=4000, clusters=labels)
    diffs = np.array([cost_b - cost_a for (cost_a, _), (cost_b, _) in zip(a[:6], b[:6], strict=True)])
    expected = cluster_bootstrap(diffs, labels[:6], resamples=4000, seed=5)
    assert expected is not None
    assert clustered.unpriced == 1
    assert (clustered.ci_low, clustered.ci_high) == (expected.low, expected.high)
    assert clustered.delta == pytest.approx(0.01)
    # Taken as six independent questions, the interval is another (the turns of a conversation move together).
    alone = cost_delta(a, b, seed=5, resamples=4000)
    assert (alone.ci_low, alone.ci_high) != (clustered.ci_low, clustered.ci_high)
