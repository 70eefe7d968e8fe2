"""Saved target configurations: the ids that agent_id, knowledge_base_id, chat_id and rerank_id name."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from pydantic import Field

from evalcore.api.auth import FullAdmin, Viewer
from evalcore.api.dataset_ids import dataset_path
from evalcore.api.error_envelope import ERROR_RESPONSES, ApiError, not_found, ok
from evalcore.api.inputs import RequestBody
from evalcore.api.schemas import Ok, TargetDetail, TargetList
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import list_targets, save_target

router = APIRouter(prefix="/api/v1/targets", tags=["targets"], responses=ERROR_RESPONSES)


class TargetIn(RequestBody):
    """A name and the configuration keys that differ from the defaults (see `python -m evalcore config show`)."""

    name: str = Field(min_length=1, max_length=200, pattern=r"\S")
    config: dict[str, Any] = Field(default_factory=dict,
                                   description="flat configuration keys, e.g. {\"retriever\": \"bm25\"}")


@router.get("", response_model=Ok[TargetList], summary="The tenant's saved target configurations, newest first")
def list_all(request: Request, principal: Viewer) -> dict[str, Any]:
    """Ids usable as agent_id, knowledge_base_id, chat_id and rerank_id."""
    return ok({"targets": [target.to_dict() for target in list_targets(request.app.state.store, principal=principal)]})


@router.get("/{target_id}", response_model=Ok[TargetDetail], summary="One saved target configuration")
def read(request: Request, target_id: Annotated[str, Path(max_length=200)], principal: Viewer) -> dict[str, Any]:
    """Every key of the configuration."""
    target = next((t for t in list_targets(request.app.state.store, principal=principal) if t.id == target_id), None)
    if target is None:
        raise not_found("target", target_id)
    return ok({"target": target.to_dict()})


def server_files(request: Request, config: TargetConfig, given: dict[str, Any]) -> None:
    """422 for a configuration that names server files: a client names datasets by id, and no other file.

    knowledge_base is held to the rule of dataset_id (a dataset directly under the server's
    dataset root); results_path is refused outright, since a results file is a file of the server's
    that a client has no business choosing (save results_file targets from the CLI or the dashboard).
    """
    if config.results.results_path:
        raise ApiError(422, "config.results_path: a results file cannot be named through the API "
                            "(save results_file targets with the command line or the dashboard)",
                       field="config.results_path")
    if "knowledge_base" in given:
        dataset_path(request, config.knowledge_base, field="config.knowledge_base")


@router.post("", status_code=201, response_model=Ok[TargetDetail],
             summary="Save a target configuration (admin key with full-access)")
def create(request: Request, body: TargetIn, principal: FullAdmin) -> dict[str, Any]:
    """Validated like a TOML configuration; unknown keys and bad values answer 422, each named.

    `knowledge_base` names a dataset id under the server's dataset root, like `dataset_id`;
    `results_path` cannot be set through the API.
    """
    store = request.app.state.store
    config = TargetConfig.from_dict(body.config)
    server_files(request, config, body.config)
    target_id = save_target(store, config, name=body.name.strip(), principal=principal)
    return ok({"target": next(t for t in list_targets(store, principal=principal) if t.id == target_id).to_dict()})
