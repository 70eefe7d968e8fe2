"""A stored campaign's abstention measures recomputed under the current answerability rule, on request only.

Campaigns keep the answerability they were launched with: an empty expected answer stored as
"unanswerable" by an older rule stays so until someone asks for this recomputation. It reads the
campaign's own snapshot and stored answers (a dataset campaign's `answerable` column from its
dataset folder), and rewrites only the answerability and the three abstention measures.
"""

from __future__ import annotations

import json
from dataclasses import replace

from evalcore.access.principals import Action, Principal, scope
from evalcore.campaigns.campaign_dataset import stored_dataset_path
from evalcore.campaigns.queries import campaign_results, get_campaign
from evalcore.campaigns.questions import answerability
from evalcore.campaigns.records import Campaign, CampaignKind, QuestionResult
from evalcore.datasets import load_dataset
from evalcore.metrics import MEASURES, abstention_measures
from evalcore.store import Conflict, Connection, Store, comparison_rows, dumps, figure_rows, question_rows, result_table

ABSTENTION = frozenset(name for name, measure in MEASURES.items() if measure.family == "abstention")


def recompute_abstention(store: Store, campaign_id: str, *, tenant: str | None = None,
                         principal: Principal | None = None) -> int:
    """Recompute and store; the number of questions whose answerability changed. Conflict while it runs."""
    campaign = get_campaign(store, campaign_id, scope(principal, tenant, Action.CHANGE))
    if campaign.status.active:
        raise Conflict(f"the campaign is {campaign.status.value}: recompute once it has ended", where=campaign_id)
    flags = _dataset_flags(campaign)
    results = campaign_results(store, campaign_id)
    changes = [(r, answerability(replace(r.question, answerable=flags.get(r.question.qid)))) for r in results]
    store.write(lambda conn: _rewrite(conn, campaign, changes))
    return sum(new != r.question.answerable for r, new in changes)


def _dataset_flags(campaign: Campaign) -> dict[int, bool | None]:
    """A dataset campaign's `answerable` column by question id, as its folder holds it now (none for a suite)."""
    if campaign.kind != CampaignKind.DATASET:
        return {}
    return {q.qid: q.answerable for q in load_dataset(stored_dataset_path(campaign)).questions}


def _rewrite(conn: Connection, campaign: Campaign, changes: list[tuple[QuestionResult, bool | None]]) -> None:
    fallback = str(campaign.config.get("fallback_answer", ""))
    for result, answerable in changes:
        outcome, refusal = result.outcome, result.outcome.judges.get("refusal")
        refused = refusal.result.passed if refusal is not None else None
        reading = abstention_measures(outcome.answer, answerable, fallback, refused)
        measures = {k: v for k, v in outcome.measures.items() if k not in ABSTENTION} | reading.values
        position = result.question.position
        stored = result_table.signatures_of(conn, campaign.id, position)
        own = {k: v for k, v in json.loads(stored).items() if k not in ABSTENTION} | reading.signatures
        result_table.set_measures(conn, campaign.id, position, dumps(measures), dumps(own))
        question_rows.set_answerable(conn, campaign.id, position, None if answerable is None else int(answerable))
    # Comparisons and figures kept in the store hold the old values: they are computed afresh when next asked for.
    comparison_rows.delete_comparisons_of(conn, campaign.id)
    figure_rows.delete_figures(conn, campaign.id)
