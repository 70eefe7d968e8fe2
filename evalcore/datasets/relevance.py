"""What "relevant" means for a labelled passage: a qrels label of at least 1 (trec_eval's default level)."""

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

RELEVANT_LABEL = 1
Id = TypeVar("Id", bound=Hashable)


def is_relevant(label: float) -> bool:
    """Whether a label marks its passage relevant."""
    return label >= RELEVANT_LABEL


def relevant_ids(labels: Mapping[Id, float] | None) -> set[Id]:
    """The ids whose label marks them relevant."""
    return {pid for pid, label in (labels or {}).items() if is_relevant(label)}


def any_relevant(labels: Iterable[float]) -> bool:
    """Whether any of these labels marks a passage relevant."""
    return any(is_relevant(label) for label in labels)
