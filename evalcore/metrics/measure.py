"""What a measure declares about itself, and the one record of a question's inputs every measure reads.

A measure is declared once, in the module that computes it, as a `Measure`: its name, formula and reference, panel,
direction, scale, verdict priority, the inputs it needs, how it is computed from them, and the settings its signature
records. The registry (`evalcore.metrics.registry`) collects the declarations; `score_question` loops over them.
Measures computed together (the six of one ranked list, the six of one answer's n-grams) share that work through
`Inputs.shared`, so declaring them one by one costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from evalcore import __version__
from evalcore.errors import EvalError
from evalcore.judges.verdict import JudgeResult

# Panels in display order: (family, title).
PANELS = (("retrieval", "Retrieval"), ("generation", "Generation"), ("graded", "Graded document retrieval"),
          ("suite", "Coverage and sources"), ("abstention", "Abstention"), ("judge", "Judges"),
          ("python", "Measures in Python"))
# What a measure's values are, in display order, with how a chart titles them: a chart draws each scale on its own
# axis (a count of +4 documents would flatten a precision change of -0.096 to the zero line).
SCALES = (("share", "0-1 measures"), ("score", "0-100 scores"), ("label", "relevance labels"),
          ("likert", "judge scores (1-5)"), ("count", "counts (no better or worse)"), ("number", "numbers"))
# The smallest difference of a question's value that changes its verdict, by scale: below it a question is "same"
# (a ROUGE-L of 0.3333 against 0.3273 is one word of noise, not a worse answer). Whole-number scales: any change.
TOLERANCES = {"share": 0.01, "score": 1.0, "label": 0.0, "likert": 0.0, "count": 0.0, "number": 0.0}
# Settings a signature of a ranked list's measure names only when a computation departs from the default: the depth
# of the ranked list scored (trec_eval -M) and which queries count (-c: every judged query, not only those in the
# run). Leaving them out at their defaults keeps the signatures stored before they existed equal to today's.
DEPARTURES = ("depth", "queries")
T = TypeVar("T")


class LabelScale(Protocol):
    """The label scale of graded relevance as measures read it (`evalcore.metrics.graded.GradedScale`)."""

    @property
    def label_min(self) -> int: ...

    @property
    def label_max(self) -> int: ...

    @property
    def text(self) -> str: ...

    def marks(self) -> dict[str, float]: ...


class Embedding(Protocol):
    """The model answers are compared with (`evalcore.metrics.similarity.AnswerEmbedding`)."""

    @property
    def model(self) -> str: ...

    @property
    def embed(self) -> Callable[[str], Any]: ...


@dataclass(frozen=True)
class Inputs:
    """Everything one question offers its measures.

    `references` are every reference answer (generation measures take the best; coverage too when there is no single
    expected answer); `retrieved_sources` are the sources the answer drew on; `graded` is the label scale of graded
    retrieval; `answerable` (None: unknown) whether the question has an answer, a refusal being recognised by its
    phrasing or `fallback_answer`; `similarity` the embedding model answers are compared with; `checks` the exact
    checks the question asserts of its answer; `question` its text and `passages` the retrieved passages in rank
    order (each with `pid`, `title`, `text` and `score`), for measures in Python.
    """

    relevant: Mapping[int, int] | None = None
    ranked: Sequence[int | None] = ()
    answer: str | None = None
    references: Sequence[str] = ()
    expected_answer: str | None = None
    expected_sources: Sequence[str] | None = None
    retrieved_sources: Sequence[Mapping[str, object]] = ()
    graded: LabelScale | None = None
    answerable: bool | None = None
    fallback_answer: str = ""
    similarity: Embedding | None = None
    checks: Sequence[Any] = ()  # the exact checks the question asserts (`evalcore.metrics.answer_checks.Check`)
    question: str | None = None
    passages: Sequence[Any] = ()  # retrieved passages (`evalcore.targets.base.Retrieved`)
    _shared: dict[Callable[..., Any], Any] = field(default_factory=dict, compare=False, repr=False)

    def offers(self, need: str) -> bool:
        """Whether the input a measure needs is there: given (not None), and not empty for a collection."""
        value = getattr(self, need)
        if value is None:
            return False
        if isinstance(value, (dict, list, tuple)):  # the usual inputs, without the slower abstract-class checks
            return bool(value)
        if isinstance(value, (str, bool)):
            return True
        return bool(value) if isinstance(value, (Mapping, Sequence)) and not isinstance(value, str) else (
            value is not None)

    @property
    def expected(self) -> list[str]:
        """What the answer should say: the expected answer when there is one, else every reference."""
        return [self.expected_answer] if self.expected_answer else list(self.references)

    def shared(self, compute: Callable[[Inputs], T]) -> T:
        """compute(self), computed once per question for every measure that asks (the measures of one pass)."""
        if compute not in self._shared:
            self._shared[compute] = compute(self)
        result: T = self._shared[compute]
        return result


@dataclass(frozen=True)
class Measure:
    """A measure as it declares itself; `settings` are the defaults its signature records.

    `compute` gives its value on a question's inputs (None: absent there) once every input named in `needs` is
    offered; a measure without it is computed elsewhere (TREC files, judges). `signed` gives the settings a value was
    computed with where they depart from the defaults (a model, a label scale); `mark` the pass mark a value is
    judged against, for measures that record pass/fail per question.
    """

    name: str
    doc: str
    family: str  # the panel it is shown in: one of PANELS
    higher_is_better: bool = True
    binary: bool = False  # values are pass/fail as 1/0 (McNemar applies in comparisons)
    # Rank among the measures that decide a per-question verdict: the lowest present in both campaigns decides.
    verdict_priority: int | None = None
    needs: tuple[str, ...] = ()  # what of Inputs it is computed from (fields, or `expected`)
    settings: tuple[tuple[str, str], ...] = field(default=())
    scale: str = "share"  # one of SCALES: what the values are (counts are neither better nor worse)
    compute: Callable[[Inputs], float | None] | None = field(default=None, compare=False, repr=False)
    signed: Callable[[Inputs], dict[str, str]] | None = field(default=None, compare=False, repr=False)
    mark: Callable[[Inputs], float] | None = field(default=None, compare=False, repr=False)
    # The pass that computes it with other measures, once per question (`Inputs.shared`): their values by measure name
    # (absent or None: no value). Its `compute` is then that pass's value of it.
    together: Callable[[Inputs], Mapping[str, float | None]] | None = field(default=None, compare=False, repr=False)
    departs: bool = False  # its signature may also name DEPARTURES (a ranked list's measures)
    column: bool = False  # one of the few shown per question in a campaign's question table
    in_words: str = ""  # how its mean reads in a sentence: `{n}` of `{of}` questions, `{rate}` the mean
    checked: str = ""  # what its tests compare it against (a reference library, frozen or hand-checked values)
    api_field: str | None = None  # its field in the evaluation task API's metric groups, if it has one
    order: int = 0  # display position, set by the registry

    def __post_init__(self) -> None:
        if self.together is not None and self.compute is None:
            object.__setattr__(self, "compute", _value_in(self.together, self.name))

    @property
    def signature(self) -> str:
        """The signature with default settings, e.g. `bleu4|tok:default|smooth:none|version:0.1.0`."""
        return self.signed_with()

    def signed_with(self, **settings: object) -> str:
        """`name|key:value|...|version:X`, defaults overridden by `settings` (unknown keys rejected)."""
        values = dict(self.settings)
        unknown = sorted(set(settings) - set(values) - (set(DEPARTURES) if self.departs else set()))
        if unknown:
            raise EvalError(f"unknown setting for {self.name}", found=", ".join(unknown), expected=", ".join(values))
        values.update({key: str(value) for key, value in settings.items()})  # departures go after the defaults
        return "|".join([self.name, *(f"{key}:{value}" for key, value in values.items()), f"version:{__version__}"])

    @property
    def needs_reference(self) -> bool:
        """Absent on a question without an expected or reference answer."""
        return "references" in self.needs or "expected" in self.needs

    def result(self, value: float | None, mark: float) -> JudgeResult:
        """Pass when the value reaches the pass mark in the measure's direction (at most it, when lower is better);
        unknown when there is no value."""
        if value is None:
            return JudgeResult.UNKNOWN
        passed = value >= mark if self.higher_is_better else value <= mark
        return JudgeResult.PASS if passed else JudgeResult.FAIL

    @property
    def tolerance(self) -> float:
        """The smallest meaningful difference of one question's value (a verdict's default tolerance)."""
        return 0.0 if self.binary else TOLERANCES[self.scale]


def _value_in(together: Callable[[Inputs], Mapping[str, float | None]], name: str) -> Callable[[Inputs], float | None]:
    """A measure's value from the pass that computes it with others."""
    return lambda inputs: inputs.shared(together).get(name)
