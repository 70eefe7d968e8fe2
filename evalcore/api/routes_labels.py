"""People's labels of a campaign's questions for its judges, and each judge's agreement with them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Request, Response
from pydantic import Field

from evalcore.api.auth import Labeller, Viewer
from evalcore.api.error_envelope import ERROR_RESPONSES, ok
from evalcore.api.inputs import RequestBody
from evalcore.api.routes_campaigns import CampaignId, campaign_of
from evalcore.api.schemas import AgreementData, ImportedLabels, LabelList, LabelOnly, Ok
from evalcore.campaigns.question_labels import (
    NOTE_CHARS,
    campaign_agreement,
    campaign_labels,
    delete_label,
    import_labels_csv,
    set_label,
)

router = APIRouter(prefix="/api/v1/campaigns", tags=["labels"], responses=ERROR_RESPONSES)
Qid = Annotated[int, Path(ge=0, le=2**62)]
Judge = Annotated[str, Path(max_length=60)]
CSV_CHARS = 5_000_000


class LabelIn(RequestBody):
    """A label on the judge's scale (1-5, a rubric's label) or pass / fail, with an optional note."""

    label: str = Field(min_length=1, max_length=100)
    note: str = Field(default="", max_length=NOTE_CHARS)


@router.get("/{campaign_id}/labels", response_model=Ok[LabelList], summary="The campaign's labels")
def labels(request: Request, campaign_id: CampaignId, principal: Viewer) -> dict[str, Any]:
    """By question, then judge."""
    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    found = campaign_labels(request.app.state.store, campaign_id, principal=principal)
    return ok({"labels": [label.to_dict() for label in found]})


@router.put("/{campaign_id}/labels/{qid}/{judge}", response_model=Ok[LabelOnly],
            summary="Label one question for one judge (replaces a previous label)")
def put_label(request: Request, campaign_id: CampaignId, qid: Qid, judge: Judge, body: LabelIn,
              principal: Labeller) -> dict[str, Any]:
    """Who and when are recorded; a label off the judge's scale is refused naming the labels it takes."""
    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    label = set_label(request.app.state.store, campaign_id, qid, judge, body.label, note=body.note,
                      principal=principal)
    return ok({"label": label.to_dict()})


@router.delete("/{campaign_id}/labels/{qid}/{judge}", status_code=204, response_class=Response,
               summary="Take a label back")
def remove_label(request: Request, campaign_id: CampaignId, qid: Qid, judge: Judge, principal: Labeller) -> Response:
    """Nothing happens when there is none."""
    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    delete_label(request.app.state.store, campaign_id, qid, judge, principal=principal)
    return Response(status_code=204)


@router.post("/{campaign_id}/labels/import", response_model=Ok[ImportedLabels], summary="Labels from CSV text")
def import_labels(request: Request, campaign_id: CampaignId, principal: Labeller,
                  csv: Annotated[str, Body(media_type="text/csv", max_length=CSV_CHARS)]) -> dict[str, Any]:
    """Columns qid, judge, label (note, author optional); every bad row is named and nothing is kept then."""
    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    count = import_labels_csv(request.app.state.store, campaign_id, csv, source="the CSV body", principal=principal)
    return ok({"imported": count})


@router.get("/{campaign_id}/agreement", response_model=Ok[AgreementData],
            summary="Each labelled judge against the labels: n, accuracy, kappa, confusion matrix")
def agreement(request: Request, campaign_id: CampaignId, principal: Viewer) -> dict[str, Any]:
    """On the judge's scale when every label is on it (weighted kappa on ordinal scales), else as pass/fail."""
    campaign_id = campaign_of(request, campaign_id, principal).id  # given by id or name
    found = campaign_agreement(request.app.state.store, campaign_id, principal=principal)
    return ok({"agreement": {name: value.to_dict() for name, value in found.items()}})
