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


@contextmanager
def temporary_postgres(durable: bool = False) -> Iterator[str]:
    """Start a PostgreSQL server in a temporary folder on a free loopback port; yield its URL; stop and remove it.

    Tests run it without fsync. `durable` (benchmarks) keeps fsync and commits as SQLite's store does (WAL with
    synchronous NORMAL): a commit survives the process, the last ones may not survive a power cut."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="evalcore-pg-"))
    data = folder / "data"
    if user is not None:
        os.chown(folder, user.pw_uid, user.pw_gid)
    port = _free_port()
    _run_as(user, [str(bin_dir / "initdb"), "-D", str(data), "-U", "evalcore", "--auth=trust", "-E", "UTF8",
                   "--locale=C.UTF-8", "--no-sync"])
    durability = "-c synchronous_commit=off" if durable else "-c fsync=off"
    options = f"-h 127.0.0.1 -p {port} -k {folder} {durability} -c max_connections=200"
    _run_as(user, [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w",
                   "start"])
    try:
        _run_as(user, [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "evalcore", "evalcore"])
        yield f"postgresql://evalcore@127.0.0.1:{port}/evalcore"
    finally:
        _run_as(user, [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(folder, ignore_errors=True)


def new_database(server_url: str) -> str:
    """A new, empty database on a running server (one per test): its URL."""
    import psycopg  # only those who test on PostgreSQL need it

    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{server_url.rsplit('/', 1)[0]}/{name}"
