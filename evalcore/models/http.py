"""JSON over HTTP with retries: every remote call (chat endpoints, agents, rerankers) goes through `post_json`.

Exponential backoff with full jitter on timeouts, connection errors, 429, 5xx and malformed
replies; other 4xx fail at once (retrying a bad request cannot help).

Requests go through `HttpClient`, the standard library's `http.client` with one keep-alive
connection per thread and host: a campaign keeps dozens of questions in flight, and a request
costs about a quarter of the CPU it takes through httpx (0.13 ms against 0.5 ms measured here),
CPU that every other question in flight waits for under the GIL.

Every request made while a `Calls` is active (a campaign's, one of its questions') is tracked by it:
closing a question's `Calls` when it passes its time limit shuts the connection it waits on, so a peer
that trickles its reply holds neither a thread nor a socket past the limit; closing a campaign's
closes every connection its clients keep, idle ones included.

Every call has an overall deadline: an attempt ends `timeout` seconds after it starts (connect, send and
every read of the reply together, however slowly a peer trickles its bytes: a watchdog shuts the socket
then), and the whole call, retries and their back-off included, ends within `call_deadline`: every
attempt's `timeout` and the longest back-off between them.
"""

from __future__ import annotations

import contextvars
import heapq
import http.client
import json
import random
import socket
import ssl
import threading
import time
import urllib.request
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

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
    """A reply read whole (and bounded): status, body bytes, headers (names in lower case)."""

    status: int
    content: bytes
    headers: Mapping[str, str]

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


class Timeout(OSError):
    """No reply within the time limit."""


class GivenUp(OSError):
    """The work these calls were for was given up (its time limit passed, or its campaign ended)."""


class Calls:
    """The HTTP connections of one piece of work (a campaign, or one question of it, `parent` the campaign's).

    `close` shuts the connections its requests are waiting on (their thread wakes at once), makes every
    later request fail with GivenUp, and, for a campaign, closes the clients its requests used.
    """

    def __init__(self, parent: Calls | None = None) -> None:
        self.parent = parent
        self.closed = False
        self._busy: set[http.client.HTTPConnection] = set()
        self._clients: weakref.WeakSet[HttpClient] = weakref.WeakSet()
        self._lock = threading.Lock()

    @contextmanager
    def active(self) -> Iterator[None]:
        """Track the requests this thread makes meanwhile."""
        token = _ACTIVE.set(self)
        try:
            yield
        finally:
            _ACTIVE.reset(token)

    def enter(self, client: HttpClient, conn: http.client.HTTPConnection) -> None:
        """A request starts on `conn`; GivenUp when the work was given up."""
        with self._lock:
            if self.closed:
                raise GivenUp("given up")
            self._busy.add(conn)
            if self.parent is None:
                self._clients.add(client)
        if self.parent is not None:
            self.parent.enter(client, conn)

    def leave(self, conn: http.client.HTTPConnection) -> None:
        """The request on `conn` is over."""
        with self._lock:
            self._busy.discard(conn)
        if self.parent is not None:
            self.parent.leave(conn)

    def close(self) -> None:
        """Give up: wake the requests in progress, refuse new ones, close the clients' idle connections."""
        with self._lock:
            self.closed = True
            busy, clients = list(self._busy), list(self._clients)
        for conn in busy:
            _shut(conn)
        for client in clients:
            client.close()


_ACTIVE: contextvars.ContextVar[Calls | None] = contextvars.ContextVar("evalcore_calls", default=None)


def _shut(conn: http.client.HTTPConnection) -> None:
    """Wake a thread blocked on the connection (its own error path then closes it)."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed


class _Watch:
    """One exchange's deadline: `fired` once the watchdog shut its connection."""

    __slots__ = ("conn", "deadline", "done", "fired")

    def __init__(self, conn: http.client.HTTPConnection, deadline: float) -> None:
        self.conn, self.deadline, self.done, self.fired = conn, deadline, False, False

    def __lt__(self, other: _Watch) -> bool:
        return self.deadline < other.deadline


class _Watchdog:
    """Shuts the connection of an exchange still going at its deadline (one thread for the process, started on
    first use): a socket's timeout bounds each read, not a reply trickled a byte at a time."""

    def __init__(self) -> None:
        self._heap: list[_Watch] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, conn: http.client.HTTPConnection, deadline: float) -> _Watch:
        """Watch `conn` until `end` is called on the returned watch."""
        entry = _Watch(conn, deadline)
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="evalcore-http-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()
        return entry

    def end(self, entry: _Watch) -> None:
        """The exchange is over (it stays in the heap until its deadline, or is dropped when it is the first)."""
        with self._cond:
            entry.done = True

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait(60.0)
                    continue
                wait = self._heap[0].deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(min(wait, 60.0))
                    continue
                entry = heapq.heappop(self._heap)
                entry.fired = True
            _shut(entry.conn)


_WATCHDOG = _Watchdog()


