"""JSON over HTTP with retries: every remote call (chat endpoints, agents, rerankers) goes through `post_json`.

Exponential backoff with full jitter on timeouts, connection errors, 429, 5xx and malformed
replies; other 4xx fail at once (retrying a bad request cannot help).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import httpx

from evalcore.errors import EvalError
from evalcore.models.chat import ModelError, ReplyTooLarge

T = TypeVar("T")
MAX_RETRY_AFTER = 30.0  # seconds: never trust a server to park a worker longer
REPLY_BODY_ALLOWANCE = 1 << 20  # bytes of a reply body besides its text (see reply_byte_limit)


def backoff_delay(attempt: int, base: float, retry_after: float | None = None) -> float:
    """Full jitter: uniform in [0, base * 2**attempt), or the server's Retry-After when given."""
    if retry_after is not None:
        return min(retry_after, MAX_RETRY_AFTER)
    return random.uniform(0, base * 2 ** attempt)


class HttpReply(NamedTuple):
    """A reply read whole (and bounded): status, body bytes, headers."""

    status: int
    content: bytes
    headers: httpx.Headers

    @property
    def text(self) -> str:
        """The body as text (JSON is UTF-8)."""
        return self.content.decode("utf-8", "replace")


def reply_byte_limit(max_reply_chars: int) -> int:
    """The most bytes of a reply body read for a reply text of at most `max_reply_chars` characters.

    A character takes at most 12 bytes in JSON (a non-BMP character escaped as two \\uXXXX), and
    the rest of the body (structure, usage, an agent's sources) gets REPLY_BODY_ALLOWANCE.
    """
    return 12 * max_reply_chars + REPLY_BODY_ALLOWANCE


def post_json(client: httpx.Client, url: str, body: Any, *, headers: dict[str, str] | None = None,
              timeout: float, retries: int, backoff: float, parse: Callable[[Any], T],
              max_reply_chars: int | None = None) -> T:
    """POST JSON and parse the reply, retrying transient failures; ModelError after the last one.

    With `max_reply_chars`, a body larger than `reply_byte_limit` of it is refused (ReplyTooLarge,
    never retried) as soon as its Content-Length or the bytes read so far exceed the limit.
    """
    problem, retry_after = "", None
    limit = None if max_reply_chars is None else reply_byte_limit(max_reply_chars)
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_delay(attempt - 1, backoff, retry_after))
        retry_after = None
        try:
            response = _post(client, url, body, headers, timeout, limit, max_reply_chars)
        except httpx.TimeoutException:
            problem = f"no reply within {timeout:g} s"
            continue
        except httpx.TransportError as error:
            problem = f"connection failed ({error})"
            continue
        status = response.status
        if status == 429 or status >= 500:
            problem, retry_after = f"HTTP {status}: {response.text[:200]}", _retry_after(response.headers)
            continue
        if status >= 400:
            raise ModelError(f"HTTP {status}: {response.text[:300]}", status=status, body=response.text, where=url,
                             fix="check the URL, model name and API key in the target configuration")
        try:
            return parse(json.loads(response.content))
        except (ValueError, KeyError, IndexError, TypeError) as error:
            problem = f"malformed reply ({type(error).__name__}: {str(error)[:120]}): {response.text[:120]!r}"
    raise ModelError(f"failed after {retries + 1} attempts: {problem}", where=url,
                     fix="check that the service is up, or raise timeout/retries in the target configuration")


def _post(client: httpx.Client, url: str, body: Any, headers: dict[str, str] | None, timeout: float,
          limit: int | None, max_reply_chars: int | None) -> HttpReply:
    """One POST, its body read in chunks and given up at `limit` bytes (ReplyTooLarge)."""
    with client.stream("POST", url, json=body, headers=headers, timeout=timeout) as response:
        declared = response.headers.get("content-length", "")
        if limit is not None and declared.isdigit() and int(declared) > limit:
            raise _too_large(url, f"{int(declared):,} bytes (Content-Length)", limit, max_reply_chars)
        content = bytearray()
        for chunk in response.iter_bytes():  # decompressed: a compressed bomb is bounded too
            content += chunk
            if limit is not None and len(content) > limit:
                raise _too_large(url, f"more than {limit:,} bytes", limit, max_reply_chars)
        return HttpReply(response.status_code, bytes(content), response.headers)


def _too_large(url: str, size: str, limit: int, max_reply_chars: int | None) -> ReplyTooLarge:
    return ReplyTooLarge(f"the reply body is {size}, over the {limit:,} bytes that max_reply_chars = "
                         f"{max_reply_chars:,} allows", where=url)


def _retry_after(headers: httpx.Headers) -> float | None:
    try:
        return max(0.0, float(headers.get("retry-after", "")))
    except ValueError:
        return None


def check_reachable(client: httpx.Client, url: str, headers: dict[str, str], timeout: float, key: str) -> None:
    """Any HTTP answer (even 404 or 405) proves a server is there; no answer is an EvalError."""
    try:
        client.get(url, headers=headers, timeout=min(timeout, 10.0))
    except httpx.HTTPError as error:
        raise EvalError(f"unreachable ({type(error).__name__}: {error})", where=url,
                        fix=f"start the server or correct {key}") from None


def new_client() -> httpx.Client:
    """One pooled client per model: sized for a campaign's concurrency."""
    return httpx.Client(limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))
