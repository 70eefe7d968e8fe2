"""Comparison of two campaigns: per-question verdicts, per-measure deltas with uncertainty, warnings."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from evalcore.access import Principal, scope
from evalcore.campaigns import Campaign, QuestionResult, campaign_results, get_campaign
from evalcore.compare import stats
from evalcore.errors import EvalError
from evalcore.metrics import MEASURES, sources_found, verdict_basis
from evalcore.store import Store

PASS_SUFFIX = ":pass"
EPSILON = 1e-9
QuestionKey = tuple[int, str]


@dataclass(frozen=True)
class CampaignHeader:
    """The fields of a campaign a comparison repeats."""

    id: str
    kind: str
    source: str
    status: str
    dataset_hash: str | None
    config: dict[str, Any]
    total: int
    finished: int
    failed: int

    @classmethod
    def of(cls, campaign: Campaign) -> CampaignHeader:
        """The header of a campaign."""
        return cls(campaign.id, campaign.kind, campaign.source, campaign.status.value, campaign.dataset_hash,
                   campaign.config, campaign.total, campaign.finished, campaign.failed)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class Passage:
    """A relevant passage that entered or left the retrieved list."""

    pid: int
    title: str

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"pid": self.pid, "title": self.title}


@dataclass(frozen=True)
class QuestionDiff:
    """One line of the per-question table: the verdict, its basis, and what changed."""

    qid: int
    question: str
    answer_a: str | None
    answer_b: str | None
    verdict: str  # better | worse | same | new | removed | unscored
    basis: str | None  # the measure that decided, "error", or None
    a: float | None
    b: float | None
    error_a: str | None = None
    error_b: str | None = None
    answer_changed: bool | None = None
    entered: tuple[Passage, ...] = ()
    left: tuple[Passage, ...] = ()
    sources_entered: tuple[str, ...] | None = None  # suites only: expected sources found in B, not in A
    sources_left: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (sources_* only for questions with expected sources)."""
        data: dict[str, Any] = {
            "qid": self.qid, "question": self.question, "answer_a": self.answer_a, "answer_b": self.answer_b,
            "verdict": self.verdict, "basis": self.basis, "a": self.a, "b": self.b, "error_a": self.error_a,
            "error_b": self.error_b, "answer_changed": self.answer_changed,
            "entered": [p.to_dict() for p in self.entered], "left": [p.to_dict() for p in self.left],
        }
        if self.sources_entered is not None:
            data["sources_entered"] = list(self.sources_entered)
            data["sources_left"] = list(self.sources_left or ())
        return data


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test of paired pass/fail outcomes."""

    only_a: int
    only_b: int
    p_value: float


@dataclass(frozen=True)
class MeasureDelta:
    """B − A of one measure over the common questions, its 95% interval and a paired test."""

    measure: str
    n: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float | None
    ci_high: float | None
    p_randomization: float
    randomization: str  # "exact" | "sampled"
    higher_is_better: bool
    binary: bool
    p_value: float
    test: str
    significant: bool
    improved: bool
    mcnemar: McNemar | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        data = {k: v for k, v in self.__dict__.items() if k != "mcnemar"}
        if self.mcnemar is not None:
            data["mcnemar"] = dict(self.mcnemar.__dict__)
        return data


@dataclass(frozen=True)
class Comparison:
    """Two campaigns side by side: verdicts per question, statistics per measure, warnings."""

    a: CampaignHeader
    b: CampaignHeader
    questions: list[QuestionDiff]
    measures: list[MeasureDelta]
    warnings: list[str]
    config_diff: dict[str, list[Any]]
    seed: int
    resamples: int
    notes: list[str] = field(default_factory=list)

    @property
    def verdicts(self) -> dict[str, int]:
        """How many questions got each verdict."""
        return dict(Counter(q.verdict for q in self.questions))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for --json, the API and the dashboard."""
        return {"a": self.a.to_dict(), "b": self.b.to_dict(), "verdicts": self.verdicts,
                "questions": [q.to_dict() for q in self.questions], "measures": [m.to_dict() for m in self.measures],
                "warnings": self.warnings, "notes": self.notes, "config_diff": self.config_diff, "seed": self.seed,
                "resamples": self.resamples}


