"""Exact checks a question asserts of its answer, in a suite's `checks` column: `contains:30 jours; regex:\\d+ €`.

Checks are separated by `;` (`\\;` is a semicolon inside one), each `kind:argument`:

- `contains:TEXT`, `not_contains:TEXT`: the text is (is not) in the answer, case and accents ignored;
- `contains_any:A|B|C`, `contains_all:A|B|C`: one of them, every one of them;
- `regex:PATTERN`: the pattern matches somewhere in the answer; matched with a time limit (`REGEX_TIMEOUT_S`), so a
  pattern that would backtrack catastrophically fails its check instead of hanging the campaign;
- `json_valid`: the answer is a JSON document; `json_schema:SCHEMA`: it is one, valid against the JSON schema given;
- `length:MIN..MAX`: the answer's length in characters, either bound optional (`length:..280`);
- `number_close:TOLERANCE`: the answer's first number is within TOLERANCE of the expected answer's (else the first
  reference's), an absolute difference, or relative with `%` (`number_close:1%`); `3,5` is 3.5.

The `checks_passed` measure is 1 when the answer passes every check of its question, else 0 (pass/fail).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from evalcore.errors import EvalError
from evalcore.language.text import fold, fold_once
from evalcore.metrics.measure import Inputs, Measure

if TYPE_CHECKING:
    import regex

REGEX_TIMEOUT_S = 0.1
KINDS = ("contains", "not_contains", "contains_any", "contains_all", "regex", "json_valid", "json_schema", "length",
         "number_close")
_SEPARATOR = re.compile(r"(?<!\\);")
_NUMBER = re.compile(r"[-−]?\d+(?:[.,]\d+)?")
_BOUNDS = re.compile(r"\s*(\d*)\s*\.\.\s*(\d*)\s*")


class Check(NamedTuple):
    """One check: its kind and argument as written, and what is matched (the folded texts, a compiled pattern, a
    schema, bounds or a tolerance)."""

    kind: str
    argument: str
    prepared: Any = None

    @property
    def text(self) -> str:
        """The check as written: `kind:argument` (`json_valid` alone)."""
        return f"{self.kind}:{self.argument}" if self.argument else self.kind


def parse_checks(spec: str, where: str = "checks") -> tuple[Check, ...]:
    """The checks of a `checks` cell; EvalError naming `where` and the check for an unknown kind, a missing or bad
    argument, a pattern that does not compile, or a JSON schema that is itself invalid."""
    return tuple(_parse(part.replace("\\;", ";").strip(), where) for part in _SEPARATOR.split(spec) if part.strip())


def checks_cell(texts: Sequence[str]) -> str:
    """Checks as written, as one `checks` cell (`contains:30 jours; regex:\\d+ €`) that parse_checks reads back."""
    return "; ".join(text.replace(";", "\\;") for text in texts)


def parse_check(text: str, where: str = "checks") -> Check:
    """One check as written (`contains:30 jours`, a semicolon in it its own); EvalError as parse_checks."""
    return _parse(text.strip(), where)


@functools.lru_cache(maxsize=1 << 10)
def prepared(texts: tuple[str, ...]) -> tuple[Check, ...]:
    """A question's stored checks, each read once per process (every answer to the question reuses them)."""
    return tuple(parse_check(text) for text in texts)


def _parse(text: str, where: str) -> Check:
    kind, colon, argument = text.partition(":")
    kind = kind.strip()
    if kind not in KINDS:
        raise EvalError("unknown check", where=where, found=text, expected=", ".join(KINDS))
    if kind == "json_valid":
        return Check(kind, argument.strip())
    if not colon or not argument.strip():
        raise EvalError(f"the check {kind} needs an argument", where=where, found=text,
                        expected=f"{kind}:..., e.g. {_EXAMPLES[kind]}")
    # jsonschema and regex imported here, on a check's first use: every process that knows the measures imports
    # this module, and the two take longer to import than the comparison of a kept pair takes to read.
    import jsonschema
    import regex

    try:
        return Check(kind, argument.strip(), _PREPARE[kind](argument.strip()))
    except (ValueError, regex.error, jsonschema.SchemaError) as error:
        message = getattr(error, "message", None) or str(error)
        raise EvalError(f"the check {kind} cannot be read: {message}", where=where, found=text,
                        expected=f"e.g. {_EXAMPLES[kind]}") from None


def _texts(argument: str) -> tuple[str, ...]:
    texts = tuple(fold(part).strip() for part in argument.split("|") if part.strip())
    if not texts:
        raise ValueError("no text to look for")
    return texts


