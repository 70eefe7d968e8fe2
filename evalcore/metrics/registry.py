"""The registry of measures: each declares itself in the module that computes it, and faces ask here.

The declarations (`DECLARED` of retrieval, generation, similarity, suite, abstention and graded) hold every fact
about a measure: name, formula, panel, direction, scale, verdict priority, what it needs and how it is computed.
Judge measures are built from the judge prompt files. Signatures record the settings a value was computed with
(`signature(name, **used)`), as sacreBLEU's do, so a stored value always says how it was made.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

from evalcore.errors import EvalError
from evalcore.judges import JUDGES, JudgeResult, load_prompt
from evalcore.metrics import (
    abstention,
    answer_checks,
    bleu_rouge,
    expected_answer,
    graded,
    python_measures,
    retrieval,
    similarity,
)
from evalcore.metrics.abstention import abstention_scores
from evalcore.metrics.graded import DocId, GradedScale, graded_values
from evalcore.metrics.measure import DEPARTURES, PANELS, SCALES, TOLERANCES, Inputs, Measure

__all__ = ["DEPARTURES", "MEASURES", "PANELS", "SCALES", "Inputs", "Measure", "Scores"]
OTHER_PANEL = "Other"
# The judge whose 1-5 score decides a question's verdict before any other measure (a generation-side change too).
DECIDING_JUDGE = "score"
# The panels whose verdict measures judge a change of each side of the system first (a generation-side change: the
# AI score when both campaigns have it, else the answer's overlap with its reference).
SIDES = {"retrieval": ("retrieval",), "generation": ("judge", "generation")}
_JUDGE_CHECKED = "scripted replies of a loopback server speaking the OpenAI protocol"


def _judge_measure(name: str) -> Measure:
    """A judge's measure, from its prompt file: scale, inputs, and the first sentence of its instructions."""
    prompt = load_prompt(name)
    if prompt.output == "claims":
        return Measure(f"judge.{name}", f"supported claims / claims (LLM judge, prompt v{prompt.version}): the answer "
                       "split into claims, each checked against the passages it was built from; absent when the "
                       "answer makes no claim (faithfulness, Es et al. 2023, RAGAS).", "judge",
                       needs=prompt.requires, checked=_JUDGE_CHECKED, settings=(("prompt", "none"), ("model", "none")))
    label = prompt.output == "label"
    first = prompt.system.split(". ")[0].rstrip(".") + "."
    doc = f"{'pass/fail as 1/0' if label else '1-5'} (LLM judge, prompt v{prompt.version}): {first}"
    return Measure(f"judge.{name}", doc, "judge", binary=label, needs=prompt.requires, checked=_JUDGE_CHECKED,
                   verdict_priority=0 if name == DECIDING_JUDGE else None,
                   settings=(("prompt", "none"), ("model", "none")), scale="share" if label else "likert")


def _registry() -> dict[str, Measure]:
    declared = [*retrieval.DECLARED, *bleu_rouge.DECLARED, *similarity.DECLARED, *expected_answer.DECLARED,
                *answer_checks.DECLARED, *abstention.DECLARED, *graded.DECLARED,
                *(_judge_measure(name) for name in JUDGES)]
    return {m.name: replace(m, order=order) for order, m in enumerate(declared)}


BUILT_IN: dict[str, Measure] = _registry()
# Every measure: the built-in ones, then the operator's measures in Python (`load_python_measures`).
MEASURES: dict[str, Measure] = dict(BUILT_IN)
# The measures a question's inputs give, in display order, and as `score_question` asks for them.
COMPUTED: list[Measure] = []
RUNS: list[_Run] = []
# Why the operator's measures in Python could not be registered (None: they were, or there are none).
_python_problem: list[EvalError] = []


