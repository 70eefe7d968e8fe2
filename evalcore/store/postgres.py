"""The store on PostgreSQL: the same schema, SQL and API as the SQLite store, for several servers on one database.

Every difference between the two backends is kept here: the placeholders (`?` and `:name` become `%s` and
`%(name)s`), the column types of the migrations, the JSON functions (`PgDialect`), where the schema version is
kept, rows that answer by position and by name like sqlite3.Row, and integrity errors raised as sqlite3's so
callers catch one class; a lost or refused connection (a stopped or restarting server) is StoreUnavailable, after
one more try on a new connection when a pooled one had died since its last use. Writes are concurrent
transactions (SERIALIZABLE, retried when PostgreSQL reports a conflict) on pooled connections, instead of SQLite's
one writer thread: what a write function reads is still what it writes over, as on SQLite.
"""

from __future__ import annotations

import os
import queue
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import RowMaker
from psycopg.types.numeric import FloatLoader

from evalcore.errors import EvalError
from evalcore.store import (
    KEYS_HEAD,
    MIGRATIONS,
    Connection,
    Cursor,
    Dialect,
    Store,
    StoreUnavailable,
    mark_orphans,
    migration_step,
    redact,
    split_script,
)
from evalcore.store import _storable_params as storable_params

T = TypeVar("T")

RETRIES = 50
CONNECT_S = 5  # seconds to open a connection: a server that does not answer is unavailable, not awaited
# Two servers starting at once migrate one after the other (a transaction-level advisory lock).
MIGRATION_LOCK = 0x65766C63
TOKENS = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|::|:([A-Za-z_]\w*)|\?|%")
TYPES = ((re.compile(r"\bREAL\b"), "DOUBLE PRECISION"), (re.compile(r"\bBLOB\b"), "BYTEA"))


def to_pg(sql: str) -> str:
    """SQLite's placeholders as psycopg's (`?` -> `%s`, `:name` -> `%(name)s`, a literal `%` doubled)."""
    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        if token[0] in "'\"":
            return token.replace("%", "%%")
        if match.group(1):
            return f"%({match.group(1)})s"
        return {"?": "%s", "%": "%%"}.get(token, token)

    return TOKENS.sub(one, sql)


def ddl(statement: str) -> str:
    """A migration statement with PostgreSQL's column types (REAL is 4 bytes there; timestamps need 8)."""
    for pattern, name in TYPES:
        statement = pattern.sub(name, statement)
    return statement


class PgRow:
    """A row that answers by position and by column name, like sqlite3.Row."""

    __slots__ = ("_names", "_values")

    def __init__(self, values: Sequence[Any], names: dict[str, int]) -> None:
        self._values = values
        self._names = names

    def __getitem__(self, key: int | str, /) -> Any:
        return self._values[self._names[key]] if isinstance(key, str) else self._values[key]

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._names)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._names, self._values, strict=False))!r})"


def pg_rows(cursor: Any) -> RowMaker[PgRow]:
    """psycopg row factory making PgRow (the first column of a name wins, as in sqlite3.Row)."""
    names: dict[str, int] = {}
    for index, column in enumerate(cursor.description or ()):
        names.setdefault(column.name, index)
    return lambda values: PgRow(values, names)


@contextmanager
def integrity_as_sqlite() -> Iterator[None]:
    """A constraint violation raised as sqlite3.IntegrityError, the one class callers of either store catch."""
    try:
        yield
    except pg_errors.IntegrityError as error:
        raise sqlite3.IntegrityError(str(error)) from error


def pg_params(params: Any) -> Any:
    """Parameters as SQLite takes them: texts storable, and True/False as 1/0 (the schema's flags are INTEGER)."""
    params = storable_params(params)
    if isinstance(params, dict):
        return {key: int(value) if isinstance(value, bool) else value for key, value in params.items()}
    return tuple(int(value) if isinstance(value, bool) else value for value in params)


