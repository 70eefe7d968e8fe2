"""The records of a comparison: campaign headers, per-question differences, per-measure deltas."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from evalcore import diagnosis
from evalcore.campaigns import Campaign
from evalcore.campaigns.records import CampaignKind
from evalcore.compare import power
from evalcore.compare.conversation_verdicts import ConversationVerdict, conversation_verdicts
from evalcore.compare.costs import CostDelta
from evalcore.compare.exact import McNemar
from evalcore.compare.preference import Preference
from evalcore.costs import money
from evalcore.diagnosis import Stage, Transition
from evalcore.errors import EvalError
from evalcore.formats.shapes import Key, doc
from evalcore.judges import Verdict
from evalcore.judges.verdict import StoredVerdicts, verdicts_json, verdicts_text
from evalcore.language.text import counted
from evalcore.targets.target_config import Snapshot

if TYPE_CHECKING:
    import numpy as np

PASS_SUFFIX = ":pass"
EPSILON = 1e-9
STAGE_WORDS = ", ".join(stage.value for stage in Stage)


class Change(StrEnum):
    """A question's verdict in a comparison: how B's answer compares with A's, or why there is none."""

    BETTER = "better"
    WORSE = "worse"
    SAME = "same"
    NEW = "new"  # asked of B only
    REMOVED = "removed"  # asked of A only
    UNSCORED = "unscored"  # no measure to decide on in both


VERDICT_KINDS = (Change.BETTER, Change.WORSE, Change.SAME)
ONE_SIDED = (Change.NEW, Change.REMOVED)  # questions not asked of both campaigns
# Members by value: a kept comparison of 10,000 questions reads 10,000 verdicts back, and a dictionary finds each
# several times faster than the enumeration's call does.
_CHANGES = {change.value: change for change in Change}
_STAGES = {stage.value: stage for stage in Stage}


def change_of(text: str) -> Change:
    """A stored verdict back (ValueError naming it when it is none)."""
    return _CHANGES.get(text) or Change(text)


def verdict_by(basis: str, a: float, b: float, tolerance: float = 0.0) -> Change:
    """better, worse or same: B − A in the basis measure's direction; a difference under `tolerance` (the smallest
    meaningful one) is the same."""
    delta = b - a
    if abs(delta) <= EPSILON or abs(delta) < tolerance - EPSILON:
        return Change.SAME
    from evalcore.metrics.registry import higher_is_better  # the registry (numpy): not for reading a kept one

    return Change.BETTER if (delta > 0) == higher_is_better(basis) else Change.WORSE


@dataclass(frozen=True)
class CampaignHeader:
    """The fields of a campaign a comparison repeats."""

    id: str = field(metadata=doc())
    kind: CampaignKind = field(metadata=doc("dataset, suite or traces"))
    source: str = field(metadata=doc("the dataset reference, or the suite id"))
    status: str = field(metadata=doc())
    dataset_hash: str | None = field(metadata=doc())
    config: Snapshot = field(metadata=doc("the configuration snapshot"))
    total: int = field(metadata=doc())
    finished: int = field(metadata=doc())
    failed: int = field(metadata=doc())

    @classmethod
    def of(cls, campaign: Campaign) -> CampaignHeader:
        """The header of a campaign."""
        return cls(campaign.id, campaign.kind, campaign.source, campaign.status.value, campaign.dataset_hash,
                   campaign.config, campaign.total, campaign.finished, campaign.failed)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {**self.__dict__, "kind": str(self.kind)}


@dataclass(frozen=True)
class Passage:
    """A relevant passage that entered or left the retrieved list."""

    pid: int = field(metadata=doc())
    title: str = field(metadata=doc())

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"pid": self.pid, "title": self.title}