def higher_is_better(name: str) -> bool:
    """The measure's direction from the registry (judge pass rates and unknown names: higher)."""
    measure = MEASURES.get(name.split(PASS_SUFFIX)[0])
    return measure.higher_is_better if measure else True


def is_number(value: object) -> bool:
    """A finite int or float (booleans count, as 1/0)."""
    return isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value))


def row_values(result: QuestionResult) -> dict[str, float]:
    """Every measure of a result, judges included (`judge.X` and the pass/fail rate `judge.X:pass`)."""
    values = {k: float(v) for k, v in result.outcome.measures.items() if is_number(v)}
    for name, verdict in result.outcome.judges.items():
        if verdict.score is not None and is_number(verdict.score):
            values.setdefault(f"judge.{name}", float(verdict.score))
        measure = MEASURES.get(f"judge.{name}")
        if verdict.result in ("pass", "fail") and not (measure and measure.binary):
            values[f"judge.{name}{PASS_SUFFIX}"] = 1.0 if verdict.result == "pass" else 0.0
    return values


def question_key(result: QuestionResult) -> QuestionKey:
    """Two results are the same question when their id and their text both match."""
    return (result.question.qid, " ".join(result.question.text.split()))


def verdict(a_row: QuestionResult, b_row: QuestionResult) -> tuple[str, str | None, float | None, float | None]:
    """(verdict, basis measure, value in A, value in B) for a question both campaigns asked."""
    a_failed, b_failed = bool(a_row.outcome.error), bool(b_row.outcome.error)
    if a_failed or b_failed:
        kind = "same" if a_failed == b_failed else "better" if a_failed else "worse"
        return kind, "error", None, None
    a_values, b_values = row_values(a_row), row_values(b_row)
    for basis in verdict_basis():
        if basis in a_values and basis in b_values:
            delta = b_values[basis] - a_values[basis]
            kind = "same" if abs(delta) <= EPSILON else "better" if delta > 0 else "worse"
            return kind, basis, a_values[basis], b_values[basis]
    return "unscored", None, None, None


def relevant_pids(result: QuestionResult) -> set[int]:
    """Passage ids labelled relevant (label >= 1) for this question."""
    return {int(pid) for pid, label in (result.question.relevant or {}).items() if is_number(label) and label >= 1}


def retrieved_pids(result: QuestionResult) -> dict[int, str]:
    """Retrieved passage id -> title, in rank order."""
    return {int(hit.pid): hit.title for hit in result.outcome.retrieved if hit.pid is not None}


def found_sources(result: QuestionResult) -> set[str]:
    """The expected sources that one of the retrieved sources matches."""
    sources = [source.to_dict() for source in result.outcome.sources]
    return {s for s in result.question.expected_sources if sources_found([s], sources)}


class Changes(NamedTuple):
    """Relevant passages (and, for suites, expected sources found) that entered or left from A to B."""

    entered: tuple[Passage, ...] = ()
    left: tuple[Passage, ...] = ()
    sources_entered: tuple[str, ...] | None = None
    sources_left: tuple[str, ...] | None = None


def passage_changes(a_row: QuestionResult, b_row: QuestionResult) -> Changes:
    """Relevant passages (and expected sources) that entered or left the retrieved list from A to B."""
    relevant = relevant_pids(a_row) | relevant_pids(b_row)
    a_top, b_top = retrieved_pids(a_row), retrieved_pids(b_row)
    titles = {**a_top, **b_top}
    entered = tuple(Passage(p, titles[p]) for p in sorted(relevant & (b_top.keys() - a_top.keys())))
    left = tuple(Passage(p, titles[p]) for p in sorted(relevant & (a_top.keys() - b_top.keys())))
    sources_entered = sources_left = None
    if a_row.question.expected_sources or b_row.question.expected_sources:
        a_found, b_found = found_sources(a_row), found_sources(b_row)
        sources_entered, sources_left = tuple(sorted(b_found - a_found)), tuple(sorted(a_found - b_found))
    return Changes(entered, left, sources_entered, sources_left)


