"""Campaigns of any kind: list, read, paged per-question results; comparison of two."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from evalcore.access.principals import Principal
from evalcore.api.auth import Admin, Viewer
from evalcore.api.error_envelope import ERROR_RESPONSES, not_found, ok
from evalcore.api.inputs import RequestBody
from evalcore.api.routes_jobs import wake_jobs
from evalcore.api.runs import JudgeModelIn, JudgingIn, bounded, judge_settings
from evalcore.api.schemas import (
    CampaignDetail,
    CampaignList,
    CampaignOnly,
    ComparisonData,
    ComparisonOut,
    ConversationList,
    JobData,
    Ok,
    ResultsPage,
    TrustOut,
)
from evalcore.campaigns import (
    Campaign,
    CampaignKind,
    ConversationSummary,
    NotFound,
    QuestionResult,
    campaign_aggregates,
    campaign_conversations,
    campaign_diagnosis,
    campaign_results,
    campaign_summary,
    find_campaign,
    get_campaign,
)
from evalcore.campaigns.export import judge_fields
from evalcore.campaigns.listing import SORT_KEYS, campaign_rows, search_rows, sort_rows
from evalcore.campaigns.manager import MAX_NAME
from evalcore.campaigns.recompute import recompute_abstention
from evalcore.campaigns.rejudging import RejudgeRequest
from evalcore.campaigns.trust import comparison_trust
from evalcore.compare import Comparison, compare_campaigns, power
from evalcore.compare.json_text import comparison_pieces, encode
from evalcore.compare.pairwise_job import start_pairwise
from evalcore.datasets.names import dataset_label
from evalcore.jobs.job_queue import get_job
from evalcore.judges import FIELD_NAMES
from evalcore.metrics import MEASURES
from evalcore.metrics.registry import listing
from evalcore.store import Store

router = APIRouter(prefix="/api/v1", tags=["campaigns"], responses=ERROR_RESPONSES)
CampaignId = Annotated[str, Path(max_length=300)]
MAX_PAGE = 1000
# SQLite takes 64-bit offsets only; far past any campaign's size anyway.
MAX_OFFSET = 1_000_000_000


def campaign_of(request: Request, campaign_id: str, principal: Principal, noun: str = "campaign") -> Campaign:
    """The tenant's campaign by its id, or for the campaign routes by its name as every face takes it (`find_campaign`:
    an id, a name, the start of one; a 422 naming the candidates when several match); else the same 404 as for an id
    that does not exist. Evaluation tasks and suite runs are named by their id only."""
    store = request.app.state.store
    try:
        if noun == "campaign":
            return find_campaign(store, campaign_id, principal=principal)
        return get_campaign(store, campaign_id, principal=principal)
    except NotFound:
        raise not_found(noun, campaign_id) from None


SortKey = Literal[SORT_KEYS]  # type: ignore[valid-type]
FieldNames = Annotated[Literal[FIELD_NAMES] | None,  # type: ignore[valid-type]
                       Query(description="add each question's judge results as flat fields under these names")]


class RenameIn(RequestBody):
    """A campaign's new name."""

    name: str = Field(min_length=1, max_length=MAX_NAME, pattern=r"\S", description="1 to 200 characters, one line")


def result_json(result: QuestionResult, names: str | None, campaign: Campaign) -> dict[str, Any]:
    """One question's result; with `names`, its judges' flat fields too (`flat`), pass marks with their results."""
    data = result.to_dict()
    if names is not None:
        data["flat"] = judge_fields(result.outcome, names, campaign.options.graded_thresholds)
    return data


def campaign_json(campaign: Campaign) -> dict[str, Any]:
    """A campaign for a client: the server's file paths are not the client's business."""
    data = campaign.to_dict()
    data["options"].pop("dataset_path", None)
    data["source"] = client_source(campaign.kind, campaign.source)
    return data


def client_source(kind: CampaignKind, source: str) -> str:
    """A campaign's source as a client sees it: a dataset's name, never its folder on the server; a suite's id."""
    return dataset_label(source) if kind == CampaignKind.DATASET else source