@dataclass(frozen=True)
class QuestionDiff:
    """One line of the per-question table: the verdict, its basis, and what changed."""

    qid: int = field(metadata=doc())
    question: str = field(metadata=doc())
    answer_a: str | None = field(metadata=doc())
    answer_b: str | None = field(metadata=doc())
    verdict: Change = field(metadata=doc("better, worse, same, new, removed or unscored"))
    basis: str | None = field(metadata=doc("the measure that decided, or 'error'"))
    a: float | None = field(metadata=doc("the deciding measure's value in A"))
    b: float | None = field(metadata=doc("the deciding measure's value in B"))
    error_a: str | None = field(default=None, metadata=doc())
    error_b: str | None = field(default=None, metadata=doc())
    answer_changed: bool | None = field(default=None, metadata=doc())
    entered: tuple[Passage, ...] = field(default=(), metadata=doc("relevant passages retrieved in B, not in A"))
    left: tuple[Passage, ...] = field(default=(), metadata=doc("relevant passages retrieved in A, not in B"))
    sources_entered: tuple[str, ...] | None = field(default=None, metadata=doc(
        "suites only: expected sources found in B, not in A", optional=True))
    sources_left: tuple[str, ...] | None = field(default=None, metadata=doc(
        "suites only: expected sources found in A, not in B", optional=True))
    diagnosis_a: Stage | None = field(default=None, metadata=doc(
        f"its failure stage in A ({STAGE_WORDS}; null when A did not ask it)"))
    diagnosis_b: Stage | None = field(default=None, metadata=doc(
        f"its failure stage in B ({STAGE_WORDS}; null when B did not ask it)"))
    queries_a: tuple[str, ...] = field(default=(), metadata=doc(
        "the query transformation's texts in A (empty without one)"))
    queries_b: tuple[str, ...] = field(default=(), metadata=doc("the query transformation's texts in B"))
    judges_a: Mapping[str, Verdict] = field(default_factory=dict, metadata=doc(
        "each judge's verdict on A's answer, by judge (judged questions only)", optional=True))
    judges_b: Mapping[str, Verdict] = field(default_factory=dict, metadata=doc(
        "each judge's verdict on B's answer, by judge (judged questions only)", optional=True))

    def to_dict(self, *, kept: bool = False) -> dict[str, Any]:
        """JSON shape (sources_* only for questions with expected sources, judges_* only for judged ones); `kept`:
        as the store keeps it, each side's verdicts one JSON text (from_dict reads it back without decoding it)."""
        data: dict[str, Any] = {
            "qid": self.qid, "question": self.question, "answer_a": self.answer_a, "answer_b": self.answer_b,
            "verdict": self.verdict.value, "basis": self.basis, "a": self.a, "b": self.b, "error_a": self.error_a,
            "error_b": self.error_b, "answer_changed": self.answer_changed,
            "entered": [p.to_dict() for p in self.entered], "left": [p.to_dict() for p in self.left],
            "diagnosis_a": stage_text(self.diagnosis_a), "diagnosis_b": stage_text(self.diagnosis_b),
            "queries_a": list(self.queries_a), "queries_b": list(self.queries_b),
        }
        if self.sources_entered is not None:
            data["sources_entered"] = list(self.sources_entered)
            data["sources_left"] = list(self.sources_left or ())
        if self.judges_a or self.judges_b:
            text = verdicts_text if kept else verdicts_json
            data["judges_a"], data["judges_b"] = text(self.judges_a), text(self.judges_b)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionDiff:
        """From to_dict's shape, or from the kept one whose verdicts are JSON texts (read on first use)."""
        sources = data.get("sources_entered")
        return cls(**{**data, "verdict": change_of(data["verdict"]),
                      "entered": tuple(Passage(**p) for p in data["entered"]),
                      "left": tuple(Passage(**p) for p in data["left"]),
                      "sources_entered": None if sources is None else tuple(sources),
                      "sources_left": None if sources is None else tuple(data["sources_left"]),
                      "diagnosis_a": stage_of(data.get("diagnosis_a")),
                      "diagnosis_b": stage_of(data.get("diagnosis_b")),
                      "queries_a": tuple(data.get("queries_a", ())), "queries_b": tuple(data.get("queries_b", ())),
                      "judges_a": verdicts_of(data.get("judges_a")), "judges_b": verdicts_of(data.get("judges_b"))})


