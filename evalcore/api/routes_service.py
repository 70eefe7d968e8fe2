"""Service routes: health (no key) and what the calling key grants."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from evalcore import __version__
from evalcore.api.auth import Caller
from evalcore.api.errors import ok
from evalcore.api.schemas import Health, Me, Ok

router = APIRouter(prefix="/api/v1", tags=["service"])


@router.get("/health", response_model=Ok[Health], summary="Liveness and database check (no key needed)")
def health(request: Request) -> dict[str, Any]:
    """Answers only when the database can be read."""
    request.app.state.store.read("SELECT 1")
    return ok({"status": "ok", "version": __version__})


@router.get("/me", response_model=Ok[Me], summary="What the calling key grants")
def me(key: Caller) -> dict[str, Any]:
    """Tenant, role and capability of the key (never its secret)."""
    return ok({"key_id": key.id, "tenant": key.tenant, "role": key.role, "capability": key.capability})