class HttpClient:
    """HTTP/1.1 with keep-alive: idle connections kept per (scheme, host, port), lent to one request at a time.

    HTTPS checks certificates with the system's trust store; HTTPS_PROXY / HTTP_PROXY are honoured
    (a CONNECT tunnel for HTTPS). Replies are never compressed (no Accept-Encoding is sent), so a
    body's size is what a size limit sees.
    """

    MAX_IDLE = 64  # per host: a campaign's concurrency, at most

    def __init__(self) -> None:
        self._idle: dict[tuple[str, str, int | None], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._closed = False

    @property
    def _tls(self) -> ssl.SSLContext:
        """The certificate checks of HTTPS, made on the first HTTPS connection: loading the system's trust store
        takes tens of milliseconds, which a campaign on a plain-HTTP server (a local model) need not wait for."""
        with self._lock:
            if self._context is None:
                self._context = ssl.create_default_context()
            return self._context

    def close(self) -> None:
        """Close the idle connections and keep none from now on (a later request opens its own, then closes it)."""
        with self._lock:
            self._closed = True
            idle = [conn for conns in self._idle.values() for conn in conns]
            self._idle.clear()
        for conn in idle:
            conn.close()

    def request(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str], timeout: float,
                limit: int | None = None) -> tuple[int, bytes, dict[str, str]]:
        """Send and read the reply (at most `limit` + 1 bytes of it) within `timeout` seconds in all; Timeout or
        OSError when it fails."""
        parts = urlsplit(url)
        where = (parts.scheme, parts.hostname or "", parts.port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        deadline = time.monotonic() + timeout
        conn, reused = self._borrow(where, timeout)
        try:
            reply = self._tracked(conn, method, path, body, headers, limit, deadline)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            conn.close()
            if not reused:
                raise
            # The server closed an idle keep-alive connection: the request never reached it.
            conn, _ = self._borrow(where, max(0.01, deadline - time.monotonic()), fresh=True)
            reply = self._tracked(conn, method, path, body, headers, limit, deadline)
        except BaseException:
            conn.close()
            raise
        self._give_back(where, conn)
        return reply

    def _tracked(self, conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None,
                 headers: Mapping[str, str], limit: int | None, deadline: float) -> tuple[int, bytes, dict[str, str]]:
        """One exchange, shut at `deadline` (Timeout) and known to the active Calls (which may shut it: GivenUp)."""
        if conn.sock is None:
            try:
                conn.connect()  # a socket to shut from the start, within the connection's timeout
            except TimeoutError:
                raise Timeout("timed out") from None
        calls = _ACTIVE.get()
        watch = _WATCHDOG.watch(conn, deadline)
        try:
            if calls is not None:
                calls.enter(self, conn)
            try:
                reply = _exchange(conn, method, path, body, headers, limit)
            except (OSError, http.client.HTTPException):
                if calls is not None and calls.closed:
                    raise GivenUp("given up") from None
                if watch.fired:
                    raise Timeout("timed out") from None
                raise
            finally:
                if calls is not None:
                    calls.leave(conn)
        finally:
            _WATCHDOG.end(watch)
        if watch.fired:  # shut while reading a body of unknown length: what was read is cut short
            conn.close()
            raise Timeout("timed out")
        return reply

    def _borrow(self, where: tuple[str, str, int | None], timeout: float,
                fresh: bool = False) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            idle = self._idle.get(where)
            conn = idle.pop() if idle and not fresh else None
        if conn is None:
            return self._new(*where, timeout), False
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn, True

    def _give_back(self, where: tuple[str, str, int | None], conn: http.client.HTTPConnection) -> None:
        if conn.sock is None:  # closed after its reply (the server said so, or the body was cut)
            return
        with self._lock:
            idle = self._idle.setdefault(where, [])
            if len(idle) < self.MAX_IDLE and not self._closed:
                idle.append(conn)
                return
        conn.close()

    def _new(self, scheme: str, host: str, port: int | None, timeout: float) -> http.client.HTTPConnection:
        proxy = urllib.request.getproxies().get(scheme) if not urllib.request.proxy_bypass(host) else None
        if scheme == "https":
            if proxy:
                proxied = urlsplit(proxy)
                conn = http.client.HTTPSConnection(proxied.hostname or "", proxied.port, timeout=timeout,
                                                   context=self._tls)
                conn.set_tunnel(host, port)
                return conn
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=self._tls)
        if scheme != "http":
            raise OSError(f"unsupported URL scheme {scheme!r} (http or https)")
        return http.client.HTTPConnection(host, port, timeout=timeout)


def _exchange(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None,
              headers: Mapping[str, str], limit: int | None) -> tuple[int, bytes, dict[str, str]]:
    try:
        conn.request(method, path, body=body, headers=dict(headers))
        response = conn.getresponse()
        head = {name.lower(): value for name, value in response.getheaders()}
        declared = head.get("content-length", "")
        if limit is not None and declared.isdigit() and int(declared) > limit:
            conn.close()
            return response.status, b"", head | {"x-too-large": declared}
        content = response.read() if limit is None else _bounded(response, limit)
    except TimeoutError:
        raise Timeout("timed out") from None
    if len(content) > (limit if limit is not None else len(content)):
        conn.close()  # the rest of the body was not read: the connection cannot be reused
    elif response.will_close:
        conn.close()
    return response.status, content, head