def verdicts_of(data: str | Mapping[str, Any] | None) -> Mapping[str, Verdict]:
    """Verdicts by judge from their JSON shape, or from a kept JSON text (decoded when first used); none when absent."""
    if isinstance(data, str):
        return StoredVerdicts(data)
    return {name: Verdict.from_dict(v) for name, v in (data or {}).items()}


def stage_text(stage: Stage | None) -> str | None:
    """A stage as JSON gives it."""
    return str(stage) if stage else None


def stage_of(text: str | None) -> Stage | None:
    """A stored stage back (None when the question was not asked or not attributed)."""
    return (_STAGES.get(text) or Stage(text)) if text else None


@dataclass(frozen=True)
class MeasureDelta:
    """B − A of one measure over the common questions, its 95% interval, a paired test, and its power.

    `mde` is the smallest difference the paired t-test would detect with 80% power at alpha 0.05
    given the observed spread of the differences (`sd_diff`) and n; `mde_bootstrap` the same from
    the bootstrap standard error; `n_required` the questions needed to detect `effect`
    (evalcore.compare.power). They are None when `power_note` says why they cannot be computed.
    """

    measure: str = field(metadata=doc())
    n: int = field(metadata=doc("the common questions that have the measure in both campaigns"))
    mean_a: float = field(metadata=doc())
    mean_b: float = field(metadata=doc())
    delta: float = field(metadata=doc("mean_b - mean_a"))
    ci_low: float | None = field(metadata=doc("the 95% bootstrap interval of delta"))
    ci_high: float | None = field(metadata=doc())
    p_randomization: float = field(metadata=doc("the paired randomization test's p-value"))
    randomization: str = field(metadata=doc("exact or sampled"))
    higher_is_better: bool = field(metadata=doc())
    binary: bool = field(metadata=doc())
    p_value: float = field(metadata=doc("the p-value of `test`"))
    test: str = field(metadata=doc())
    significant: bool = field(metadata=doc())
    improved: bool = field(metadata=doc())
    mcnemar: McNemar | None = field(default=None, metadata=doc("binary measures: the exact McNemar test",
                                                               optional=True))
    sd_diff: float | None = field(default=None, metadata=doc(
        "standard deviation of the per-question differences B - A"))
    se_bootstrap: float | None = field(default=None, metadata=doc("bootstrap standard error of the mean difference"))
    mde: float | None = field(default=None, metadata=doc(
        "smallest difference the paired t-test detects with 80% power at alpha 0.05 given n and sd_diff (null when "
        "power_note says why not)"))
    mde_bootstrap: float | None = field(default=None, metadata=doc("(z_0.975 + z_0.8) * se_bootstrap: a check on mde"))
    effect: float = field(default=power.EFFECT, metadata=doc(
        "the effect size n_required is computed for, in the measure's units"))
    n_required: int | None = field(default=None, metadata=doc(
        "questions needed to detect effect with 80% power at alpha 0.05"))
    power_note: str | None = field(default=None, metadata=doc(
        "why mde and n_required are null (fewer than 2 pairs, no spread)"))
    changed: int | None = field(default=None, metadata=doc("common questions whose value differs between A and B"))
    one_way: bool | None = field(default=None, metadata=doc("every one of them moved in the same direction"))
    conversations: int | None = field(default=None, metadata=doc(
        "the conversations the pairs belong to (a question asked alone counts as one): ci_low, ci_high and the "
        "randomization test then resample whole conversations; null when no question is a turn of one"))
    ci_low_turns: float | None = field(default=None, metadata=doc(
        "conversations: the 95% interval if turns were independent (too narrow when they are not)"))
    ci_high_turns: float | None = field(default=None, metadata=doc())
    p_turns: float | None = field(default=None, metadata=doc(
        "conversations: the randomization test's p-value if turns were independent"))

    @property
    def unchanged(self) -> bool:
        """Every question has the same value in A and B: there is nothing to test or to draw."""
        if self.changed is not None:
            return self.changed == 0
        return abs(self.delta) <= EPSILON and self.sd_diff in (0.0, None)

    @property
    def disagreement(self) -> str | None:
        """When the interval and the test disagree, what that means in words an analyst can act on (else None)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        excludes = self.ci_low > 0 or self.ci_high < 0
        if excludes == self.significant:
            return None
        interval = f"the 95% interval [{self.ci_low:+.3g}, {self.ci_high:+.3g}]"
        if not excludes:
            return (f"the test finds a difference (p = {self.p_value:.3g}) but {interval} includes 0: a borderline "
                    f"result that more questions would settle")
        if self.changed and self.one_way and self.p_value <= 2.0 ** (1 - self.changed) + EPSILON:
            return (f"too few questions changed to be significant ({self.changed} of {self.n}: p = "
                    f"{self.p_value:.3g} is the smallest possible), though every change went the same way and "
                    f"{interval} excludes 0: more questions would confirm it")
        return (f"no difference found (p = {self.p_value:.3g}) though {interval} excludes 0: a borderline result "
                f"that more questions would settle")

    @property
    def under_powered(self) -> bool:
        """Not significant, and unable to see a difference as small as `effect` (or any at all)."""
        return not self.significant and (self.n < 2 or (self.mde is not None and self.mde > self.effect))

    def with_effect(self, effect: float) -> MeasureDelta:
        """The same delta with the questions needed to detect another effect size."""
        return replace(self, effect=effect, n_required=power.required_n(effect, self.sd_diff))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        data = {k: v for k, v in self.__dict__.items() if k != "mcnemar"}
        if self.mcnemar is not None:
            data["mcnemar"] = self.mcnemar.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasureDelta:
        """From to_dict's shape."""
        mcnemar = data.get("mcnemar")
        return cls(**{**data, "mcnemar": McNemar(**mcnemar) if mcnemar else None})