def load_python_measures() -> None:
    """(Re)reads the operator's measures in Python (entry points and EVALCORE_MEASURES) into the registry, in place:
    every face holding the registry sees them. One that cannot be registered leaves them all out, and
    `check_python_measures` says why."""
    MEASURES.clear()
    MEASURES.update(BUILT_IN)
    _python_problem.clear()
    try:
        own = python_measures.registered(BUILT_IN)
    except EvalError as error:
        own = []
        _python_problem.append(error)
    MEASURES.update({m.name: replace(m, order=len(BUILT_IN) + order) for order, m in enumerate(own)})
    COMPUTED[:] = [m for m in MEASURES.values() if m.compute is not None]
    RUNS[:] = _runs(COMPUTED)
    _NEEDED[:] = dict.fromkeys(need for m in COMPUTED for need in m.needs)
    _signature.cache_clear()


def check_python_measures() -> None:
    """EvalError naming the entry point or module when the operator's measures in Python could not be registered
    (a campaign is not launched without the measures its operator declared)."""
    if _python_problem:
        raise _python_problem[0]


def listing(*, python_only: bool = False) -> list[dict[str, object]]:
    """Every measure (or only the operator's measures in Python) as the listing faces show it: name, panel, direction,
    values, signature and formula; EvalError naming the entry point or module when those could not be registered."""
    check_python_measures()
    titles, scales = dict(PANELS), dict(SCALES)
    return [{"measure": m.name, "panel": titles[m.family], "higher_is_better": m.higher_is_better,
             "values": "pass/fail (1/0)" if m.binary else scales[m.scale], "signature": m.signature, "doc": m.doc}
            for m in MEASURES.values() if not python_only or m.family == python_measures.FAMILY]


def signature(name: str, **settings: object) -> str:
    """`name|key:value|...|version:X`, defaults overridden by `settings` (unknown keys rejected)."""
    measure = MEASURES.get(name)
    if measure is None:
        raise EvalError("unknown measure", found=name, expected=", ".join(MEASURES))
    return measure.signed_with(**settings)


def display_order(name: str) -> tuple[int, str]:
    """Sort key: registry order, then unregistered names (e.g. `judge.X:pass`, a rubric's `judge.X`) by name."""
    measure = MEASURES.get(name.split(":")[0])
    return (measure.order if measure else len(MEASURES), name)


def family(name: str) -> str | None:
    """The panel family of a measure name; a judge the registry does not know (a rubric's) is a judge."""
    measure = MEASURES.get(name.split(":")[0])
    return measure.family if measure else "judge" if name.startswith("judge.") else None


def panels(names: Iterable[str]) -> list[tuple[str, list[str]]]:
    """The names grouped into panels (title, names in display order); empty panels left out."""
    titles = dict(PANELS)
    grouped: dict[str, list[str]] = {title: [] for _, title in PANELS}
    grouped[OTHER_PANEL] = []
    for name in sorted(names, key=display_order):
        kind = family(name)
        grouped[titles[kind] if kind else OTHER_PANEL].append(name)
    return [(title, members) for title, members in grouped.items() if members]


def scale_of(name: str) -> str:
    """The scale of a measure's values (`judge.X:pass` rates and unregistered names: 0-1)."""
    measure = MEASURES.get(name)
    return measure.scale if measure else "share"


def tolerance_of(name: str) -> float:
    """The default smallest meaningful difference of a measure (unregistered names: that of 0-1 measures)."""
    measure = MEASURES.get(name)
    return measure.tolerance if measure else TOLERANCES["share"]


def higher_is_better(name: str) -> bool:
    """The measure's direction (a judge's pass rate `judge.X:pass` and unregistered names: higher)."""
    measure = MEASURES.get(name.split(":")[0])
    return measure.higher_is_better if measure else True


def verdict_basis() -> tuple[str, ...]:
    """Measures that can decide a per-question verdict, by priority."""
    ranked = sorted((m for m in MEASURES.values() if m.verdict_priority is not None),
                    key=lambda m: m.verdict_priority or 0)
    return tuple(m.name for m in ranked)


def judged_by(side: str) -> tuple[str, ...]:
    """The verdict measures that judge a change of one side of the system (`SIDES`), by priority."""
    return tuple(name for name in verdict_basis() if family(name) in SIDES[side])


