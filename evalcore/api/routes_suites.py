"""Question suites and their campaigns (`/api/v1/eval-suites`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Path, Request, Response
from pydantic import Field

from evalcore.access.principals import Principal
from evalcore.api import runs
from evalcore.api.auth import Admin, Viewer
from evalcore.api.configurations import saved_target
from evalcore.api.dataset_ids import dataset_path
from evalcore.api.error_envelope import ERROR_RESPONSES, ApiError, not_found, ok
from evalcore.api.inputs import RequestBody
from evalcore.api.routes_campaigns import FieldNames, campaign_json, campaign_of, result_json
from evalcore.api.runs import RunSettings, configured
from evalcore.api.schemas import EstimateOnly, Ok, RunDetail, RunList, RunOnly, SuiteDetail, SuiteList
from evalcore.campaigns import NotFound, campaign_results, campaign_summary, get_campaign, list_campaigns
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.listing import suite_rows
from evalcore.suites import (
    MAX_CASES,
    MAX_SOURCES,
    Case,
    DuplicateName,
    Suite,
    create_suite,
    delete_suite,
    get_suite,
    replace_suite,
)
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import ID_NAMES

router = APIRouter(prefix="/api/v1/eval-suites", tags=["eval suites"], responses=ERROR_RESPONSES)
SuiteId = Annotated[str, Path(max_length=200)]
RunId = Annotated[str, Path(max_length=300)]


class CaseIn(RequestBody):
    """One question; expected answer and sources are optional."""

    question: str = Field(min_length=1, max_length=4000, pattern=r"\S")
    expected_answer: str | None = Field(default=None, max_length=20000)
    expected_sources: list[Annotated[str, Field(max_length=1000)]] = Field(default_factory=list, max_length=MAX_SOURCES,
                                        description=f"titles, file names or document ids; at most {MAX_SOURCES}")
    checks: list[Annotated[str, Field(max_length=20000)]] = Field(
        default_factory=list, max_length=50, description="exact checks the answer must pass, each as written: "
        "contains:30 jours, regex:\\d+ €, json_valid, length:10..280, number_close:1% (see the measures' docs)")
    conversation: str | None = Field(default=None, min_length=1, max_length=200,
                                     description="the conversation this question is a turn of (none: asked alone)")
    turn: int | None = Field(default=None, ge=1, le=MAX_CASES, description="its turn in the conversation, from 1 "
                             "(none: the order of the conversation's cases); each once, without a gap")


class SuiteIn(RequestBody):
    """A suite as created or replaced: name, saved target configuration, up to 100 cases."""

    name: str = Field(min_length=1, max_length=200, pattern=r"\S")
    agent_id: str = Field(min_length=1, max_length=200, description=ID_NAMES["agent_id"])
    cases: list[CaseIn] = Field(min_length=1, max_length=MAX_CASES, description=f"at most {MAX_CASES} cases")


class SuiteCreate(SuiteIn):
    """A new suite, and what to do when the workspace already has a suite of that name (case ignored)."""

    if_exists: Literal["refuse", "replace", "keep_both"] = Field(
        default="refuse", description="refuse: answer 409 with the existing suite's id (existing_id); replace: that "
        "suite gets these cases and agent (its id and campaigns stay); keep_both: create it under the first free "
        "name, 'NAME (2)'")


class RunIn(RunSettings):
    """Options of a campaign on a suite."""


def _cases(body: SuiteIn) -> list[Case]:
    return [Case(question=c.question, expected_answer=c.expected_answer, expected_sources=tuple(c.expected_sources),
                 checks=tuple(c.checks), conversation=c.conversation, turn=c.turn) for c in body.cases]


def _suite(request: Request, suite_id: str, principal: Principal) -> Suite:
    try:
        return get_suite(request.app.state.store, suite_id, principal=principal)
    except NotFound:
        raise not_found("suite", suite_id) from None


@router.get("", response_model=Ok[SuiteList], summary="List suites, each with its last campaign")
def list_all(request: Request, principal: Viewer) -> dict[str, Any]:
    """Newest first; `last_run` is null for a suite never run."""
    rows = suite_rows(request.app.state.store, principal=principal)
    return ok({"suites": [{**row.suite.to_dict(with_cases=False),
                           "last_run": campaign_json(row.last.campaign) if row.last else None} for row in rows]})


def duplicate(error: DuplicateName) -> ApiError:
    """409 naming the suite that already has the name."""
    return ApiError(409, f"{error.message} (id {error.existing_id}): send another name, or if_exists \"replace\" "
                    "or \"keep_both\"", existing_id=error.existing_id, field="name")


@router.post("", status_code=201, response_model=Ok[SuiteDetail], summary="Create a suite")
def create(request: Request, body: SuiteCreate, principal: Admin) -> dict[str, Any]:
    """The agent_id must name one of the tenant's saved target configurations; a name in use answers 409."""
    store = request.app.state.store
    saved_target(store, principal, body.agent_id, "agent_id")
    try:
        suite = create_suite(store, name=body.name, target_id=body.agent_id, cases=_cases(body), principal=principal,
                             if_exists=body.if_exists)
    except DuplicateName as error:
        raise duplicate(error) from None
    return ok({"suite": suite.to_dict()})


