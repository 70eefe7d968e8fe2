"""Quality gates over HTTP: a campaign's measures against marks, a candidate against its baseline."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from evalcore.api.auth import Viewer
from evalcore.api.error_envelope import ERROR_RESPONSES, ok
from evalcore.api.routes_campaigns import CampaignId, campaign_of
from evalcore.api.schemas import ChecksData, Ok
from evalcore.campaigns import CampaignStatus, campaign_results
from evalcore.compare import compare_campaigns
from evalcore.gates import BOUNDS, Check, campaign_checks, exit_code, parse_gate, question_failures, worse_checks

router = APIRouter(prefix="/api/v1", tags=["gates"], responses=ERROR_RESPONSES)
Marks = Annotated[list[str], Query(max_length=50, description="MEASURE=V, repeatable (as `run --fail-under`)")]
Measures = Annotated[str, Query(max_length=1000, description="measures separated by commas, or `headline` "
                                                             "(as `compare --fail-if-worse`)")]


def checks_json(status: CampaignStatus | None, checks: list[Check]) -> dict[str, Any]:
    """The checks with the exit code the command line would give."""
    code = exit_code(status, checks)
    return ok({"checks": [check.to_dict() for check in checks], "exit_code": code.value, "verdict": code.label})


@router.get("/campaigns/{campaign_id}/gates", response_model=Ok[ChecksData],
            summary="A campaign's measures against marks, and its failed questions")
def campaign_gates(request: Request, campaign_id: CampaignId, principal: Viewer, fail_under: Marks,
                   bound: Annotated[str, Query(pattern="^(" + "|".join(BOUNDS) + ")$",
                                               description="mean, or lower: the pessimistic end of the mean's 95% "
                                                           "bootstrap interval")] = "mean") -> dict[str, Any]:
    """Each mark taken on the campaign's mean (or its bound); a measure where lower is better has a ceiling."""
    campaign = campaign_of(request, campaign_id, principal)
    campaign_id = campaign.id  # given by id or name
    gates = [parse_gate(text, bound, example="?fail_under=ndcg@10=0.7") for text in fail_under]
    rows = campaign_results(request.app.state.store, campaign_id, principal=principal)
    return checks_json(campaign.status, campaign_checks(gates, rows) + question_failures(rows))


@router.get("/compare/gates", response_model=Ok[ChecksData],
            summary="Whether campaign b is significantly worse than campaign a on the named measures")
def comparison_gates(request: Request, a: Annotated[str, Query(max_length=300)],
                     b: Annotated[str, Query(max_length=300)], principal: Viewer,
                     fail_if_worse: Measures = "headline") -> dict[str, Any]:
    """By the comparison's own paired tests (p < 0.05), as `compare --fail-if-worse`."""
    a, b = campaign_of(request, a, principal).id, campaign_of(request, b, principal).id  # by id or name
    comparison = compare_campaigns(request.app.state.store, a, b, principal=principal)
    names = [name.strip() for name in fail_if_worse.split(",") if name.strip()]
    return checks_json(None, worse_checks(comparison, names, field="fail_if_worse"))
