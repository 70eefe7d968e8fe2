"""Bearer API keys: who is calling (tenant), what they may do (role), which routes (capability)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from evalcore.api.errors import ApiError
from evalcore.keys import EVALUATION_CAPABILITIES, KeyInfo, verify_key

# auto_error=False: a missing header must answer our 401 envelope, not FastAPI's own error.
bearer = HTTPBearer(auto_error=False, description="An API key from `python -m evalcore keys create`")


def _missing_key_message(header: str) -> str:
    """Why no key was found; never repeats the header, which may hold a secret."""
    if not header.strip():
        return "missing API key: send 'Authorization: Bearer <key>'"
    scheme, _, rest = header.strip().partition(" ")
    if not rest.strip():
        return "the Authorization header has no scheme or no key: write it as 'Bearer <key>'"
    return f"the Authorization scheme must be Bearer (found {scheme[:20]!r}): write it as 'Bearer <key>'"


def current_key(request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> KeyInfo:
    """The caller's active key; 401 when the header is missing or the key unknown or revoked."""
    if credentials is None or not credentials.credentials:
        raise ApiError(401, _missing_key_message(request.headers.get("authorization", "")))
    key = verify_key(request.app.state.store, credentials.credentials)
    if key is None:
        raise ApiError(401, "invalid or revoked API key")
    return key


async def authentication_error(request: Request) -> ApiError | None:
    """The 401 this request deserves, if any (for answers given before dependencies run)."""
    try:
        current_key(request, await bearer(request))
    except ApiError as error:
        return error
    return None


def _checker(admin: bool, full_access: bool = False) -> Callable[[KeyInfo], KeyInfo]:
    def check(key: Annotated[KeyInfo, Depends(current_key)]) -> KeyInfo:
        if key.capability not in EVALUATION_CAPABILITIES:
            raise ApiError(403, f"this key's capability {key.capability!r} does not allow evaluation routes "
                                "(needs run_evaluations or full-access)")
        if admin and key.role != "admin":
            raise ApiError(403, f"this action needs an admin key (this key's role is {key.role!r})")
        if full_access and key.capability != "full-access":
            raise ApiError(403, "this action needs a key with the full-access capability")
        return key
    return check


# Viewer reads; admin creates, changes, deletes and launches; both need an evaluation capability.
Viewer = Annotated[KeyInfo, Depends(_checker(admin=False))]
Admin = Annotated[KeyInfo, Depends(_checker(admin=True))]
# Saving a target configuration decides which URLs and files the server uses: full-access only.
FullAdmin = Annotated[KeyInfo, Depends(_checker(admin=True, full_access=True))]
# Any active key, whatever its capability (key introspection).
Caller = Annotated[KeyInfo, Depends(current_key)]
