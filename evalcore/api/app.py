"""The FastAPI application: a thin face over the engine (validate, call, shape the answer)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI

import evalcore
from evalcore.api import (
    auth,
    docs,
    errors,
    routes_campaigns,
    routes_evaluation,
    routes_service,
    routes_suites,
    routes_targets,
)
from evalcore.api.limits import MAX_BODY_BYTES, BodyLimit
from evalcore.api.normalize import Normalize
from evalcore.campaigns import get_manager
from evalcore.store import Store

DESCRIPTION = """RAG evaluation workbench API: seed 000's evaluation tasks, seed 003's question suites
and their campaigns, paged per-question results and comparisons.

Every route except `/api/v1/health` needs `Authorization: Bearer <key>` (create keys with
`python -m evalcore keys create`). Errors always answer `{"success": false, "error": {"code", "message"}}`
(schema `ErrorResponse`). This page needs no internet; Swagger UI is at `/docs/swagger`.
"""


def create_app(db_path: str | Path | None = None, *, dataset_root: Path | None = None,
               max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The API over one database (default .evalcore/evalcore.db or $EVALCORE_DB)."""
    store = Store(db_path)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()

    # The stock /docs and /redoc pages load their scripts from CDNs: ours (evalcore.api.docs) work offline.
    app = FastAPI(title="evalcore", version=evalcore.__version__, description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.store = store
    app.state.dataset_root = dataset_root
    # The manager is process-wide and starts worker threads: made on the first launch only.
    app.state.manager = functools.cache(lambda: get_manager(store.path))
    errors.install(app, auth.authentication_error)
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    app.add_middleware(Normalize)
    for module in (routes_evaluation, routes_suites, routes_targets, routes_campaigns, routes_service, docs):
        app.include_router(module.router)
    return app
