"""Production traces: the OTLP/HTTP JSON receiver an application's OpenTelemetry exporter sends to (`POST /v1/traces`,
keys with the send_traces capability), and the routes that list them, import JSONL, launch a campaign over a sample,
and show them over time and across releases."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from evalcore.access.principals import Action, Principal
from evalcore.api.auth import Admin, Viewer, _checker
from evalcore.api.error_envelope import ERROR_RESPONSES, ApiError, ok
from evalcore.api.inputs import RequestBody
from evalcore.api.schemas import Ok, api_type
from evalcore.campaigns.launching import LaunchRequest
from evalcore.compare.production import (
    GroupComparison,
    PeriodFigures,
    compare_groups,
    judged_traces,
    moment,
    parse_group,
    timeline,
    worst_traces,
)
from evalcore.compare.unpaired import UnpairedDelta
from evalcore.targets.saved_targets import ID_NAMES
from evalcore.telemetry import (
    Trace,
    TraceFilter,
    TraceImport,
    TraceSample,
    get_trace,
    import_text,
    list_traces,
    receive,
)
from evalcore.telemetry.otlp import SpanProblem, decode_protobuf, protobuf_response
from evalcore.telemetry.stored import parse_filters

router = APIRouter(tags=["traces"], responses=ERROR_RESPONSES)
Sender = Annotated[Principal, Depends(_checker(Action.SEND_TRACES))]
MAX_INFLATED = 32 * 1024 * 1024  # a compressed request is refused beyond this once inflated

if TYPE_CHECKING:
    TraceOut = BaseModel
    TraceImportOut = BaseModel
    PeriodOut = BaseModel
    DeltaOut = BaseModel
    GroupComparisonOut = BaseModel
else:
    TraceOut = api_type(Trace)
    TraceImportOut = api_type(TraceImport)
    PeriodOut = api_type(PeriodFigures)
    DeltaOut = api_type(UnpairedDelta)
    GroupComparisonOut = api_type(GroupComparison)


class TraceList(BaseModel):
    traces: list[TraceOut]
    total: int


class TraceOnly(BaseModel):
    trace: TraceOut


class Imported(BaseModel):
    report: TraceImportOut


class Timeline(BaseModel):
    periods: list[PeriodOut]
    worst: list[TraceOut]


class Compared(BaseModel):
    comparison: GroupComparisonOut


class Launched(BaseModel):
    campaign_id: str


def body_bytes(raw: bytes, encoding: str) -> bytes:
    """The request body inflated (gzip or deflate, as OTLP exporters may send it)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    try:
        if encoding == "gzip":
            inflated = gzip.GzipFile(fileobj=io.BytesIO(raw)).read(MAX_INFLATED + 1)
        elif encoding == "deflate":
            inflated = zlib.decompressobj().decompress(raw, MAX_INFLATED + 1)
        else:
            raise ApiError(415, f"unsupported Content-Encoding {encoding!r}: send gzip, deflate or none")
    except (OSError, zlib.error, EOFError):
        raise ApiError(400, f"the body is not valid {encoding} data") from None
    if len(inflated) > MAX_INFLATED:
        raise ApiError(413, f"the inflated body is over {MAX_INFLATED // 2**20} MB: send smaller batches")
    return inflated


PROTOBUF = "application/x-protobuf"


@router.post("/v1/traces", summary="OTLP/HTTP trace receiver (send_traces keys): JSON, or protobuf",
             responses={200: {"description": "an OTLP ExportTraceServiceResponse: partialSuccess names the spans "
                                             "rejected and why"}})
async def otlp_traces(request: Request, principal: Sender) -> Response:
    """Spans of an ExportTraceServiceRequest in JSON (`Content-Type: application/json`) or protobuf
    (`application/x-protobuf`, when opentelemetry-proto is installed), stored in the key's tenant once their trace's
    root span has come; each span that cannot be read is counted in `rejectedSpans` with its position in
    `errorMessage`, and its whole trace is skipped. The answer is in the request's encoding."""
    kind = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if kind not in ("application/json", PROTOBUF):
        raise ApiError(415, f"this receiver takes OTLP JSON (application/json) or protobuf ({PROTOBUF}), found "
                            f"{kind!r}")
    raw = body_bytes(await request.body(), request.headers.get("content-encoding", ""))
    if kind == PROTOBUF:
        try:
            data = decode_protobuf(raw)
        except ImportError:
            raise ApiError(415, "protobuf needs opentelemetry-proto on the server (pip install opentelemetry-proto): "
                                "install it, or set the exporter's protocol to http/json") from None
        except SpanProblem as error:
            raise ApiError(400, str(error)) from None
    else:
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ApiError(400, f"the body is not JSON ({error})") from None
    report = await run_in_threadpool(receive, request.app.state.store, data, principal=principal)
    rejected = sum(1 for r in report.rejected if "spans[" in r.position)
    lines = "; ".join(r.line() for r in report.rejected[:20])
    if len(report.rejected) > 20:
        lines += f" (and {len(report.rejected) - 20} more)"
    if kind == PROTOBUF:
        return Response(protobuf_response(rejected, lines), media_type=PROTOBUF)
    if not report.rejected:
        return JSONResponse({})
    return JSONResponse({"partialSuccess": {"rejectedSpans": rejected, "errorMessage": lines}})


def selection(since: str | None, until: str | None, where: list[str], search: str) -> TraceFilter:
    return TraceFilter(moment(since or "", "since"), moment(until or "", "until"), parse_filters(where), search)


Since = Annotated[str | None, Query(description="ISO date or time: traces started at or after", max_length=40)]
Until = Annotated[str | None, Query(description="ISO date or time: traces started before", max_length=40)]
Where = Annotated[list[str], Query(description="metadata KEY=VALUE, all of them", max_length=20)]


