"""A campaign's conversations measured whole: the share of their turns passed and the first turn that failed.

A turn passed when its question was answered and its failure attribution (evalcore.diagnosis) is `ok`; it failed
when it has an error (a turn not asked included) or ended at a miss (retrieval, ranking or generation). A turn with
no passage or source to attribute it by (`unlabeled`, as a suite's case without expected sources) passes when its
answer reaches the campaign's generation marks against the reference (ROUGE-L F1 or coverage, the marks failure
attribution uses), fails when it reaches neither, and without a reference is neither: it counts in no share. Every
measure of a turn is kept on the turn itself (its result row).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from evalcore.access.principals import Principal
from evalcore.campaigns.queries import get_campaign
from evalcore.campaigns.result_rows import measures_column
from evalcore.diagnosis import GenerationMarks, Stage
from evalcore.formats.shapes import doc
from evalcore.judges import Verdict
from evalcore.store import Store
from evalcore.store.conversation_rows import conversation_verdict_rows, turn_result_rows

MISSES = frozenset({Stage.RETRIEVAL_MISS.value, Stage.RANKING_MISS.value, Stage.GENERATION_MISS.value})


@dataclass(frozen=True)
class TurnLine:
    """One turn as a conversation's measures read it."""

    turn: int = field(metadata=doc("its number in the conversation, from 1"))
    qid: int = field(metadata=doc("its question's id"))
    question: str = field(metadata=doc())
    stage: str | None = field(metadata=doc("the stage it failed at (ok: it passed; null: not attributed)"))
    error: str | None = field(metadata=doc("why it has no answer (a turn not asked says so)"))
    passed: bool | None = field(default=None, metadata=doc("whether it passed (null: nothing judges it)"))
    position: int = field(default=0, metadata=doc("its place in the campaign's snapshot"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"turn": self.turn, "qid": self.qid, "question": self.question, "stage": self.stage,
                "error": self.error, "passed": self.passed, "position": self.position}


def turn_passed(stage: str | None, error: str | None, measures: Mapping[str, Any],
                marks: GenerationMarks) -> bool | None:
    """Whether a turn passed (see the module's docstring); `marks` are the ROUGE-L F1 and coverage a reference needs
    (each mark's field is named after its measure)."""
    if error is not None or stage in MISSES or stage == Stage.FAILED.value:
        return False
    if stage == Stage.OK.value:
        return True
    reached = [measures[mark.name] >= getattr(marks, mark.name) for mark in fields(marks)
               if isinstance(measures.get(mark.name), (int, float))]
    return any(reached) if reached else None


@dataclass(frozen=True)
class ConversationResult:
    """One conversation of a campaign: its turns in order, the share of them passed, the first that failed."""

    conversation: str = field(metadata=doc("the conversation's id"))
    turns: tuple[TurnLine, ...] = field(metadata=doc("its turns that have a result, in turn order"))
    passed: int = field(metadata=doc("turns passed"))
    judged: int = field(metadata=doc("turns passed or failed (the others have nothing to judge them by)"))
    share_passed: float | None = field(metadata=doc("passed / judged (null: no turn judged)"))
    first_failing_turn: int | None = field(metadata=doc("the first turn that failed (null: none did)"))
    first_failure: str | None = field(metadata=doc("how it failed: its stage, or its error"))
    judges: dict[str, Verdict] = field(default_factory=dict, metadata=doc(
        "the verdicts of the judges that read the whole conversation (conversation_contradiction: no answer "
        "contradicts an earlier one; conversation_goal: it reached what the user asked), once asked; empty before"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"conversation": self.conversation, "turns": [turn.to_dict() for turn in self.turns],
                "passed": self.passed, "judged": self.judged, "share_passed": self.share_passed,
                "first_failing_turn": self.first_failing_turn, "first_failure": self.first_failure,
                "judges": {name: verdict.to_dict() for name, verdict in self.judges.items()}}


def conversation_of(name: str, turns: Sequence[TurnLine]) -> ConversationResult:
    """A conversation's measures from its turns (any order)."""
    ordered = tuple(sorted(turns, key=lambda line: line.turn))
    verdicts = [line.passed for line in ordered]
    judged = sum(verdict is not None for verdict in verdicts)
    passed = sum(verdict is True for verdict in verdicts)
    failing = next((line for line in ordered if line.passed is False), None)
    return ConversationResult(name, ordered, passed, judged, passed / judged if judged else None,
                              failing.turn if failing else None, how_it_failed(failing) if failing else None)


UNDER_MARKS = "answer under its marks against the reference: ROUGE-L F1 and coverage"


def how_it_failed(line: TurnLine) -> str | None:
    """A failed turn's error, else its failure stage; an unlabeled turn (nothing to attribute it by) failed on its
    answer against the reference."""
    if line.error:
        return line.error
    return UNDER_MARKS if line.stage == Stage.UNLABELED.value else line.stage


def conversations_of(rows: Iterable[tuple[str, TurnLine]]) -> list[ConversationResult]:
    """Each conversation's measures, in order of first appearance, from (conversation, turn) pairs."""
    grouped: dict[str, list[TurnLine]] = {}
    for name, line in rows:
        grouped.setdefault(name, []).append(line)
    return [conversation_of(name, lines) for name, lines in grouped.items()]


def campaign_conversations(store: Store, campaign_id: str, tenant: str | None = None, *,
                           principal: Principal | None = None) -> list[ConversationResult]:
    """A campaign's conversations with their measures (empty when no question is a turn of one)."""
    config = get_campaign(store, campaign_id, tenant, principal=principal).config.target  # NotFound: another tenant's
    marks = GenerationMarks(config.diagnosis.generation_pass_rougel, config.diagnosis.generation_pass_coverage)
    rows = turn_result_rows(store, campaign_id)
    measures = measures_column([row["measures"] for row in rows], [row["packed"] for row in rows])
    verdicts = stored_verdicts(store, campaign_id)
    found = conversations_of(
        (row["conversation"], TurnLine(int(row["turn"] or 1), row["qid"], row["question"], row["diagnosis"],
                                       row["error"], turn_passed(row["diagnosis"], row["error"], values or {}, marks),
                                       row["position"]))
        for row, values in zip(rows, measures, strict=True))
    return [replace(result, judges=verdicts.get(result.conversation, {})) for result in found]


def stored_verdicts(store: Store, campaign_id: str) -> dict[str, dict[str, Verdict]]:
    """The conversation judges' verdicts kept for a campaign: conversation -> judge -> verdict."""
    out: dict[str, dict[str, Verdict]] = {}
    for row in conversation_verdict_rows(store, campaign_id):
        out.setdefault(row["conversation"], {})[row["judge"]] = Verdict.from_dict(json.loads(row["verdict"]))
    return out


@dataclass(frozen=True)
class ConversationSummary:
    """A campaign's conversations in a few numbers."""

    conversations: int = field(metadata=doc())
    all_passed: int = field(metadata=doc("conversations whose every judged turn passed"))
    mean_share_passed: float | None = field(metadata=doc("the mean over conversations of their share of turns "
                                                         "passed"))

    @classmethod
    def of(cls, results: Sequence[ConversationResult]) -> ConversationSummary:
        """From the conversations' measures."""
        shares = [r.share_passed for r in results if r.share_passed is not None]
        return cls(len(results), sum(1 for r in results if r.judged and r.passed == r.judged),
                   sum(shares) / len(shares) if shares else None)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"conversations": self.conversations, "all_passed": self.all_passed,
                "mean_share_passed": self.mean_share_passed}
