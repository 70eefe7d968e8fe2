"""The store: SQLite (WAL, one writer thread fed by a queue, concurrent readers) by default, PostgreSQL
(evalcore.store.postgres) for a postgresql:// URL; one versioned schema, one SQL dialect for both."""

from __future__ import annotations

import atexit
import functools
import hashlib
import itertools
import json
import os
import queue
import re
import secrets
import socket
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

from evalcore.errors import EvalError
from evalcore.runtime.lazy import lazy_exports
from evalcore.store.campaign_statuses import OWNED, CampaignStatus, sql_list
from evalcore.store.packing import packed_ids

if TYPE_CHECKING:
    from evalcore.store.opening import open_store as open_store  # an explicit re-export: the store has no __all__

T = TypeVar("T")

DEFAULT_DB = Path(".evalcore") / "evalcore.db"
HEARTBEAT_S = 2.0
PAGE_SIZE = 16384  # bytes per page of a new SQLite database
# A running campaign whose heartbeat is older than this has lost its owner (crash, kill, reboot, a store it could
# not reach): its lease (EVALCORE_LEASE_S overrides it).
STALE_S = 30.0
QUEUED = CampaignStatus.QUEUED.value  # waiting for a worker to claim it (evalcore.campaigns.campaign_queue)

SCHEMA_V1 = """
CREATE TABLE targets (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, name TEXT NOT NULL, config TEXT NOT NULL,
    config_hash TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE suites (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, name TEXT NOT NULL, agent_id TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE cases (
    suite_id TEXT NOT NULL REFERENCES suites(id) ON DELETE CASCADE, position INTEGER NOT NULL,
    question TEXT NOT NULL, expected_answer TEXT, expected_sources TEXT NOT NULL,
    PRIMARY KEY (suite_id, position));
CREATE TABLE campaigns (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, kind TEXT NOT NULL, source TEXT NOT NULL,
    suite_id TEXT REFERENCES suites(id) ON DELETE CASCADE, target_id TEXT,
    status TEXT NOT NULL, error TEXT, total INTEGER NOT NULL, finished INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, started_at REAL, ended_at REAL,
    heartbeat REAL, owner_host TEXT, owner_pid INTEGER, session_finished INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0, config TEXT NOT NULL, dataset_hash TEXT,
    use_judge INTEGER NOT NULL DEFAULT 0, judges TEXT NOT NULL DEFAULT '[]',
    cache INTEGER NOT NULL DEFAULT 1, cache_hits INTEGER NOT NULL DEFAULT 0,
    options TEXT NOT NULL DEFAULT '{}');
CREATE INDEX campaigns_suite ON campaigns(suite_id);
-- The database itself refuses a second active campaign on one suite, whatever the process.
CREATE UNIQUE INDEX campaigns_one_active_per_suite ON campaigns(suite_id)
    WHERE suite_id IS NOT NULL AND status IN ('pending', 'running');
CREATE TABLE campaign_questions (
    campaign_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, qid INTEGER NOT NULL, question TEXT NOT NULL,
    expected_answer TEXT, refs TEXT NOT NULL, relevant TEXT, expected_sources TEXT NOT NULL,
    PRIMARY KEY (campaign_id, position));
CREATE TABLE results (
    campaign_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, qid INTEGER NOT NULL, answer TEXT, retrieved TEXT NOT NULL,
    sources TEXT NOT NULL, measures TEXT NOT NULL, signatures TEXT NOT NULL, judges TEXT NOT NULL,
    latency_s REAL, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, error TEXT, attempts INTEGER NOT NULL DEFAULT 1,
    notes TEXT NOT NULL DEFAULT '[]', created_at REAL NOT NULL,
    PRIMARY KEY (campaign_id, position));
CREATE TABLE call_cache (
    key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, role TEXT NOT NULL, capability TEXT NOT NULL,
    key_hash TEXT UNIQUE NOT NULL, prefix TEXT NOT NULL, created_at REAL NOT NULL, revoked_at REAL);
"""

