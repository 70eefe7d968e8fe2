"""A campaign's finished questions as a comparison reads them: one list per field, read column by column.

A comparison of two campaigns needs, of each question, its key (id and text), its measures, the
judges' verdicts, the answer, the error, the failure stage, the query transformation's texts,
the relevant passages it retrieved and, for suites, the expected sources it found: not the
record of every question with its context, scores and signatures. `read_compared` reads just
those columns of the store and decodes each JSON column for every question in one call; the
judges' verdicts are kept as the JSON text they were stored as (`StoredVerdicts`) when that text
is exactly what their records would write back, so that no verdict record is built to compare
two campaigns. `ComparedRows.of` builds the same from result records (a comparison of rows in
memory); both give equal values, which the tests check on every stored shape.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from evalcore.campaigns.records import QuestionResult
from evalcore.campaigns.result_rows import (
    answers_holder,
    decode_ranked,
    measures_column,
    read_results,
)
from evalcore.datasets.relevance import is_relevant
from evalcore.diagnosis import Stage
from evalcore.judges import JudgeResult, Verdict
from evalcore.judges.verdict import StoredVerdicts
from evalcore.metrics import MEASURES, sources_found
from evalcore.runtime.lazy import once
from evalcore.runtime.memory import no_cycle_collection
from evalcore.store import KEYS_HEAD, Store, read_titles
from evalcore.store.packing import RANKED, sections
from evalcore.store.packing import ranked_keys as packed_keys
from evalcore.store.result_table import COMPARED_COLUMNS, answer_cells, compared_rows

PASS_SUFFIX = ":pass"
QuestionKey = tuple[int, str]
Values = dict[str, float]   # a question's measures, as row_values gives them
Ranked = Sequence[int]   # a question's retrieved passages, in rank order: their keys in ComparedRows.passages


def is_number(value: object) -> bool:
    """A finite int or float (booleans count, as 1/0)."""
    return isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value))


def question_key(result: QuestionResult) -> QuestionKey:
    """Two results are the same question when their id and their text both match."""
    return key_of(result.question.qid, result.question.text)


def key_of(qid: int, text: str) -> QuestionKey:
    """A question's key from its id and text (white space folded)."""
    return (qid, " ".join(text.split()))


def row_values(result: QuestionResult) -> dict[str, float]:
    """Every measure of a result, judges included (`judge.X` and the pass/fail rate `judge.X:pass`)."""
    values = measure_values(result.outcome.measures)
    for name, verdict in result.outcome.judges.items():
        add_judge(values, name, verdict.score, verdict.result.passed)
    return values


def measure_values(measures: Mapping[str, Any]) -> dict[str, float]:
    """The numeric measures (NaN and non-numbers left out), as floats."""
    # A comparison calls this for every measure of every row: stored measures are nearly always floats, kept as they
    # are but NaN (the only value unequal to itself); any other row is read value by value.
    if all(type(v) is float for v in measures.values()):
        return {k: v for k, v in measures.items() if v == v}  # noqa: PLR0124
    return {k: float(v) for k, v in measures.items() if isinstance(v, (int, float)) and not math.isnan(v)}


def add_judge(values: dict[str, float], name: str, score: object, passed: bool | None) -> None:
    """A judge's score (`judge.X`, unless a measure of that name is there) and pass rate (`judge.X:pass`)."""
    score_name, pass_name = judge_measures(name)
    if score is not None and is_number(score):
        values.setdefault(score_name, float(score))  # type: ignore[arg-type]
    if passed is not None and pass_name:
        values[pass_name] = 1.0 if passed else 0.0


@once
def judge_measures(name: str) -> tuple[str, str | None]:
    """The measures a judge's verdicts give: its score, and its pass rate (none when the score is pass/fail)."""
    measure = MEASURES.get(f"judge.{name}")
    return f"judge.{name}", None if measure and measure.binary else f"judge.{name}{PASS_SUFFIX}"


