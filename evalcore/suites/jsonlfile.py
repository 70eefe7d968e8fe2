"""Suite JSONL import: one case per line, `{"question", "expected_answer", "expected_sources", "checks",
"conversation", "turn"}` (all but the question optional; `checks` a list of checks or a suite CSV's checks cell).

A conversation's turns are its `turn` numbers when its lines give them (each once, from 1, no gap), else its lines in
file order. Every problem is reported with its line number, and nothing is imported from a file with one.
"""

from __future__ import annotations

import json
from typing import Any

from evalcore.datasets.conversation_checks import TurnOf, conversation_id, turn_problems
from evalcore.errors import EvalError
from evalcore.suites.suite import MAX_CASES, Case, as_case, with_turns

KEYS = ("question", "expected_answer", "expected_sources", "checks", "conversation", "turn")


def parse_suite_jsonl(data: bytes, *, source: str = "upload") -> tuple[Case, ...]:
    """The cases of a suite JSONL file; EvalError listing every bad line (its number and what is wrong)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        bad = data[:error.start].count(b"\n") + 1
        raise EvalError("the file is not UTF-8", where=f"{source}, line {bad}", fix="save the file as UTF-8") from None
    cases: list[tuple[int, Case]] = []
    problems: list[str] = []
    # JSONL lines end at \n only: splitlines() would also cut at U+2028, which JSON strings may hold.
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            case, problem = _case(line, f"{source} line {number}")
            if problem is not None:
                problems.append(problem)
            elif case is not None:
                cases.append((number, case))
    problems += turn_problems([TurnOf(f"{source} line {number}", case.conversation, case.turn)
                               for number, case in cases if case.turn is not None])
    if len(cases) > MAX_CASES:
        problems.append(f"{source}: {len(cases)} cases, a suite holds at most {MAX_CASES}")
    if problems:
        raise EvalError("invalid suite file", where=source, problems=problems,
                        fix="correct the lines named, then import again")
    ordered = sorted(cases, key=lambda item: _order(item, cases))
    return with_turns([case for _, case in ordered])


def _case(line: str, where: str) -> tuple[Case | None, str | None]:
    """One line as a case, or the problem with it."""
    try:
        value: Any = json.loads(line)
    except json.JSONDecodeError as error:
        return None, f"{where}: not valid JSON ({error.msg})"
    if not isinstance(value, dict):
        return None, f"{where}: expected a JSON object with a question"
    unknown = sorted(set(value) - set(KEYS))
    if unknown:
        return None, f"{where}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})"
    if not str(value.get("question") or "").strip():
        return None, f"{where}: the question is required"
    try:
        return as_case(value, where), None
    except EvalError as error:
        return None, error.line()


def _order(item: tuple[int, Case], cases: list[tuple[int, Case]]) -> tuple[int, int]:
    """A case's place: its own line, but a numbered conversation's turns in turn order at its first line."""
    number, case = item
    if case.conversation is None or case.turn is None:
        return number, 0
    first = min(n for n, other in cases if conversation_id(other.conversation) == case.conversation)
    return first, case.turn
