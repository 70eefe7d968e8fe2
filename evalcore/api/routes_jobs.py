"""Jobs: long work other than campaigns (the pairwise judge), started by their own routes, read and cancelled
here."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from evalcore.api.auth import Admin, Viewer
from evalcore.api.error_envelope import ERROR_RESPONSES, not_found, ok
from evalcore.api.schemas import JobData, JobList, Ok
from evalcore.jobs.job_queue import cancel_job, get_job, list_jobs
from evalcore.store import NotFound

router = APIRouter(prefix="/api/v1", tags=["jobs"], responses=ERROR_RESPONSES)
JobId = Annotated[str, Path(max_length=300)]


def wake_jobs(request: Request) -> None:
    """Have this server's job workers look at the queue now (a job was just queued)."""
    workers = request.app.state.manager.job_workers
    if workers is not None:
        workers.wake()


@router.get("/jobs", response_model=Ok[JobList], summary="The tenant's newest jobs")
def jobs(request: Request, principal: Viewer,
         kind: Annotated[str | None, Query(max_length=100, description="only jobs of this kind (pairwise)")] = None,
         limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """Newest first: status, progress (done of total), and the result of those that succeeded."""
    found = list_jobs(request.app.state.store, kind=kind, limit=limit, principal=principal)
    return ok({"jobs": [job.to_dict() for job in found]})


@router.get("/jobs/{job_id}", response_model=Ok[JobData], summary="A job: its status, progress and result")
def job(request: Request, job_id: JobId, principal: Viewer) -> dict[str, Any]:
    """Poll it until its status is no longer queued or running; `result` holds what it produced."""
    try:
        return ok({"job": get_job(request.app.state.store, job_id, principal=principal).to_dict()})
    except NotFound:
        raise not_found("job", job_id) from None


@router.post("/jobs/{job_id}/cancel", status_code=202, response_model=Ok[JobData], summary="Cancel a job")
def cancel(request: Request, job_id: JobId, principal: Admin) -> dict[str, Any]:
    """A queued job ends at once; a running one stops after the pieces in flight (what it did is kept). 409 once it
    ended."""
    try:
        return ok({"job": cancel_job(request.app.state.store, job_id, principal=principal).to_dict()})
    except NotFound:
        raise not_found("job", job_id) from None
