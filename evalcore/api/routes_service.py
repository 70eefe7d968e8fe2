"""Service routes: health (no key) and what the calling key grants."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request

from evalcore import __version__
from evalcore.api.auth import Caller
from evalcore.api.error_envelope import ok
from evalcore.api.schemas import Health, Me, Ok
from evalcore.runtime.threads import DaemonPool
from evalcore.store import StoreUnavailable, answers

router = APIRouter(prefix="/api/v1", tags=["service"])
HEALTH_S = 1.0
_CHECKS = DaemonPool(2, "evalcore-health")  # a check stuck on a database away never holds the exit


@router.get("/health", response_model=Ok[Health], summary="Liveness and database check (no key needed)")
async def health(request: Request) -> dict[str, Any]:
    """Answers only when the database can be read, within a second (503 otherwise), whatever the other requests are
    doing: its check runs on threads of its own, not on the pool every other route shares."""
    check = asyncio.wrap_future(_CHECKS.submit(answers, request.app.state.store))
    try:
        await asyncio.wait_for(check, HEALTH_S)
    except TimeoutError:
        raise StoreUnavailable(f"the database did not answer within {HEALTH_S:g} s") from None
    return ok({"status": "ok", "version": __version__})


@router.get("/me", response_model=Ok[Me], summary="What the calling key grants")
def me(key: Caller) -> dict[str, Any]:
    """Tenant, role and capability of the key (never its secret)."""
    return ok({"key_id": key.id, "tenant": key.tenant, "role": key.role, "capability": key.capability})
