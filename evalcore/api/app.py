"""The FastAPI application: a thin face over the engine (validate, call, shape the answer)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from evalcore import __version__
from evalcore.api import (
    auth,
    docs,
    error_envelope,
    routes_campaigns,
    routes_datasets,
    routes_evaluation,
    routes_gates,
    routes_jobs,
    routes_labels,
    routes_service,
    routes_suites,
    routes_targets,
    routes_testsets,
    routes_traces,
)
from evalcore.api.limits import MAX_BODY_BYTES, BodyLimit
from evalcore.api.normalize import Normalize
from evalcore.campaigns import get_manager
from evalcore.campaigns.listing import keep_ended_figures
from evalcore.compare import compare_with_previous, pairwise_job, power
from evalcore.testsets.generation_job import TESTSET

DESCRIPTION = """RAG evaluation workbench API: evaluation tasks, question suites
and their campaigns, paged per-question results and comparisons.

Every route except `/api/v1/health` needs `Authorization: Bearer <key>` (create keys with
`python -m evalcore keys create`). Errors always answer `{"success": false, "error": {"code", "message"}}`
(schema `ErrorResponse`). This page needs no internet; Swagger UI is at `/docs/swagger`.
"""


def create_app(db_path: str | Path | None = None, *, dataset_root: Path | None = None,
               max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The API over one database (default .evalcore/evalcore.db or $EVALCORE_DB)."""
    # One process, one writer per database: the API shares the campaign manager's store (the manager
    # is process-wide and outlives any one app, so the app does not close it).
    manager = get_manager(db_path)
    # The server's first comparison need not wait for scipy.special (its power figures): imported beside the start-up.
    power.prepare()
    manager.after_each(keep_ended_figures)  # lists and summaries then read its figures
    manager.after_each(compare_with_previous)
    # The pairwise judge and test-set generation run on this server's job threads, not in a request.
    manager.serve_jobs(pairwise_job.PAIRWISE, TESTSET)
    # The stock /docs and /redoc pages load their scripts from CDNs: ours (evalcore.api.docs) work offline.
    app = FastAPI(title="evalcore", version=__version__, description=DESCRIPTION,
                  docs_url=None, redoc_url=None)
    app.state.store = manager.store
    app.state.dataset_root = dataset_root
    app.state.manager = manager
    error_envelope.install(app, auth.authentication_error)
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    app.add_middleware(Normalize)
    for module in (routes_evaluation, routes_suites, routes_targets, routes_campaigns, routes_gates, routes_labels,
                   routes_datasets, routes_testsets, routes_jobs, routes_service, routes_traces, docs):
        app.include_router(module.router)
    return app
