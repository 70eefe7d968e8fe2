"""JSON over HTTP with retries: every remote call (chat endpoints, agents, rerankers) goes through `post_json`.

Exponential backoff with full jitter on timeouts, connection errors, 429, 5xx and malformed
replies; other 4xx fail at once (retrying a bad request cannot help).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from evalcore.errors import EvalError
from evalcore.models.chat import ModelError

T = TypeVar("T")
MAX_RETRY_AFTER = 30.0  # seconds: never trust a server to park a worker longer


def backoff_delay(attempt: int, base: float, retry_after: float | None = None) -> float:
    """Full jitter: uniform in [0, base * 2**attempt), or the server's Retry-After when given."""
    if retry_after is not None:
        return min(retry_after, MAX_RETRY_AFTER)
    return random.uniform(0, base * 2 ** attempt)


def post_json(client: httpx.Client, url: str, body: Any, *, headers: dict[str, str] | None = None,
              timeout: float, retries: int, backoff: float, parse: Callable[[Any], T]) -> T:
    """POST JSON and parse the reply, retrying transient failures; ModelError after the last one."""
    problem, retry_after = "", None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_delay(attempt - 1, backoff, retry_after))
        retry_after = None
        try:
            response = client.post(url, json=body, headers=headers, timeout=timeout)
        except httpx.TimeoutException:
            problem = f"no reply within {timeout:g} s"
            continue
        except httpx.TransportError as error:
            problem = f"connection failed ({error})"
            continue
        status = response.status_code
        if status == 429 or status >= 500:
            problem, retry_after = f"HTTP {status}: {response.text[:200]}", _retry_after(response)
            continue
        if status >= 400:
            raise ModelError(f"HTTP {status}: {response.text[:300]}", status=status, body=response.text, where=url,
                             fix="check the URL, model name and API key in the target configuration")
        try:
            return parse(response.json())
        except (ValueError, KeyError, IndexError, TypeError) as error:
            problem = f"malformed reply ({type(error).__name__}: {str(error)[:120]}): {response.text[:120]!r}"
    raise ModelError(f"failed after {retries + 1} attempts: {problem}", where=url,
                     fix="check that the service is up, or raise timeout/retries in the target configuration")


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
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