class PgConnection:
    """A psycopg connection taking the store's SQL (SQLite placeholders) and giving PgRow rows."""

    def __init__(self, conn: psycopg.Connection[PgRow]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor:
        with integrity_as_sqlite():
            return self._conn.execute(to_pg(sql), pg_params(parameters))

    def executemany(self, sql: str, parameters: Any, /) -> Cursor:
        cursor = self._conn.cursor()
        with integrity_as_sqlite():
            cursor.executemany(to_pg(sql), [pg_params(params) for params in parameters])
        return cursor


class PgDialect(Dialect):
    """PostgreSQL's spelling of the JSON expressions (the columns hold JSON text, read as jsonb)."""

    name = "postgresql"

    @staticmethod
    def json_number(column: str) -> str:
        return f"(({column})::jsonb ->> (?::text))::float8"

    @staticmethod
    def json_entries(column: str) -> str:
        return f"jsonb_each(({column})::jsonb)"

    @staticmethod
    def entry_number(value: str) -> str:
        return f"(CASE jsonb_typeof({value}) WHEN 'number' THEN ({value} #>> '{{}}')::float8 END)"

    @staticmethod
    def entry_text(value: str, key: str) -> str:
        return f"({value} ->> '{key}')"

    @staticmethod
    def ranked_keys(column: str) -> str:
        return (f"jsonb_array_elements_text((CASE WHEN {column} LIKE '{KEYS_HEAD}%' THEN {column} "
                "ELSE '{\"k\":[]}' END)::jsonb -> 'k')")

    skip_locked = " FOR UPDATE SKIP LOCKED"  # claimers pass over a row another one is taking


class PgStore(Store):
    """One PostgreSQL database: pooled connections, each write one SERIALIZABLE transaction (retried on conflict)."""

    dialect = PgDialect()

    def __init__(self, url: str) -> None:  # no SQLite file: Store.__init__ is not called
        self.location = url
        self._pool: queue.LifoQueue[psycopg.Connection[PgRow]] = queue.LifoQueue()
        self._all: list[psycopg.Connection[PgRow]] = []
        self._lock = threading.Lock()
        self._closed = False
        with self._connection() as conn:
            migrate_pg(conn, redact(url))
        self.write(mark_orphans)

    def _open(self) -> psycopg.Connection[PgRow]:
        try:
            conn = psycopg.connect(self.location, autocommit=True, row_factory=pg_rows, connect_timeout=CONNECT_S)
        except psycopg.OperationalError as error:
            raise unavailable(self.location, error) from None
        except psycopg.Error as error:
            raise EvalError(f"cannot open the database: {error}".strip(), where=redact(self.location),
                            fix="start the PostgreSQL server, or check the URL (postgresql://USER@HOST:PORT/DB)",
                            ) from None
        conn.adapters.register_loader("numeric", FloatLoader)  # avg() and sum() of integers: numbers, not Decimal
        with self._lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _connection(self, pooled: bool = True) -> Iterator[psycopg.Connection[PgRow]]:
        if self._closed:
            raise EvalError("the store is closed", where=redact(self.location))
        try:
            conn = self._pool.get_nowait() if pooled else self._open()
        except queue.Empty:
            conn = self._open()
        try:
            yield conn
        finally:
            if conn.broken or conn.closed:
                with self._lock:
                    self._all.remove(conn)
                conn.close()
            else:
                self._pool.put(conn)

    def _reconnecting(self, work: Callable[[psycopg.Connection[PgRow]], T]) -> T:
        """work(conn) on a pooled connection; once more on a new one when that one had died (a server restart
        closes every pooled connection); StoreUnavailable when the server cannot be reached."""
        try:
            with self._connection() as conn:
                return work(conn)
        except psycopg.OperationalError as error:
            if not _connection_lost(error):
                raise
        try:
            with self._connection(pooled=False) as conn:
                return work(conn)
        except psycopg.OperationalError as error:
            if not _connection_lost(error):
                raise
            raise unavailable(self.location, error) from None

    def write(self, fn: Callable[[Connection], T]) -> T:
        """Run fn(conn) in one transaction; again when PostgreSQL finds it conflicted with another; return or raise."""
        def transaction(conn: psycopg.Connection[PgRow]) -> T:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                return fn(PgConnection(conn))

        for attempt in range(RETRIES):
            try:
                return self._reconnecting(transaction)
            except (pg_errors.SerializationFailure, pg_errors.DeadlockDetected):
                if attempt == RETRIES - 1:
                    raise
                time.sleep(min(0.002 * 2 ** min(attempt, 8), 0.25) * (0.5 + os.urandom(1)[0] / 255))
        raise AssertionError("unreachable")

    def write_soon(self, fn: Callable[[Connection], Any], *, tables: tuple[str, ...] = ()) -> Future[Any]:
        """`write`, done before it returns (there is no writer thread to queue it for): its future, already done."""
        future: Future[Any] = Future()
        try:
            future.set_result(self.write(fn))
        except Exception as error:  # noqa: BLE001 (the caller reads it from the future, as from the SQLite store's)
            future.set_exception(error)
        return future

    def read(self, sql: str, params: tuple[Any, ...] | list[Any] | dict[str, Any] = ()) -> list[Any]:
        """Run one query on a pooled connection (its own snapshot)."""
        def query(conn: psycopg.Connection[PgRow]) -> list[Any]:
            with integrity_as_sqlite():
                return conn.execute(to_pg(sql), pg_params(params)).fetchall()

        return self._reconnecting(query)

    def close(self) -> None:
        """Close every connection."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()


def _connection_lost(error: psycopg.OperationalError) -> bool:
    """Whether the server went away or refuses connections for now (not a statement's own failure, such as a
    serialization conflict or a cancelled query, which are OperationalErrors too)."""
    return not isinstance(error, pg_errors.SerializationFailure | pg_errors.DeadlockDetected
                          | pg_errors.QueryCanceled | pg_errors.LockNotAvailable)


def unavailable(location: str, error: psycopg.OperationalError) -> StoreUnavailable:
    """The store's error for a server that cannot be reached now."""
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return StoreUnavailable(f"the database cannot be reached: {reason}", where=redact(location),
                            fix="start the PostgreSQL server or wait for its restart, or check the URL "
                                "(postgresql://USER@HOST:PORT/DB)")


def migrate_pg(conn: psycopg.Connection[PgRow], where: str) -> None:
    """Apply every migration newer than the database's schema version, each in its own transaction."""
    while _next_migration(conn, where):
        pass


def _next_migration(conn: psycopg.Connection[PgRow], where: str) -> bool:
    """Apply the next migration, under a lock that other starting servers wait on; False when there is none."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS evalcore_schema (version INTEGER NOT NULL)")
        row = conn.execute("SELECT version FROM evalcore_schema").fetchone()
        version = row[0] if row else 0
        if version > len(MIGRATIONS):
            raise EvalError("the database was written by a newer evalcore", where=where,
                            found=f"schema version {version}", expected=f"at most {len(MIGRATIONS)}",
                            fix="upgrade evalcore or use another --db")
        if version == len(MIGRATIONS):
            return False
        for statement in split_script(MIGRATIONS[version]):
            conn.execute(ddl(statement))
        if (step := migration_step(MIGRATIONS[version])) is not None:
            step(PgConnection(conn))
        conn.execute("DELETE FROM evalcore_schema")
        conn.execute("INSERT INTO evalcore_schema VALUES (%s)", (version + 1,))
        return True