class Paired(NamedTuple):
    """One measure on the common questions where both campaigns have it: question ids, A's and B's values."""

    qids: np.ndarray
    a: np.ndarray
    b: np.ndarray


def verdict_counts(questions: Sequence[QuestionDiff]) -> dict[str, int]:
    """How many questions got each verdict."""
    return dict(Counter(q.verdict for q in questions))


def strict_counts(questions: Sequence[QuestionDiff]) -> dict[str, int]:
    """How many questions would get each verdict if any difference counted (no tolerance)."""
    return dict(Counter(verdict_by(q.basis, q.a, q.b) if q.basis and q.a is not None and q.b is not None
                        else q.verdict for q in questions))


def stage_transitions(questions: Sequence[QuestionDiff]) -> list[Transition]:
    """How the common questions moved between failure stages (none when no question has a stage)."""
    common = [(q.qid, q.diagnosis_a, q.diagnosis_b) for q in questions if q.verdict not in ONE_SIDED]
    if all(a is None and b is None for _, a, b in common):
        return []
    return diagnosis.transitions(common)


def bases_of(questions: Sequence[QuestionDiff]) -> list[str | None]:
    """The questions' verdict bases, each once, in the order questions first have them."""
    return list(dict.fromkeys(q.basis for q in questions))


class Summary(NamedTuple):
    """What a comparison's JSON says of its questions besides their lines (kept beside them), and each question's
    verdict."""

    verdicts: dict[str, int]
    strict_verdicts: dict[str, int]
    transitions: list[Transition]
    bases: list[str | None]
    each: list[Change]

    @classmethod
    def of(cls, questions: Sequence[QuestionDiff]) -> Summary:
        """Of these questions' records."""
        return cls(verdict_counts(questions), strict_counts(questions), stage_transitions(questions),
                   bases_of(questions), [q.verdict for q in questions])

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"verdicts": self.verdicts, "strict_verdicts": self.strict_verdicts,
                "transitions": [t.to_dict() for t in self.transitions], "bases": self.bases,
                "each": [str(verdict) for verdict in self.each]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Summary:
        """From to_dict's shape."""
        return cls({change_of(k): v for k, v in data["verdicts"].items()},
                   {change_of(k): v for k, v in data["strict_verdicts"].items()},
                   [Transition.from_dict(t) for t in data["transitions"]], list(data["bases"]),
                   [change_of(verdict) for verdict in data["each"]])