def comparison_head(comparison: Comparison) -> dict[str, Any]:
    """Every key of a comparison but its questions, as the response model shows it (the campaigns' sources as
    clients see them); the questions, thousands of lines, are written as kept (their fields are the records')."""
    data = comparison.to_dict(questions=[])
    for side, header in (("a", comparison.a), ("b", comparison.b)):
        data[side]["source"] = client_source(header.kind, header.source)
    shown: dict[str, Any] = ComparisonOut.model_validate(data).model_dump(mode="json")
    del shown["questions"]
    return shown


def aggregates_json(store: Store, campaign_id: str, principal: Principal) -> dict[str, Any]:
    """The campaign's aggregates as JSON."""
    return {name: value.to_dict()
            for name, value in campaign_aggregates(store, campaign_id, principal=principal).items()}


class MeasureOut(BaseModel):
    measure: str
    panel: str
    higher_is_better: bool
    values: str
    signature: str
    doc: str


class MeasureList(BaseModel):
    measures: list[MeasureOut]


@router.get("/measures", response_model=Ok[MeasureList], summary="Every measure campaigns compute, with signatures")
def measures(principal: Viewer, python: Annotated[bool, Query(
        description="only the operator's measures in Python")] = False) -> dict[str, Any]:
    """The built-in measures, then the operator's measures in Python (their signatures name the function and its
    version); 422 naming the entry point or module when those could not be registered."""
    return ok({"measures": listing(python_only=python)})


@router.get("/campaigns", response_model=Ok[CampaignList], summary="The tenant's campaigns, newest first")
def list_all(request: Request, principal: Viewer, search: Annotated[str | None, Query(max_length=200)] = None,
             sort: Annotated[SortKey, Query(description="column to sort by: newest, best or A-Z first")] = "created",
             reverse: Annotated[bool, Query(description="sort the other way round")] = False) -> dict[str, Any]:
    """Dataset and suite campaigns alike, with status and progress, the dataset or suite name, the key settings
    and the headline measures; `search` keeps those whose name, id, dataset or suite, status or settings hold
    every word (case ignored)."""
    rows = sort_rows(search_rows(campaign_rows(request.app.state.store, principal=principal), search), sort, reverse)
    return ok({"campaigns": [{**campaign_json(row.campaign), **row.to_dict()} for row in rows]})


@router.get("/campaigns/{campaign_id}", response_model=Ok[CampaignDetail], summary="One campaign with its aggregates")
def read(request: Request, campaign_id: CampaignId, principal: Viewer) -> dict[str, Any]:
    """Aggregates are means over the stored per-question rows; `diagnosis` counts the questions per failure stage;
    `summary` gives the tokens by role and, per judge, its unreadable verdicts (with a warning above a fifth)."""
    campaign = campaign_of(request, campaign_id, principal)
    campaign_id = campaign.id  # given by id or name
    store = request.app.state.store
    return ok({"campaign": campaign_json(campaign), "aggregates": aggregates_json(store, campaign_id, principal),
               "diagnosis": campaign_diagnosis(store, campaign_id, principal=principal).to_dict(),
               "summary": campaign_summary(store, campaign_id, principal=principal).to_dict()})


@router.patch("/campaigns/{campaign_id}", response_model=Ok[CampaignOnly], summary="Rename a campaign")
def rename(request: Request, campaign_id: CampaignId, body: RenameIn, principal: Admin) -> dict[str, Any]:
    """Any campaign, running or not; the name is trimmed to one line."""
    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    renamed = request.app.state.manager.rename(campaign_id, body.name, principal=principal)
    return ok({"campaign": campaign_json(renamed)})


@router.post("/campaigns/{campaign_id}/cancel", status_code=202, response_model=Ok[CampaignOnly],
             summary="Stop a pending or running campaign")
def cancel(request: Request, campaign_id: CampaignId, principal: Admin) -> dict[str, Any]:
    """No new question starts; those in flight finish; then its status is cancelled (409 if already over)."""
    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    request.app.state.manager.cancel(campaign_id, principal=principal)
    return ok({"campaign": campaign_json(campaign_of(request, campaign_id, principal))})


@router.post("/campaigns/{campaign_id}/recompute-abstention", response_model=Ok[CampaignOnly],
             summary="Recompute an ended campaign's abstention measures under the current answerability rule")
