"""Measures written in Python by the operator: a function of a question's answer, declared with its scale and direction.

A measure is a function of one `Given` (the question, its answer, references, retrieved passages and relevance
labels) that returns a number, a bool, or None when it does not apply to the question. It is declared with the
`measure` decorator, which names it and says what its values are:

    @measure("cites_a_price", scale="pass-fail", version="1")
    def cites_a_price(given: Given) -> bool:
        return "€" in (given.answer or "")

The operator makes measures known in two ways, and only the operator: a package's entry points in the group
`evalcore.measures` (each naming a measure, a list of them, or a module holding them), and `EVALCORE_MEASURES`,
module paths separated by commas (`my_measures` or `my_measures:cites_a_price`). Neither a dataset nor a request can
name code to run. A measure that raises, hangs past its time limit or returns something else than its scale says
fails on that question only, with its message among the question's notes; a registration that cannot be read
(an import error, a name taken by another measure, a scale that does not exist) is an EvalError naming the entry
point or the module.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import math
import os
import queue
import re
import threading
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from evalcore.errors import EvalError
from evalcore.metrics.measure import Inputs, Measure

ENTRY_POINT_GROUP = "evalcore.measures"
SETTING = "EVALCORE_MEASURES"
FAMILY = "python"
# What a measure says its values are -> the registry's scale of them.
SCALES = {"0-1": "share", "pass-fail": "share", "number": "number"}
DEFAULT_TIMEOUT_S = 10.0
_NAME = re.compile(r"[a-z][a-z0-9_.@-]*")
_NUMBERS = (float, int, bool, type(None))


class Passage(NamedTuple):
    """One retrieved passage as a measure sees it: its passage id (None: a document of an external target), title,
    text and retrieval score."""

    pid: int | None
    title: str
    text: str
    score: float


class Given(NamedTuple):
    """What a measure in Python receives about one question.

    `references` are the reference answers (the expected answer first when there is one); `passages` the retrieved
    passages in rank order; `labels` the relevance label of each judged passage id (empty when the question has
    none); `answerable` None when unknown.
    """

    question: str
    answer: str | None
    references: tuple[str, ...]
    passages: tuple[Passage, ...]
    labels: Mapping[int, int]
    answerable: bool | None


class MeasureFailed(Exception):
    """A measure in Python could not give a value on one question: the message says why."""


@dataclass(frozen=True)
class PythonMeasure:
    """A measure in Python as its author declared it. Calling it calls the function."""

    name: str
    function: Callable[[Given], Any]
    scale: str = "0-1"  # one of SCALES
    higher_is_better: bool = True
    version: str = "1"
    doc: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __call__(self, given: Given) -> Any:
        return self.function(given)


def measure(name: str, *, scale: str = "0-1", higher_is_better: bool = True, version: str = "1", doc: str = "",
            timeout_s: float = DEFAULT_TIMEOUT_S) -> Callable[[Callable[[Given], Any]], PythonMeasure]:
    """Declares a function as a measure: its name, its scale (`0-1`, `pass-fail` or `number`), its direction, the
    version its signature records (raise it when the function changes what it computes), and its formula in words
    (the function's docstring by default)."""
    def declare(function: Callable[[Given], Any]) -> PythonMeasure:
        return PythonMeasure(name, function, scale, higher_is_better, str(version),
                             doc or inspect.getdoc(function) or "", timeout_s)
    return declare


class Registration(NamedTuple):
    """Where a measure was declared (an entry point or a module of the setting) and the declaration."""

    source: str
    declared: PythonMeasure


def registered(taken: Iterable[str]) -> list[Measure]:
    """The operator's measures, from the entry points then the setting; EvalError naming the entry point or module
    of the first one that cannot be read, or whose name is `taken` (a built-in's) or already registered."""
    found: list[Measure] = []
    names = set(taken)
    for registration in _registrations():
        declared = registration.declared
        _check(registration, names)
        names.add(declared.name)
        found.append(_as_measure(registration))
    return found


def _registrations() -> list[Registration]:
    registrations = []
    for point in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        source = f"entry point {point.name} = {point.value} (group {ENTRY_POINT_GROUP})"
        try:
            loaded = point.load()
        except Exception as error:  # noqa: BLE001 - any failure of the operator's code is a registration problem
            raise _unreadable(source, error) from None
        registrations += [Registration(source, item) for item in _declarations(loaded, source)]
    for path in (part.strip() for part in os.environ.get("EVALCORE_MEASURES", "").split(",")):
        if path:
            source = f"module {path} ({SETTING})"
            registrations += [Registration(source, item) for item in _declarations(_imported(path, source), source)]
    return registrations


def _imported(path: str, source: str) -> object:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attribute) if attribute else module
    except Exception as error:  # noqa: BLE001 - any failure of the operator's code is a registration problem
        raise _unreadable(source, error) from None


def _unreadable(source: str, error: Exception) -> EvalError:
    return EvalError(f"its measures in Python cannot be loaded: {type(error).__name__}: {error}", where=source,
                     fix=f"install the package that provides it, or correct {SETTING} or the package's entry point")