def relevant_pids(relevant: Mapping[Any, Any] | None) -> frozenset[int]:
    """Passage ids labelled relevant (label >= 1)."""
    return frozenset(int(pid) for pid, label in (relevant or {}).items()
                     if isinstance(label, (int, float)) and is_relevant(label))   # a NaN label is never relevant


def found_sources(result: QuestionResult) -> frozenset[str]:
    """The expected sources that one of the retrieved sources matches."""
    sources = [source.to_dict() for source in result.outcome.sources]
    return frozenset(s for s in result.question.expected_sources if sources_found([s], sources))


@dataclass
class ComparedRows:
    """A campaign's finished questions, in question order: what a comparison reads of each, one list per field.

    `ranked` holds each question's retrieved passages as keys of `passages` (passage id, title); `found` the expected
    sources its retrieved sources match (suites; empty otherwise) and `has_sources` whether it has
    any; `setups` each judge's (model, prompt hash) pairs among the scored verdicts.
    """

    keys: list[QuestionKey] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    answers: list[str | None] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    diagnosis: list[Stage | None] = field(default_factory=list)
    queries: list[tuple[str, ...]] = field(default_factory=list)
    costs: list[tuple[float | None, str]] = field(default_factory=list)  # each one's cost (None: no price), currency
    judges: list[Mapping[str, Verdict]] = field(default_factory=list)
    values: list[Values] = field(default_factory=list)
    relevant: list[frozenset[int]] = field(default_factory=list)
    ranked: list[Ranked] = field(default_factory=list)
    passages: dict[int, tuple[int | None, str]] = field(default_factory=dict)
    found: list[frozenset[str]] = field(default_factory=list)
    has_sources: list[bool] = field(default_factory=list)
    setups: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    conversations: list[str | None] = field(default_factory=list)  # the conversation each question is a turn of
    turns: list[int | None] = field(default_factory=list)  # and its turn there
    _keys: dict[tuple[int | None, str], int] = field(default_factory=dict, repr=False, compare=False)
    _next: int = field(default=0, repr=False, compare=False)
    _pids: list[int | None] | dict[int, int | None] = field(default_factory=list, repr=False, compare=False)
    _rest: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.keys)

    def finish(self) -> None:
        """Decode what `read_compared(..., pending=True)` left for later (nothing to do otherwise)."""
        rest, self._rest = self._rest, None
        if rest is not None:
            rest()

    def retrieved_among(self, i: int, among: frozenset[int]) -> dict[int, str]:
        """Question i's retrieved passage id -> title, in rank order, of the passages among these ids."""
        pids = self._pids or self._pid_list()
        found = [key for key in self.ranked[i] if pids[key] in among]   # None is never among them
        passages = self.passages
        return {int(pid): title for pid, title in map(passages.__getitem__, found) if pid is not None}

    def _pid_list(self) -> list[int | None] | dict[int, int | None]:
        """The passage id of each passage key: a comparison looks one up for every retrieved passage, in a list by
        key when the keys are the store's (0, 1, 2, ...), else in a dict."""
        keys = self.passages
        if min(keys, default=0) < 0 or max(keys, default=0) > 2 * len(keys) + 1024:
            self._pids = {key: pid for key, (pid, _) in keys.items()}
            return self._pids
        pids: list[int | None] = [None] * (max(keys, default=-1) + 1)
        for key, (pid, _) in keys.items():
            pids[key] = pid
        self._pids = pids
        return pids

    def key_of(self, pid: int | None, title: str) -> int:
        """The key in `passages` of a passage named here (not by the store): the same passage, the same key."""
        key = self._keys.get((pid, title))
        if key is None:
            if not self._keys:   # after the store's keys
                self._next = max(self.passages, default=-1) + 1
            key = self._keys[(pid, title)] = self._next
            self._next += 1
            self.passages[key] = (pid, title)
            self._pids = []
        return key

    @classmethod
    def of(cls, results: Sequence[QuestionResult]) -> ComparedRows:
        """From result records."""
        rows = cls()
        for result in results:
            question, outcome = result.question, result.outcome
            rows.keys.append(question_key(result))
            rows.conversations.append(question.conversation)
            rows.turns.append(question.turn)
            rows.texts.append(question.text)
            rows.answers.append(outcome.answer)
            rows.errors.append(outcome.error)
            rows.diagnosis.append(outcome.diagnosis)
            rows.queries.append(outcome.queries)
            rows.costs.append((outcome.cost.amount, outcome.cost.currency))
            rows.judges.append(dict(outcome.judges))
            rows.values.append(row_values(result))
            rows.relevant.append(relevant_pids(question.relevant))
            rows.ranked.append([rows.key_of(hit.pid, hit.title) for hit in outcome.retrieved])
            rows.has_sources.append(bool(question.expected_sources))
            rows.found.append(found_sources(result) if question.expected_sources else frozenset())
            for name, verdict in outcome.judges.items():
                if verdict.score is not None:
                    rows.setups.setdefault(name, set()).add((verdict.model, verdict.prompt_hash))
        return rows