def _bounded(response: http.client.HTTPResponse, limit: int) -> bytes:
    """The body, read in chunks and given up one byte past `limit`."""
    content = bytearray()
    while len(content) <= limit and (chunk := response.read(min(1 << 16, limit + 1 - len(content)))):
        content += chunk
    return bytes(content)


def call_deadline(timeout: float, retries: int, backoff: float) -> float:
    """The seconds a whole call may take: every attempt's `timeout` and the longest back-off between them."""
    return (retries + 1) * timeout + sum(min(backoff * 2.0 ** attempt, MAX_RETRY_AFTER) for attempt in range(retries))


def post_json(client: HttpClient, url: str, body: Any, *, headers: dict[str, str] | None = None,
              timeout: float, retries: int, backoff: float, parse: Callable[[Any], T],
              max_reply_chars: int | None = None, refused: Callable[[int, str], bool] | None = None) -> T:
    """POST JSON and parse the reply, retrying transient failures; ModelError after the last one.

    Each attempt ends `timeout` seconds after it starts, and the call, its back-off included, within
    `call_deadline` seconds. With `max_reply_chars`, a body larger than `reply_byte_limit` of it is refused
    (ReplyTooLarge, never retried) as soon as its Content-Length or the bytes read so far exceed the limit.
    An error reply `refused(status, body)` calls a refusal of the request (a server answering 500 to a
    parameter it does not take) is not retried: ModelError with its status and body at once.
    """
    problem, retry_after = "", None
    limit = None if max_reply_chars is None else reply_byte_limit(max_reply_chars)
    overall = call_deadline(timeout, retries, backoff)
    deadline = time.monotonic() + overall
    attempts = 0
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(min(backoff_delay(attempt - 1, backoff, retry_after), max(0.0, deadline - time.monotonic())))
        left = deadline - time.monotonic()
        if left <= 0:
            problem = f"{problem}; no time left of the call's {overall:g} s"
            break
        attempts += 1
        retry_after = None
        try:
            response = _post(client, url, body, headers, min(timeout, left), limit, max_reply_chars)
        except GivenUp:
            raise ModelError("given up: the question passed its time limit, or its campaign ended", where=url) from None
        except Timeout:
            problem = f"no reply within {round(min(timeout, left), 2):g} s"
            continue
        except (OSError, http.client.HTTPException) as error:
            problem = f"connection failed ({type(error).__name__}: {error})"
            continue
        status = response.status
        if status >= 400 and refused is not None and refused(status, response.text):
            raise ModelError(f"HTTP {status}: {response.text[:300]}", status=status, body=response.text, where=url)
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
    raise ModelError(f"failed after {attempts} attempt{'s' if attempts != 1 else ''}: {problem}", where=url,
                     fix="check that the service is up, or raise timeout/retries in the target configuration")


def _post(client: HttpClient, url: str, body: Any, headers: dict[str, str] | None, timeout: float,
          limit: int | None, max_reply_chars: int | None) -> HttpReply:
    """One POST, its body read in chunks and given up at `limit` bytes (ReplyTooLarge)."""
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    sent = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
    status, content, head = client.request("POST", url, payload, sent, timeout, limit)
    if "x-too-large" in head:
        raise _too_large(url, f"{int(head['x-too-large']):,} bytes (Content-Length)", limit or 0, max_reply_chars)
    if limit is not None and len(content) > limit:
        raise _too_large(url, f"more than {limit:,} bytes", limit, max_reply_chars)
    return HttpReply(status, content, head)


def _too_large(url: str, size: str, limit: int, max_reply_chars: int | None) -> ReplyTooLarge:
    return ReplyTooLarge(f"the reply body is {size}, over the {limit:,} bytes that max_reply_chars = "
                         f"{max_reply_chars:,} allows", where=url)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    try:
        return max(0.0, float(headers.get("retry-after", "")))
    except ValueError:
        return None


def check_reachable(client: HttpClient, url: str, headers: dict[str, str], timeout: float, key: str) -> None:
    """Any HTTP answer (even 404 or 405) proves a server is there; no answer is an EvalError."""
    try:
        client.request("GET", url, None, headers, min(timeout, 10.0), limit=1 << 16)
    except (OSError, http.client.HTTPException) as error:
        reason = "ConnectTimeout" if isinstance(error, Timeout) else type(error).__name__
        raise EvalError(f"unreachable ({reason}: {error})", where=url,
                        fix=f"start the server or correct {key}") from None


def new_client() -> HttpClient:
    """One client per model; each thread keeps its own keep-alive connection per host."""
    return HttpClient()