def _declarations(loaded: object, source: str) -> list[PythonMeasure]:
    if isinstance(loaded, PythonMeasure):
        return [loaded]
    if isinstance(loaded, types.ModuleType):
        found = [value for value in vars(loaded).values() if isinstance(value, PythonMeasure)]
    elif isinstance(loaded, (list, tuple)) and all(isinstance(item, PythonMeasure) for item in loaded):
        found = list(loaded)
    else:
        found = []
    if not found:
        raise EvalError("it declares no measure in Python", where=source, found=type(loaded).__name__,
                        expected="a function declared with evalcore.metrics.python_measures.measure, a list of them, "
                                 "or a module holding them")
    return sorted(found, key=lambda item: item.name)


def _check(registration: Registration, taken: set[str]) -> None:
    source, declared = registration
    problem = (
        "its name is not a measure name" if not _NAME.fullmatch(declared.name) else
        "its name is already a measure's (a built-in or another measure in Python)" if declared.name in taken else
        f"its scale is not one of {', '.join(SCALES)}" if declared.scale not in SCALES else
        "its time limit is not a positive number of seconds" if not declared.timeout_s > 0 else
        _signature_problem(declared.function))
    if problem:
        raise EvalError(f"the measure {declared.name!r} cannot be registered: {problem}", where=source,
                        found=declared.name, fix="rename it or correct its declaration")


def _signature_problem(function: Callable[..., Any]) -> str | None:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in parameters if p.default is p.empty and p.kind in positional]
    if len(required) > 1 or not any(p.kind in (*positional, p.VAR_POSITIONAL) for p in parameters):
        return "its function does not take one argument (the question's Given)"
    try:
        returned = typing.get_type_hints(function).get("return")
    except Exception:  # noqa: BLE001 - an annotation that cannot be resolved is not checked
        return None
    kinds = typing.get_args(returned) if typing.get_origin(returned) in (typing.Union, types.UnionType) else (returned,)
    if returned is not None and not all(kind in _NUMBERS or kind is None for kind in kinds):
        return f"its function is declared to return {getattr(returned, '__name__', returned)}, not a number"
    return None


def _as_measure(registration: Registration) -> Measure:
    source, declared = registration
    where = source.split(" (")[0]
    function = f"{declared.function.__module__}.{declared.function.__qualname__}"
    doc = f"{declared.doc or 'A measure in Python.'} In Python: {function}, version {declared.version}, from {where}."
    return Measure(declared.name, doc, FAMILY, higher_is_better=declared.higher_is_better,
                   binary=declared.scale == "pass-fail", scale=SCALES[declared.scale],
                   settings=(("python", function), ("v", declared.version)),
                   compute=lambda inputs: value_of(declared, given_of(inputs)),
                   checked="its author's own tests")


def given_of(inputs: Inputs) -> Given:
    """What a measure in Python receives of a question's inputs."""
    passages = tuple(Passage(p.pid, p.title, p.text, float(p.score)) for p in inputs.passages)
    return Given(inputs.question or "", inputs.answer, tuple(inputs.expected), passages, dict(inputs.relevant or {}),
                 inputs.answerable)


def value_of(declared: PythonMeasure, given: Given) -> float | None:
    """The measure's value on one question (None: it does not apply); MeasureFailed with the reason when the function
    raises, runs past its time limit, or returns something its scale does not allow."""
    returned = _called(declared, given)
    if returned is None:
        return None
    if not isinstance(returned, (int, float)):  # bool is an int
        raise MeasureFailed(f"returned a {type(returned).__name__} ({str(returned)[:40]!r}), not a number")
    value = float(returned)
    if not math.isfinite(value):
        raise MeasureFailed(f"returned {value}, not a finite number")
    if declared.scale == "pass-fail" and value not in (0.0, 1.0):
        raise MeasureFailed(f"returned {value}; a pass-fail measure returns True/False or 1/0")
    if declared.scale == "0-1" and not 0.0 <= value <= 1.0:
        raise MeasureFailed(f"returned {value}, outside 0-1")
    return value


def _called(declared: PythonMeasure, given: Given) -> Any:
    """The function's result, computed by a worker thread so that one that hangs is left behind after its time limit
    (a thread cannot be stopped: its worker is never given another call and ends with the process)."""
    with _IDLE_LOCK:
        worker = _IDLE.pop() if _IDLE else _Worker()
    call = _Call(declared.function, given)
    worker.calls.put(call)
    if not call.done.wait(declared.timeout_s):
        raise MeasureFailed(f"ran past its time limit of {declared.timeout_s:g} s")
    with _IDLE_LOCK:
        _IDLE.append(worker)
    if call.error is not None:
        raise MeasureFailed(f"raised {type(call.error).__name__}: {call.error}")
    return call.result


class _Call:
    """One call of a measure's function, its result or error, and when it is done."""

    def __init__(self, function: Callable[[Given], Any], given: Given) -> None:
        self.function, self.given = function, given
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class _Worker:
    """A daemon thread computing measures one call at a time (starting a thread per call costs more than most
    measures); daemon, so that one stuck in a function that hangs never keeps the process from ending."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="evalcore measures in Python", daemon=True).start()

    def _run(self) -> None:
        while True:
            call = self.calls.get()
            try:
                call.result = call.function(call.given)
            except BaseException as error:  # noqa: BLE001 - reported as the measure's failure on this question
                call.error = error
            call.done.set()


_IDLE: list[_Worker] = []  # workers waiting for a call (one that ran past a time limit never comes back)
_IDLE_LOCK = threading.Lock()


def failure_note(name: str, reason: str) -> str:
    """How a measure's failure on a question reads among its notes."""
    return f"measure {name} failed: {reason}"

