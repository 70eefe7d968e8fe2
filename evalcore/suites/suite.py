"""Question suites: named sets of cases, stored in the database."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from evalcore.access.principals import LOCAL_TENANT, Action, Principal, owned, scope
from evalcore.datasets.conversation_checks import TurnOf, conversation_id, turn_problems, turns_in_order
from evalcore.errors import EvalError
from evalcore.formats.shapes import Key, doc
from evalcore.language.text import counted, name_key, name_problem, shown
from evalcore.metrics.answer_checks import parse_check, parse_checks
from evalcore.store import Conflict, Connection, NotFound, Row, Store, dumps, suite_rows

MAX_CASES = 100
MAX_SOURCES = 10


@dataclass(frozen=True)
class Case:
    """One question of a suite, with what a good answer says and cites."""

    question: str = field(metadata=doc())
    expected_answer: str | None = field(default=None, metadata=doc("null: none given (judges needing one skip it)"))
    expected_sources: tuple[str, ...] = field(default=(), metadata=doc("titles, file names or ids a good answer "
                                                                      "cites"))
    checks: tuple[str, ...] = field(default=(), metadata=doc("exact checks the answer must pass, each as written: "
                                                             "contains:30 jours, regex:\\d+ €, json_valid, ..."))
    conversation: str | None = field(default=None, metadata=doc("the conversation it is a turn of (left out: asked "
                                                                "alone)", optional=True))
    turn: int | None = field(default=None, metadata=doc("its turn in the conversation, from 1", optional=True))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (a case asked alone has no conversation or turn key)."""
        data: dict[str, Any] = {"question": self.question, "expected_answer": self.expected_answer,
                                "expected_sources": list(self.expected_sources), "checks": list(self.checks)}
        if self.conversation is not None:
            data |= {"conversation": self.conversation, "turn": self.turn}
        return data


@dataclass(frozen=True)
class Suite:
    """A named set of cases aimed at a saved target configuration (target_id)."""

    id: str = field(metadata=doc())
    tenant: str = field(metadata=doc(hidden=True))  # a client sees its own
    name: str = field(metadata=doc())
    target_id: str = field(metadata=doc("the saved target configuration its campaigns run", key="agent_id"))
    created_at: float = field(metadata=doc())
    updated_at: float = field(metadata=doc())
    cases: tuple[Case, ...] = field(metadata=doc("lists leave them out", optional=True))

    JSON_EXTRA = (Key("case_count", int),)

    def to_dict(self, *, with_cases: bool = True) -> dict[str, Any]:
        """JSON shape as the API gives it (the target as `agent_id`, the tenant left out); lists omit the cases."""
        data: dict[str, Any] = {"id": self.id, "name": self.name, "agent_id": self.target_id,
                                "created_at": self.created_at, "updated_at": self.updated_at}
        if with_cases:
            data["cases"] = [case.to_dict() for case in self.cases]
        data["case_count"] = len(self.cases)
        return data


class IfExists(StrEnum):
    """What creating a suite does when the workspace already has a suite of that name (case ignored)."""

    REFUSE = "refuse"  # DuplicateName, naming the existing suite: nothing is created
    REPLACE = "replace"  # the existing suite takes the new cases and target; its id and campaigns stay
    KEEP_BOTH = "keep_both"  # the new suite is created under the first free name "<name> (2)", "(3)", ...


class DuplicateName(Conflict):
    """A suite of that name exists in the workspace; `existing_id` names it."""

    def __init__(self, name: str, existing_id: str) -> None:
        super().__init__(f"a suite named {name!r} already exists", where="name", found=existing_id,
                         fix="give another name, or say what to do with the existing suite: replace it or keep both")
        self.existing_id = existing_id