def question_columns() -> tuple[str, ...]:
    """The measures a campaign's question table shows: those declared as columns, then the verdict measures."""
    declared = (m.name for m in MEASURES.values() if m.column)
    return tuple(dict.fromkeys([*declared, *sorted(verdict_basis(), key=display_order)]))


def in_words(aggregates: Mapping[str, tuple[float | None, int]], family_name: str) -> str | None:
    """The means of a panel's measures in a sentence (`declined 3 of 4 unanswerable questions (75%)`), from
    (mean, count) by measure; None when none of them has a value."""
    parts = []
    for measure in MEASURES.values():
        mean, count = aggregates.get(measure.name, (None, 0))
        if measure.family == family_name and measure.in_words and mean is not None:
            parts.append(measure.in_words.format(n=round(mean * count), of=count, rate=mean))
    return " · ".join(parts) or None


class Scores(NamedTuple):
    """The measures of one question, the signature each was computed with, pass/fail where a mark applies, and why a
    measure in Python failed on it."""

    values: dict[str, float]
    signatures: dict[str, str]
    results: dict[str, JudgeResult]  # measure -> pass, fail or unknown (graded retrieval)
    failures: tuple[str, ...] = ()  # `measure NAME failed: reason`, one per measure in Python that failed
    checks: Mapping[str, bool] = {}  # each of the question's exact checks -> passed (never changed in place)


class _Run(NamedTuple):
    """Measures next to each other in the registry computed by one pass (`Measure.together`) with the same needs and
    signing, or a measure computed alone: what `score_question` asks once for all of them."""

    measures: tuple[Measure, ...]
    names: tuple[str, ...]
    needs: frozenset[str]
    together: Callable[[Inputs], Mapping[str, float | None]] | None
    signed: Callable[[Inputs], dict[str, str]] | None
    marked: bool  # some of its measures have a pass mark
    signatures: dict[str, str]  # by measure, with the default settings
    by_settings: dict[tuple[tuple[str, str], ...], dict[str, str]]  # with settings departing from them


def _runs(computed: Sequence[Measure]) -> list[_Run]:
    """The computed measures in registry order, as runs."""
    groups: list[list[Measure]] = []
    for measure in computed:
        last = groups[-1][-1] if groups else None
        if last is not None and measure.together is not None and (last.together, last.needs, last.signed) == (
                measure.together, measure.needs, measure.signed):
            groups[-1].append(measure)
        else:
            groups.append([measure])
    return [_Run(tuple(group), tuple(m.name for m in group), frozenset(group[0].needs), group[0].together,
                 group[0].signed, any(m.mark is not None for m in group), {m.name: m.signature for m in group}, {})
            for group in groups]


Signing = Callable[[Inputs], dict[str, str]]


def _signatures(run: _Run, inputs: Inputs, settings: dict[Signing, tuple[tuple[str, str], ...]]) -> dict[str, str]:
    """The signatures of a run's measures with the settings the question's inputs give (each way of signing asked
    once per question: the nine graded measures share the label scale)."""
    if run.signed is None:
        return run.signatures
    used = settings.get(run.signed)
    if used is None:
        used = settings[run.signed] = tuple(run.signed(inputs).items())
    found = run.by_settings.get(used)
    if found is None:
        if len(run.by_settings) >= _KEPT_SETTINGS:
            run.by_settings.clear()
        found = run.by_settings[used] = {m.name: _signature(m.name, used) for m in run.measures}
    return found


_KEPT_SETTINGS = 64
# Every input some computed measure needs: each is looked at once per question.
_NEEDED: list[str] = []