def question_entry(key: QuestionKey, a_row: QuestionResult | None, b_row: QuestionResult | None) -> QuestionDiff:
    """One line of the per-question table."""
    shown = a_row or b_row
    assert shown is not None  # every key comes from one side at least
    base = QuestionDiff(qid=key[0], question=shown.question.text, answer_a=a_row.outcome.answer if a_row else None,
                        answer_b=b_row.outcome.answer if b_row else None, verdict="new" if a_row is None else "removed",
                        basis=None, a=None, b=None)
    if a_row is None or b_row is None:
        return base
    kind, basis, a_value, b_value = verdict(a_row, b_row)
    # A failed question retrieved nothing: "relevant passages left" would only echo the failure.
    changes = passage_changes(a_row, b_row) if basis != "error" else Changes()
    return replace(base, verdict=kind, basis=basis, a=a_value, b=b_value, error_a=a_row.outcome.error or None,
                   error_b=b_row.outcome.error or None,
                   answer_changed=(a_row.outcome.answer or "").strip() != (b_row.outcome.answer or "").strip(),
                   **changes._asdict())


def measure_entry(name: str, pairs: list[tuple[float, float]], *, seed: int, resamples: int) -> MeasureDelta:
    """Mean difference over the common questions, its 95% interval, a paired test and significance."""
    a_values, b_values = [p[0] for p in pairs], [p[1] for p in pairs]
    diffs = [b - a for a, b in pairs]
    mean_a, mean_b = sum(a_values) / len(pairs), sum(b_values) / len(pairs)
    low, high = stats.bootstrap_ci(diffs, resamples=resamples, seed=seed) or (None, None)
    p_random, method = stats.sign_flip_test(diffs, resamples=resamples, seed=seed)
    binary = is_binary(name, pairs)
    mcnemar = None
    if binary:
        test = stats.mcnemar_exact([a >= 0.5 for a in a_values], [b >= 0.5 for b in b_values])
        mcnemar = McNemar(test["only_a"], test["only_b"], test["p_value"])
    p_value = mcnemar.p_value if mcnemar else p_random
    better = higher_is_better(name)
    significant = p_value < stats.ALPHA
    return MeasureDelta(
        measure=name, n=len(pairs), mean_a=mean_a, mean_b=mean_b, delta=mean_b - mean_a, ci_low=low, ci_high=high,
        p_randomization=p_random, randomization=method, higher_is_better=better, binary=binary, p_value=p_value,
        test="mcnemar-exact" if mcnemar else f"sign-flip randomization ({method})", significant=significant,
        improved=significant and (mean_b - mean_a > 0) == better, mcnemar=mcnemar,
    )


def is_binary(name: str, pairs: list[tuple[float, float]]) -> bool:
    """Pass/fail measures (McNemar applies): known binary names whose values are all 0 or 1."""
    measure = MEASURES.get(name)
    known = bool(measure and measure.binary) or name.endswith(PASS_SUFFIX)
    return known and all(v in (0.0, 1.0) for pair in pairs for v in pair)


def config_diff(a: Campaign, b: Campaign) -> dict[str, list[Any]]:
    """Configuration keys whose values differ: key -> [value in A, value in B]."""
    return {k: [a.config.get(k), b.config.get(k)] for k in sorted(a.config.keys() | b.config.keys())
            if a.config.get(k) != b.config.get(k)}


def judge_setups(rows: list[QuestionResult]) -> dict[str, set[tuple[str, str]]]:
    """Judge name -> the (model, prompt hash) pairs used in these rows."""
    setups: dict[str, set[tuple[str, str]]] = {}
    for row in rows:
        for name, verdict_ in row.outcome.judges.items():
            if verdict_.score is not None:
                setups.setdefault(name, set()).add((verdict_.model, verdict_.prompt_hash))
    return setups


def warnings_for(a: Campaign, b: Campaign, a_rows: list[QuestionResult], b_rows: list[QuestionResult],
                 diff: dict[str, list[Any]], common: int) -> list[str]:
    """Why the comparison may not mean what it seems to mean."""
    out = []
    if len(diff) > 1:
        out.append(f"the configurations differ in {len(diff)} settings ({', '.join(diff)}): "
                   "a change cannot be attributed to one of them")
    if a.dataset_hash and b.dataset_hash and a.dataset_hash != b.dataset_hash:
        out.append("the dataset content differs (content hash): the questions or labels changed")
    if (a.kind, a.source) != (b.kind, b.source):
        out.append(f"different question sets ({a.kind} {a.source} vs {b.kind} {b.source})")
    a_judges, b_judges = judge_setups(a_rows), judge_setups(b_rows)
    for name in sorted(a_judges.keys() & b_judges.keys()):
        if a_judges[name] != b_judges[name]:
            out.append(f"judge {name} used a different model or prompt: its scores are not comparable")
    for side, campaign in (("A", a), ("B", b)):
        if campaign.status != "succeeded":
            out.append(f"campaign {side} ({campaign.id}) is {campaign.status}: results may be partial")
    if not common:
        out.append("the campaigns have no question in common (same id and same text)")
    return out