def as_case(value: Case | Mapping[str, Any], where: str) -> Case:
    """A Case from a Case or a mapping with question / expected_answer / expected_sources."""
    if isinstance(value, Case):
        return value
    if not isinstance(value, Mapping):
        raise EvalError("a case must be an object", where=where, found=type(value).__name__)
    sources = value.get("expected_sources") or ()
    if isinstance(sources, str):
        sources = sources.split("|")
    checks = value.get("checks") or ()
    if isinstance(checks, str):  # a checks cell as a CSV holds it: `contains:30 jours; regex:\d+ €`
        checks = [check.text for check in parse_checks(checks, f"{where}: checks")]
    turn = value.get("turn")
    if isinstance(turn, str):  # a table's cell: "" for none, "2"
        turn = int(turn) if turn.strip().isdecimal() else None if not turn.strip() else turn
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
        raise EvalError("a turn is a whole number from 1", where=f"{where}: turn", found=repr(turn))
    return Case(
        question=str(value.get("question") or ""),
        expected_answer=value.get("expected_answer") or None,
        expected_sources=tuple(str(s) for s in sources),
        checks=tuple(str(c) for c in checks),
        conversation=conversation_id(value.get("conversation")),
        turn=turn,
    )


def validate_cases(cases: Iterable[Case | Mapping[str, Any]]) -> tuple[Case, ...]:
    """Normalise cases and enforce a suite's limits, naming the one that is broken."""
    result = tuple(as_case(case, f"case {number}") for number, case in enumerate(cases, 1))
    if len(result) > MAX_CASES:
        raise EvalError(
            f"a suite holds at most {MAX_CASES} cases", where="cases", found=str(len(result)),
            expected=f"at most {MAX_CASES}", fix="split the questions into several suites",
        )
    cleaned = []
    for number, case in enumerate(result, 1):
        question = case.question.strip()
        if not question:
            raise EvalError("the question is required", where=f"case {number}",
                            fix="write the question or remove the case")
        sources = tuple(s.strip() for s in case.expected_sources if s.strip())
        if len(sources) > MAX_SOURCES:
            raise EvalError(
                f"a case lists at most {MAX_SOURCES} expected sources", where=f"case {number}",
                found=str(len(sources)), expected=f"at most {MAX_SOURCES}",
            )
        expected = case.expected_answer.strip() if case.expected_answer else None
        checks = tuple(check.strip() for check in case.checks if check.strip())
        for check in checks:
            parse_check(check, f"case {number}: checks")
        cleaned.append(Case(question=question, expected_answer=expected or None, expected_sources=sources,
                            checks=checks, conversation=case.conversation, turn=case.turn))
    return with_turns(cleaned)


def with_turns(cases: list[Case]) -> tuple[Case, ...]:
    """The cases with their conversations checked: a conversation whose cases give no turn numbers takes them from
    their order; EvalError naming each case whose turn is given twice, or missing from a conversation's turns."""
    unnumbered = {c.conversation for c in cases if c.conversation is not None and c.turn is None}
    numbered = {c.conversation for c in cases if c.conversation is not None and c.turn is not None}
    ordered = turns_in_order(c.conversation if c.conversation in unnumbered - numbered else None for c in cases)
    cases = [replace(c, turn=turn) if turn is not None else c for c, turn in zip(cases, ordered, strict=True)]
    problems = turn_problems([TurnOf(f"case {number}", c.conversation, c.turn) for number, c in enumerate(cases, 1)])
    if problems:
        raise EvalError("the conversations' turns do not follow each other", where="cases", problems=problems,
                        fix="number each conversation's turns 1, 2, 3 ... once each, or leave the turns out to take "
                            "them from the order of the cases")
    return tuple(cases)


def _check_name(name: str) -> str:
    """The name on one line, spaces collapsed; EvalError when empty, invisible or holding a control character."""
    text = " ".join((name or "").split())
    if not text:
        raise EvalError("the suite needs a name", where="name")
    if (problem := name_problem(text)) is not None:
        raise EvalError(problem, where="name", found=shown(repr(text)))
    return text


def _choice(if_exists: IfExists | str) -> IfExists:
    try:
        return IfExists(if_exists)
    except ValueError:
        raise EvalError("unknown choice for an existing name", where="if_exists", found=repr(if_exists),
                        expected=", ".join(choice.value for choice in IfExists)) from None


