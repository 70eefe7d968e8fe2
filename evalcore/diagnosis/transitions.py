"""How questions moved between stages from one campaign to another: the cells of a transition table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evalcore.diagnosis.stages import NOT_ATTRIBUTED, STAGES, StageCounts
from evalcore.formats.shapes import Key, doc


@dataclass(frozen=True)
class Transition:
    """One cell: the questions whose stage was `a` in campaign A and `b` in campaign B."""

    a: str = field(metadata=doc("the failure stage in A"))
    b: str = field(metadata=doc("the failure stage in B"))
    qids: tuple[int, ...] = field(metadata=doc("the questions that moved from stage a to stage b"))

    JSON_EXTRA = (Key("count", int),)

    @property
    def count(self) -> int:
        """Questions in the cell."""
        return len(self.qids)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"a": self.a, "b": self.b, "count": self.count, "qids": list(self.qids)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Transition:
        """From to_dict's shape."""
        return cls(data["a"], data["b"], tuple(data["qids"]))


def transitions(pairs: Iterable[tuple[int, str | None, str | None]]) -> list[Transition]:
    """The non-empty cells of (qid, stage in A, stage in B) triples, A's stage then B's in STAGES order."""
    cells: dict[tuple[str, str], list[int]] = {}
    for qid, a, b in pairs:
        cells.setdefault((a or NOT_ATTRIBUTED, b or NOT_ATTRIBUTED), []).append(qid)
    order = {stage: position for position, stage in enumerate(STAGES)}
    return [Transition(a, b, tuple(qids))
            for (a, b), qids in sorted(cells.items(), key=lambda cell: (order.get(cell[0][0], len(order)),
                                                                        order.get(cell[0][1], len(order))))]


def side_counts(cells: Iterable[Transition]) -> tuple[StageCounts, StageCounts]:
    """Questions per stage in A and in B: the row and column sums of the transition table."""
    cells = list(cells)
    return (StageCounts.of((cell.a, cell.count) for cell in cells),
            StageCounts.of((cell.b, cell.count) for cell in cells))
