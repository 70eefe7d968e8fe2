"""Failure attribution: the one stage at which a labeled question went wrong, or that it went right.

Checked in this order (the first that applies is the question's stage):

- `failed`: the question produced no answer (its error is recorded);
- `unlabeled`: nothing says which passages are relevant: no qrels label >= 1 and no expected source;
- `retrieval miss`: no relevant passage among the retrieved candidates (after reranking);
- `ranking miss`: a relevant passage was retrieved but none reached the context the answer was
  built from (`context_top_k` after the reranker; an HTTP agent's returned sources are its
  context; a results file's `contexts`, matched to the retrieved passages by text, or else its
  ranked ids);
- `generation miss`: relevant context was given but the answer is judged wrong: by the AI score
  (`judge.score`) when it passed or failed, else by its words: wrong when neither ROUGE-L reaches
  `generation_pass_rougel` nor coverage reaches `generation_pass_coverage` (ROUGE-L F1 falls
  with an answer's length, so a correct two-sentence answer to a three-word reference fails it;
  coverage does not). An answer with nothing to check it against is not a generation miss;
- `ok`: otherwise.

A relevant passage is one labeled >= 1 in the qrels; for a suite case, a passage whose title,
file name or id matches one of the case's expected sources (as `sources_found` matches them, but
any one expected source is enough, as any one relevant passage is for qrels).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, Protocol

from evalcore.datasets.relevance import relevant_ids
from evalcore.judges import JudgeResult


class Stage(StrEnum):
    """Where a question went wrong, in the order the checks run after `failed` and `unlabeled`."""

    RETRIEVAL_MISS = "retrieval miss"
    RANKING_MISS = "ranking miss"
    GENERATION_MISS = "generation miss"
    OK = "ok"
    UNLABELED = "unlabeled"
    FAILED = "failed"


# Rows stored before attribution existed (schema v7 and older) have no stage.
NOT_ATTRIBUTED = "not attributed"
STAGES: tuple[str, ...] = (*(stage.value for stage in Stage), NOT_ATTRIBUTED)


class Hit(Protocol):
    """A retrieved or context passage as attribution reads it (evalcore.targets.Retrieved is one)."""

    @property
    def pid(self) -> int | None: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def file_name(self) -> str: ...
    @property
    def source(self) -> str: ...


@dataclass(frozen=True)
class GenerationMarks:
    """The pass marks of an answer no judge decided: ROUGE-L F1 and coverage, either is enough.

    A target's are its configuration keys generation_pass_rougel and generation_pass_coverage. Each field is the
    pass mark of the measure it is named after.
    """

    rougel: float
    coverage: float


@dataclass(frozen=True)
class Evidence:
    """What attributing one question looks at: its labels, what was retrieved and given, how the answer scored.

    `judged` is the AI score verdict's result (pass, fail, unknown, skipped) when it ran.
    """

    relevant: Mapping[int, int] | None
    expected_sources: Sequence[str]
    retrieved: Sequence[Hit]
    context: Sequence[Hit]
    measures: Mapping[str, float]
    judged: JudgeResult | None = None
    error: str | None = None


def attribute(evidence: Evidence, marks: GenerationMarks) -> Stage:
    """The question's stage (see the module for the rules)."""
    if evidence.error:
        return Stage.FAILED
    relevant = relevance(evidence.relevant, evidence.expected_sources)
    if relevant is None:
        return Stage.UNLABELED
    found = [hit for hit in evidence.retrieved if relevant(hit)]
    if not found:
        return Stage.RETRIEVAL_MISS
    if not any(relevant(hit) or same_text(hit, found) for hit in evidence.context):
        return Stage.RANKING_MISS
    return Stage.GENERATION_MISS if judged_wrong(evidence, marks) else Stage.OK


def relevance(labels: Mapping[int, int] | None, expected_sources: Sequence[str]) -> Callable[[Hit], bool] | None:
    """Whether a passage is relevant: by qrels (label >= 1), else by expected sources; None when neither exists."""
    pids = relevant_ids(labels)
    if pids:
        return lambda hit: hit.pid in pids
    wanted = [source for source in expected_sources if source.strip()]
    if wanted:
        from evalcore.metrics.expected_answer import sources_found  # its tokenizer: only for a suite's expected sources

        return lambda hit: any(sources_found([source], [source_of(hit)]) for source in wanted)
    return None


def source_of(hit: Hit) -> dict[str, Any]:
    """A passage as sources_found reads it: its passage id (or the target's own id), title and file name."""
    return {"id": hit.pid if hit.pid is not None else (hit.source or None), "title": hit.title,
            "file_name": hit.file_name}


def same_text(hit: Hit, found: Sequence[Hit]) -> bool:
    """A context given as text alone (a results file's contexts) holding, or held in, a relevant passage found."""
    if hit.pid is not None:
        return False
    text = " ".join(hit.text.split())
    return bool(text) and any(other.text and (text in (full := " ".join(other.text.split())) or full in text)
                              for other in found)


def judged_wrong(evidence: Evidence, marks: GenerationMarks) -> bool:
    """The AI score's pass or fail, else neither ROUGE-L nor coverage at its mark; False with nothing to check."""
    if evidence.judged in (JudgeResult.PASS, JudgeResult.FAIL):
        return evidence.judged == JudgeResult.FAIL
    checks = [evidence.measures[mark.name] >= getattr(marks, mark.name) for mark in fields(marks)
              if mark.name in evidence.measures]
    return bool(checks) and not any(checks)


@dataclass(frozen=True)
class StageCounts:
    """How many questions of a campaign ended at each stage (every stage listed, in STAGES order)."""

    counts: dict[str, int]

    @classmethod
    def of(cls, rows: Iterable[tuple[str | None, int]]) -> StageCounts:
        """From (stage, count) pairs; a None stage counts as not attributed (rows stored before attribution)."""
        counts = dict.fromkeys(STAGES[:-1], 0)
        for stage, count in rows:
            key = stage or NOT_ATTRIBUTED
            counts[key] = counts.get(key, 0) + count
        return cls(counts)

    @property
    def total(self) -> int:
        """Questions counted."""
        return sum(self.counts.values())

    @property
    def labeled(self) -> int:
        """Questions attributed to a stage of the pipeline (a miss or ok)."""
        return sum(self.counts[stage] for stage in (Stage.RETRIEVAL_MISS, Stage.RANKING_MISS, Stage.GENERATION_MISS,
                                                    Stage.OK))

    def to_dict(self) -> dict[str, int]:
        """JSON shape: stage -> questions."""
        return dict(self.counts)