# Where each column of a compared row is (`result_table.compared_rows`: a question and its result).
_AT = {name: position for position, name in enumerate(COMPARED_COLUMNS)}


@once
def verdict_keys() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The keys of a verdict's JSON, in to_dict's order: without, then with, the samples of an n-times judgement."""
    plain = tuple(Verdict("", "", "", "", "", None, None, "", JudgeResult.UNKNOWN).to_dict())
    return plain, (*plain, "samples", "spread")


SPREAD_KEYS = ["n", "min", "max", "stdev"]
RESULTS = frozenset(result.value for result in JudgeResult)
PASSED = {result.value: result.passed for result in JudgeResult}   # a verdict's result word: passed, failed or None


def as_written(verdict: Mapping[str, Any]) -> bool:
    """Whether a stored verdict's JSON is exactly what its record's to_dict writes back (then it needs no record)."""
    keys = list(verdict)
    plain, sampled = verdict_keys()
    if len(keys) == len(sampled):
        spread = verdict["spread"]
        if keys != list(sampled) or not isinstance(verdict["samples"], list) or not (
                spread is None or (isinstance(spread, dict) and list(spread) == SPREAD_KEYS)):
            return False
    elif keys != list(plain):
        return False
    prompt, completion = verdict["prompt_tokens"], verdict["completion_tokens"]
    return (verdict["claims"] is None and verdict["result"] in RESULTS and type(prompt) is int
            and type(completion) is int and verdict["tokens"] == prompt + completion)


def decoded(texts: Sequence[str | None]) -> list[Any]:
    """Each JSON text decoded (None for NULL), every row in one call."""
    return list(json.loads("[" + ",".join(text or "null" for text in texts) + "]"))


def read_compared(store: Store, campaign_id: str, *, pending: bool = False) -> ComparedRows:
    """A campaign's finished questions as a comparison reads them (`ComparedRows.of` its result records, the same).

    With `pending`, only what the statistics need is decoded now (the keys, texts, measures and verdicts): the rest
    (answers, errors, stages, queries, relevant and retrieved passages, sources found) waits for the rows'
    `finish()`, which a comparison calls once its statistics are under way. Every column is read in this one query
    either way, so the two parts always describe the same rows.
    """
    holder = answers_holder(store, campaign_id)
    with no_cycle_collection():   # from the query on (read_results says why)
        rows = compared_rows(store, campaign_id, holder)
        if not rows:
            return ComparedRows()
        columns = list(zip(*rows, strict=True))
        out = _compared(columns)

        def rest() -> None:
            with no_cycle_collection():
                _rest(store, out, columns)
                if any(out.has_sources):  # suites: the sources found need each question's outcome
                    results = read_results(store, campaign_id, detail=False)
                    out.found = [found_sources(result) if has else frozenset()
                                 for result, has in zip(results, out.has_sources, strict=True)]

        out._rest = rest
        if not pending:
            out.finish()
        return out


def _column(columns: list[tuple[Any, ...]], name: str) -> tuple[Any, ...]:
    return columns[_AT[name]]


def _compared(columns: list[tuple[Any, ...]]) -> ComparedRows:
    """The keys, texts, values and verdicts of the rows (what the statistics need)."""
    out = ComparedRows()
    out.texts = list(_column(columns, "question"))
    out.conversations = list(_column(columns, "conversation"))
    out.turns = list(_column(columns, "turn"))
    out.keys = [key_of(qid, text) for qid, text in zip(_column(columns, "qid"), out.texts, strict=True)]
    out.values = [measure_values(measures or {}) for measures in measures_column(_column(columns, "measures"),
                                                                                   _column(columns, "packed"))]
    out.costs = [(cost, currency or "")
                 for cost, currency in zip(_column(columns, "cost"), _column(columns, "currency"), strict=True)]
    texts = _column(columns, "judges")
    for values, text, verdicts in zip(out.values, texts, decoded(texts), strict=True):
        verdicts = verdicts or {}
        for name, verdict in verdicts.items():
            score, result = verdict.get("score"), verdict.get("result", "unknown")
            if result not in PASSED:
                JudgeResult(result)   # a word no verdict has is refused, as reading its record would
            add_judge(values, name, score, PASSED[result])
            if score is not None:
                out.setups.setdefault(name, set()).add((verdict.get("model", ""), verdict.get("prompt_hash", "")))
        out.judges.append(StoredVerdicts(text or "{}") if all(map(as_written, verdicts.values()))
                          else {name: Verdict.from_dict(verdict) for name, verdict in verdicts.items()})
    return out


def _rest(store: Store, out: ComparedRows, columns: list[tuple[Any, ...]]) -> None:
    """The rows' other fields: answers, errors, stages, queries, relevant and retrieved passages."""
    out.answers = answer_cells(store, _column(columns, "answer"), _column(columns, "shared_packed"))
    out.errors = list(_column(columns, "error"))
    out.diagnosis = [Stage(stage) if stage else None for stage in _column(columns, "diagnosis")]
    out.queries = [tuple(texts) for texts in decoded(_column(columns, "queries"))]
    out.relevant = [relevant_pids(relevant) for relevant in decoded(_column(columns, "relevant"))]
    out.has_sources = [bool(sources) for sources in decoded(_column(columns, "expected_sources"))]
    out.ranked = ranked_keys(store, [text if packed is None else sections(packed).get(RANKED, text) for text, packed
                                     in zip(_column(columns, "retrieved"), _column(columns, "shared_packed"),
                                            strict=True)], out)
    out.found = [frozenset()] * len(out.keys)


def ranked_keys(store: Store, texts: Sequence[str | bytes], rows: ComparedRows) -> list[Ranked]:
    """Each ranked list's passage keys, decoded for every row in one call (the scores after them are not read), with
    the titles of the stored passages they name in `rows.passages`; a row of whole passages (as older versions
    stored them) gets keys of its own; a packed one's (bytes) are read from it."""
    shared = [text[len(KEYS_HEAD):text.index("]")] if type(text) is str and text.startswith(KEYS_HEAD)
              else ",".join(map(str, packed_keys(text))) if type(text) is bytes else None for text in texts]
    decoded: list[list[int]] = json.loads("[" + ",".join(f"[{k}]" for k in shared if k is not None) + "]")
    rows.passages = read_titles(store, (key for keys in decoded for key in keys))
    keys = iter(decoded)
    return [next(keys) if k is not None else [rows.key_of(hit.pid, hit.title)
                                               for hit in decode_ranked(cast(str, text), {})]
            for k, text in zip(shared, texts, strict=True)]
