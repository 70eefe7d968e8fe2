"""Evaluation tasks: `POST /api/v1/evaluation` creates a task, `GET /api/v1/evaluation?task_id=` reads it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request
from pydantic import BaseModel, Field

from evalcore.api.auth import Admin, Viewer
from evalcore.api.configurations import resolve_target
from evalcore.api.dataset_ids import dataset_path
from evalcore.api.error_envelope import ERROR_RESPONSES, ok
from evalcore.api.routes_campaigns import campaign_of
from evalcore.api.runs import RunSettings, configured, launch
from evalcore.campaigns import Campaign, CampaignStatus, campaign_aggregates, get_campaign, new_campaign_id
from evalcore.campaigns.launching import LaunchRequest
from evalcore.datasets.names import dataset_label
from evalcore.metrics import MEASURES
from evalcore.targets.saved_targets import ID_NAMES

router = APIRouter(prefix="/api/v1/evaluation", tags=["evaluation tasks"], responses=ERROR_RESPONSES)

# The task API's field name -> our canonical measure name, as each measure declares it, by metric group.
RETRIEVAL_FIELDS = {m.api_field: m.name for m in MEASURES.values() if m.api_field and m.family == "retrieval"}
GENERATION_FIELDS = {m.api_field: m.name for m in MEASURES.values() if m.api_field and m.family == "generation"}


class EvaluationRequest(RunSettings):
    """An evaluation task request; every field optional."""

    dataset_id: str = Field(default="default", description="folder under the dataset root ('default' is its samples)")
    knowledge_base_id: str | None = Field(default=None, description=ID_NAMES["knowledge_base_id"])
    chat_id: str | None = Field(default=None, description=ID_NAMES["chat_id"])
    rerank_id: str | None = Field(default=None, description=ID_NAMES["rerank_id"])


class Task(BaseModel):
    """An evaluation task; tenant_id is our tenant name; total and finished always present."""

    id: str
    tenant_id: str
    dataset_id: str
    start_time: str
    status: int = Field(description="0 pending, 1 running, 2 success, 3 failed (err_msg says why)")
    err_msg: str
    total: int
    finished: int


class TaskData(BaseModel):
    task: Task


class TaskResponse(BaseModel):
    success: bool
    data: TaskData


class Metrics(BaseModel):
    retrieval_metrics: dict[str, float | None]
    generation_metrics: dict[str, float | None]


class DetailData(BaseModel):
    task: Task
    params: dict[str, Any]
    metric: Metrics


class DetailResponse(BaseModel):
    success: bool
    data: DetailData


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dataset_id(campaign: Campaign) -> str:
    """The client's dataset id: kept in the task id; for campaigns started elsewhere, the folder name."""
    if campaign.id.startswith("evaluation_") and campaign.id.count("_") >= 4:
        return campaign.id.split("_", 4)[4]
    return dataset_label(campaign.source)


def _err_msg(campaign: Campaign) -> str:
    """Interrupted and cancelled are status 3 for a task: the message must say which."""
    status, error = campaign.status.value, campaign.error or ""
    if campaign.status in (CampaignStatus.INTERRUPTED, CampaignStatus.CANCELLED) and not error.startswith(status):
        return f"{status}: {error}" if error else status
    if campaign.status == CampaignStatus.SUCCEEDED_WITH_FAILURES:
        return f"{campaign.failed} of {campaign.total} questions failed"
    return error


def task_json(campaign: Campaign) -> dict[str, Any]:
    """A campaign as an evaluation task object."""
    return {
        "id": campaign.id,
        "tenant_id": campaign.tenant,
        "dataset_id": _dataset_id(campaign),
        "start_time": _iso(campaign.created_at),  # stored once, when the task is created: the POST's value stays
        "status": campaign.status_code,
        "err_msg": _err_msg(campaign),
        "total": campaign.total,
        "finished": campaign.finished,
    }


@router.post("", response_model=TaskResponse, summary="Create an evaluation task (returns at once)")
def create_evaluation(request: Request, principal: Admin,
                      body: Annotated[EvaluationRequest | None, Body()] = None) -> dict[str, Any]:
    """Validate synchronously, start the campaign in the background, answer its task."""
    body = body or EvaluationRequest()
    store = request.app.state.store
    path = dataset_path(request, body.dataset_id, questions=True)
    config, models = resolve_target(store, principal, body.knowledge_base_id, body.chat_id, body.rerank_id)
    task_id = new_campaign_id(principal.tenant, body.dataset_id)
    launch(request.app.state.manager, body, LaunchRequest(dataset=str(path), config=configured(config, body, principal),
                                                          campaign_id=task_id, principal=principal, models=models))
    return ok({"task": task_json(get_campaign(store, task_id, principal=principal))})


@router.get("", response_model=DetailResponse, summary="Read a task: status, progress, configuration, metrics")
def read_evaluation(request: Request, task_id: Annotated[str, Query(max_length=300)],
                    principal: Viewer) -> dict[str, Any]:
    """An evaluation task in detail; a metric absent from every question is null."""
    store = request.app.state.store
    campaign = campaign_of(request, task_id, principal, "evaluation task")
    aggregates = campaign_aggregates(store, task_id, principal=principal)

    def means(fields: dict[str, str]) -> dict[str, float | None]:
        return {field: aggregates[name].mean if name in aggregates else None for field, name in fields.items()}

    metric = {"retrieval_metrics": means(RETRIEVAL_FIELDS), "generation_metrics": means(GENERATION_FIELDS)}
    params = {**campaign.config, "models": dict(campaign.options.models)}  # which chat and rerank model, and why
    return ok({"task": task_json(campaign), "params": params, "metric": metric})
