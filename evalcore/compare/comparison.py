"""Comparison of two campaigns: per-question verdicts, per-measure deltas with uncertainty, warnings."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from evalcore.access import Principal, scope
from evalcore.campaigns import (
    Campaign,
    CampaignStatus,
    QuestionResult,
    campaign_results,
    get_campaign,
    list_campaigns,
)
from evalcore.compare import power, saved, stats
from evalcore.compare.deltas import (
    PASS_SUFFIX,
    CampaignHeader,
    Change,
    Comparison,
    MeasureDelta,
    Paired,
    Passage,
    QuestionDiff,
    verdict_by,
)
from evalcore.compare.pairing import previous
from evalcore.errors import EvalError
from evalcore.metrics import MEASURES, higher_is_better, sources_found, tolerance_of, verdict_basis
from evalcore.relevance import is_relevant
from evalcore.store import Store
from evalcore.targets.config import under_test

QuestionKey = tuple[int, str]
Values = dict[str, float]   # a question's measures, as row_values gives them


def is_number(value: object) -> bool:
    """A finite int or float (booleans count, as 1/0)."""
    return isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value))


def row_values(result: QuestionResult) -> dict[str, float]:
    """Every measure of a result, judges included (`judge.X` and the pass/fail rate `judge.X:pass`)."""
    # is_number inline: a comparison calls this for every measure of every row.
    values = {k: float(v) for k, v in result.outcome.measures.items()
              if isinstance(v, (int, float)) and not math.isnan(v)}
    for name, verdict in result.outcome.judges.items():
        if verdict.score is not None and is_number(verdict.score):
            values.setdefault(f"judge.{name}", float(verdict.score))
        measure = MEASURES.get(f"judge.{name}")
        if (passed := verdict.result.passed) is not None and not (measure and measure.binary):
            values[f"judge.{name}{PASS_SUFFIX}"] = 1.0 if passed else 0.0
    return values


def question_key(result: QuestionResult) -> QuestionKey:
    """Two results are the same question when their id and their text both match."""
    return (result.question.qid, " ".join(result.question.text.split()))


def verdict(a_row: QuestionResult, b_row: QuestionResult, a_values: Values, b_values: Values,
            order: tuple[str, ...]) -> tuple[Change, str | None, float | None, float | None]:
    """(verdict, basis measure, value in A, value in B) for a question both campaigns asked.

    The first measure of `order` present on both sides decides; direction follows the registry, and a difference
    under the measure's tolerance (`Comparison.with_tolerances` applies asked ones) is the same.
    """
    a_failed, b_failed = bool(a_row.outcome.error), bool(b_row.outcome.error)
    if a_failed or b_failed:
        kind = Change.SAME if a_failed == b_failed else Change.BETTER if a_failed else Change.WORSE
        return kind, "error", None, None
    for basis in order:
        if basis in a_values and basis in b_values:
            kind = verdict_by(basis, a_values[basis], b_values[basis], tolerance_of(basis))
            return kind, basis, a_values[basis], b_values[basis]
    return Change.UNSCORED, None, None, None


def relevant_pids(result: QuestionResult) -> set[int]:
    """Passage ids labelled relevant (label >= 1) for this question."""
    return {int(pid) for pid, label in (result.question.relevant or {}).items()
            if is_number(label) and is_relevant(label)}


def retrieved_pids(result: QuestionResult, among: set[int]) -> dict[int, str]:
    """Retrieved passage id -> title, in rank order, of the passages among these ids."""
    return {int(hit.pid): hit.title for hit in result.outcome.retrieved
            if hit.pid is not None and int(hit.pid) in among}


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
    a_top, b_top = retrieved_pids(a_row, relevant), retrieved_pids(b_row, relevant)
    entered = tuple(Passage(p, b_top[p]) for p in sorted(b_top.keys() - a_top.keys()))
    left = tuple(Passage(p, a_top[p]) for p in sorted(a_top.keys() - b_top.keys()))
    sources_entered = sources_left = None
    if a_row.question.expected_sources or b_row.question.expected_sources:
        a_found, b_found = found_sources(a_row), found_sources(b_row)
        sources_entered, sources_left = tuple(sorted(b_found - a_found)), tuple(sorted(a_found - b_found))
    return Changes(entered, left, sources_entered, sources_left)


def choose_basis(diff: dict[str, list[Any]], a_values: list[Values], b_values: list[Values],
                 requested: str | None = None) -> tuple[tuple[str, ...], str]:
    """The measures that decide per-question verdicts, in order, and why.

    A requested measure decides alone (EvalError when no common question has it on both sides).
    Otherwise the basis follows what differs: a retrieval-side setting (chunking, retrieval,
    rerank) is judged by nDCG@10, a generation-side one (generator, model, prompts, sampling) by
    the AI score when both campaigns have it, else ROUGE-L; anything else by the suite order (AI
    score, coverage, sources found, then nDCG@10, ROUGE-L). Questions without the chosen measure
    fall back to that order.
    """
    both = {name for a, b in zip(a_values, b_values, strict=True) for name in a.keys() & b.keys()}
    default = verdict_basis()
    if requested:
        if requested not in both:
            raise EvalError(f"no common question has {requested} in both campaigns", where="basis",
                            expected=", ".join(sorted(both)) or "a measure present in both")
        return (requested,), f"{requested}, as asked"
    sides = {config_side(key) for key in diff}
    if sides == {"retrieval"}:
        return ("ndcg@10", *default), f"ndcg@10: a retrieval-side setting changed ({', '.join(diff)})"
    if sides == {"generation"}:
        chosen = "judge.score" if "judge.score" in both else "rougel"
        return (chosen, *default), f"{chosen}: a generation-side setting changed ({', '.join(diff)})"
    return default, "the suite order: AI score, else coverage, else sources found, then nDCG@10, ROUGE-L"


def config_side(key: str) -> str:
    """"retrieval" or "generation" for a configuration key of that side of the system, else "other"."""
    from evalcore.targets.config import GENERATION_SIDE, RETRIEVAL_SIDE, TargetConfig

    if key in TargetConfig.keys_in(*RETRIEVAL_SIDE):
        return "retrieval"
    return "generation" if key in TargetConfig.keys_in(*GENERATION_SIDE) else "other"


def question_entry(key: QuestionKey, a_row: QuestionResult | None, b_row: QuestionResult | None,
                   a_values: Values, b_values: Values, order: tuple[str, ...]) -> QuestionDiff:
    """One line of the per-question table (the values are the rows' row_values)."""
    shown = a_row or b_row
    assert shown is not None  # every key comes from one side at least
    base = QuestionDiff(qid=key[0], question=shown.question.text, answer_a=a_row.outcome.answer if a_row else None,
                        answer_b=b_row.outcome.answer if b_row else None,
                        verdict=Change.NEW if a_row is None else Change.REMOVED,
                        basis=None, a=None, b=None, diagnosis_a=a_row.outcome.diagnosis if a_row else None,
                        diagnosis_b=b_row.outcome.diagnosis if b_row else None,
                        queries_a=a_row.outcome.queries if a_row else (),
                        queries_b=b_row.outcome.queries if b_row else (),
                        judges_a=dict(a_row.outcome.judges) if a_row else {},
                        judges_b=dict(b_row.outcome.judges) if b_row else {})
    if a_row is None or b_row is None:
        return base
    kind, basis, a_value, b_value = verdict(a_row, b_row, a_values, b_values, order)
    # A failed question retrieved nothing: "relevant passages left" would only echo the failure.
    changes = passage_changes(a_row, b_row) if basis != "error" else Changes()
    return replace(base, verdict=kind, basis=basis, a=a_value, b=b_value, error_a=a_row.outcome.error or None,
                   error_b=b_row.outcome.error or None,
                   answer_changed=(a_row.outcome.answer or "").strip() != (b_row.outcome.answer or "").strip(),
                   **changes._asdict())


def paired_values(common: list[QuestionKey], a_values: dict[QuestionKey, Values],
                  b_values: dict[QuestionKey, Values]) -> tuple[dict[str, Paired], np.ndarray]:
    """Per measure (by name): the common questions where both sides have it, with both values; and the
    table of B - A (a row per common question with a measure, a column per measure, NaN where a side lacks it)."""
    columns: dict[str, tuple[list[int], list[int], list[float], list[float]]] = {}
    for position, key in enumerate(common):
        a, b = a_values[key], b_values[key]
        for name in a.keys() & b.keys():
            positions, qids, xs, ys = columns.setdefault(name, ([], [], [], []))
            positions.append(position)
            qids.append(key[0])
            xs.append(a[name])
            ys.append(b[name])
    names = sorted(columns)
    paired = {name: Paired(np.array(columns[name][1], dtype=np.int64), np.array(columns[name][2], dtype=float),
                           np.array(columns[name][3], dtype=float)) for name in names}
    table = np.full((len(common), len(names)), np.nan)
    for j, name in enumerate(names):
        table[columns[name][0], j] = paired[name].b - paired[name].a
    # A question with no measure on both sides (failed in both) is not resampled: a measure present on
    # every other question keeps the interval it would get alone.
    return paired, table[~np.isnan(table).all(axis=1)]


def measure_entries(paired: dict[str, Paired], table: np.ndarray, *, seed: int, resamples: int,
                    effect: float) -> list[MeasureDelta]:
    """Every measure's delta: one bootstrap resample of the common questions and one stream of sign flips serve
    every measure (stats)."""
    intervals = stats.bootstrap_table(table, resamples=resamples, seed=seed)
    tests = stats.sign_flip_tests([values.b - values.a for values in paired.values()], resamples=resamples, seed=seed)
    return [measure_entry(name, values, interval, test, effect=effect)
            for (name, values), interval, test in zip(paired.items(), intervals, tests, strict=True)]


def measure_entry(name: str, values: Paired, interval: stats.BootstrapMean | None, randomization: tuple[float, str],
                  *, effect: float) -> MeasureDelta:
    """Mean difference over the common questions, its 95% interval, a paired test, significance and power."""
    n = len(values.a)
    # Python's sum over the values, in question order: the means do not depend on numpy's summation.
    mean_a, mean_b = sum(values.a.tolist()) / n, sum(values.b.tolist()) / n
    p_random, method = randomization
    binary = is_binary(name, values)
    mcnemar = None
    if binary:
        mcnemar = stats.mcnemar_exact((values.a >= 0.5).tolist(), (values.b >= 0.5).tolist())
    p_value = mcnemar.p_value if mcnemar else p_random
    better = higher_is_better(name)
    significant = p_value < stats.ALPHA
    diffs = values.b - values.a
    sd = spread(diffs)
    moved = diffs[diffs != 0]
    # Equal differences resample to equal means: an se of 1e-17 is rounding, not a spread.
    se = (interval.se if sd else 0.0) if interval else None
    return MeasureDelta(
        measure=name, n=n, mean_a=mean_a, mean_b=mean_b, delta=mean_b - mean_a,
        ci_low=interval.low if interval else None, ci_high=interval.high if interval else None,
        p_randomization=p_random, randomization=method, higher_is_better=better, binary=binary, p_value=p_value,
        test="mcnemar-exact" if mcnemar else f"sign-flip randomization ({method})", significant=significant,
        improved=significant and (mean_b - mean_a > 0) == better, mcnemar=mcnemar, sd_diff=sd, se_bootstrap=se,
        mde=power.mde(sd, n), mde_bootstrap=power.mde_bootstrap(se), effect=effect,
        n_required=power.required_n(effect, sd), power_note=power.why_no_power(n, sd, float(diffs[0]) if n else 0.0),
        changed=int(moved.size), one_way=bool(moved.size) and bool((moved > 0).all() or (moved < 0).all()),
    )


def spread(diffs: np.ndarray) -> float | None:
    """Sample standard deviation of the differences; 0 when they are all equal, None below 2."""
    if diffs.size < 2:
        return None
    # Equal up to rounding (0.7 - 0.5 vs 0.3 - 0.1) is equal: a spread of 1e-17 would claim that
    # a difference of 1e-16 could be detected.
    equal = diffs.max() - diffs.min() <= 1e-12 * max(1.0, float(np.abs(diffs).max()))
    return 0.0 if equal else float(diffs.std(ddof=1))


def is_binary(name: str, values: Paired) -> bool:
    """Pass/fail measures (McNemar applies): known binary names whose values are all 0 or 1."""
    measure = MEASURES.get(name)
    known = bool(measure and measure.binary) or name.endswith(PASS_SUFFIX)
    return known and all(bool(np.isin(side, (0.0, 1.0)).all()) for side in (values.a, values.b))


def config_diff(a: Campaign, b: Campaign) -> dict[str, list[Any]]:
    """Keys of the system under test whose values differ: key -> [value in A, value in B] (where it ran is none)."""
    mine, theirs = under_test(a.config), under_test(b.config)
    return {k: [mine.get(k), theirs.get(k)] for k in sorted(mine.keys() | theirs.keys())
            if mine.get(k) != theirs.get(k)}


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
        if campaign.status != CampaignStatus.SUCCEEDED:
            out.append(f"campaign {side} ({campaign.id}) is {campaign.status}: results may be partial")
    if not common:
        out.append("the campaigns have no question in common (same id and same text)")
    return out


def compare_results(a_campaign: Campaign, a_rows: list[QuestionResult], b_campaign: Campaign,
                    b_rows: list[QuestionResult], *, seed: int = 0, resamples: int = stats.RESAMPLES,
                    effect: float = power.EFFECT, basis: str | None = None,
                    tolerances: Mapping[str, float] | None = None) -> Comparison:
    """Compare two campaigns given their records and result rows (pure: no store).

    `basis` names the measure that decides per-question verdicts; by default it follows what
    differs between the configurations (`choose_basis`). `tolerances` override measures' smallest
    meaningful differences (a question's change under it is "same").
    """
    check_draws(seed, resamples)
    effect = power.check_effect(effect)
    a_index = {question_key(r): r for r in a_rows}
    b_index = {question_key(r): r for r in b_rows}
    a_values = {key: row_values(r) for key, r in a_index.items()}
    b_values = {key: row_values(r) for key, r in b_index.items()}
    keys = list(a_index) + [k for k in b_index if k not in a_index]
    common = [k for k in keys if k in a_index and k in b_index]
    diff = config_diff(a_campaign, b_campaign)
    order, reason = choose_basis(diff, [a_values[k] for k in common], [b_values[k] for k in common], basis)
    questions = [question_entry(k, a_index.get(k), b_index.get(k), a_values.get(k, {}), b_values.get(k, {}), order)
                 for k in keys]
    paired, table = paired_values(common, a_values, b_values)
    measures = measure_entries(paired, table, seed=seed, resamples=resamples, effect=effect)
    notes = notes_for(a_campaign, b_campaign, diff, common=len(common), measured=set(paired))
    notes += one_sided([a_values[k] for k in common], [b_values[k] for k in common], set(paired))
    return Comparison(a=CampaignHeader.of(a_campaign), b=CampaignHeader.of(b_campaign), questions=questions,
                      measures=measures, config_diff=diff, seed=seed, resamples=resamples, notes=notes,
                      warnings=warnings_for(a_campaign, b_campaign, a_rows, b_rows, diff, len(common)),
                      effect=effect, paired=paired, basis=order[0] if order else None,
                      basis_reason=reason).with_tolerances(tolerances or {})


def check_draws(seed: int, resamples: int) -> None:
    """Refuse a seed numpy cannot take, or a resample count that leaves the tests nothing to draw."""
    if not isinstance(resamples, int) or resamples < 1:
        raise EvalError("resamples must be a whole number of at least 1", found=str(resamples),
                        expected=f">= 1 (default {stats.RESAMPLES})")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise EvalError("the seed must be a whole number of at least 0", found=str(seed), expected=">= 0 (default 0)")


def notes_for(a: Campaign, b: Campaign, diff: dict[str, list[Any]], *, common: int, measured: set[str]) -> list[str]:
    """What the reader should know that is not a warning."""
    if a.id == b.id:
        return ["A and B are the same campaign: every question is the same, no difference can be significant"]
    notes = []
    same_questions = (a.kind, a.source, a.dataset_hash) == (b.kind, b.source, b.dataset_hash)
    if (a.answers_from or a.id) == (b.answers_from or b.id):  # one judges the other's answers again, or both do
        notes.append("A and B judged the same stored answers: only the judged measures can differ")
    elif not diff and common and same_questions:
        notes.append(identical_note(a.judges, b.judges))
    if common and not measured:
        notes.append("no measure is present on both sides of any common question")
    return notes


def identical_note(a_judges: Sequence[str], b_judges: Sequence[str]) -> str:
    """Where the differences of two campaigns with the same configuration come from."""
    if set(a_judges) == set(b_judges):
        return "the configurations are identical: differences come from non-determinism"
    judges = "; ".join(f"{side}: {', '.join(found) or 'none'}" for side, found in (("A", a_judges), ("B", b_judges)))
    return (f"the configurations are identical but the judges differ ({judges}): the other differences come from "
            "non-determinism")


def one_sided(a_values: list[Values], b_values: list[Values], measured: set[str]) -> list[str]:
    """Measures present on the common questions of one campaign only (e.g. a judge run on B alone)."""
    notes = []
    for side, rows in (("A", a_values), ("B", b_values)):
        counts = Counter(name for values in rows for name in values if name not in measured)
        notes += [f"{name} is measured only in {side} ({count} question(s)): not compared"
                  for name, count in sorted(counts.items())]
    return notes


def load(store: Store, campaign_id: str, tenant: str | None, principal: Principal | None = None,
         ) -> tuple[Campaign, list[QuestionResult]]:
    """A campaign record and its result rows (NotFound for another tenant's, as for a missing one)."""
    return get_campaign(store, campaign_id, tenant=scope(principal, tenant)), compared_results(store, campaign_id)


def compared_results(store: Store, campaign_id: str) -> list[QuestionResult]:
    """A campaign's results as a comparison reads them: without the detail it does not use (campaign_results)."""
    return campaign_results(store, campaign_id, detail=False)


def compare_campaigns(store: Store, a_id: str, b_id: str, *, seed: int = 0, resamples: int = stats.RESAMPLES,
                      effect: float = power.EFFECT, tenant: str | None = None,
                      principal: Principal | None = None, basis: str | None = None,
                      tolerances: Mapping[str, float] | None = None) -> Comparison:
    """Compare two stored campaigns (A is the baseline, B the candidate), computed once per pair of versions.

    The comparison is kept in the store under both campaigns' ids and results versions, the seed
    and the resamples (`saved`); while none of them changes it is read back, not recomputed.
    Another tenant's campaign is NotFound, as a missing one. `tolerances` re-decide the verdicts of the kept
    comparison (`Comparison.with_tolerances`).
    """
    check_draws(seed, resamples)
    effect = power.check_effect(effect)
    tenant = scope(principal, tenant)
    a, b = get_campaign(store, a_id, tenant=tenant), get_campaign(store, b_id, tenant=tenant)
    pairwise = saved.find_preference(store, a, b)
    if basis:  # an asked basis is not the stored default: computed, not kept
        return replace(compare_results(a, compared_results(store, a_id), b, compared_results(store, b_id), seed=seed,
                                       resamples=resamples, effect=effect, basis=basis, tolerances=tolerances),
                       pairwise=pairwise)
    comparison = saved.find(store, a, b, seed=seed, resamples=resamples)
    if comparison is None:
        comparison = compare_results(a, compared_results(store, a_id), b, compared_results(store, b_id), seed=seed,
                                     resamples=resamples)
        saved.keep(store, comparison, a, b)
    return replace(comparison.with_effect(effect).with_tolerances(tolerances or {}), pairwise=pairwise)


def compare_with_previous(store: Store, campaign_id: str) -> Comparison | None:
    """Compare a campaign that just ended with the newest earlier one on the same questions (same dataset content
    first: `pairing.previous`), and keep it.

    Registered with the campaign manager by the dashboard and the API (`after_each`), so that the
    Compare page's default pair (`pairing.default_pair`, the same rule) opens at once instead of
    computing thousands of resamples then.
    """
    campaign = get_campaign(store, campaign_id)
    earlier = [c for c in list_campaigns(store, campaign.tenant)
               if c.id != campaign.id and not c.active and c.finished and c.created_at < campaign.created_at]
    baseline = previous(campaign, earlier)
    if baseline is None or campaign.active:
        return None
    return compare_campaigns(store, baseline.id, campaign.id, tenant=campaign.tenant)