# Index i holds the script that takes the schema from version i to i + 1.
# v2: what a running campaign is doing before its first question (indexing the corpus), shown
# with its progress so a long index build is visible, and cancellable.
SCHEMA_V2 = """
ALTER TABLE campaigns ADD COLUMN stage TEXT;
"""
# v3: a suite names its saved target configuration target_id (the API still calls it agent_id);
# a campaign has a name people recognise it by.
SCHEMA_V3 = """
ALTER TABLE suites RENAME COLUMN agent_id TO target_id;
ALTER TABLE campaigns ADD COLUMN name TEXT NOT NULL DEFAULT '';
"""
# v4: what each answer was built from (its context), pass/fail of measures with a mark, judge tokens.
SCHEMA_V4 = """
ALTER TABLE results ADD COLUMN context TEXT;
ALTER TABLE results ADD COLUMN results TEXT NOT NULL DEFAULT '{}';
ALTER TABLE results ADD COLUMN judge_prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN judge_completion_tokens INTEGER NOT NULL DEFAULT 0;
"""
# v5: each retrieved passage stored once per campaign, and the signatures its questions share
# (a question keeps passage keys, scores and the signatures that differ): about 2 KB a question.
SCHEMA_V5 = """
CREATE TABLE campaign_passages (
    campaign_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE, key INTEGER NOT NULL,
    pid INTEGER, source TEXT NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (campaign_id, key));
CREATE TABLE campaign_signatures (
    campaign_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE, name TEXT NOT NULL,
    signature TEXT NOT NULL, PRIMARY KEY (campaign_id, name));
"""
# v6: comparisons computed once and kept (evalcore.compare.saved_comparisons): one row per pair of campaigns,
# seed and resamples, used while both campaigns' results versions match; gone with either campaign.
SCHEMA_V6 = """
CREATE TABLE comparisons (
    a_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    b_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    seed TEXT NOT NULL, resamples INTEGER NOT NULL, a_version TEXT NOT NULL, b_version TEXT NOT NULL,
    format INTEGER NOT NULL, data TEXT NOT NULL, paired BLOB NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (a_id, b_id, seed, resamples));
CREATE INDEX comparisons_b ON comparisons(b_id);
"""
# v7: who owns a running campaign, exactly: host, process id, process start time and a nonce.
SCHEMA_V7 = """
ALTER TABLE campaigns ADD COLUMN owner_token TEXT;
"""
# v8: failure attribution: the stage each question failed at (evalcore.diagnosis), kept so that lists
# and comparisons count it without recomputing; whether a question of the snapshot is answerable
# (NULL: not known, abstention not measured).
SCHEMA_V8 = """
ALTER TABLE results ADD COLUMN diagnosis TEXT;
ALTER TABLE campaign_questions ADD COLUMN answerable INTEGER;
"""
# v9: the texts a query transformation retrieved with (a rewrite, multi-query rewrites, a HyDE passage).
SCHEMA_V9 = """
ALTER TABLE results ADD COLUMN queries TEXT NOT NULL DEFAULT '[]';
"""
# v10: a running campaign's stage as numbers (the index build's chunks done of total), and its pace:
# the latest sample of the current stage's count (time, done) with the rate over the half minute
# before it, from which the time left is counted down (evalcore.campaigns.pace).
SCHEMA_V10 = """
ALTER TABLE campaigns ADD COLUMN stage_done INTEGER;
ALTER TABLE campaigns ADD COLUMN stage_total INTEGER;
ALTER TABLE campaigns ADD COLUMN pace_rate REAL;
ALTER TABLE campaigns ADD COLUMN pace_at REAL;
ALTER TABLE campaigns ADD COLUMN pace_done INTEGER;
"""
# v11: the dashboard's signed-in sessions (evalcore.access.api_keys.start_session): the hash of each session token
# (never the token, never the API key), the key it signed in with, when it expires and when it was signed out.
SCHEMA_V11 = """
CREATE TABLE dashboard_sessions (
    token_hash TEXT PRIMARY KEY,
    key_id TEXT NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    ended_at REAL
);
CREATE INDEX dashboard_sessions_key ON dashboard_sessions(key_id);
"""
# v12: campaigns run by workers: launched as 'queued', claimed from the store by any process (each server's
# threads, `evalcore worker`); queued_at says a campaign runs on workers, which put it back in the queue when its
# owner is lost; rerun says which questions a claim runs (those with no result, or those that failed). A queued
# campaign holds its suite like a running one.
SCHEMA_V12 = """
ALTER TABLE campaigns ADD COLUMN queued_at REAL;
ALTER TABLE campaigns ADD COLUMN rerun TEXT NOT NULL DEFAULT 'missing';
DROP INDEX campaigns_one_active_per_suite;
CREATE UNIQUE INDEX campaigns_one_active_per_suite ON campaigns(suite_id)
    WHERE suite_id IS NOT NULL AND status IN ('queued', 'pending', 'running');
CREATE INDEX campaigns_status ON campaigns(status, created_at);
"""
# v13: people's labels of questions for the judges (evalcore.campaigns.question_labels): one per campaign, question
# and judge, on the judge's scale or pass/fail, with a note, who labelled and when; gone with the campaign.
SCHEMA_V13 = """
CREATE TABLE labels (
    campaign_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE, qid INTEGER NOT NULL,
    judge TEXT NOT NULL, label TEXT NOT NULL, note TEXT NOT NULL DEFAULT '', author TEXT NOT NULL,
    labelled_at REAL NOT NULL, PRIMARY KEY (campaign_id, qid, judge));
"""
# v14: the pairwise judge's verdicts on two campaigns (evalcore.compare.pairwise_job): one row per pair and judge
# (its signature: prompt, parser, model), used while both campaigns' results versions match; gone with either.
SCHEMA_V14 = """
CREATE TABLE pairwise (
    a_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    b_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    signature TEXT NOT NULL, a_version TEXT NOT NULL, b_version TEXT NOT NULL, data TEXT NOT NULL,
    created_at REAL NOT NULL, PRIMARY KEY (a_id, b_id, signature));
CREATE INDEX pairwise_b ON pairwise(b_id);
"""
# v15: a campaign that judges another campaign's answers again (evalcore.campaigns.rejudging): answers_from names
# that campaign, whose results rows keep the answers, passages and contexts both read; its own rows keep only
# what judging produced.
SCHEMA_V15 = """
ALTER TABLE campaigns ADD COLUMN answers_from TEXT;
CREATE INDEX campaigns_answers_from ON campaigns(answers_from);
"""
# v16: a ranked list's float32 scores (BM25, cosine similarity) stored in their own shortest form, and a stage that
# is the score rounded stored as its number of digits (read by evalcore.campaigns.result_rows.decode_ranked): a quarter
# less per question. No table changes; the version tells an older evalcore, which could not read such rows, to
# refuse the store. Rows written before read as they did.
SCHEMA_V16 = """
-- results.retrieved may hold {"k": [...], "f": [...], "st": {name: [...] or digits}}
"""
# v17: a campaign's figures computed once it has ended and kept (evalcore.campaigns.queries): the headline means a
# list shows, the aggregates and summary its panel shows; one row per campaign and kind, used while the campaign's
# results version matches; gone with the campaign.
SCHEMA_V17 = """
CREATE TABLE campaign_figures (
    campaign_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE, kind TEXT NOT NULL,
    version TEXT NOT NULL, data TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (campaign_id, kind));
"""
# v18: long work other than campaigns (the pairwise judge, ...) as jobs workers claim, with the pieces each has
# done so far (a resumed job skips them).
SCHEMA_V18 = """
CREATE TABLE jobs (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL, params TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0, total INTEGER, created_at REAL NOT NULL, started_at REAL, ended_at REAL,
    heartbeat REAL, owner_token TEXT, cancel_requested INTEGER NOT NULL DEFAULT 0, error TEXT, result TEXT);
CREATE INDEX jobs_queue ON jobs(status, created_at);
CREATE TABLE job_items (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, position INTEGER NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (job_id, position));
"""
# v19: the exact checks a suite's case asserts of its answer (`contains:30 jours`, ...), kept with the case and the
# campaign's snapshot of it: a JSON list of checks as written; null (rows stored before): none.
SCHEMA_V19 = """
ALTER TABLE cases ADD COLUMN checks TEXT;
ALTER TABLE campaign_questions ADD COLUMN checks TEXT;
"""
# v20: what each question's model calls cost (evalcore.costs): its tokens by role and model priced when it was answered
# (usage: a JSON list of [role, model, prompt, completion, cost, currency]), their total and its currency (cost NULL:
# a model without a price, or prices in several currencies).
SCHEMA_V20 = """
ALTER TABLE results ADD COLUMN usage TEXT;
ALTER TABLE results ADD COLUMN cost REAL;
ALTER TABLE results ADD COLUMN currency TEXT;
"""
# v21: production traces (evalcore.telemetry): one row per trace and tenant with what was asked, retrieved and answered,
# the model, tokens, metadata and time (number: the store's own id for it, a traces campaign's question id); the
# spans of a trace whose root span has not arrived yet; each tenant's retention and redaction patterns.
SCHEMA_V21 = """
CREATE TABLE traces (
    number INTEGER PRIMARY KEY, tenant TEXT NOT NULL, trace_id TEXT NOT NULL, span_id TEXT NOT NULL,
    started_at REAL NOT NULL, ended_at REAL, question TEXT NOT NULL, answer TEXT, documents TEXT NOT NULL,
    model TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, metadata TEXT NOT NULL,
    source TEXT NOT NULL, received_at REAL NOT NULL);
CREATE UNIQUE INDEX traces_tenant_id ON traces(tenant, trace_id);
CREATE INDEX traces_tenant_time ON traces(tenant, started_at);
CREATE TABLE trace_spans (
    tenant TEXT NOT NULL, trace_id TEXT NOT NULL, span_id TEXT NOT NULL, data TEXT NOT NULL, received_at REAL NOT NULL,
    PRIMARY KEY (tenant, trace_id, span_id));
CREATE TABLE trace_settings (
    tenant TEXT PRIMARY KEY, retention_days REAL, default_patterns INTEGER NOT NULL DEFAULT 1,
    patterns TEXT NOT NULL DEFAULT '[]', updated_at REAL NOT NULL);
"""
# v22: each exact check of a question and whether its answer passed it (evalcore.metrics.answer_checks): a JSON object
# {check as written: true/false}; NULL (rows stored before, questions without checks): none recorded.
SCHEMA_V22 = """
ALTER TABLE results ADD COLUMN check_results TEXT;
"""
# v23: conversations: a suite's case and a campaign's question may belong to a conversation, at a turn number
# (evalcore.campaigns.turn_order runs a conversation's turns in order, each with its history).
SCHEMA_V23 = """
ALTER TABLE cases ADD COLUMN conversation TEXT;
ALTER TABLE cases ADD COLUMN turn INTEGER;
ALTER TABLE campaign_questions ADD COLUMN conversation TEXT;
ALTER TABLE campaign_questions ADD COLUMN turn INTEGER;
"""
# v24: the verdicts of the judges that read a whole conversation (evalcore.judges.conversation), one per campaign,
# conversation and judge (verdict: the Verdict's JSON).
SCHEMA_V24 = """
CREATE TABLE conversation_verdicts (
    campaign_id TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE, conversation TEXT NOT NULL,
    judge TEXT NOT NULL, verdict TEXT NOT NULL, judged_at REAL NOT NULL,
    PRIMARY KEY (campaign_id, conversation, judge));
"""
# v25: a retrieved passage kept once per store, whatever the campaigns that retrieved it (`passage_texts` below):
# each distinct passage (corpus id, source, title, text compressed) under a number, found again by the digest of
# its content; a ranked list's keys are those numbers. Every campaign's passages move there (the Python step after
# the script), and the per-campaign table goes. A ranked list's float32 scores are written as their bytes
# (read by evalcore.campaigns.result_rows.decode_ranked: "g"); rows written before read as they did.
SCHEMA_V25 = """
CREATE TABLE passage_texts (
    id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, pid BIGINT, source TEXT NOT NULL, title TEXT NOT NULL,
    text BLOB NOT NULL);
"""
# v26: passage texts compressed with a dictionary kept once per store (`passage_dictionaries`: the words the store's
# passages use most, learnt from the first passages a writer stores), about 11% smaller than alone; a passage names
# the dictionary its text needs (NULL: none, as every passage stored before). Deleting a campaign removes the passages
# no campaign names any more, and counts it in `passage_sweeps` (one row): a writer that finds the count moved checks
# the passages it knows by id before naming them again.
SCHEMA_V26 = """
CREATE TABLE passage_dictionaries (id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, data BLOB NOT NULL);
ALTER TABLE passage_texts ADD COLUMN dictionary INTEGER;
CREATE TABLE passage_sweeps (sweeps INTEGER NOT NULL);
INSERT INTO passage_sweeps (sweeps) VALUES (0);
"""
# v27: a question's measures and pass/fail marks stored with each measure's name as a short code
# (evalcore.store.measure_codes: `~` and one character for a listed measure, `~~` and the name for any other), 370
# bytes less per question on a realistic corpus. No table changes; the version tells an older evalcore, which would
# read the codes as names, to refuse the store. Rows written before keep the names and read as they did.
SCHEMA_V27 = """
-- results.measures and results.results may hold {"~a": value, "~~name": value}
"""
# v28: a question's ranked list, measures, pass/fail marks and, when that is smaller, its answer compressed with the
# store's passage dictionary, packed in binary in one column (evalcore.store.packing): about 640 bytes less per question
# on a realistic corpus. A packed row leaves the JSON columns empty (`retrieved` "", `measures` and `results` "{}",
# `answer` NULL when it is packed); rows written before keep them (`packed` NULL) and read as they did.
SCHEMA_V28 = """
ALTER TABLE results ADD COLUMN packed BLOB;
"""
MIGRATIONS: tuple[str, ...] = (SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, SCHEMA_V7,
                               SCHEMA_V8, SCHEMA_V9, SCHEMA_V10, SCHEMA_V11, SCHEMA_V12, SCHEMA_V13, SCHEMA_V14,
                               SCHEMA_V15, SCHEMA_V16, SCHEMA_V17, SCHEMA_V18, SCHEMA_V19,
                               SCHEMA_V20, SCHEMA_V21, SCHEMA_V22, SCHEMA_V23, SCHEMA_V24, SCHEMA_V25,
                               SCHEMA_V26, SCHEMA_V27, SCHEMA_V28)


