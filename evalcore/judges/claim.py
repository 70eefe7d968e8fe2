"""One claim of an answer and its verdict: what claim-level faithfulness (`evalcore.judges.claim_faithfulness`) is made
of, and what a judge's reading (`evalcore.judges.parsing.Reading`) carries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalcore.formats.shapes import doc

SUPPORTED, CONTRADICTED, NOT_FOUND = "supported", "contradicted", "not found"
VERDICTS = (SUPPORTED, CONTRADICTED, NOT_FOUND)


@dataclass(frozen=True)
class Claim:
    """One claim of an answer: its text, its verdict, and the passage (rank in the context, 1 = first) it rests on."""

    claim: str = field(metadata=doc("one statement the answer makes"))
    verdict: str = field(metadata=doc("supported, contradicted or not found, by the passages the answer was built "
                                      "from"))
    passage: int | None = field(default=None, metadata=doc(
        "the passage that supports or contradicts it: its rank in the question's context (1 = first); null when "
        "not found"))
    passage_id: str = field(default="", metadata=doc(
        "that passage's id (a dataset's passage id, an agent's source id); empty when it has none"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"claim": self.claim, "verdict": self.verdict, "passage": self.passage, "passage_id": self.passage_id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Claim:
        """From the stored JSON."""
        return cls(str(data.get("claim", "")), str(data.get("verdict", "")), data.get("passage"),
                   str(data.get("passage_id") or ""))
