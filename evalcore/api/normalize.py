"""Request normalisation before routing: trailing slashes and HEAD."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class Normalize:
    """`/api/v1/eval-suites/` is `/api/v1/eval-suites`; HEAD is GET without the body.

    Without this, a trailing slash answers a bare 307 redirect built from the Host header (an empty
    body that scripts take for success), and HEAD answers 405 although HTTP requires it wherever GET works.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            # A copy: the server keeps the original scope and must still see HEAD to send no body.
            scope = dict(scope)
            if len(path) > 1 and path.endswith("/"):
                scope["path"] = path.rstrip("/") or "/"
                scope["raw_path"] = (scope.get("raw_path") or path.encode()).rstrip(b"/") or b"/"
            if scope["method"] == "HEAD":
                scope["method"] = "GET"
        await self.app(scope, receive, send)