def migration_step(script: str) -> Callable[[Connection], None] | None:
    """What a migration does in Python after its script, in the same transaction (rows moved from table to table),
    if anything."""
    return {SCHEMA_V25: share_passages}.get(script)


class NotFound(EvalError):
    """An id that does not exist (or belongs to another tenant, which must look the same)."""


class Conflict(EvalError):
    """An operation refused because of the state of something else (e.g. a running campaign)."""

    def __init__(self, message: str, *, running_id: str = "", **kwargs: Any) -> None:
        self.running_id = running_id
        super().__init__(message, **kwargs)


class StoreUnavailable(EvalError):
    """The database cannot be reached now (stopped, restarting, a lost connection): the same call may work shortly."""

    RETRY_AFTER_S = 5  # what the API tells a client to wait before it tries again


def default_db_path() -> Path:
    """EVALCORE_DB when set, else .evalcore/evalcore.db under the working directory."""
    return Path(os.environ.get("EVALCORE_DB") or Path.cwd() / DEFAULT_DB)


URL_SCHEMES = ("postgresql://", "postgres://")


def is_url(db: str | Path | None) -> bool:
    """Whether a --db / EVALCORE_DB value names a PostgreSQL server rather than a SQLite file."""
    return isinstance(db, str) and db.startswith(URL_SCHEMES)