def recompute(request: Request, campaign_id: CampaignId, principal: Admin) -> dict[str, Any]:
    """On request only (stored campaigns never change by themselves); 409 while the campaign runs."""
    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    recompute_abstention(request.app.state.store, campaign_id, principal=principal)
    return ok({"campaign": campaign_json(campaign_of(request, campaign_id, principal))})


class ResumeIn(RequestBody):
    """A campaign resumed: optionally with a larger budget (one stopped over_budget goes on) and another concurrency."""

    max_cost: float | None = Field(default=None, ge=0, le=1e9, description=(
        "a new budget in the prices' currency, replacing the configuration's max_cost (default: the one it has)"))
    concurrency: int | None = bounded("concurrency", "questions in flight (default: as the campaign ran)")


@router.post("/campaigns/{campaign_id}/resume", status_code=202, response_model=Ok[CampaignOnly],
             summary="Run the questions of a campaign that have no result yet, with a larger budget if given")
def resume(request: Request, campaign_id: CampaignId, principal: Admin, body: ResumeIn | None = None) -> dict[str, Any]:
    """After an interruption, a cancel, a failure, or a stop at its budget (`max_cost` then gives the larger one it
    goes on with); it runs in the background as a launch does. 409 while it runs; 400 when every question has a
    result or the budget given is not above what it spent."""
    body = body or ResumeIn()
    campaign = campaign_of(request, campaign_id, principal)
    resumed = request.app.state.manager.resume(campaign.id, principal=principal, max_cost=body.max_cost,
                                               concurrency=body.concurrency)
    return ok({"campaign": campaign_json(campaign_of(request, resumed, principal))})


class RejudgeIn(JudgingIn):
    """A finished campaign judged again: the judges (default: its own) and the judge settings that change."""

    judge_samples: int | None = bounded("judge_samples", "ask each judge N times (default: as the campaign did)")
    concurrency: int | None = bounded("concurrency", "questions judged at once (default: as the campaign ran)")
    name: str | None = Field(default=None, min_length=1, max_length=MAX_NAME,
                             description="a name to recognise it by (default: the campaign's, with its judges)")


@router.post("/campaigns/{campaign_id}/rejudge", status_code=202, response_model=Ok[CampaignOnly],
             summary="Judge a finished campaign's answers again with other judges, as a new campaign")
def rejudge(request: Request, campaign_id: CampaignId, body: RejudgeIn, principal: Admin) -> dict[str, Any]:
    """The new campaign reads the answers where they are stored (its target is not asked) and differs only in its
    judges; `answers_from` names the campaign judged. 409 unless that campaign ran every question."""
    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    new_id = request.app.state.manager.rejudge(RejudgeRequest(
        campaign_id, judges=tuple(body.judges), settings=judge_settings(body, principal), name=body.name,
        principal=principal, concurrency=body.concurrency, judge_samples=body.judge_samples))
    return ok({"campaign": campaign_json(campaign_of(request, new_id, principal))})


@router.get("/campaigns/{campaign_id}/results", response_model=Ok[ResultsPage], summary="Per-question results, paged")
def results(request: Request, campaign_id: CampaignId, principal: Viewer,
            offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
            limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100, names: FieldNames = None) -> dict[str, Any]:
    """In question order; `finished` counts the stored results, `total` the campaign's questions.

    `names=evaluator` (or `project`) adds each question's judge results as flat fields (`flat`).
    """
    campaign = campaign_of(request, campaign_id, principal)
    campaign_id = campaign.id  # given by id or name
    rows = campaign_results(request.app.state.store, campaign_id, offset=offset, limit=limit,
                            principal=principal)
    return ok({"results": [result_json(row, names, campaign) for row in rows], "offset": offset, "limit": limit,
               "total": campaign.total, "finished": campaign.finished})


@router.get("/campaigns/{campaign_id}/conversations", response_model=Ok[ConversationList],
            summary="A campaign's conversations: each one's turns, share of turns passed, first failing turn")
def conversations(request: Request, campaign_id: CampaignId, principal: Viewer) -> dict[str, Any]:
    """Empty when no question is a turn of a conversation."""
    found = campaign_conversations(request.app.state.store, campaign_id, principal=principal)
    return ok({"summary": ConversationSummary.of(found).to_dict(), "conversations": [c.to_dict() for c in found]})


