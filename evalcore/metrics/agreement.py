"""How far a judge agrees with people: accuracy, Cohen's kappa, weighted kappa, the confusion matrix, a bootstrap
interval.

Cohen (1960), "A coefficient of agreement for nominal scales": kappa = (p_o - p_e) / (1 - p_e), the
observed agreement corrected for the agreement the two sides' own label frequencies give by chance.
Cohen (1968), weighted kappa: kappa_w = 1 - sum(w * O) / sum(w * E), O the observed confusion matrix,
E = outer(row totals, column totals) / n, w_ij = (i - j)^2 (quadratic) or |i - j| (linear), so on an
ordinal scale (1-5) a 4 against a 5 counts as a near miss rather than a plain disagreement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore.formats.shapes import doc

if TYPE_CHECKING:
    import numpy as np

WEIGHTS = ("none", "linear", "quadratic")
RESAMPLES = 1000
LEVEL = 0.95


def confusion(human: Sequence[str], judged: Sequence[str], categories: Sequence[str]) -> np.ndarray:
    """Counts of (human label, judge label) pairs: rows are the people's labels, columns the judge's."""
    import numpy as np  # here: the store's trust figures import this module, and rarely have labels to compare

    index = {category: position for position, category in enumerate(categories)}
    matrix = np.zeros((len(categories), len(categories)), dtype=np.int64)
    np.add.at(matrix, ([index[h] for h in human], [index[j] for j in judged]), 1)
    return matrix


def kappa_of(matrix: np.ndarray, weights: str = "none") -> float | None:
    """Cohen's kappa of a confusion matrix (weighted with `weights`); None where it is undefined (no chance to
    disagree)."""
    import numpy as np

    n = matrix.sum()
    if n == 0:
        return None
    size = matrix.shape[0]
    i, j = np.indices((size, size))
    w = {"none": (i != j).astype(float), "linear": np.abs(i - j).astype(float),
         "quadratic": ((i - j) ** 2).astype(float)}[weights]
    expected = np.outer(matrix.sum(axis=1), matrix.sum(axis=0)) / n
    chance = float((w * expected).sum())
    return None if chance == 0 else 1.0 - float((w * matrix).sum()) / chance


def kappa(human: Sequence[str], judged: Sequence[str], categories: Sequence[str],
          weights: str = "none") -> float | None:
    """Cohen's kappa between two labelings of the same items, on the given categories (ordered for weights)."""
    return kappa_of(confusion(human, judged, categories), weights)


def bootstrap_interval(human: Sequence[str], judged: Sequence[str], categories: Sequence[str], weights: str = "none",
                       *, resamples: int = RESAMPLES, seed: int = 0,
                       level: float = LEVEL) -> tuple[float, float] | None:
    """Percentile bootstrap interval of kappa over the items (resampled with replacement); None under two items."""
    if len(human) < 2:
        return None
    import numpy as np

    index = {category: position for position, category in enumerate(categories)}
    h, j = np.array([index[x] for x in human]), np.array([index[x] for x in judged])
    size, rng = len(categories), np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        draw = rng.integers(0, len(h), len(h))
        matrix = np.zeros((size, size), dtype=np.int64)
        np.add.at(matrix, (h[draw], j[draw]), 1)
        value = kappa_of(matrix, weights)
        values.append(1.0 if value is None else value)  # one category on both sides: the draw agrees entirely
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


@dataclass(frozen=True)
class Agreement:
    """A judge against people's labels on the questions both labelled: counts, kappa, where they disagree."""

    judge: str = field(metadata=doc())
    n: int = field(metadata=doc("labelled questions the judge gave a readable verdict on"))
    categories: tuple[str, ...] = field(metadata=doc("the scale compared on: the judge's own, or fail / pass"))
    accuracy: float | None = field(metadata=doc())
    kappa: float | None = field(metadata=doc("Cohen's kappa; null where undefined (one category on both sides)"))
    weighted_kappa: float | None = field(metadata=doc("quadratic-weighted kappa, on ordinal scales (1-5, a "
                                                      "rubric's)"))
    linear_kappa: float | None = field(metadata=doc("linear-weighted kappa, on ordinal scales: a miss by two costs "
                                                    "twice a miss by one (quadratic: four times)"))
    interval: tuple[float, float] | None = field(metadata=doc("95% bootstrap interval of the weighted kappa (else "
                                                              "of kappa)"))
    matrix: tuple[tuple[int, ...], ...] = field(metadata=doc("rows: the people's labels, columns: the judge's, in "
                                                             "category order", key="confusion"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"judge": self.judge, "n": self.n, "categories": list(self.categories), "accuracy": self.accuracy,
                "kappa": self.kappa, "weighted_kappa": self.weighted_kappa, "linear_kappa": self.linear_kappa,
                "interval": list(self.interval) if self.interval else None,
                "confusion": [list(row) for row in self.matrix]}


def agreement(judge: str, human: Sequence[str], judged: Sequence[str], categories: Sequence[str], *,
              ordinal: bool, seed: int = 0, resamples: int = RESAMPLES) -> Agreement:
    """Every agreement figure of one judge; `ordinal` adds the quadratic- and linear-weighted kappas (the quadratic
    one bootstrapped)."""
    import numpy as np

    matrix = confusion(human, judged, categories)
    n = int(matrix.sum())
    headline = "quadratic" if ordinal else "none"
    return Agreement(
        judge=judge, n=n, categories=tuple(categories),
        accuracy=float(np.trace(matrix)) / n if n else None, kappa=kappa_of(matrix),
        weighted_kappa=kappa_of(matrix, "quadratic") if ordinal else None,
        linear_kappa=kappa_of(matrix, "linear") if ordinal else None,
        interval=bootstrap_interval(human, judged, categories, headline, seed=seed, resamples=resamples),
        matrix=tuple(tuple(int(x) for x in row) for row in matrix),
    )
