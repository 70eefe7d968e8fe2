"""Bearer API keys: who is calling (tenant), what they may do (role), which routes (capability); the Principal
passed on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from evalcore.access.api_keys import KeyInfo, verify_key
from evalcore.access.principals import Action, Principal
from evalcore.api.error_envelope import ApiError

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


def current_key(request: Request,
                credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> KeyInfo:
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


def _checker(action: Action) -> Callable[[KeyInfo], Awaitable[Principal]]:
    # A coroutine: the check reads only the key already loaded, so it runs on the event loop rather than costing
    # every request a second hop to the thread pool (the key lookup itself, a store read, stays a thread's).
    async def check(key: Annotated[KeyInfo, Depends(current_key)]) -> Principal:
        principal = key.principal()
        if (reason := principal.refusal(action)) is not None:
            raise ApiError(403, reason)
        return principal
    return check


# The engine keeps the rules (evalcore.access.principals); checking them here too answers 403 before the body is read.
# Viewer reads; admin creates, changes, deletes and launches; both need an evaluation capability.
Viewer = Annotated[Principal, Depends(_checker(Action.READ))]
Admin = Annotated[Principal, Depends(_checker(Action.CHANGE))]
# Labelling questions: admins, and viewers when the operator sets EVALCORE_VIEWERS_LABEL=1.
Labeller = Annotated[Principal, Depends(_checker(Action.LABEL))]
# Saving a target configuration decides which URLs and files the server uses: full-access only.
FullAdmin = Annotated[Principal, Depends(_checker(Action.CONFIGURE))]
# Any active key, whatever its capability (key introspection).
Caller = Annotated[KeyInfo, Depends(current_key)]
