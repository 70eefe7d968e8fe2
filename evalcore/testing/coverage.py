"""How often a comparison's 95% interval holds the true difference, on simulated conversations.

Each simulated comparison has `conversations` conversations of `turns` turns; a turn's difference between B and A is
`effect + u + e`, with u ~ N(0, conversation_sd) shared by the turns of one conversation and e ~ N(0, turn_sd) its
own. The share of the total variance that conversations hold (the intra-class correlation) is
conversation_sd^2 / (conversation_sd^2 + turn_sd^2). An interval covers when it holds `effect`. The per-turn bootstrap
treats the turns as independent; the conversation-level one resamples whole conversations
(evalcore.compare.clusters).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore.compare import stats
from evalcore.compare.clusters import cluster_bootstrap


@dataclass(frozen=True)
class Coverage:
    """The coverage of both intervals over the simulated comparisons, and their mean widths."""

    comparisons: int
    per_turn: float
    per_conversation: float
    per_turn_width: float
    per_conversation_width: float


def simulate_coverage(*, comparisons: int = 200, conversations: int = 20, turns: int = 5, conversation_sd: float = 1.0,
                      turn_sd: float = 1.0, effect: float = 0.0, resamples: int = 1000, seed: int = 0) -> Coverage:
    """Coverage of the per-turn and the conversation-level 95% bootstrap intervals of the mean difference."""
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(conversations), turns).tolist()
    hits, widths = np.zeros(2), np.zeros(2)
    for number in range(comparisons):
        shared = rng.normal(0.0, conversation_sd, conversations)
        diffs = effect + np.repeat(shared, turns) + rng.normal(0.0, turn_sd, conversations * turns)
        per_turn = stats.bootstrap_ci(diffs.tolist(), resamples=resamples, seed=number)
        whole = cluster_bootstrap(diffs, clusters, resamples=resamples, seed=number)
        assert per_turn is not None and whole is not None  # two conversations or more, two turns or more
        for side, (low, high) in enumerate((per_turn, (whole.low, whole.high))):
            hits[side] += low <= effect <= high
            widths[side] += high - low
    return Coverage(comparisons, float(hits[0] / comparisons), float(hits[1] / comparisons),
                    float(widths[0] / comparisons), float(widths[1] / comparisons))