class KeptQuestions(Sequence[QuestionDiff]):
    """A comparison's per-question lines as JSON text, decoded into records only when one is read.

    Each line is a question's JSON object, with a tab before and after each side's verdicts (their stored JSON
    text) when it has some; the lines joined by a comma and a newline are the `text` a comparison keeps. JSON text
    holds no raw tab or newline (the encoder escapes them) and allows both between its tokens, so that text is,
    as it is, the inside of the questions' JSON array: the API and `compare --json` write it out without decoding
    a question or splitting a line, and a line is decoded without parsing its verdicts. `summary` holds the counts
    the comparison's JSON gives of the questions. The text may be given as a function that reads it (a kept
    comparison's, from the store), called when the text is first needed.
    """

    def __init__(self, text: str | Callable[[], str], summary: Summary, records: list[QuestionDiff] | None = None,
                 ) -> None:
        self._text = text
        self.summary = summary
        self._records = records
        self._lines: list[str] | None = None

    @property
    def text(self) -> str:
        """The questions' lines joined (read on the first call when given as a function)."""
        if not isinstance(self._text, str):
            self._text = self._text()
        return self._text

    @classmethod
    def of(cls, questions: Sequence[QuestionDiff]) -> KeptQuestions:
        """From records (their lines and summary written now)."""
        return cls(LINE_END.join(question_line(q) for q in questions), Summary.of(questions), list(questions))

    @property
    def lines(self) -> list[str]:
        """One line per question (split from the text on the first call)."""
        if self._lines is None:
            self._lines = self.text.split(LINE_END) if self.text else []
        return self._lines

    def records(self) -> list[QuestionDiff]:
        """The questions' records (decoded on the first call)."""
        if self._records is None:
            self._records = decode_lines(self.lines)
        return self._records

    def with_verdicts(self, kinds: Sequence[Change]) -> list[QuestionDiff]:
        """The records of the questions with one of these verdicts, in order (only those decoded, unless all are)."""
        if self._records is not None:
            return [q for q in self._records if q.verdict in kinds]
        if not any(self.summary.verdicts.get(kind) for kind in kinds):
            return []   # none to decode, and no text to read
        return decode_lines([line for line, verdict in zip(self.lines, self.summary.each, strict=True)
                             if verdict in kinds])

    def __len__(self) -> int:
        return len(self.summary.each)

    @overload
    def __getitem__(self, index: int) -> QuestionDiff: ...
    @overload
    def __getitem__(self, index: slice) -> list[QuestionDiff]: ...
    def __getitem__(self, index: int | slice) -> QuestionDiff | list[QuestionDiff]:
        return self.records()[index]

    def __iter__(self) -> Iterator[QuestionDiff]:
        return iter(self.records())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and self.records() == list(other)

    __hash__ = None  # type: ignore[assignment]   # equal to lists, so unhashable like them

    def __repr__(self) -> str:
        return f"KeptQuestions({len(self)} questions)"


def kept_questions(questions: Sequence[QuestionDiff]) -> KeptQuestions:
    """The questions as a kept comparison holds them (their lines written now, unless they are kept ones)."""
    return questions if isinstance(questions, KeptQuestions) else KeptQuestions.of(questions)


LINE_END = ",\n"   # between two lines of KeptQuestions: JSON's comma, then a newline no JSON text holds
# What comes before, between and after a line's two verdict texts (a question's last two keys, as to_dict orders them).
_BEFORE_A = ', "judges_a": \t'
_BEFORE_B = '\t, "judges_b": \t'
_AFTER_B = "\t}"


def question_line(question: QuestionDiff) -> str:
    """A question's line of KeptQuestions: its JSON, each side's verdicts put in as their JSON text between tabs."""
    data = question.to_dict(kept=True)
    if "judges_a" not in data:
        return encode(data)
    texts = [data.pop("judges_a"), data.pop("judges_b")]
    # A verdicts' text stored by hand with tabs or newlines in it (not as the store writes it) is written anew.
    texts = [encode(json.loads(t)) if "\t" in t or "\n" in t else t for t in texts]
    return f"{encode(data)[:-1]}{_BEFORE_A}{texts[0]}{_BEFORE_B}{texts[1]}{_AFTER_B}"


