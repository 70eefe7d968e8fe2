"""How far a comparison's judged measures can be trusted: each judge against people's labels in A and in B, and,
when A and B judged the same answers (one judges the other's again), B's judge against A's question by question."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcore.access.principals import Principal
from evalcore.campaigns.queries import campaign_results, get_campaign
from evalcore.campaigns.question_labels import (
    PASS_FAIL,
    comparison_agreement,
    judge_scale,
    judged_category,
    trust_lines,
    trust_text,
)
from evalcore.campaigns.records import Campaign, QuestionResult
from evalcore.campaigns.result_rows import answers_holder
from evalcore.formats.shapes import doc
from evalcore.judges import Verdict
from evalcore.metrics.agreement import Agreement, agreement
from evalcore.store import Store


@dataclass(frozen=True)
class ComparisonTrust:
    """Per judge: its agreement with people's labels on each side (`people`: A, B), and B's verdicts against A's
    on the same answers (`judges`; empty unless both campaigns judged the same stored answers)."""

    people: dict[str, dict[str, Agreement]] = field(metadata=doc(
        "A and B: each judge against people's labels (a re-judge without labels of its own: those of the campaign "
        "whose answers it judges)"))
    judges: dict[str, Agreement] = field(metadata=doc(
        "each judge of both: B's verdicts against A's on the same answers (A's in the labels' place); empty unless "
        "A and B judged the same stored answers"))

    def lines(self) -> list[str]:
        """One line per judge against people, then one per judge against the other campaign's judge."""
        return trust_lines(self.people) + [
            f"judge.{name}, B's verdicts against A's on the same answers: {trust_text(found, 'questions')}"
            for name, found in self.judges.items()]

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        people = {side: {name: a.to_dict() for name, a in found.items()} for side, found in self.people.items()}
        return {"people": people, "judges": {name: found.to_dict() for name, found in self.judges.items()}}


def same_answers(a: Campaign, b: Campaign) -> bool:
    """Whether two campaigns judged the very same stored answers (one is a re-judge of the other, or both are)."""
    return (a.answers_from or a.id) == (b.answers_from or b.id)


def judges_agreement(a: Campaign, a_results: Sequence[QuestionResult], b: Campaign,
                     b_results: Sequence[QuestionResult], *, seed: int = 0) -> dict[str, Agreement]:
    """Per judge of both campaigns, B's verdicts against A's over the questions both judged readably (A in the
    place of the people's labels); on the judge's scale when both campaigns use the same one, else as pass/fail."""
    if not same_answers(a, b):
        return {}
    theirs = {(r.question.qid, name): v for r in b_results for name, v in r.outcome.judges.items()}
    out: dict[str, Agreement] = {}
    for name in (judge for judge in a.judges if judge in b.judges):
        pairs = [(verdict, other) for r in a_results if (verdict := r.outcome.judges.get(name)) is not None
                 and (other := theirs.get((r.question.qid, name))) is not None]
        out[name] = verdicts_agreement(name, a, b, pairs, seed=seed)
    return out


def verdicts_agreement(name: str, a: Campaign, b: Campaign, pairs: Sequence[tuple[Verdict, Verdict]], *,
                       seed: int = 0) -> Agreement:
    """One judge of A against the same judge of B, over the pairs both gave a readable verdict in."""
    scale = judge_scale(a, name)
    if scale == judge_scale(b, name):
        cells = [(x, y) for va, vb in pairs
                 if (x := judged_category(va, scale)) is not None and (y := judged_category(vb, scale)) is not None]
        return agreement(name, [x for x, _ in cells], [y for _, y in cells], scale.labels, ordinal=scale.ordinal,
                         seed=seed)
    cells = [(va.result, vb.result) for va, vb in pairs if va.result in PASS_FAIL and vb.result in PASS_FAIL]
    return agreement(name, [x for x, _ in cells], [y for _, y in cells], PASS_FAIL, ordinal=False, seed=seed)


def comparison_trust(store: Store, a_id: str, b_id: str, *, principal: Principal | None = None) -> ComparisonTrust:
    """The trust of a comparison of A and B, read from the store (the judges' records only when A and B judged the
    same answers)."""
    people = comparison_agreement(store, a_id, b_id, principal=principal)
    if answers_holder(store, a_id) != answers_holder(store, b_id):
        return ComparisonTrust(people, {})
    a, b = get_campaign(store, a_id, principal=principal), get_campaign(store, b_id, principal=principal)
    return ComparisonTrust(people, judges_agreement(a, campaign_results(store, a_id, principal=principal), b,
                                                    campaign_results(store, b_id, principal=principal)))
