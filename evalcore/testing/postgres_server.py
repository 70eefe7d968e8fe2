"""A throwaway PostgreSQL server for tests and benchmarks: initdb and pg_ctl in a temporary folder, on loopback.

Debian's `postgresql` package puts its programs under /usr/lib/postgresql/<version>/bin; PostgreSQL refuses to
run as root, so as root the server runs as the `postgres` user the package creates.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def postgres_bin() -> Path | None:
    """The folder holding initdb and pg_ctl (the newest installed version), or None when PostgreSQL is absent."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent  # a link from /usr/local/bin leads to the version's folder
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as(user: pwd.struct_passwd | None, args: list[str]) -> None:
    """Run a PostgreSQL program, as `user` when given (its output in the error when it fails)."""
    def demote() -> None:
        if user is not None:
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)

    done = subprocess.run(args, capture_output=True, text=True, preexec_fn=demote if user else None, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} failed: {done.stderr or done.stdout}")


class PostgresServer:
    """A PostgreSQL server in a temporary folder on a free loopback port, which a fault test stops, starts and
    restarts (`pg_ctl -m immediate`: as a crash, without a checkpoint)."""

    def __init__(self, durable: bool = False) -> None:
        bin_dir = postgres_bin()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        self.bin_dir = bin_dir
        self.user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        self.folder = Path(tempfile.mkdtemp(prefix="evalcore-pg-"))
        self.data = self.folder / "data"
        if self.user is not None:
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
        self.port = _free_port()
        _run_as(self.user, [str(bin_dir / "initdb"), "-D", str(self.data), "-U", "evalcore", "--auth=trust", "-E",
                            "UTF8", "--locale=C.UTF-8", "--no-sync"])
        durability = "-c synchronous_commit=off" if durable else "-c fsync=off"
        self.options = f"-h 127.0.0.1 -p {self.port} -k {self.folder} {durability} -c max_connections=200"
        self.url = f"postgresql://evalcore@127.0.0.1:{self.port}/evalcore"

    def _ctl(self, *args: str) -> None:
        _run_as(self.user, [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), *args])

    def start(self) -> None:
        """Start the server and wait until it takes connections."""
        self._ctl("-o", self.options, "-l", str(self.folder / "log"), "-w", "start")

    def stop(self) -> None:
        """Stop at once, as a crash does (every connection is cut)."""
        self._ctl("-m", "immediate", "-w", "stop")

    def restart(self) -> None:
        """Stop at once and start again (the recovery replays its write-ahead log)."""
        self._ctl("-m", "immediate", "-o", self.options, "-l", str(self.folder / "log"), "-w", "restart")

    def remove(self) -> None:
        """Stop the server if it runs and remove its folder."""
        try:
            self.stop()
        except RuntimeError:
            pass  # not running
        shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def temporary_postgres(durable: bool = False) -> Iterator[str]:
    """Start a PostgreSQL server in a temporary folder on a free loopback port; yield its URL; stop and remove it.

    Tests run it without fsync. `durable` (benchmarks) keeps fsync and commits as SQLite's store does (WAL with
    synchronous NORMAL): a commit survives the process, the last ones may not survive a power cut."""
    with running_postgres(durable) as server:
        yield server.url


@contextmanager
def running_postgres(durable: bool = False) -> Iterator[PostgresServer]:
    """A started PostgresServer with its database `evalcore`, removed afterwards."""
    server = PostgresServer(durable)
    try:
        server.start()
        _run_as(server.user, [str(server.bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(server.port), "-U",
                              "evalcore", "evalcore"])
        yield server
    finally:
        server.remove()


def new_database(server_url: str) -> str:
    """A new, empty database on a running server (one per test): its URL."""
    import psycopg  # only those who test on PostgreSQL need it

    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{server_url.rsplit('/', 1)[0]}/{name}"