@router.post("/campaigns/{campaign_id}/conversations/judge", response_model=Ok[ConversationList],
             summary="Ask the judges that read each whole conversation of an ended campaign, and keep their verdicts")
def judge_conversation_list(request: Request, campaign_id: CampaignId, principal: Admin) -> dict[str, Any]:
    """Does an answer contradict an earlier one (conversation_contradiction), did the conversation reach what the
    user asked (conversation_goal): asked with the campaign's judge model; each conversation's `judges` then holds
    their verdicts (asked again, they replace the kept ones). 422 when the campaign has no conversation, 409 while it
    runs."""
    from evalcore.campaigns.talk_judges import judge_conversations

    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    judge_conversations(request.app.state.store, campaign_id, principal=principal)
    return conversations(request, campaign_id, principal)


@router.get("/compare", response_model=Ok[ComparisonData], summary="Compare two campaigns over their common questions")
def compare(request: Request, a: Annotated[str, Query(max_length=300)], b: Annotated[str, Query(max_length=300)],
            principal: Viewer, effect: Annotated[float, Query(gt=0, le=1e9, description="difference to detect, in "
                                                              "each measure's units: the questions needed to see it")]
            = power.EFFECT,
            basis: Annotated[str | None, Query(max_length=100, description="the measure deciding per-question "
                                               "verdicts (default: follows what differs)")] = None,
            tolerance: Annotated[float | None, Query(ge=0, le=1e9, description="the smallest difference of a "
                                                     "question's deciding measure that changes its verdict, for "
                                                     "every measure (default: each measure's own)")] = None,
            ) -> Response:
    """Per-question verdicts, per-measure deltas with intervals and power (campaign a is the baseline).

    Computed once per pair of campaign versions and kept: asking again reads the stored comparison.
    """
    a, b = campaign_of(request, a, principal).id, campaign_of(request, b, principal).id  # by id or name
    tolerances = dict.fromkeys(MEASURES, tolerance) if tolerance is not None else None
    store = request.app.state.store
    comparison = compare_campaigns(store, a, b, effect=effect, principal=principal, basis=basis, tolerances=tolerances)
    # Sent as the records' JSON text without the response model's validation: its fields are the records' own
    # (model_of, checked by the tests), and validating 10,000 questions' lines took longer than computing the
    # comparison; the questions kept as JSON text are written as they are (comparison_pieces), joined once.
    agreement = encode(TrustOut.model_validate(comparison_trust(store, a, b, principal=principal).to_dict())
                       .model_dump(mode="json"))
    pieces = comparison_pieces(comparison, head=comparison_head(comparison))
    body = "".join(['{"success": true, "data": {"comparison": ', *pieces, f', "agreement": {agreement}}}}}'])
    return Response(body.encode(), media_type="application/json")


class PairwiseIn(RequestBody):
    """How the pairwise judge is asked."""

    judge: JudgeModelIn | None = Field(default=None, description="its model (needs a full-access key); left out: "
                                                                 "campaign b's judge keys")
    limit: int | None = Field(default=None, ge=1, le=100_000, description="only the first common questions")


@router.post("/compare/pairwise", status_code=202, response_model=Ok[JobData],
             summary="Start the pairwise judge on two campaigns: a job to follow at /api/v1/jobs/{id}")
def pairwise(request: Request, a: Annotated[str, Query(max_length=300)], b: Annotated[str, Query(max_length=300)],
             principal: Admin, body: PairwiseIn | None = None) -> dict[str, Any]:
    """Queues the pairwise judge as a job and answers at once (409 while the same job is under way, naming it). A
    worker judges each common answered question with A's answer first, then B's first (a verdict that changes is a
    tie); the job's result is B's win rate with its interval, the sign test and the flip rate. Every model call is
    cached, and the result is kept: the comparison of a and b (GET /api/v1/compare) carries it from then on."""
    a, b = campaign_of(request, a, principal).id, campaign_of(request, b, principal).id  # by id or name
    body = body or PairwiseIn()
    judge = {f"judge_{name}": value for name, value in body.judge.model_dump().items()} if body.judge else None
    store = request.app.state.store
    job_id = start_pairwise(store, a, b, judge=judge, limit=body.limit, principal=principal)
    wake_jobs(request)
    return ok({"job": get_job(store, job_id).to_dict()})