def db_location(db: str | Path | None = None) -> str:
    """The store a --db value names, one spelling per store: a PostgreSQL URL as given, a file's absolute path
    (`sqlite:PATH` is a path too); EVALCORE_DB, else .evalcore/evalcore.db, when none is given."""
    db = db or os.environ.get("EVALCORE_DB") or Path.cwd() / DEFAULT_DB
    if is_url(db):
        return str(db)
    text = str(db)
    return str(Path(text.removeprefix("sqlite:")).resolve())


def require_store(location: str) -> None:
    """EvalError unless a SQLite store's file exists (a URL's database is checked by connecting to it)."""
    if not is_url(location) and not Path(location).is_file():
        raise EvalError("no database there", where=location,
                        fix="give the --db of an existing store (or set EVALCORE_DB); `run`, `serve`, `keys create`, "
                            "`suites import` and `config save` make a new one")


def redact(location: str) -> str:
    """A store's location without a URL's password, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", location)


class Cursor(Protocol):
    """What a statement returns, on either backend."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """The connection a write function is given: sqlite3's, or the PostgreSQL one that takes the same SQL."""

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Any, /) -> Cursor: ...


class Row(Protocol):
    """A result row, by position or by column name (sqlite3.Row, evalcore.store.postgres.PgRow)."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> list[str]: ...


class Dialect:
    """The few SQL expressions the two backends spell differently (SQLite's here; PostgreSQL's in
    evalcore.store.postgres)."""

    name = "sqlite"

    @staticmethod
    def json_number(column: str) -> str:
        """The number stored under a key (given as the next parameter) of a JSON object column, NULL otherwise."""
        return f"json_extract({column}, '$.\"' || ? || '\"')"

    @staticmethod
    def json_entries(column: str) -> str:
        """A table of a JSON object column's (key, value) pairs, for FROM."""
        return f"json_each({column})"

    @staticmethod
    def entry_number(value: str) -> str:
        """An entry's value as a number (NULL when it is not one)."""
        return value

    @staticmethod
    def entry_text(value: str, key: str) -> str:
        """The text under a key (a literal) of an entry's JSON object value."""
        return f"json_extract({value}, '$.{key}')"

    @staticmethod
    def ranked_keys(column: str) -> str:
        """A table (for FROM, its column `value`) of the passage ids a results row's ranked list names (none for a list
        of whole passages, as rows stored before shared passages hold, or a re-judge's empty one)."""
        return f"json_each(CASE WHEN {column} LIKE '{KEYS_HEAD}%' THEN {column} ELSE '{{\"k\":[]}}' END, '$.k')"

    # What ends a subquery that picks a row to claim: nothing on SQLite, whose one writer already serialises claims.
    skip_locked = ""


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Text the store writes is UTF-8, which cannot hold a lone UTF-16 surrogate (Python strings can:
# json.loads("\"\\ud800\"") makes one). Rather than fail a whole write (a campaign's batch of
# results, a saved configuration) for one character, the store replaces each with U+FFFD, the
# Unicode replacement character, like any decoder meeting bytes it cannot read. Faces refuse such
# text before it gets here (the API answers 422); the store is the last line.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def storable(text: str) -> str:
    """The text with every lone surrogate replaced by U+FFFD (the same text when it has none)."""
    if text.isascii():  # most text: known at once, no surrogate can be in it
        return text
    try:
        text.encode("utf-8")   # fails on a lone surrogate and on nothing else; in C, far quicker than a search
    except UnicodeEncodeError:
        return LONE_SURROGATE.sub(REPLACEMENT, text)
    return text


# json.dumps with these options builds an encoder at every call; a column's JSON is written many times a question.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """Compact JSON for a column (lone surrogates replaced, as in every text the store writes)."""
    if not value and type(value) in _EMPTY:  # most of a row's lists and maps (notes, judges, usage): known at once
        return _EMPTY[type(value)]
    return storable(_COMPACT.encode(value))


_EMPTY: dict[type, str] = {dict: "{}", list: "[]", tuple: "[]"}


def _storable_params(params: Any) -> Any:
    """Query parameters with every text storable (a sequence or a mapping, as sqlite3 takes them)."""
    if isinstance(params, dict):
        return {key: storable(value) if isinstance(value, str) else value for key, value in params.items()}
    return tuple(storable(value) if isinstance(value, str) else value for value in params)


class _Connection(sqlite3.Connection):
    """A connection that never raises on a parameter's text: lone surrogates become U+FFFD."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return super().execute(sql, _storable_params(parameters))

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        return super().executemany(sql, (_storable_params(params) for params in parameters))


WAL_WAIT_S = 30.0  # as long as a write waits for the lock (busy_timeout)


def _write_ahead(conn: sqlite3.Connection) -> None:
    """The database in write-ahead-log mode. Turning a new file to it takes the file's exclusive lock without
    SQLite's busy handler: another process opening the same new store at that moment (a worker and an API server
    started together) makes it fail at once with "database is locked". It is asked again until the lock is free,
    for as long as a write would wait; a file another opener turned already answers at once."""
    deadline = time.monotonic() + WAL_WAIT_S
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


class Store:
    """One SQLite database: writes go through one thread, reads share a small pool of connections.

    Readers borrow a connection for one query and give it back, so callers that run on a new
    thread every time (Streamlit script runs, API requests) never leave connections behind.
    """

    dialect = Dialect()

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.location = str(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise EvalError(f"cannot create the database folder: {error}", where=str(self.path)) from None
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._queue: queue.Queue[tuple[Callable[[Connection], Any], Future[Any]] | None] = queue.Queue()
        self._soon: list[tuple[Future[Any], tuple[str, ...]]] = []   # write_soon's writes (and their tables), not yet
        # known to be done
        self._soon_lock = threading.Lock()
        self._soon_at_exit = False  # _finish_soon is registered to run at exit
        self._closed = False
        ready: Future[Any] = Future()
        self._writer = threading.Thread(target=self._write_loop, args=(ready,), name="evalcore-store-writer",
                                        daemon=True)
        self._writer.start()
        ready.result()
        self.write(mark_orphans)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False,
                                   factory=_Connection)
        except sqlite3.Error as error:
            raise EvalError(f"cannot open the database: {error}", where=str(self.path)) from None
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")
        return conn

    def _write_loop(self, ready: Future[Any]) -> None:
        try:
            conn = self._connect()
            # Pages of 16 KiB (a new database's; an existing one keeps its own): a results row is 1-2 KB, and 4 KiB
            # pages hold two of them, a quarter of each page left empty; 16 KiB pages leave a twentieth.
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            _write_ahead(conn)
            # NORMAL in WAL mode: a committed transaction survives a killed process.
            conn.execute("PRAGMA synchronous = NORMAL")
            migrate(conn, self.path)
        except sqlite3.DatabaseError as error:  # e.g. --db names a file that is not a database
            ready.set_exception(EvalError(f"cannot open the database: {error}", where=str(self.path),
                                          fix="give the path of an evalcore database, or of a new file"))
            return
        except BaseException as error:  # noqa: BLE001 - handed to the opener, who raises it
            ready.set_exception(error)
            return
        ready.set_result(None)
        while (item := self._queue.get()) is not None:
            fn, future = item
            if future.set_running_or_notify_cancel():
                self._run_one(conn, fn, future)
        conn.close()

    @staticmethod
    def _run_one(conn: sqlite3.Connection, fn: Callable[[Connection], Any], future: Future[Any]) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the caller
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            future.set_exception(error)
        else:
            future.set_result(result)

    def write(self, fn: Callable[[Connection], T]) -> T:
        """Run fn(conn) in one transaction on the writer thread; block until done; return or raise."""
        if self._closed:
            raise EvalError("the store is closed", where=str(self.path))
        if threading.current_thread() is self._writer:
            raise RuntimeError("store.write called from inside a write: pass the connection instead")
        future: Future[T] = Future()
        self._queue.put((fn, future))
        return future.result()

    def write_soon(self, fn: Callable[[Connection], Any], *, tables: tuple[str, ...] = ()) -> Future[Any]:
        """Queue fn(conn) for the writer thread as `write` does, and return at once (its future).

        A read asked for afterwards waits for it first (with `tables`, a read whose SQL names one of them): whoever
        wrote reads what was written, as after `write`.
        """
        if self._closed:
            raise EvalError("the store is closed", where=str(self.path))
        future: Future[Any] = Future()
        with self._soon_lock:
            if not self._soon_at_exit:
                # The writer is a daemon thread: a process that ends without closing the store (a CLI command) would
                # drop what is still queued, a comparison kept for the next `compare` among it.
                atexit.register(self._finish_soon)
                self._soon_at_exit = True
            self._soon.append((future, tables))
        self._queue.put((fn, future))
        return future

    def _finish_soon(self) -> None:
        """Wait for every write write_soon queued (as the process exits)."""
        with self._soon_lock:
            pending = [future for future, _ in self._soon]
        wait(pending)

    def _settle(self, sql: str) -> None:
        """Wait for the writes write_soon queued that this read may see (not on the writer thread, where they wait
        for the caller)."""
        if threading.current_thread() is self._writer:
            return
        with self._soon_lock:
            text = sql.lower()
            pending = [future for future, tables in self._soon if not tables or any(name in text for name in tables)]
        wait(pending)
        with self._soon_lock:
            self._soon = [(future, tables) for future, tables in self._soon if not future.done()]

    def read(self, sql: str, params: tuple[Any, ...] | list[Any] | dict[str, Any] = ()) -> list[Row]:
        """Run one query on a pooled connection (one is opened only when all are busy), once the writes queued by
        write_soon before it that it may see are done."""
        if self._soon:
            self._settle(sql)
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._connect()
            with self._readers_lock:
                self._readers.append(conn)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            self._idle.put(conn)

    def close(self) -> None:
        """Finish queued writes, stop the writer and close every connection."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._writer.join()
        if self._soon_at_exit:
            atexit.unregister(self._finish_soon)
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def answers(store: Store) -> None:
    """Read the least there is: raises when the database cannot be read (a health check)."""
    store.read("SELECT 1")


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Apply every migration newer than the database's user_version, each in its own transaction.

    The version is read inside each transaction (BEGIN IMMEDIATE holds the database's write lock): processes opening
    a new database at once (a worker and two API servers started together) migrate it one after the other, each
    applying only what the others have not. An up-to-date database is opened without taking the lock.
    """
    if _pending_migration(conn, path) is None:
        return
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            number = _pending_migration(conn, path)
            if number is None:
                conn.execute("COMMIT")
                return
            for statement in split_script(MIGRATIONS[number]):
                conn.execute(statement)
            if (step := migration_step(MIGRATIONS[number])) is not None:
                step(conn)
            conn.execute(f"PRAGMA user_version = {number + 1}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def _pending_migration(conn: sqlite3.Connection, path: Path) -> int | None:
    """The number of the next migration to apply (None: the database is up to date); refuses a newer database."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise EvalError(
            "the database was written by a newer evalcore",
            where=str(path),
            found=f"schema version {version}",
            expected=f"at most {len(MIGRATIONS)}",
            fix="upgrade evalcore or use another --db",
        )
    return version if version < len(MIGRATIONS) else None


