"""An HTTP agent on loopback for tests and benchmarks: answers `{"answer": ..., "sources": []}`, at once or
trickled a byte at a time, keeps the bodies it was sent, and counts the connections its peers still hold open."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LoopbackAgent:
    """Each POST answered with `answer` (or with what `reply` makes of the JSON body it was sent: None answers 500);
    with `trickle` seconds, the reply's bytes are sent one per `trickle` (a peer that never times a socket read out).
    `open` is how many connections are open now, `bodies` the JSON bodies received, in order."""

    def __init__(self, answer: str = "The refund window is 30 days.", trickle: float | None = None,
                 reply: Callable[[Any], str | None] | None = None) -> None:
        self.body = json.dumps({"answer": answer, "sources": []}).encode()
        self.reply = reply
        self.bodies: list[Any] = []
        self.trickle = trickle
        self.open = 0
        self.requests = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """The agent's URL (POST here)."""
        assert self._server is not None, "start the agent first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/ask"

    def __enter__(self) -> Self:
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def count(self, change: int, request: int = 0) -> None:
        """One more (or fewer) open connection, and requests served."""
        with self._lock:
            self.open += change
            self.requests += request


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


def _handler_for(agent: LoopbackAgent) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real agents do

        def log_message(self, *args: object) -> None:
            """Quiet."""

        def setup(self) -> None:
            super().setup()
            agent.count(1)

        def finish(self) -> None:
            agent.count(-1)
            super().finish()

        def do_POST(self) -> None:
            sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            agent.count(0, 1)
            body = agent.body
            if agent.reply is not None:
                request = json.loads(sent or b"null")
                with agent._lock:
                    agent.bodies.append(request)
                answer = agent.reply(request)
                body = json.dumps({"answer": answer, "sources": []}).encode() if answer is not None else b"{}"
            self.send_response(200 if body != b"{}" else 500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self._write(body)
            except OSError:  # the peer gave up: the connection ends
                self.close_connection = True

        def _write(self, body: bytes) -> None:
            if agent.trickle is None:
                self.wfile.write(body)
                return
            for index in range(len(body)):
                self.wfile.write(body[index:index + 1])
                self.wfile.flush()
                time.sleep(agent.trickle)

    return Handler