def compare_results(a_campaign: Campaign, a_rows: list[QuestionResult], b_campaign: Campaign,
                    b_rows: list[QuestionResult], *, seed: int = 0, resamples: int = stats.RESAMPLES) -> Comparison:
    """Compare two campaigns given their records and result rows (pure: no store)."""
    check_resamples(resamples)
    a_index = {question_key(r): r for r in a_rows}
    b_index = {question_key(r): r for r in b_rows}
    keys = list(a_index) + [k for k in b_index if k not in a_index]
    questions = [question_entry(k, a_index.get(k), b_index.get(k)) for k in keys]
    common = [k for k in keys if k in a_index and k in b_index]
    pairs: dict[str, list[tuple[float, float]]] = {}
    for key in common:
        a_values, b_values = row_values(a_index[key]), row_values(b_index[key])
        for name in sorted(a_values.keys() & b_values.keys()):
            pairs.setdefault(name, []).append((a_values[name], b_values[name]))
    measures = [measure_entry(n, p, seed=seed, resamples=resamples) for n, p in sorted(pairs.items())]
    diff = config_diff(a_campaign, b_campaign)
    notes = notes_for(a_campaign, b_campaign, diff, common=len(common), measured=set(pairs))
    notes += one_sided([a_index[k] for k in common], [b_index[k] for k in common], set(pairs))
    return Comparison(a=CampaignHeader.of(a_campaign), b=CampaignHeader.of(b_campaign), questions=questions,
                      measures=measures, config_diff=diff, seed=seed, resamples=resamples, notes=notes,
                      warnings=warnings_for(a_campaign, b_campaign, a_rows, b_rows, diff, len(common)))


def check_resamples(resamples: int) -> None:
    """Refuse a resample count that leaves the bootstrap and the randomization test nothing to draw."""
    if not isinstance(resamples, int) or resamples < 1:
        raise EvalError("resamples must be a whole number of at least 1", found=str(resamples),
                        expected=f">= 1 (default {stats.RESAMPLES})")


def notes_for(a: Campaign, b: Campaign, diff: dict[str, list[Any]], *, common: int, measured: set[str]) -> list[str]:
    """What the reader should know that is not a warning."""
    if a.id == b.id:
        return ["A and B are the same campaign: every question is the same, no difference can be significant"]
    notes = []
    same_questions = (a.kind, a.source, a.dataset_hash) == (b.kind, b.source, b.dataset_hash)
    if not diff and common and same_questions:
        notes.append("the configurations are identical: differences come from non-determinism")
    if common and not measured:
        notes.append("no measure is present on both sides of any common question")
    return notes


def one_sided(a_rows: list[QuestionResult], b_rows: list[QuestionResult], measured: set[str]) -> list[str]:
    """Measures present on the common questions of one campaign only (e.g. a judge run on B alone)."""
    notes = []
    for side, rows in (("A", a_rows), ("B", b_rows)):
        counts = Counter(name for row in rows for name in row_values(row) if name not in measured)
        notes += [f"{name} is measured only in {side} ({count} question(s)): not compared"
                  for name, count in sorted(counts.items())]
    return notes


def load(store: Store, campaign_id: str, tenant: str | None, principal: Principal | None = None,
         ) -> tuple[Campaign, list[QuestionResult]]:
    """A campaign record and its result rows (NotFound for another tenant's, as for a missing one)."""
    return get_campaign(store, campaign_id, tenant=scope(principal, tenant)), campaign_results(store, campaign_id)


def compare_campaigns(store: Store, a_id: str, b_id: str, *, seed: int = 0, resamples: int = stats.RESAMPLES,
                      tenant: str | None = None, principal: Principal | None = None) -> Comparison:
    """Compare two stored campaigns (A is the baseline, B the candidate)."""
    return compare_results(*load(store, a_id, tenant, principal), *load(store, b_id, tenant, principal), seed=seed,
                           resamples=resamples)