def split_script(script: str) -> list[str]:
    """The statements of a migration script (executescript would commit on its own)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def process_start(pid: int) -> str:
    """When a process started (clock ticks since boot, from /proc), "" where that cannot be read.

    With the PID it tells a living owner from a new process that was given the dead owner's PID.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name


def new_owner_token() -> str:
    """A token naming one runner session: host, PID, process start time, nonce."""
    return f"{socket.gethostname()}|{os.getpid()}|{process_start(os.getpid())}|{secrets.token_hex(6)}"


def owner_alive(token: str | None) -> bool | None:
    """True/False when the token's process is on this host (alive, and the same process); None elsewhere."""
    host, pid, start, _ = (token or "|||").split("|", 3)
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return pid_alive(int(pid)) and (not start or process_start(int(pid)) == start)


def lease_s() -> float:
    """Seconds a campaign's owner may go without a heartbeat before it is taken as lost (EVALCORE_LEASE_S, else
    STALE_S)."""
    text = (os.environ.get("EVALCORE_LEASE_S") or "").strip()
    try:
        return max(1.0, float(text)) if text else STALE_S
    except ValueError:
        raise EvalError("the lease must be a number of seconds", where="EVALCORE_LEASE_S", found=text) from None


def orphaned(row: Row, now: float, host: str) -> bool:
    """Whether an active campaign lost its owner.

    A campaign workers run (queued once) is a lease: a stale heartbeat frees it even while its owner's process
    lives (a runner that lost the store, or died on its own, must not hold it). A campaign run by the process that
    launched it is checked on this host by that process: alive (even paused by Ctrl-Z or a sleeping laptop, its
    heartbeat stale) means owned. Elsewhere only a stale heartbeat can tell.
    """
    stale = bool((row["heartbeat"] or row["created_at"]) < now - lease_s())
    if row["queued_at"] is not None:
        return stale or owner_alive(row["owner_token"]) is False
    alive = owner_alive(row["owner_token"])
    if alive is not None:
        return not alive
    if row["owner_host"] == host and row["owner_pid"] and not row["owner_token"]:  # a row of an older version
        return not pid_alive(row["owner_pid"]) or stale
    return stale