def _schema(argument: str) -> dict[str, Any]:
    try:
        schema = json.loads(argument)
    except json.JSONDecodeError as error:
        raise ValueError(f"the schema is not JSON ({error.msg})") from None
    if not isinstance(schema, dict):
        raise ValueError("a JSON schema is an object")  # noqa: TRY004 - read as every bad argument is
    import jsonschema

    jsonschema.validators.validator_for(schema).check_schema(schema)
    return schema


def _pattern(argument: str) -> regex.Pattern[str]:
    import regex

    return regex.compile(argument)


def _bounds(argument: str) -> tuple[int, int | None]:
    match = _BOUNDS.fullmatch(argument)
    if match is None or not (match.group(1) or match.group(2)):
        raise ValueError("bounds are MIN..MAX in characters, either one optional")
    low, high = int(match.group(1) or 0), int(match.group(2)) if match.group(2) else None
    if high is not None and high < low:
        raise ValueError("the lower bound is above the upper one")
    return low, high


def _tolerance(argument: str) -> tuple[float, bool]:
    relative = argument.endswith("%")
    value = float(argument.removesuffix("%").replace(",", "."))
    if not math.isfinite(value) or value < 0:
        raise ValueError("a tolerance is a number of at least 0")
    return value / 100 if relative else value, relative


_PREPARE = {"contains": _texts, "not_contains": _texts, "contains_any": _texts, "contains_all": _texts,
            "regex": _pattern, "json_schema": _schema, "length": _bounds, "number_close": _tolerance}
_EXAMPLES = {"contains": "contains:30 jours", "not_contains": "not_contains:je ne sais pas",
             "contains_any": "contains_any:30 days|thirty days", "contains_all": "contains_all:30|退款",
             "regex": r"regex:\d+ €", "json_valid": "json_valid", "json_schema": 'json_schema:{"type": "object"}',
             "length": "length:10..280", "number_close": "number_close:1%"}


def number(text: str) -> float | None:
    """The first number of a text (`3,5` is 3.5), or None."""
    match = _NUMBER.search(text)
    return float(match.group(0).replace(",", ".").replace("−", "-")) if match else None


def passes(check: Check, answer: str, expected: Sequence[str] = ()) -> bool:
    """Whether the answer passes the check (a regex out of time, or a number_close without a reference number,
    does not)."""
    folded = fold_once(answer)
    if check.kind in ("contains", "contains_all"):
        return all(text in folded for text in check.prepared)
    if check.kind == "contains_any":
        return any(text in folded for text in check.prepared)
    if check.kind == "not_contains":
        return not any(text in folded for text in check.prepared)
    if check.kind == "regex":
        try:
            return check.prepared.search(answer, timeout=REGEX_TIMEOUT_S) is not None
        except TimeoutError:
            return False
    if check.kind in ("json_valid", "json_schema"):
        return _json_passes(check, answer)
    if check.kind == "length":
        low, high = check.prepared
        return low <= len(answer.strip()) and (high is None or len(answer.strip()) <= high)
    return _close(check.prepared, number(answer), next((n for t in expected if (n := number(t)) is not None), None))


def _json_passes(check: Check, answer: str) -> bool:
    try:
        document = json.loads(answer)
    except json.JSONDecodeError:
        return False
    import jsonschema

    return check.kind == "json_valid" or jsonschema.validators.validator_for(check.prepared)(
        check.prepared).is_valid(document)


def _close(tolerance: tuple[float, bool], found: float | None, wanted: float | None) -> bool:
    if found is None or wanted is None:
        return False
    allowed, relative = tolerance
    return abs(found - wanted) <= (allowed * abs(wanted) if relative else allowed)


def check_results(inputs: Inputs) -> dict[str, bool]:
    """Each of the question's checks as written -> whether the answer passes it (empty without an answer or checks);
    computed once per question for the `checks_passed` measure and the stored per-check results."""
    return inputs.shared(_check_results)


def _check_results(inputs: Inputs) -> dict[str, bool]:
    if inputs.answer is None or not inputs.checks:
        return {}
    return {check.text: passes(check, inputs.answer, inputs.expected) for check in inputs.checks}


def _all_pass(inputs: Inputs) -> float | None:
    results = check_results(inputs)
    return (1.0 if all(results.values()) else 0.0) if results else None


DECLARED = (
    Measure("checks_passed", "1 when the answer passes every exact check its question asserts (contains, contains_any, "
            "contains_all, not_contains, regex, json_valid, json_schema, length, number_close; a suite's checks "
            "column), else 0. Text is matched case and accents ignored; a regex has 0.1 s per answer.", "suite",
            binary=True, needs=("answer", "checks"), settings=(("match", "fold"), ("regex", "0.1s")),
            compute=_all_pass, checked="hand-made tables in English, French and Chinese"),
)
