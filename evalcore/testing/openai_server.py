"""A real loopback HTTP server speaking OpenAI chat completions and the common /rerank API.

Replies are scripted: each request takes the next item of `replies` (then `default`), or
`replies` is a function of (path, request JSON) returning one. An item is a text (a normal
reply) or a `Reply`, which can also be an HTTP error, a delay, or a malformed body:

    with FakeOpenAIServer(replies=[Reply.error(429), "Paris."], delay=0.2) as server:
        model = OpenAIChatModel(server.base_url, "fake")

`server.requests` records (path, JSON body, headers) of every request in arrival order.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text (a normal reply), or a status with a raw body, after a delay."""

    text: str | None = None
    status: int = 200
    body: str | None = None
    delay: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    prompt_tokens: int = 11
    completion_tokens: int = 7
    cached_tokens: int | None = None  # of the prompt tokens, those read from a prompt cache (None: not reported)
    payload: dict[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def error(cls, status: int, message: str = "scripted error", retry_after: float | None = None) -> Reply:
        """An HTTP error with an OpenAI-style error body."""
        headers = (("Retry-After", f"{retry_after:g}"),) if retry_after is not None else ()
        return cls(status=status, body=json.dumps({"error": {"message": message}}), headers=headers)

    @classmethod
    def malformed(cls) -> Reply:
        """A 200 whose body is not JSON."""
        return cls(body="{'choices': [oops")

    @classmethod
    def slow(cls, seconds: float, text: str = "late") -> Reply:
        """A normal reply after `seconds` (longer than a client timeout = a timeout)."""
        return cls(text=text, delay=seconds)

    @classmethod
    def json(cls, payload: dict[str, Any]) -> Reply:
        """A 200 with this exact JSON body (e.g. a /rerank or agent reply)."""
        return cls(payload=payload)


class FakeOpenAIServer:
    """Context manager running the server on 127.0.0.1 on a free port, in a background thread."""

    def __init__(self, replies: Iterable[str | Reply] | Callable[[str, Any], str | Reply] = (),
                 *, delay: float = 0.0, default: str | Reply = "ok") -> None:
        self._script = replies if callable(replies) else list(replies)
        self.delay = delay
        self.default = default
        self.requests: list[tuple[str, Any, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """e.g. http://127.0.0.1:PORT/v1"""
        return f"{self.root_url}/v1"

    @property
    def root_url(self) -> str:
        """e.g. http://127.0.0.1:PORT"""
        if self._server is None:
            raise RuntimeError("the server is not started: use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Bind and serve in a daemon thread."""
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and free the port (requests still sleeping finish on their own)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def next_reply(self, path: str, body: Any, headers: dict[str, str]) -> Reply:
        """Record the request and take the scripted reply for it."""
        with self._lock:
            self.requests.append((path, body, headers))
            if callable(self._script):
                item = self._script(path, body)
            else:
                item = self._script.pop(0) if self._script else self.default
        return item if isinstance(item, Reply) else Reply(text=item)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a bench opens dozens of connections at once


def _handler_for(fake: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

        def log_message(self, *args: object) -> None:
            """Silence per-request logging."""

        def do_GET(self) -> None:
            """/v1/models: enough for a reachability check."""
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}))

        def do_POST(self) -> None:
            """Chat completions, /rerank, or any other path (an agent): scripted reply."""
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = None
            reply = fake.next_reply(self.path, body, dict(self.headers.items()))
            time.sleep(fake.delay + reply.delay)
            if reply.body is not None:
                self._send(reply.status, reply.body, reply.headers)
            elif reply.payload is not None:
                self._send(reply.status, json.dumps(reply.payload), reply.headers)
            elif self.path.rstrip("/").endswith("rerank"):
                self._send(reply.status, json.dumps(rerank_payload(body, reply)), reply.headers)
            else:
                self._send(reply.status, json.dumps(chat_payload(body, reply)), reply.headers)

        def _send(self, status: int, text: str, headers: Iterable[tuple[str, str]] = ()) -> None:
            data = text.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                self.close_connection = True

    return Handler


def chat_payload(body: Any, reply: Reply) -> dict[str, Any]:
    """An OpenAI chat.completion object carrying the scripted text."""
    model = body.get("model", "fake") if isinstance(body, dict) else "fake"
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": reply.text or ""}}],
        "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                  **({"prompt_tokens_details": {"cached_tokens": reply.cached_tokens}}
                     if reply.cached_tokens is not None else {})},
    }


def rerank_payload(body: Any, reply: Reply) -> dict[str, Any]:
    """Unscripted /rerank: score each document by the share of query words it contains."""
    query = set(_words(body.get("query", "")))
    documents = body.get("documents", [])
    scores = [len(query & set(_words(doc))) / max(len(query), 1) for doc in documents]
    order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))[: body.get("top_n") or len(documents)]
    return {"results": [{"index": i, "relevance_score": scores[i]} for i in order]}


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", str(text).casefold())