def mark_orphans(conn: Connection) -> int:
    """Every active campaign whose owner is dead (or, on another host, silent): back in the queue when workers run
    it (its lease expired: another worker resumes it), else interrupted; return how many."""
    now = time.time()
    host = socket.gethostname()
    rows = conn.execute(
        "SELECT id, owner_host, owner_pid, owner_token, heartbeat, created_at, queued_at FROM campaigns "
        f"WHERE status IN {sql_list(OWNED)}",
    ).fetchall()
    orphans = [row for row in rows if orphaned(row, now, host)]
    for row in orphans:
        if row["queued_at"] is not None:
            conn.execute("UPDATE campaigns SET status = ?, owner_token = NULL, stage = NULL WHERE id = ?",
                         (QUEUED, row["id"]))
        else:
            conn.execute("UPDATE campaigns SET status = ?, ended_at = ?, "
                         "error = 'interrupted: the process running it stopped' WHERE id = ?",
                         (CampaignStatus.INTERRUPTED.value, now, row["id"]))
    return len(orphans)


class StoreCallCache:
    """The model-call cache (evalcore.models.CallCache) on the call_cache table, counting its hits."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for this key, or None (also while the store cannot be reached: the model is asked)."""
        try:
            rows = self.store.read("SELECT value FROM call_cache WHERE key = ?", (key,))
        except StoreUnavailable:
            rows = []
        with self._lock:
            if rows:
                self.hits += 1
            else:
                self.misses += 1
        return json.loads(rows[0]["value"]) if rows else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Remember a reply (the first one wins when two threads race on one key); not while the store cannot be
        reached (the reply is still used: a cache is no reason to fail a question)."""
        text = dumps(value)
        try:
            self.store.write(
                lambda conn: conn.execute(
                    "INSERT INTO call_cache (key, value, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    (key, text, time.time())
                )
            )
        except StoreUnavailable:
            pass


# --- Retrieved passages, kept once per store ---------------------------------------------------------------------
# `passage_texts` holds each distinct passage (its corpus id, source, title and text) under a small number, the id
# a campaign's ranked lists name, and a digest of its content, by which a writer finds a passage already stored (the
# same passage of the same corpus version, retrieved by another campaign or by an earlier session of this one): every
# campaign that retrieved it shares its one row. The text is kept zlib-compressed (about half its UTF-8 size on a
# three-language corpus); the title stays plain, for lists and comparisons that show titles without reading texts.

PASSAGES_AT_ONCE = 500  # passage ids or digests a query names at a time (below either backend's limit on parameters)


DICTIONARY_BYTES = 8192  # a dictionary's size: zlib's window is 32 KiB, and more costs more to set up per passage
DICTIONARY_FROM = 64  # the fewest new passages a writer learns a dictionary from
DICTIONARY_SAMPLE = 300  # the most it reads: on a three-language corpus, texts under 1% larger than with 1,000
# zlib's level with a dictionary: on a three-language corpus of 20,000 passages, level 3 compresses 11% smaller than
# level 6 without one, for the same time (about 50 us a passage); level 6 with one, 15% smaller, takes twice as long.
DICTIONARY_LEVEL = 3
_WORD = re.compile(r"\S+\s?")


@dataclass(frozen=True)
class TextDictionary:
    """What zlib starts each passage's text from (a preset dictionary): the words the store's passages use most, each
    once, those that save the most last (the nearest to the text, the cheapest to refer to); named by its digest."""

    digest: bytes
    data: bytes

    @classmethod
    def of(cls, data: bytes) -> TextDictionary:
        return cls(hashlib.sha256(data).digest()[:16], data)

    @classmethod
    def learnt(cls, texts: Iterable[str]) -> TextDictionary | None:
        """The dictionary of these texts (the first DICTIONARY_SAMPLE): their words seen more than once, by the bytes
        they cover (count times length), up to DICTIONARY_BYTES; None when no word repeats."""
        counts: dict[str, int] = {}
        for text in itertools.islice(texts, DICTIONARY_SAMPLE):
            for word in _WORD.findall(text):
                counts[word] = counts.get(word, 0) + 1
        ranked = sorted((word for word, count in counts.items() if count > 1),
                        key=lambda word: (-counts[word] * len(word.encode("utf-8")), word))
        chosen: list[bytes] = []
        size = 0
        for word in ranked:
            encoded = word.encode("utf-8")
            if size + len(encoded) > DICTIONARY_BYTES:
                break
            chosen.append(encoded)
            size += len(encoded)
        return cls.of(b"".join(reversed(chosen))) if chosen else None

    def compress(self, data: bytes) -> bytes:
        packer = _primed(self.data).copy()  # the same bytes as a new compressor given the dictionary, a fifth faster
        packed: bytes = packer.compress(data) + packer.flush()
        return packed

    def decompress(self, packed: bytes | memoryview) -> bytes:
        unpacker = zlib.decompressobj(zdict=self.data)
        return unpacker.decompress(packed) + unpacker.flush()


@functools.lru_cache(maxsize=4)
def _primed(dictionary: bytes) -> Any:
    """A compressor that has read this dictionary and nothing else: copied for each text (a store's writers compress
    with its last dictionary)."""
    return zlib.compressobj(DICTIONARY_LEVEL, zdict=dictionary)


@dataclass(frozen=True)
class StoredPassage:
    """A passage as the store keeps it: its content digest, corpus id, source, title and text, compressed (`packed`,
    with the dictionary, if any) when first asked: only a passage the store does not hold yet is compressed."""

    digest: bytes
    pid: int | None
    source: str
    title: str
    text: str
    dictionary: TextDictionary | None = None

    @classmethod
    def of(cls, pid: int | None, source: str, title: str, text: str,
           dictionary: TextDictionary | None = None) -> StoredPassage:
        """A passage ready to store (texts storable first: the digest is of what is written)."""
        source, title, text = storable(source), storable(title), storable(text)
        return cls(digest(pid, source, title, text), pid, source, title, text, dictionary)

    @functools.cached_property
    def packed(self) -> bytes:
        """The text compressed (with the dictionary, if any)."""
        data = self.text.encode("utf-8")
        return zlib.compress(data) if self.dictionary is None else self.dictionary.compress(data)


def digest(pid: int | None, source: str, title: str, text: str) -> bytes:
    """What names a passage's content: 16 bytes of the SHA-256 of its id, source, title and text (the lengths of
    source and title first, so no two passages give the same bytes)."""
    head = f"{pid}|{len(source)}|{len(title)}|{source}{title}"
    return hashlib.sha256(head.encode("utf-8") + text.encode("utf-8")).digest()[:16]


def unpack(packed: bytes | memoryview, dictionary: TextDictionary | None = None) -> str:
    """A stored text back."""
    return (zlib.decompress(packed) if dictionary is None else dictionary.decompress(packed)).decode("utf-8")


def _chunks(values: Sequence[object]) -> Iterator[Sequence[object]]:
    for start in range(0, len(values), PASSAGES_AT_ONCE):
        yield values[start:start + PASSAGES_AT_ONCE]


def put_dictionary(conn: Connection, dictionary: TextDictionary) -> int:
    """The stored dictionary's id, stored under the next number if it is not yet (in the caller's transaction)."""
    row = conn.execute("SELECT id FROM passage_dictionaries WHERE digest = ?", (dictionary.digest,)).fetchone()
    if row is not None:
        return int(row[0])
    number = int(conn.execute("SELECT coalesce(max(id), -1) + 1 FROM passage_dictionaries").fetchone()[0])
    conn.execute("INSERT INTO passage_dictionaries (id, digest, data) VALUES (?, ?, ?)",
                 (number, dictionary.digest, dictionary.data))
    return number


def last_dictionary(store: Store) -> TextDictionary | None:
    """The dictionary stored last, which a writer compresses new passages with; None before any."""
    rows = store.read("SELECT data FROM passage_dictionaries ORDER BY id DESC LIMIT 1")
    return TextDictionary.of(bytes(rows[0][0])) if rows else None


def put_passages(conn: Connection, passages: Iterable[StoredPassage]) -> dict[bytes, int]:
    """Each passage's id by digest, those not stored yet added under the next numbers (in the caller's
    transaction)."""
    wanted = {p.digest: p for p in passages}
    ids: dict[bytes, int] = {}
    digests = list(wanted)
    for chunk in _chunks(digests):
        rows = conn.execute(f"SELECT id, digest FROM passage_texts WHERE digest IN ({', '.join('?' * len(chunk))})",
                            tuple(chunk)).fetchall()
        ids.update((bytes(row[1]), int(row[0])) for row in rows)
    missing = [wanted[d] for d in digests if d not in ids]
    if missing:
        start = int(conn.execute("SELECT coalesce(max(id), -1) + 1 FROM passage_texts").fetchone()[0])
        ids.update((p.digest, start + n) for n, p in enumerate(missing))
        # Passages without a dictionary are inserted without the column (the migration to shared passages runs
        # before the column exists).
        plain = [p for p in missing if p.dictionary is None]
        if plain:
            conn.executemany("INSERT INTO passage_texts (id, digest, pid, source, title, text) "
                             "VALUES (?, ?, ?, ?, ?, ?)",
                             [(ids[p.digest], p.digest, p.pid, p.source, p.title, p.packed) for p in plain])
        dictionaries = {d.digest: d for p in missing if (d := p.dictionary) is not None}  # each looked up once
        numbers = {key: put_dictionary(conn, d) for key, d in dictionaries.items()}
        if numbers:
            conn.executemany("INSERT INTO passage_texts (id, digest, pid, source, title, text, dictionary) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(ids[p.digest], p.digest, p.pid, p.source, p.title, p.packed, numbers[d.digest])
                              for p in missing if (d := p.dictionary) is not None])
    return ids


def passage_sweeps(conn: Connection) -> int:
    """How many times passages no campaign names were removed from the store (a writer's known ids may be gone)."""
    return int(conn.execute("SELECT sweeps FROM passage_sweeps").fetchone()[0])


def stored_ids(conn: Connection, ids: Iterable[int]) -> set[int]:
    """Those of these passage ids that are stored."""
    found: set[int] = set()
    for chunk in _chunks(sorted(set(ids))):
        rows = conn.execute(f"SELECT id FROM passage_texts WHERE id IN ({', '.join('?' * len(chunk))})",
                            tuple(chunk)).fetchall()
        found.update(int(row[0]) for row in rows)
    return found


def delete_unused_passages(conn: Connection, dialect: Dialect) -> int:
    """Remove the passages no results row names (after a campaign's rows are deleted, in the same transaction), and
    count the sweep for writers that know passages by id; how many were removed.

    With concurrent writers: on SQLite the one writer serialises this with every write; on PostgreSQL (serializable
    writes) a write that found a removed passage by its content, or read the sweep count before it moved, conflicts
    with this transaction and one of them is tried again.
    """
    used = {int(row[0]) for row in conn.execute(
        f"SELECT DISTINCT k.value FROM results r, {dialect.ranked_keys('r.retrieved')} k").fetchall()}
    for row in conn.execute("SELECT packed FROM results WHERE packed IS NOT NULL").fetchall():
        used.update(packed_ids(row[0]))
    unused = [number for row in conn.execute("SELECT id FROM passage_texts").fetchall()
              if (number := int(row[0])) not in used]
    for chunk in _chunks(unused):
        conn.execute(f"DELETE FROM passage_texts WHERE id IN ({', '.join('?' * len(chunk))})", tuple(chunk))
    if unused:
        conn.execute("UPDATE passage_sweeps SET sweeps = sweeps + 1")
    return len(unused)


def read_passages(store: Store, ids: Iterable[int]) -> Iterator[tuple[int, int | None, str, str, str]]:
    """(id, corpus id, source, title, text) of the stored passages with these ids."""
    wanted = sorted(set(ids))
    dictionaries: dict[int, TextDictionary] = {}
    for chunk in _chunks(wanted):
        rows = store.read(f"SELECT id, pid, source, title, text, dictionary FROM passage_texts WHERE id IN "
                          f"({', '.join('?' * len(chunk))})", tuple(chunk))
        needed = sorted({row[5] for row in rows if row[5] is not None} - dictionaries.keys())
        if needed:
            dictionaries.update((row[0], TextDictionary.of(bytes(row[1]))) for row in store.read(
                f"SELECT id, data FROM passage_dictionaries WHERE id IN ({', '.join('?' * len(needed))})",
                tuple(needed)))
        for row in rows:
            yield row[0], row[1], row[2], row[3], unpack(row[4], None if row[5] is None else dictionaries[row[5]])


def read_dictionaries(store: Store, ids: Iterable[int]) -> dict[int, bytes]:
    """The stored dictionaries with these numbers, by number."""
    wanted = sorted(set(ids))
    found: dict[int, bytes] = {}
    for chunk in _chunks(wanted):
        rows = store.read(f"SELECT id, data FROM passage_dictionaries WHERE id IN ({', '.join('?' * len(chunk))})",
                          tuple(chunk))
        found.update((int(row[0]), bytes(row[1])) for row in rows)
    return found


def read_titles(store: Store, ids: Iterable[int]) -> dict[int, tuple[int | None, str]]:
    """id -> (corpus id, title) of the stored passages with these ids (their texts are not read)."""
    wanted = sorted(set(ids))
    titles: dict[int, tuple[int | None, str]] = {}
    for chunk in _chunks(wanted):
        rows = store.read(f"SELECT id, pid, title FROM passage_texts WHERE id IN ({', '.join('?' * len(chunk))})",
                          tuple(chunk))
        titles.update((row[0], (row[1], row[2])) for row in rows)
    return titles


KEYS_HEAD = '{"k":['  # how a ranked list's stored text starts: the passage ids come first


def ranked_ids(text: str) -> list[int] | None:
    """The passage ids a ranked list's stored text names, None for a text that names none (older rows keep their
    passages whole; a re-judge's rows keep no ranked list)."""
    if not text.startswith(KEYS_HEAD):
        return None
    ids: list[int] = json.loads("[" + text[len(KEYS_HEAD):text.index("]")] + "]")
    return ids


def with_ids(text: str, ids: Mapping[int, int]) -> str:
    """A ranked list's stored text with its passage keys replaced by these ids (keys not among them stay)."""
    keys = ranked_ids(text)
    if keys is None:
        return text
    end = text.index("]")
    return KEYS_HEAD + ",".join(str(ids.get(key, key)) for key in keys) + text[end:]


def share_passages(conn: Connection) -> None:
    """The migration to shared passages: every campaign's passages (`campaign_passages`, one row per campaign and
    passage) moved into `passage_texts`, each distinct passage once, and every ranked list's campaign keys rewritten
    as the shared ids; then the per-campaign table dropped."""
    campaigns = [row[0] for row in conn.execute(
        "SELECT DISTINCT campaign_id FROM campaign_passages ORDER BY campaign_id").fetchall()]
    for campaign_id in campaigns:
        rows = conn.execute("SELECT key, pid, source, title, text FROM campaign_passages WHERE campaign_id = ? "
                            "ORDER BY key", (campaign_id,)).fetchall()
        stored = [(int(row[0]), StoredPassage.of(row[1], row[2], row[3], row[4])) for row in rows]
        ids = put_passages(conn, [passage for _, passage in stored])
        by_key = {key: ids[passage.digest] for key, passage in stored}
        results = conn.execute("SELECT position, retrieved FROM results WHERE campaign_id = ? ORDER BY position",
                               (campaign_id,)).fetchall()
        conn.executemany("UPDATE results SET retrieved = ? WHERE campaign_id = ? AND position = ?",
                         [(with_ids(row[1], by_key), campaign_id, row[0]) for row in results
                          if row[1].startswith(KEYS_HEAD)])
    conn.execute("DROP TABLE campaign_passages")


# Opening a store chooses its backend, the PostgreSQL one a subclass of the store above: it lives beside both.
__getattr__ = lazy_exports(__name__, {"opening": ("open_store",)})
