"""Request body size limit, enforced before any handler reads the body."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalcore.api.error_envelope import envelope

MAX_BODY_BYTES = 4 * 1024 * 1024  # room for a full suite: 100 cases at their longest fields
# Before a 413, the rest of a body up to this many times the limit is read and dropped: a client
# still sending when the answer comes would otherwise see its connection reset, not the 413.
DRAIN_FACTOR = 4


class BodyLimit:
    """Answer 413 when a body is larger than the limit, whether or not it declares its length."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            if int(declared) <= DRAIN_FACTOR * self.limit:
                await _drain(receive, int(declared))
            await self._refuse(scope, receive, send)
            return
        # Read the whole (bounded) body first, so a chunked body cannot slip past the limit.
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                if more:
                    await _drain(receive, DRAIN_FACTOR * self.limit - len(body))
                await self._refuse(scope, receive, send)
                return
        await self.app(scope, _replay(bytes(body), receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = envelope(413, "payload_too_large", f"request body larger than the limit of {self.limit} bytes",
                            headers={"connection": "close"})
        await response(scope, receive, send)


async def _drain(receive: Receive, budget: int) -> None:
    """Read and drop up to `budget` more bytes of the request body."""
    while budget > 0:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        budget -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive channel that yields the already-read body, then defers to the real one."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return replay