def _insert_cases(conn: Connection, suite_id: str, cases: tuple[Case, ...]) -> None:
    suite_rows.insert_cases(
        conn, [(suite_id, i, c.question, c.expected_answer, dumps(list(c.expected_sources)),
          dumps(list(c.checks)) if c.checks else None, c.conversation, c.turn) for i, c in enumerate(cases)],
    )


def _named(conn: Connection, tenant: str, name: str, other_than: str = "") -> list[Row]:
    """The workspace's suites whose name is this one, compared by `name_key` (case, width, zero-width characters
    ignored), newest first."""
    rows = suite_rows.tenant_suite_names(conn, tenant, other_than)
    key = name_key(name)
    return [row for row in rows if name_key(row["name"]) == key]


def _free_name(conn: Connection, tenant: str, name: str) -> str:
    number = 2
    while _named(conn, tenant, f"{name} ({number})"):
        number += 1
    return f"{name} ({number})"


def create_suite(store: Store, *, tenant: str = LOCAL_TENANT, name: str, target_id: str,
                 cases: Iterable[Case | Mapping[str, Any]], principal: Principal | None = None,
                 if_exists: IfExists | str = IfExists.REFUSE, places: Sequence[str] | None = None) -> Suite:
    """Create a suite (limits: 100 cases, 10 sources per case, a question in each); a principal's in its tenant.

    A name the workspace already uses (case ignored) raises DuplicateName unless `if_exists` says to
    replace that suite or to keep both; the check and the write are one transaction. A conversation another suite of
    the workspace already holds is refused (EvalError naming each case by its place in `places`, e.g. a file's
    line, else "case N", and the suite that holds it): a conversation is in one suite only.
    """
    tenant = scope(principal, tenant, Action.CHANGE) or tenant
    name, valid, choice = _check_name(name), validate_cases(cases), _choice(if_exists)
    now = time.time()

    def insert(conn: Connection) -> Suite:
        existing = _named(conn, tenant, name)
        if existing and choice == IfExists.REFUSE:
            raise DuplicateName(name, existing[0]["id"])
        _refuse_shared_conversations(conn, tenant, valid, places,
                                     existing[0]["id"] if existing and choice == IfExists.REPLACE else "")
        if existing and choice == IfExists.REPLACE:
            _replace(conn, existing[0]["id"], name, target_id, valid, now)
            return Suite(existing[0]["id"], tenant, name, target_id, existing[0]["created_at"], now, valid)
        given = _free_name(conn, tenant, name) if existing else name
        suite = Suite(f"suite_{secrets.token_hex(6)}", tenant, given, target_id, now, now, valid)
        suite_rows.insert_suite(conn, suite.id, tenant, given, target_id, now)
        _insert_cases(conn, suite.id, valid)
        return suite

    return store.write(insert)


def _refuse_shared_conversations(conn: Connection, tenant: str, cases: tuple[Case, ...],
                                 places: Sequence[str] | None, other_than: str) -> None:
    """EvalError when a conversation of `cases` is already a conversation of another suite of the tenant (the suite
    `other_than`, which these cases replace, aside): each case named by its place, with the suite holding it."""
    names = sorted({case.conversation for case in cases if case.conversation is not None})
    if not names:
        return
    held: dict[str, Row] = {}
    for row in suite_rows.conversation_holders(conn, tenant, other_than, names):
        held.setdefault(row["conversation"], row)
    if not held:
        return
    where = list(places) if places is not None and len(places) == len(cases) else \
        [f"case {number}" for number in range(1, len(cases) + 1)]
    problems = [f"{place}: conversation {case.conversation!r} is already in suite {held[case.conversation]['name']!r} "
                f"({held[case.conversation]['id']})" for place, case in zip(where, cases, strict=True)
                if case.conversation in held and case.turn == 1]
    raise EvalError(f"{counted(len(held), 'conversation')} already in another suite of this workspace: nothing "
                    "imported",
                    where="cases", problems=problems,
                    fix="give each such conversation another name here, or replace the suite that holds it "
                        "(its campaigns keep their questions)")


