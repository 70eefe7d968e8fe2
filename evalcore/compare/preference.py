"""Which of two campaigns' answers a pairwise judge prefers: per question verdicts and what they add up to.

Win rate of B over A = (B's wins + ties / 2) / readable questions, with a 95% Wilson score interval
(conservative with ties, see `exact.wilson_interval`); the exact two-sided sign test on the questions
that are not ties; the flip rate = readable questions whose verdict changed when the answers were swapped
(position bias), each of them counted as a tie.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalcore.compare import exact
from evalcore.formats.shapes import Key, doc
from evalcore.judges.pairwise import PairVerdict
from evalcore.language.text import counted

INTERVAL = "95% Wilson score interval over the readable questions, ties counted half"
TEST = "exact two-sided sign test on the questions that are not ties"


@dataclass(frozen=True)
class Preference:
    """The pairwise judge over the common answered questions of A (baseline) and B (candidate)."""

    a_id: str = field(metadata=doc("campaign A, the baseline", key="a"))
    b_id: str = field(metadata=doc("campaign B, the candidate", key="b"))
    model: str = field(metadata=doc("the judge's model"))
    signature: str = field(metadata=doc("the judge's prompt version and hash, reply parser and model"))
    verdicts: tuple[PairVerdict, ...] = field(metadata=doc("each common answered question's verdict"))
    created_at: float = field(metadata=doc("when it was asked"))

    JSON_EXTRA = (Key("questions", int, "the common answered questions judged"),
                  Key("readable", int, "questions with a readable verdict in both orders"),
                  Key("b_wins", int), Key("ties", int), Key("a_wins", int),
                  Key("unknown", int, "questions without a readable verdict in both orders"),
                  Key("flips", int, "verdicts that changed when the answers were swapped (each a tie)"),
                  Key("flip_rate", float | None, "flips / readable: the judge's position bias"),
                  Key("win_rate", float | None, "(B's wins + ties / 2) / readable"),
                  Key("interval", list[float] | None, "the win rate's 95% Wilson score interval"),
                  Key("interval_method", str), Key("p_value", float, "the sign test's two-sided p-value"),
                  Key("test", str), Key("summary", str, "the figures in one line"))

    @property
    def counts(self) -> Counter[str]:
        """Questions per verdict: A, B, tie, unknown."""
        return Counter(v.winner for v in self.verdicts)

    @property
    def readable(self) -> int:
        """Questions with a verdict in both orders."""
        return len(self.verdicts) - self.counts["unknown"]

    @property
    def flips(self) -> int:
        """Questions whose verdict changed with the order (counted as ties)."""
        return sum(v.flipped for v in self.verdicts)

    @property
    def flip_rate(self) -> float | None:
        """Share of the readable questions whose verdict changed with the order."""
        return self.flips / self.readable if self.readable else None

    @property
    def win_rate(self) -> float | None:
        """B's wins plus half the ties, over the readable questions."""
        counts = self.counts
        return (counts["B"] + counts["tie"] / 2) / self.readable if self.readable else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The win rate's 95% Wilson interval."""
        rate = self.win_rate
        return None if rate is None else exact.wilson_interval(rate, self.readable)

    @property
    def p_value(self) -> float:
        """The sign test of B's wins against A's (ties left out)."""
        return exact.sign_test(self.counts["B"], self.counts["A"])

    @property
    def summary(self) -> str:
        """One line: the win rate with its interval, the counts, the flips and the test."""
        counts = self.counts
        if self.win_rate is None or self.interval is None:
            return f"pairwise judge: no readable verdict on {counted(len(self.verdicts), 'question')}"
        low, high = self.interval
        return (f"pairwise judge: B preferred over A {self.win_rate:.0%} (95% {low:.0%} to {high:.0%}, ties half); "
                f"B wins {counts['B']}, ties {counts['tie']}, A wins {counts['A']}, unreadable {counts['unknown']}; "
                f"order flipped {self.flips} of {self.readable} ({self.flip_rate:.0%}); sign test p {self.p_value:.3g}")

    def to_dict(self) -> dict[str, Any]:
        """JSON shape: the figures, how they were computed, and every question's verdict."""
        counts = self.counts
        return {"a": self.a_id, "b": self.b_id, "model": self.model, "signature": self.signature,
                "created_at": self.created_at, "questions": len(self.verdicts), "readable": self.readable,
                "b_wins": counts["B"], "ties": counts["tie"], "a_wins": counts["A"], "unknown": counts["unknown"],
                "flips": self.flips, "flip_rate": self.flip_rate, "win_rate": self.win_rate,
                "interval": list(self.interval) if self.interval else None, "interval_method": INTERVAL,
                "p_value": self.p_value, "test": TEST, "summary": self.summary,
                "verdicts": [v.to_dict() for v in self.verdicts]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preference:
        """From to_dict's shape (the figures are recomputed from the verdicts)."""
        return cls(data["a"], data["b"], data["model"], data["signature"],
                   tuple(PairVerdict.from_dict(v) for v in data["verdicts"]), float(data["created_at"]))