def score_question(inputs: Inputs) -> Scores:
    """Every measure that applies to one question, absent ones left out, with their signatures and, for those with a
    pass mark, pass/fail (unknown where the value is undefined). An unanswerable question has no reference to score
    against, whatever its expected answer says."""
    if inputs.answerable is False and (inputs.references or inputs.expected_answer):
        inputs = replace(inputs, references=(), expected_answer=None)
    values: dict[str, float] = {}
    signatures: dict[str, str] = {}
    results: dict[str, JudgeResult] = {}
    failures: list[str] = []
    offered = frozenset(filter(inputs.offers, _NEEDED))
    settings: dict[Signing, tuple[tuple[str, str], ...]] = {}
    for run in RUNS:
        if not run.needs <= offered:
            continue
        if run.together is None:
            measure = run.measures[0]
            try:
                value = measure.compute(inputs)  # type: ignore[misc]  # COMPUTED holds the measures with one
            except python_measures.MeasureFailed as failed:  # that measure on this question, not the question
                failures.append(python_measures.failure_note(measure.name, str(failed)))
                continue
            if measure.mark is not None:
                results[measure.name] = measure.result(value, measure.mark(inputs))
            if value is not None:
                values[measure.name] = value
                signatures[measure.name] = _signatures(run, inputs, settings)[measure.name]
            continue
        found = inputs.shared(run.together)
        if run.marked:
            for measure in run.measures:
                if measure.mark is not None:
                    results[measure.name] = measure.result(found.get(measure.name), measure.mark(inputs))
        if tuple(found) == run.names and None not in found.values():  # the usual pass: every value, in order
            values.update(found)  # type: ignore[arg-type]  # no None among them
            signatures.update(_signatures(run, inputs, settings))
            continue
        signed: dict[str, str] | None = None
        for name in run.names:
            value = found.get(name)
            if value is not None:
                values[name] = value
                if signed is None:
                    signed = _signatures(run, inputs, settings)
                signatures[name] = signed[name]
    return Scores(values, signatures, results, tuple(failures), answer_checks.check_results(inputs))


def judge_abstention(scores: Scores, *, answer: str | None, answerable: bool | None, refused: bool) -> None:
    """The abstention measures as the refusal judge read the answer (declined or not), replacing the phrasing list's."""
    reading = abstention_measures(answer, answerable, refused=refused)
    scores.values.update(reading.values)
    scores.signatures.update(reading.signatures)


def abstention_measures(answer: str | None, answerable: bool | None, fallback_answer: str = "",
                        refused: bool | None = None) -> Scores:
    """The abstention measures that apply, with their signatures (`match:judge` when the refusal judge's reading
    is given)."""
    values = abstention_scores(answer, answerable, fallback_answer, refused_by_judge=refused)
    used = () if refused is None else (("match", "judge"),)
    signatures = {name: _signature(name, used) for name in values}
    return Scores(values, signatures, {})


def graded_retrieval_scores(labels: Mapping[DocId, int], retrieved: Sequence[tuple[DocId, float]],
                            label_min: int = 0, label_max: int = 4,
                            thresholds: Mapping[str, float] | None = None) -> dict[str, object]:
    """Graded retrieval measures with `<name>_threshold`, `<name>_higher_is_better`, `<name>_result`.

    `labels`: document id -> integer label; `retrieved`: (document id, score) pairs; `thresholds`
    by measure or documented threshold name (`ndcg_threshold`). A value that is undefined (nothing
    retrieved, nothing labeled above label_min) is None and its result is "unknown".
    """
    found = graded_values(labels, retrieved, label_min, label_max)
    marks = GradedScale(label_min, label_max, thresholds or {}).marks()
    result: dict[str, object] = {}
    for name, value in found.items():
        measure = MEASURES[f"graded.{name}"]
        result[name] = value
        result[f"{name}_threshold"] = marks[name]
        result[f"{name}_higher_is_better"] = measure.higher_is_better
        result[f"{name}_result"] = str(measure.result(value, marks[name]))
    return result


@functools.lru_cache(maxsize=1 << 10)
def _signature(name: str, used: tuple[tuple[str, str], ...] = ()) -> str:
    """The signature of a measure with these settings departing from its defaults (the same for every question of
    a campaign, so it is built once)."""
    return signature(name, **dict(used))


def aggregate(values: Sequence[float | None]) -> tuple[float | None, int]:
    """Mean over the present values (None and NaN are absent) and how many there were."""
    present = [float(v) for v in values if v is not None and not math.isnan(v)]
    return (math.fsum(present) / len(present), len(present)) if present else (None, 0)


load_python_measures()