@router.get("/api/v1/traces", response_model=Ok[TraceList], summary="The tenant's traces, newest first")
def traces(request: Request, principal: Viewer, since: Since = None, until: Until = None, where: Where = [],  # noqa: B006
           search: Annotated[str, Query(max_length=200)] = "", limit: Annotated[int, Query(ge=1, le=1000)] = 50,
           offset: Annotated[int, Query(ge=0)] = 0) -> dict[str, Any]:
    """Filtered by time, metadata values and words of the question; a page of them with the total."""
    found = list_traces(request.app.state.store, selection(since, until, where, search), principal=principal)
    return ok({"traces": [t.to_dict() for t in found[offset:offset + limit]], "total": len(found)})


@router.get("/api/v1/traces/{number}", response_model=Ok[TraceOnly], summary="One trace")
def trace(request: Request, number: Annotated[int, Path(ge=0, le=2**62)], principal: Viewer) -> dict[str, Any]:
    """404 for another tenant's, as for a missing one."""
    return ok({"trace": get_trace(request.app.state.store, number, principal=principal).to_dict()})


@router.post("/api/v1/traces/import", response_model=Ok[Imported], summary="Import a JSONL or OTLP JSON text")
async def import_traces(request: Request, principal: Admin,
                        format: Annotated[Literal["jsonl", "otlp"], Query()] = "jsonl") -> dict[str, Any]:
    """The body is the file's text; lines or spans that cannot be read are reported and skipped."""
    text = body_bytes(await request.body(), request.headers.get("content-encoding", "")).decode("utf-8", "replace")
    report: TraceImport = await run_in_threadpool(
        lambda: import_text(request.app.state.store, text, source="the request body", otlp=format == "otlp",
                            principal=principal))
    return ok({"report": report.to_dict()})


class TracesCampaignIn(RequestBody):
    """A campaign over a sample of the tenant's traces, judged without references."""

    per_stratum: int = Field(100, ge=1, le=100_000)
    by: str = Field("", max_length=100, description="day, week, a metadata key, or '' for one stratum")
    seed: int = Field(0, ge=0, le=2**31)
    since: str | None = Field(None, max_length=40)
    until: str | None = Field(None, max_length=40)
    where: list[str] = Field(default_factory=list, max_length=20)
    judges: list[str] = Field(default_factory=list, max_length=20)
    target_id: str | None = Field(None, max_length=100, description=ID_NAMES["target_id"] + "; here, the one whose "
                                  "judge keys (judge_kind, judge_model, ...) the traces are judged with")
    name: str | None = Field(None, max_length=200)
    concurrency: int | None = Field(None, ge=1, le=256)


@router.post("/api/v1/traces/campaigns", response_model=Ok[Launched], status_code=201,
             summary="Launch a campaign over a sample of traces")
def launch_traces(request: Request, body: TracesCampaignIn, principal: Admin) -> dict[str, Any]:
    """Stratified by day, week or a metadata value, seeded; the judges need no reference."""
    sample = TraceSample(body.per_stratum, body.by, body.seed, moment(body.since or "", "since"),
                         moment(body.until or "", "until"), parse_filters(body.where))
    campaign_id = request.app.state.manager.launch(LaunchRequest(
        traces=sample, judges=tuple(body.judges), target_id=body.target_id, name=body.name,
        concurrency=body.concurrency, principal=principal, dataset_root=request.app.state.dataset_root))
    return ok({"campaign_id": campaign_id})


Campaigns = Annotated[list[str], Query(description="traces campaigns", min_length=1, max_length=20)]


@router.get("/api/v1/traces-timeline", response_model=Ok[Timeline],
            summary="Volume and each measure per day or week, with intervals; the worst traces")
def traces_timeline(request: Request, principal: Viewer, campaign_id: Campaigns,
                    period: Annotated[Literal["day", "week"], Query()] = "day", since: Since = None,
                    until: Until = None, where: Where = [],  # noqa: B006
                    worst: Annotated[str | None, Query(max_length=100)] = None) -> dict[str, Any]:
    """Means with 95% t intervals, pass rates with Wilson intervals; `worst` names the measure to rank by."""
    store = request.app.state.store
    chosen = selection(since, until, where, "")
    rows = [row for row in judged_traces(store, campaign_id, principal=principal)
            if chosen.keeps(row.trace) and (chosen.since is None or row.trace.started_at >= chosen.since)
            and (chosen.until is None or row.trace.started_at < chosen.until)]
    figures = timeline(rows, list_traces(store, chosen, principal=principal), period)
    ranked = worst_traces(rows, worst) if worst else []
    return ok({"periods": [f.to_dict() for f in figures], "worst": [row.trace.to_dict() for row in ranked]})


@router.get("/api/v1/traces-comparison", response_model=Ok[Compared],
            summary="Two groups of judged traces compared, unpaired (two releases, two windows)")
def traces_comparison(request: Request, principal: Viewer, campaign_id: Campaigns,
                      a: Annotated[str, Query(max_length=200, description="KEY=VALUE or FROM..TO")],
                      b: Annotated[str, Query(max_length=200, description="KEY=VALUE or FROM..TO")],
                      effect_mean: Annotated[float, Query(gt=0, le=100)] = 0.25,
                      effect_rate: Annotated[float, Query(gt=0, lt=1)] = 0.05) -> dict[str, Any]:
    """Welch's interval and test for means, Newcombe's interval and the z-test for pass rates; power, MDE and the
    answers needed per group."""
    rows = judged_traces(request.app.state.store, campaign_id, principal=principal)
    found = compare_groups(rows, parse_group(a), parse_group(b), effect_mean=effect_mean, effect_rate=effect_rate)
    return ok({"comparison": found.to_dict()})