def decode_lines(lines: Sequence[str]) -> list[QuestionDiff]:
    """The records of KeptQuestions lines (their verdicts left as text)."""
    parts = [line.split("\t") for line in lines]
    cut = len(_BEFORE_A) - 1
    heads = json.loads("[" + ",".join(part[0][:-cut] + "}" if len(part) == 5 else part[0] for part in parts) + "]")
    for data, part in zip(heads, parts, strict=True):
        if len(part) == 5:
            data["judges_a"], data["judges_b"] = part[1], part[3]
    return [QuestionDiff.from_dict(data) for data in heads]


def encode(value: Any) -> str:
    """One value in JSON, non-ASCII as it is (the C encoder); NaN and infinities refused, as JSON has none."""
    return _ENCODER.encode(value)


# json.dumps with these options builds an encoder per call: a comparison of 10,000 questions encodes 20,000 values.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False)


@dataclass(frozen=True)
class Comparison:
    """Two campaigns side by side: verdicts per question, statistics per measure, warnings.

    `warnings` are about the setup (what makes the comparison mean less than it seems);
    `power_warnings` name the measures where no difference was found but none as small as
    `effect` could have been. `paired` holds each measure's per-question values (for plots;
    not part of the JSON shape).
    """

    a: CampaignHeader = field(metadata=doc("the baseline"))
    b: CampaignHeader = field(metadata=doc("the candidate"))
    questions: Sequence[QuestionDiff] = field(metadata=doc())
    measures: list[MeasureDelta] = field(metadata=doc())
    warnings: list[str] = field(metadata=doc())
    config_diff: dict[str, list[Any]] = field(metadata=doc("each key that differs: [A's value, B's value]"))
    seed: int = field(metadata=doc())
    resamples: int = field(metadata=doc())
    notes: list[str] = field(default_factory=list, metadata=doc())
    effect: float = field(default=power.EFFECT, metadata=doc("the effect size to detect (the `effect` query "
                                                             "parameter)"))
    paired: Mapping[str, Paired] = field(default_factory=dict, metadata=doc(hidden=True))
    basis: str | None = field(default=None, metadata=doc("the measure deciding per-question verdicts first"))
    basis_reason: str = field(default="", metadata=doc("why that measure (what changed between the "
                                                       "configurations)"))

    tolerances: dict[str, float] = field(default_factory=dict, metadata=doc(hidden=True))
    pairwise: Preference | None = field(default=None, metadata=doc(
        "the pairwise judge's verdicts once asked (POST /api/v1/compare/pairwise, compare --pairwise); null before"))
    cost: CostDelta | None = field(default=None, metadata=doc(
        "B − A of the cost per question over the common questions, with its 95% interval, or why it is not given"))
    # The conversation and turn of each common question that is a turn of one (by question id): what `conversations`
    # groups the questions' verdicts by.
    turns: dict[int, tuple[str, int]] = field(default_factory=dict, metadata=doc(hidden=True))

    JSON_EXTRA = (Key("verdicts", dict[str, int], "how many questions got each verdict"),
                  Key("power_warnings", list[str], "measures with no significant difference that could not have "
                                                   "shown one of the effect size"),
                  Key("transitions", list[Transition], "how the common questions moved between failure stages "
                                                       "from A to B (the counts add up to the common questions)"),
                  Key("power", float, "the power the minimum detectable effects are computed for"),
                  Key("alpha", float),
                  Key("verdicts_without_tolerance", dict[str, int], "how many questions would get each verdict if "
                                                                    "any difference counted"),
                  Key("tolerance", dict[str, float], "the smallest meaningful difference of each deciding measure"),
                  Key("unchanged", list[str], "measures with the same value in A and B on every common question"),
                  Key("disagreements", list[str], "measures whose interval and test disagree, and what that means"),
                  Key("trade_off", str, "the deciding measure's change beside the cost's, in words, e.g. 'B: +0.04 "
                                        "ndcg@10 [0.01, 0.07] at 1.8x the cost per question'"),
                  Key("conversations", list[ConversationVerdict], "each conversation's turns side by side (verdict, "
                                                                  "failure stage in A and B) and its verdict; empty "
                                                                  "when no question is a turn of one"))

    def tolerance(self, measure: str) -> float:
        """The smallest difference of a question's `measure` that changes its verdict (asked, else the default)."""
        if measure in self.tolerances:
            return self.tolerances[measure]
        from evalcore.metrics.registry import tolerance_of  # the registry (numpy): a kept comparison has its own

        return tolerance_of(measure)

    @property
    def strict_verdicts(self) -> dict[str, int]:
        """How many questions would get each verdict if any difference counted (no tolerance)."""
        if isinstance(self.questions, KeptQuestions):
            return self.questions.summary.strict_verdicts
        return strict_counts(self.questions)

    @property
    def bases(self) -> list[str | None]:
        """The measures that decided verdicts (or "error", or None), in the order questions first have them."""
        if isinstance(self.questions, KeptQuestions):
            return self.questions.summary.bases
        return bases_of(self.questions)

    @property
    def deciding(self) -> str | None:
        """The measure that decided the most questions' verdicts (the basis, or the first fallback they had)."""
        counts = Counter(q.basis for q in self.questions if q.basis and q.basis != "error")
        return counts.most_common(1)[0][0] if counts else None

    @property
    def tolerance_note(self) -> str:
        """The tolerance the verdicts were decided with and the counts without it ("" when none applied)."""
        used = sorted(basis for basis in self.bases if basis and basis != "error")
        kept = [f"{name} under {self.tolerance(name):g}" for name in used if self.tolerance(name) > 0]
        if not kept:
            return ""
        strict = self.strict_verdicts
        return (f"a change of {', '.join(kept)} is the same (the smallest meaningful difference); counting every "
                f"difference: " + ", ".join(f"{kind} {strict.get(kind, 0)}" for kind in VERDICT_KINDS))

    @property
    def disagreements(self) -> list[str]:
        """One line per measure whose interval and test disagree, saying what that means."""
        return [f"{m.measure}: {m.disagreement}" for m in self.measures if m.disagreement]

    @property
    def trade_off(self) -> str:
        """The deciding measure's change and interval beside what B costs per question against A, in words."""
        name = self.basis or self.deciding
        measure = next((m for m in self.measures if m.measure == name), None) or next(iter(self.measures), None)
        quality = "" if measure is None else f"B: {measure_change(measure)}"
        cost = self.cost
        if cost is None:
            return quality
        if cost.refused or cost.delta is None:
            return "; ".join(part for part in (quality, cost.text()) if part)
        if cost.ratio is not None:
            spent = f"{cost.ratio:.2g}x the cost per question"
        else:
            spent = f"{'+' if cost.delta >= 0 else '-'}{money(abs(cost.delta), cost.currency)} per question"
        return f"{quality} at {spent}" if quality else f"B: {spent}"

    @property
    def unchanged(self) -> list[str]:
        """The measures whose value is the same in A and B on every common question (display order)."""
        return [m.measure for m in self.measures if m.unchanged]

    def with_tolerances(self, asked: Mapping[str, float]) -> Comparison:
        """The same comparison with each question's verdict decided under these tolerances (others: defaults)."""
        if not asked:
            return self
        tolerances = {**self.tolerances, **check_tolerances(asked)}
        relabelled = replace(self, tolerances=tolerances)
        questions = [replace(q, verdict=verdict_by(q.basis, q.a, q.b, relabelled.tolerance(q.basis)))
                     if q.basis and q.a is not None and q.b is not None else q for q in self.questions]
        return replace(relabelled, questions=questions)

    @property
    def verdicts(self) -> dict[str, int]:
        """How many questions got each verdict."""
        if isinstance(self.questions, KeptQuestions):
            return self.questions.summary.verdicts
        return verdict_counts(self.questions)

    @property
    def transitions(self) -> list[Transition]:
        """How the common questions moved between failure stages from A to B (the cells add up to them);
        none when neither campaign has a stage for any of them (results stored before attribution existed)."""
        if isinstance(self.questions, KeptQuestions):
            return self.questions.summary.transitions
        return stage_transitions(self.questions)

    @property
    def conversations(self) -> list[ConversationVerdict]:
        """Each conversation's turns side by side and its verdict (under the comparison's tolerances)."""
        return conversation_verdicts(self.questions, self.turns) if self.turns else []

    @property
    def power_warnings(self) -> list[str]:
        """One line per measure with no significant difference that could not have seen one of `effect`, and one
        line for all those with the same value in A and B on every question."""
        lines = [power_warning(m) for m in self.measures if m.under_powered and not m.unchanged]
        flat = [m.measure for m in self.measures if m.under_powered and m.unchanged]
        return lines + ([unchanged_text(flat)] if flat else [])

    def with_effect(self, effect: float) -> Comparison:
        """The same comparison with the questions needed (and the warnings) for another effect size."""
        effect = power.check_effect(effect)
        if effect == self.effect:
            return self
        return replace(self, effect=effect, measures=[m.with_effect(effect) for m in self.measures])

    def to_dict(self, *, questions: Any = None) -> dict[str, Any]:
        """JSON shape for --json, the API and the dashboard (`questions`: what stands for the questions' list)."""
        return {"a": self.a.to_dict(), "b": self.b.to_dict(), "verdicts": self.verdicts,
                "questions": [q.to_dict() for q in self.questions] if questions is None else questions,
                "measures": [m.to_dict() for m in self.measures],
                "warnings": self.warnings, "power_warnings": self.power_warnings, "notes": self.notes,
                "transitions": [t.to_dict() for t in self.transitions],
                "config_diff": self.config_diff, "seed": self.seed, "resamples": self.resamples,
                "effect": self.effect, "power": power.POWER, "alpha": power.ALPHA, "basis": self.basis,
                "basis_reason": self.basis_reason, "verdicts_without_tolerance": self.strict_verdicts,
                "tolerance": {name: self.tolerance(name) for name in self.bases if name and name != "error"},
                "unchanged": self.unchanged, "disagreements": self.disagreements,
                "pairwise": self.pairwise.to_dict() if self.pairwise else None,
                "cost": self.cost.to_dict() if self.cost else None, "trade_off": self.trade_off,
                "conversations": [c.to_dict() for c in self.conversations]}


