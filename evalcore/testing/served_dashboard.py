"""The dashboard served for a browser to drive: `streamlit run` on a loopback port, and Debian's chromium.

Used by the browser tests and by bench/dashboard.py, so both measure and test the same server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

CHROMIUM = Path("/usr/bin/chromium")
# Headless, and nothing that reaches the network on its own.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serve_streamlit(script: Path, env: Mapping[str, str], log: Path, cwd: Path,
                    timeout: float = 120) -> Iterator[str]:
    """`streamlit run script` on a loopback port with these extra environment variables; yields its URL once it
    answers its health check, and stops it afterwards. Its output goes to `log`."""
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
               "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    with log.open("w") as output:
        process = subprocess.Popen(command, cwd=cwd, env={**os.environ, **env}, stdout=output,
                                   stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, process, timeout)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    """Poll Streamlit's health endpoint until it answers (or the server died, or `timeout` seconds passed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"streamlit did not answer within {timeout:g} s")
