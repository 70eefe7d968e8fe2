"""The checks a build can fail on: a campaign's measures against marks, a candidate against its baseline.

A gate `ndcg@10=0.7` passes when the campaign's mean of ndcg@10 is at least 0.7; for a measure
where lower is better (`graded.holes`, `hallucination`) the mark is a ceiling instead. With the bound
`lower`, the gate is taken on the pessimistic end of the mean's 95% bootstrap interval (its low
end, or its high end where lower is better), so a campaign passes only when it is likely to.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.campaigns import CampaignStatus, QuestionResult, Summary
from evalcore.campaigns.listing import HEADLINE
from evalcore.costs import money
from evalcore.errors import EvalError
from evalcore.formats.shapes import doc
from evalcore.gates.exits import SEVERITY, Exit
from evalcore.metrics import MEASURES, higher_is_better

if TYPE_CHECKING:  # the comparison's modules are loaded where a gate reads rows or a comparison, not by every run
    from evalcore.compare import Comparison, MeasureDelta

BOUNDS = ("mean", "lower")


@dataclass(frozen=True)
class Gate:
    """A mark a campaign's measure must reach, on its mean or on the pessimistic end of its 95% interval."""

    measure: str
    mark: float
    bound: str = "mean"

    @property
    def name(self) -> str:
        """`ndcg@10 >= 0.7` (or `<=` where lower is better), with the bound when it is not the mean."""
        sign = ">=" if higher_is_better(self.measure) else "<="
        return f"{self.measure}{' (pessimistic 95% bound)' if self.bound == 'lower' else ''} {sign} {self.mark:g}"