def measure_change(measure: MeasureDelta) -> str:
    """`+0.04 ndcg@10 [0.01, 0.07]`: a measure's mean change and its 95% interval."""
    def number(value: float) -> str:
        return f"{value:+.2f}" if value == 0 or abs(value) >= 0.005 else f"{value:+.2g}"

    interval = "" if measure.ci_low is None or measure.ci_high is None else \
        f" [{number(measure.ci_low).lstrip('+')}, {number(measure.ci_high).lstrip('+')}]"
    return f"{number(measure.delta)} {measure.measure}{interval}"


def unchanged_text(measures: list[str]) -> str:
    """One line for the measures with the same value in A and B on every question."""
    return f"the same in A and B on every question (nothing to test) on {counted(len(measures), 'measure')}: " \
        + ", ".join(measures)


def check_tolerances(asked: Mapping[str, float]) -> dict[str, float]:
    """Tolerances as asked, each a finite number of at least 0 (EvalError naming the measure otherwise)."""
    for measure, value in asked.items():
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise EvalError(f"the tolerance of {measure} must be a number of at least 0", where="tolerance",
                            found=str(value), expected="e.g. 0.01 for a 0-1 measure, 0 to count any difference")
    return {measure: float(value) for measure, value in asked.items()}


def power_warning(measure: MeasureDelta) -> str:
    """The under-powered warning of one measure."""
    if measure.mde is None:
        return f"no difference found on {measure.measure}, and none could be: {measure.power_note}"
    needed = f"; about {measure.n_required:,} questions would be needed to see ±{measure.effect:g}" \
        if measure.n_required else ""
    return (f"no difference found on {measure.measure}, but with n = {measure.n} this comparison could not have "
            f"seen one smaller than ±{measure.mde:.2g} ({power.POWER:.0%} power, alpha {power.ALPHA:g}{needed})")
