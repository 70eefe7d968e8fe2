"""The one error envelope of the API: `{"success": false, "error": {"code", "message"}}`."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match

from evalcore.access.principals import Forbidden
from evalcore.api.inputs import NOT_UNICODE, NOT_UNICODE_MESSAGE, escaped
from evalcore.datasets import DATASET_ROOT
from evalcore.errors import EvalError
from evalcore.store import Conflict, NotFound, StoreUnavailable

log = logging.getLogger("evalcore.api")
# The top-level request fields an engine error's `where` may name; any other `where` (a dataset
# reference, a path, a suite id) is not a field of the client's request.
REQUEST_FIELDS = frozenset({"dataset_id", "knowledge_base_id", "chat_id", "rerank_id", "name", "agent_id", "cases",
                            "use_judge", "config", "judges", "judge_samples", "judge_model", "judge_thresholds",
                            "concurrency", "time_limit", "max_failed_share", "max_cost"})
SHOWN_CHARS = 80
NOT_UTF8_MESSAGE = "not UTF-8 text (a binary file, or text in another encoding): send the file saved as UTF-8"

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    500: "internal_error",
    503: "unavailable",
}


class ErrorDetail(BaseModel):
    """What went wrong; `field` names the request field at fault, `running_id` the blocking campaign,
    `existing_id` the suite that already has the name asked for."""

    code: str
    message: str
    field: str | None = None
    running_id: str | None = None
    existing_id: str | None = None


class ErrorResponse(BaseModel):
    """Every failure has this shape."""

    success: bool
    error: ErrorDetail


# For the OpenAPI document of the authenticated routes.
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    status: {"model": ErrorResponse, "description": description} for status, description in (
        (400, "the body is not parseable as JSON (syntax, encoding)"), (401, "missing, unknown or revoked API key"),
        (403, "the key's role or capability does not allow this"),
        (404, "no such object for this tenant"),
        (409, ("a campaign is already running (running_id names it), or a suite of that name exists "
               "(existing_id names it)")),
        (413, "request body over the size limit"), (415, "the body is not JSON (Content-Type: application/json)"),
        (422, "malformed request; `field` names the culprit"), (500, "unexpected server error (no internals)"),
        (503, "the database cannot be reached for now: try again after the seconds Retry-After gives"))
}


class ApiError(Exception):
    """An error answered to the client as it is: status, code, message, optional extra fields."""

    def __init__(self, status: int, message: str, *, code: str | None = None, **extra: object) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or CODES.get(status, "error")
        self.message = message
        self.extra = extra


def envelope(status: int, code: str, message: str, headers: dict[str, str] | None = None,
             **extra: object) -> JSONResponse:
    """The error response every failure path uses (text that echoes a client's value is made encodable)."""
    error = {"code": code, "message": escaped(message),
             **{k: escaped(v) if isinstance(v, str) else v for k, v in extra.items() if v is not None}}
    return JSONResponse({"success": False, "error": error}, status_code=status, headers=headers)


def shown(value: str) -> str:
    """A client's value quoted in a message, cut short: a 100 kB id must not come back 100 kB long."""
    return repr(value) if len(value) <= SHOWN_CHARS else repr(value[:SHOWN_CHARS]) + f"... ({len(value)} characters)"


def not_found(kind: str, ident: str) -> ApiError:
    """The same 404 for a missing object and for another tenant's object (no existence leak)."""
    return ApiError(404, f"no {kind} with id {shown(ident)}")


def _field(location: tuple[Any, ...]) -> str:
    """`('body', 'cases', 3, 'question')` -> `cases[3].question`; query and path keep their name."""
    parts = [p for p in location if p not in ("body", "query", "path", "header")]
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "body"


def _validation_message(error: dict[str, Any]) -> tuple[str, str]:
    """(field, one line naming it); limits and JSON syntax errors get plainer words than pydantic's."""
    kind, context = error.get("type"), error.get("ctx") or {}
    if kind == "json_invalid":
        position = next((p for p in error.get("loc", ()) if isinstance(p, int)), None)
        return "body", f"body: not valid JSON ({context.get('error', 'syntax error')} at character {position})"
    field = _field(tuple(error.get("loc", ())))
    if kind == "string_unicode" and isinstance(error.get("input"), bytes):  # a raw body (a CSV) not in UTF-8
        return field, f"{field}: {NOT_UTF8_MESSAGE}"
    if kind in (NOT_UNICODE, "string_unicode"):  # text from JSON holding an unpaired \ud800-\udfff escape
        field += context.get("path", "")
        return field, f"{field}: {NOT_UNICODE_MESSAGE}"
    if kind == "too_long" and "max_length" in context:
        return field, f"{field}: at most {context['max_length']} items allowed (found {context.get('actual_length')})"
    return field, f"{field}: {str(error.get('msg', 'invalid value')).removeprefix('Value error, ')}"


def _on_validation(authentication_error: Callable[[Request], Awaitable[ApiError | None]]) -> Callable[..., Any]:
    async def handle(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI parses bodies before running dependencies: a caller without a valid key must get
        # its 401 first, not a description of what its body got wrong.
        refusal = await authentication_error(request) or _body_kind_error(request, exc)
        return await _on_api_error(request, refusal) if refusal else _validation_response(exc)
    return handle


def _is_json(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _body_kind_error(request: Request, exc: RequestValidationError) -> ApiError | None:
    """415 for a body that is not JSON (a form, text); 422 for JSON that is not an object."""
    whole_body = [e for e in exc.errors() if tuple(e.get("loc", ())) == ("body",)]
    if not whole_body or whole_body[0].get("type") not in ("model_attributes_type", "dict_type"):
        return None
    content_type = request.headers.get("content-type", "")
    if not _is_json(content_type):
        return ApiError(415,
                        f"body: send JSON with 'Content-Type: application/json' (found {content_type or 'none'!r})")
    found = type(whole_body[0].get("input")).__name__
    kind = {"list": "an array", "str": "a string", "int": "a number", "float": "a number", "bool": "a boolean"}
    return ApiError(422, f"body: expected a JSON object, found {kind.get(found, found)}", field="body")


def _validation_response(exc: RequestValidationError) -> JSONResponse:
    problems = [_validation_message(e) for e in exc.errors()] or [("body", "body: invalid request")]
    message = "; ".join(line for _, line in problems[:5])
    # A body that is not JSON at all is a bad request (400); JSON with wrong content is 422.
    status = 400 if any(e.get("type") == "json_invalid" for e in exc.errors()) else 422
    return envelope(status, CODES[status], message, field=problems[0][0])


async def _on_api_error(_: Request, exc: ApiError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return envelope(exc.status, exc.code, exc.message, headers=headers, **exc.extra)


async def _on_not_found(_: Request, exc: NotFound) -> JSONResponse:
    return envelope(404, "not_found", exc.line())


async def _on_forbidden(_: Request, exc: Forbidden) -> JSONResponse:
    return envelope(403, "forbidden", exc.message)


async def _on_conflict(_: Request, exc: Conflict) -> JSONResponse:
    # The message names the running campaign too, for clients that only show messages.
    return envelope(409, "conflict", exc.line(), running_id=exc.running_id or None)


async def _on_unavailable(_: Request, exc: StoreUnavailable) -> JSONResponse:
    # The server's dependency, not the caller, is at fault: the same request may work shortly.
    return envelope(503, "unavailable", "the database cannot be reached for now; try again shortly",
                    headers={"Retry-After": str(StoreUnavailable.RETRY_AFTER_S)})


async def _on_eval_error(request: Request, exc: EvalError) -> JSONResponse:
    # A user-fixable engine error reached the API without a more specific mapping: the request
    # was understood but cannot be carried out as given.
    field = exc.where if exc.where in REQUEST_FIELDS else None
    # Engine messages may name files under the server's dataset folder: keep the names, not the paths.
    root = f"{(request.app.state.dataset_root or DATASET_ROOT).resolve()}/"
    return envelope(422, "invalid_request", "; ".join(exc.problems).replace(root, ""), field=field)


def _http_message(exc: StarletteHTTPException, request: Request) -> str:
    """FastAPI's and Starlette's own refusals in words a client can act on."""
    if exc.status_code == 404:
        return "no such endpoint"
    if exc.status_code == 405:
        return f"method {request.method} is not allowed on {request.url.path} (allowed: {_allowed(request)})"
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        return "body: could not be parsed as JSON (check its encoding is UTF-8 and its nesting depth)"
    return exc.detail if isinstance(exc.detail, str) else CODES.get(exc.status_code, "error")


def _allowed(request: Request) -> str:
    """Every method some route accepts on this path (Starlette's Allow names only the first route's)."""
    def accepts(method: str) -> bool:
        scope = {**request.scope, "method": method}
        return any(isinstance(r, BaseRoute) and r.matches(scope)[0] == Match.FULL for r in request.app.routes)

    methods = [m for m in ("DELETE", "GET", "POST", "PUT") if accepts(m)]
    return ", ".join(methods + (["HEAD"] if "GET" in methods else []))


async def _on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405:
        headers = {**(headers or {}), "Allow": _allowed(request)}
    return envelope(exc.status_code, CODES.get(exc.status_code, "error"), _http_message(exc, request), headers=headers)


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    # The traceback goes to the server log only; the client gets a reference to quote.
    reference = secrets.token_hex(4)
    log.error("unexpected error %s on %s %s", reference, request.method, request.url.path, exc_info=exc)
    return envelope(500, "internal_error", f"internal error (reference {reference}); see the server log")


def install(app: FastAPI, authentication_error: Callable[[Request], Awaitable[ApiError | None]]) -> None:
    """Route every kind of failure to the one envelope."""
    # The most specific handler wins (Starlette walks each exception's MRO).
    handlers: dict[type[Exception], Callable[..., Awaitable[JSONResponse]]] = {
        RequestValidationError: _on_validation(authentication_error), ApiError: _on_api_error,
        NotFound: _on_not_found, Conflict: _on_conflict, Forbidden: _on_forbidden, EvalError: _on_eval_error,
        StoreUnavailable: _on_unavailable,
        StarletteHTTPException: _on_http, Exception: _on_unexpected,
    }
    for kind, handler in handlers.items():
        app.add_exception_handler(kind, handler)


def ok(data: object) -> dict[str, object]:
    """The success envelope."""
    return {"success": True, "data": data}