def _replace(conn: Connection, suite_id: str, name: str, target_id: str, cases: tuple[Case, ...],
             now: float) -> None:
    suite_rows.update_suite(conn, suite_id, name, target_id, now)
    suite_rows.delete_cases(conn, suite_id)
    _insert_cases(conn, suite_id, cases)


def _suite_row(store: Store, suite_id: str, tenant: str | None) -> Row:
    row = suite_rows.suite_row(store, suite_id)
    if row is None or not owned(row["tenant"], tenant):
        raise NotFound(f"no suite {suite_id!r}", where="suite", fix="list them with `python -m evalcore suites list`")
    return row


def _cases(store: Store, suite_id: str) -> tuple[Case, ...]:
    rows = suite_rows.case_rows(store, suite_id)
    return tuple(Case(question=r["question"], expected_answer=r["expected_answer"],
                      expected_sources=tuple(json.loads(r["expected_sources"])),
                      checks=tuple(json.loads(r["checks"] or "[]")), conversation=r["conversation"], turn=r["turn"])
                 for r in rows)


def _suite(store: Store, row: Row) -> Suite:
    return Suite(row["id"], row["tenant"], row["name"], row["target_id"], row["created_at"], row["updated_at"],
                 _cases(store, row["id"]))


def get_suite(store: Store, suite_id: str, tenant: str | None = None, *, principal: Principal | None = None) -> Suite:
    """One suite with its cases; NotFound when absent or owned by another tenant."""
    return _suite(store, _suite_row(store, suite_id, scope(principal, tenant)))


def suite_named(store: Store, name: str, tenant: str | None = None, *,
                principal: Principal | None = None) -> Suite | None:
    """The workspace's suite of this name (case ignored; the newest when several), or None."""
    tenant, wanted = scope(principal, tenant), name_key(name)
    rows = suite_rows.suite_rows(store)
    row = next((r for r in rows if owned(r["tenant"], tenant) and name_key(r["name"]) == wanted), None)
    return _suite(store, row) if row is not None else None


def find_suite(store: Store, given: str, tenant: str | None = None, *, principal: Principal | None = None) -> Suite:
    """The suite a person names: by its id, else by its name (case ignored; the newest of that name); NotFound
    naming what was given otherwise."""
    try:
        return get_suite(store, given, tenant, principal=principal)
    except NotFound:
        named = suite_named(store, given, tenant, principal=principal)
        if named is None:
            raise NotFound(f"no suite {given!r} (as an id or a name)", where="suite",
                           fix="list them with `python -m evalcore suites list`") from None
        return named


def list_suites(store: Store, tenant: str | None = None, *, principal: Principal | None = None) -> list[Suite]:
    """Every suite (of one tenant when given), newest first."""
    tenant = scope(principal, tenant)
    return [_suite(store, row) for row in suite_rows.suite_rows(store, tenant)]


def replace_suite(
    store: Store, suite_id: str, *, name: str, target_id: str, cases: Iterable[Case | Mapping[str, Any]],
    tenant: str | None = None, principal: Principal | None = None,
) -> Suite:
    """Replace name, target and cases; past campaigns keep their own snapshot of the questions.

    DuplicateName when another suite of the workspace has that name (case ignored).
    """
    tenant = scope(principal, tenant, Action.CHANGE)
    name, valid = _check_name(name), validate_cases(cases)
    row = _suite_row(store, suite_id, tenant)
    now = time.time()

    def replace(conn: Connection) -> None:
        if existing := _named(conn, row["tenant"], name, other_than=suite_id):
            raise DuplicateName(name, existing[0]["id"])
        _refuse_shared_conversations(conn, row["tenant"], valid, None, suite_id)
        _replace(conn, suite_id, name, target_id, valid, now)

    store.write(replace)
    return Suite(suite_id, row["tenant"], name, target_id, row["created_at"], now, valid)


def delete_suite(store: Store, suite_id: str, tenant: str | None = None, *, principal: Principal | None = None) -> None:
    """Delete a suite, its cases and its campaigns (a running one stops at its next write)."""
    _suite_row(store, suite_id, scope(principal, tenant, Action.CHANGE))
    store.write(lambda conn: suite_rows.delete_suite(conn, suite_id))