@dataclass(frozen=True)
class Check:
    """The outcome of one gate, one measure's regression check, or one question that failed."""

    kind: str = field(metadata=doc("gate, regression or question"))
    name: str = field(metadata=doc())
    passed: bool = field(metadata=doc())
    reason: str = field(metadata=doc("one line: what was measured, and why it failed"))
    value: float | None = field(default=None, metadata=doc("the mean (or bound) a gate took, or a regression's "
                                                           "delta"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return dict(self.__dict__)

    def failure(self) -> str:
        """A failed check as one line: `gate failed: ndcg@10 >= 0.7: …`; a regression's reason says it all
        (`regression failed: ndcg@10 is significantly worse: 0.61 -> 0.52 …`)."""
        return f"{self.kind} failed: {self.reason if self.kind == 'regression' else f'{self.name}: {self.reason}'}"


def parse_gate(text: str, bound: str = "mean", example: str = "--fail-under ndcg@10=0.7") -> Gate:
    """`MEASURE=VALUE` as a Gate; EvalError naming the text when it is not one (its fix shows `example`, as the
    caller takes it: a CLI flag, a query parameter)."""
    measure, sep, value = text.partition("=")
    try:
        mark = float(value)
    except ValueError:
        mark = float("nan")
    if not sep or not measure.strip() or not math.isfinite(mark):
        raise EvalError("expected MEASURE=VALUE", where=text, fix=f"e.g. {example}")
    return gate(measure.strip(), mark, bound)


def gate(measure: str, mark: float, bound: str) -> Gate:
    """A Gate, refusing an unknown bound or measure (before a campaign runs, not after)."""
    if bound not in BOUNDS:
        raise EvalError("unknown gate bound", where="bound", found=repr(bound), expected=" or ".join(BOUNDS))
    from evalcore.compare.deltas import PASS_SUFFIX

    if measure.removesuffix(PASS_SUFFIX) not in MEASURES:
        close = difflib.get_close_matches(measure, list(MEASURES), n=1, cutoff=0.6)
        raise EvalError("unknown measure", where="gates", found=repr(measure),
                        expected=f"a registered measure{f' (did you mean {close[0]}?)' if close else ''}",
                        fix="docs/measures.md lists the names (judges are judge.NAME)")
    return Gate(measure, float(mark), bound)


def gates_from_toml(path: str | Path) -> list[Gate]:
    """The `[gates]` table of a configuration file: `fail_under = {measure = mark, ...}`, `bound = "mean"`."""
    try:
        table = tomllib.loads(Path(path).read_text(encoding="utf-8")).get("gates", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise EvalError(f"cannot read the gates ({error})", where=str(path)) from None
    unknown = sorted(set(table) - {"fail_under", "bound"}) if isinstance(table, dict) else ["gates"]
    marks = table.get("fail_under", {}) if not unknown else {}
    unknown += [f"bound = {table['bound']!r}"] if not unknown and table.get("bound", "mean") not in BOUNDS else []
    if unknown or not isinstance(marks, dict) or not all(_is_mark(v) for v in marks.values()):
        raise EvalError("invalid [gates] table", where=f"{path}: [gates]", found=", ".join(unknown) or repr(marks),
                        expected='fail_under = { "ndcg@10" = 0.7 } and optionally bound = "mean" or "lower"')
    return [gate(str(name), float(mark), str(table.get("bound", "mean"))) for name, mark in marks.items()]


def _is_mark(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def campaign_checks(gates: Sequence[Gate], rows: Sequence[QuestionResult]) -> list[Check]:
    """Each gate taken on the campaign's per-question values (judges included, as a comparison counts them)."""
    values: dict[str, list[float]] = {}
    if rows:
        from evalcore.compare import row_values
    for row in rows:
        for name, value in row_values(row).items():
            values.setdefault(name, []).append(value)
    return [gate_check(g, values.get(g.measure, [])) for g in gates]


def gate_check(gate: Gate, values: Sequence[float]) -> Check:
    """One gate on a measure's values: passes when the mean (or its pessimistic bound) is on the good side."""
    if not values:
        return Check("gate", gate.name, False, f"{gate.measure} was not measured on any question")
    better = higher_is_better(gate.measure)
    value = sum(values) / len(values)
    shown = f"mean {value:.4g} over {len(values)} questions"
    if gate.bound == "lower":
        from evalcore.compare.stats import bootstrap_ci

        interval = bootstrap_ci(values)
        if interval is None:
            return Check("gate", gate.name, False, f"{gate.measure}: {shown}, too few for an interval")
        value = interval[0] if better else interval[1]
        shown += f", pessimistic 95% bound {value:.4g}"
    passed = value >= gate.mark if better else value <= gate.mark
    side = "under" if better else "over"
    reason = f"{gate.measure}: {shown}" + ("" if passed else f", {side} the mark {gate.mark:g}")
    return Check("gate", gate.name, passed, reason, value)


def unknown_checks(summary: Summary, limit: float) -> list[Check]:
    """One gate per judge the campaign ran: fails when more than `limit` of the questions it judged got no readable
    verdict (`--max-unknown-share`: a judge that cannot answer readably is a broken setup, not a result)."""
    return [Check("gate", f"judge {name} unreadable verdicts <= {limit:.0%}", share <= limit,
                  f"judge {name}: {summary.unknown.get(name, 0)} of {judged} verdicts unreadable ({share:.0%})"
                  + ("" if share <= limit else f", over the limit {limit:.0%}"), share)
            for name, judged in summary.judged.items() if judged
            for share in [summary.unknown.get(name, 0) / judged]]


def cost_checks(summary: Summary, limit: float) -> list[Check]:
    """The campaign's cost at most `limit` (`--fail-over-cost`); a model without a price fails it: its cost is
    unknown."""
    cost = summary.cost
    passed = cost.amount is not None and cost.amount <= limit
    over = "" if passed else (f", over the limit {money(limit, cost.currency)}" if cost.amount is not None
                              else ": it cannot be held to a limit")
    return [Check("gate", f"cost <= {money(limit, cost.currency)}", passed, f"the campaign cost {cost.text()}{over}",
                  cost.amount)]


def question_failures(rows: Iterable[QuestionResult]) -> list[Check]:
    """One failed check per question whose answering failed (its error as the reason)."""
    return [Check("question", f"q{row.question.qid} {' '.join(row.question.text.split())[:80]}", False,
                  " ".join((row.outcome.error or "").split())) for row in rows if row.outcome.error]


def worse_checks(comparison: Comparison, names: Sequence[str], field: str = "--fail-if-worse") -> list[Check]:
    """One check per named measure (`headline`: the measures that decide verdicts): fails when B is
    significantly worse than A by the comparison's own test (an error names `field`, where the names came from)."""
    deltas = {m.measure: m for m in comparison.measures}
    wanted = expand(names, deltas)
    if not wanted:
        raise EvalError("no measure to check: the campaigns share no headline measure", where=field,
                        expected=", ".join(deltas) or "a measure both campaigns have")
    missing = [name for name in wanted if name not in deltas]
    if missing:
        raise EvalError("not compared: no common question has this measure in both campaigns", where=field,
                        found=", ".join(missing), expected=", ".join(deltas) or "a measure both campaigns have")
    return [regression_check(deltas[name]) for name in wanted]


def expand(names: Sequence[str], deltas: Mapping[str, MeasureDelta]) -> list[str]:
    """The names with `headline` replaced by the headline measures the comparison has, each once."""
    out: list[str] = []
    for name in names:
        for each in [h for h in HEADLINE if h in deltas] if name == "headline" else [name]:
            if each not in out:
                out.append(each)
    return out


def regression_check(m: MeasureDelta) -> Check:
    """Fails when the measure moved the wrong way and the paired test says it is real (p < 0.05)."""
    worse = m.significant and not m.improved
    interval = "" if m.ci_low is None else f", 95% CI [{m.ci_low:.4g}, {m.ci_high:.4g}]"
    reason = (f"{m.measure}{' is significantly worse' if worse else ''}: {m.mean_a:.4g} -> {m.mean_b:.4g} "
              f"(delta {m.delta:+.4g}{interval}, p = {m.p_value:.3g}, {m.test}, n = {m.n})")
    return Check("regression", f"{m.measure} not significantly worse", not worse, reason, m.delta)


def exit_code(status: CampaignStatus | None, checks: Iterable[Check]) -> Exit:
    """The exit code of a finished command: the campaign's end, then its gates, then the regressions."""
    failed = {check.kind for check in checks if not check.passed}
    if status is not None and status not in (CampaignStatus.SUCCEEDED, CampaignStatus.SUCCEEDED_WITH_FAILURES):
        return Exit.CAMPAIGN_FAILED
    if "regression" in failed:
        return Exit.WORSE
    if "gate" in failed:
        return Exit.GATE_FAILED
    return Exit.QUESTIONS_FAILED if status == CampaignStatus.SUCCEEDED_WITH_FAILURES else Exit.PASSED


def worst(codes: Iterable[Exit]) -> Exit:
    """The most serious of several exit codes (PASSED for none)."""
    return max(codes, key=SEVERITY.index, default=Exit.PASSED)