@router.get("/runs/{run_id}", response_model=Ok[RunDetail],
            summary="One campaign with its per-question results and summary")
def read_run(request: Request, run_id: RunId, principal: Viewer, names: FieldNames = None) -> dict[str, Any]:
    """Results hold every finished question (a running campaign shows those done so far); `names` as for campaign
    results."""
    run = campaign_of(request, run_id, principal, "run")
    store = request.app.state.store
    return ok({"run": campaign_json(run),
               "results": [result_json(r, names, run) for r in campaign_results(store, run_id, principal=principal)],
               "summary": campaign_summary(store, run_id, principal=principal).to_dict()})


@router.get("/{suite_id}", response_model=Ok[SuiteDetail], summary="Read a suite with its cases")
def read(request: Request, suite_id: SuiteId, principal: Viewer) -> dict[str, Any]:
    """One suite."""
    return ok({"suite": _suite(request, suite_id, principal).to_dict()})


@router.put("/{suite_id}", response_model=Ok[SuiteDetail],
            summary="Replace a suite (past campaigns keep their questions)")
def replace(request: Request, body: SuiteIn, suite_id: SuiteId, principal: Admin) -> dict[str, Any]:
    """Name, agent and cases are all replaced; another suite's name answers 409 (existing_id names it)."""
    store = request.app.state.store
    _suite(request, suite_id, principal)
    saved_target(store, principal, body.agent_id, "agent_id")
    try:
        suite = replace_suite(store, suite_id, name=body.name, target_id=body.agent_id, cases=_cases(body),
                              principal=principal)
    except DuplicateName as error:
        raise duplicate(error) from None
    return ok({"suite": suite.to_dict()})


@router.delete("/{suite_id}", status_code=204, response_class=Response, summary="Delete a suite and its campaigns")
def delete(request: Request, suite_id: SuiteId, principal: Admin) -> Response:
    """No content on success."""
    _suite(request, suite_id, principal)
    delete_suite(request.app.state.store, suite_id, principal=principal)
    return Response(status_code=204)


@router.post("/{suite_id}/runs", status_code=202, response_model=Ok[RunOnly], summary="Launch a campaign on a suite")
def launch(request: Request, suite_id: SuiteId, principal: Admin,
           body: Annotated[RunIn | None, Body()] = None) -> dict[str, Any]:
    """Returns at once with the pending campaign; 409 (with its id) while another one runs."""
    suite = _suite(request, suite_id, principal)
    body = body or RunIn()
    run_id = runs.launch(request.app.state.manager, body, suite_launch(request, suite, body, principal))
    return ok({"run": campaign_json(get_campaign(request.app.state.store, run_id, principal=principal))})


@router.post("/{suite_id}/estimate", response_model=Ok[EstimateOnly],
             summary="What a campaign on a suite would cost, before it runs")
def estimate(request: Request, suite_id: SuiteId, principal: Admin,
             body: Annotated[RunIn | None, Body()] = None) -> dict[str, Any]:
    """The same body as a launch; nothing runs. From the configuration's earlier campaigns (the same judges), else
    from the prompts of a sample of the questions counted (a rough order of magnitude)."""
    suite = _suite(request, suite_id, principal)
    body = body or RunIn()
    launch_request = runs.request_of(body, suite_launch(request, suite, body, principal))
    return ok({"estimate": request.app.state.manager.estimate(launch_request).to_dict()})


def suite_launch(request: Request, suite: Suite, body: RunIn, principal: Principal) -> LaunchRequest:
    """Where a campaign on the suite runs: its target's configuration with the body's settings."""
    store = request.app.state.store
    base = (saved_target(store, principal, suite.target_id, "agent_id") if suite.target_id != "default"
            else TargetConfig())
    # The knowledge base is a dataset id under the server's dataset root, whoever saved the configuration.
    dataset_path(request, base.knowledge_base, field=None, label="knowledge_base of the suite's target configuration")
    return LaunchRequest(suite_id=suite.id, config=configured(base, body, principal), target_id=suite.target_id,
                         principal=principal, dataset_root=request.app.state.dataset_root)


@router.get("/{suite_id}/runs", response_model=Ok[RunList], summary="Campaigns of a suite, newest first")
def list_runs(request: Request, suite_id: SuiteId, principal: Viewer) -> dict[str, Any]:
    """Each with status and progress."""
    suite = _suite(request, suite_id, principal)
    return ok({"runs": [campaign_json(c)
                        for c in list_campaigns(request.app.state.store, suite_id=suite.id, principal=principal)]})
