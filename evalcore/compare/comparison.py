"""Comparison of two campaigns: per-question verdicts, per-measure deltas with uncertainty, warnings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from evalcore.access.principals import Principal, scope
from evalcore.campaigns import (
    Campaign,
    CampaignStatus,
    QuestionResult,
    campaign_results,
    get_campaign,
)
from evalcore.campaigns.compared import (
    ComparedRows,
    QuestionKey,
    Values,
    question_key,
    read_compared,
    row_values,
)
from evalcore.compare import power, statistics_process, stats
from evalcore.compare.costs import cost_delta
from evalcore.compare.deltas import (
    PASS_SUFFIX,
    CampaignHeader,
    Change,
    Comparison,
    KeptQuestions,
    Paired,
    Passage,
    QuestionDiff,
    verdict_by,
)
from evalcore.compare.exact import check_draws
from evalcore.compare.measure_stats import measure_entries
from evalcore.errors import EvalError
from evalcore.language.text import counted
from evalcore.metrics import judged_by, tolerance_of, verdict_basis
from evalcore.metrics.registry import SIDES, family
from evalcore.runtime.memory import no_cycle_collection
from evalcore.store import Store
from evalcore.targets.target_config import under_test

# Besides what this module defines, the question key and values of a result, as the comparison reads them.
__all__ = ["compare_results", "compare_rows", "question_key", "row_values"]


def verdict(a_error: str | None, b_error: str | None, a_values: Values, b_values: Values,
            order: tuple[str, ...]) -> tuple[Change, str | None, float | None, float | None]:
    """(verdict, basis measure, value in A, value in B) for a question both campaigns asked.

    The first measure of `order` present on both sides decides; direction follows the registry, and a difference
    under the measure's tolerance (`Comparison.with_tolerances` applies asked ones) is the same.
    """
    a_failed, b_failed = bool(a_error), bool(b_error)
    if a_failed or b_failed:
        kind = Change.SAME if a_failed == b_failed else Change.BETTER if a_failed else Change.WORSE
        return kind, "error", None, None
    for basis in order:
        if basis in a_values and basis in b_values:
            kind = verdict_by(basis, a_values[basis], b_values[basis], tolerance_of(basis))
            return kind, basis, a_values[basis], b_values[basis]
    return Change.UNSCORED, None, None, None


class Changes(NamedTuple):
    """Relevant passages (and, for suites, expected sources found) that entered or left from A to B."""

    entered: tuple[Passage, ...] = ()
    left: tuple[Passage, ...] = ()
    sources_entered: tuple[str, ...] | None = None
    sources_left: tuple[str, ...] | None = None


def passage_changes(a: ComparedRows, i: int, b: ComparedRows, j: int) -> Changes:
    """Relevant passages (and expected sources) that entered or left the retrieved list from question i of A to
    question j of B."""
    relevant = a.relevant[i] | b.relevant[j]
    entered: tuple[Passage, ...] = ()
    left: tuple[Passage, ...] = ()
    if relevant:
        a_top, b_top = a.retrieved_among(i, relevant), b.retrieved_among(j, relevant)
        entered = tuple(Passage(p, b_top[p]) for p in sorted(b_top.keys() - a_top.keys()))
        left = tuple(Passage(p, a_top[p]) for p in sorted(a_top.keys() - b_top.keys()))
    sources_entered = sources_left = None
    if a.has_sources[i] or b.has_sources[j]:
        a_found, b_found = a.found[i], b.found[j]
        sources_entered, sources_left = tuple(sorted(b_found - a_found)), tuple(sorted(a_found - b_found))
    return Changes(entered, left, sources_entered, sources_left)


def choose_basis(diff: dict[str, list[Any]], a_values: list[Values], b_values: list[Values],
                 requested: str | None = None, incomparable: frozenset[str] = frozenset()) -> tuple[tuple[str, ...],
                                                                                                   str]:
    """The measures that decide per-question verdicts, in order, and why.

    A requested measure decides alone (EvalError when no common question has it on both sides).
    Otherwise the basis follows what differs: a retrieval-side setting (chunking, retrieval,
    rerank) is judged by nDCG@10, a generation-side one (generator, model, prompts, sampling) by
    the AI score when both campaigns have it, else ROUGE-L; anything else by the suite order (AI
    score, coverage, sources found, then nDCG@10, ROUGE-L). Questions without the chosen measure
    fall back to that order. A judge measure in `incomparable` (its judges differ in model or prompt) decides
    nothing unless asked for, and the reason says so.
    """
    both = {name for a, b in zip(a_values, b_values, strict=True) for name in a.keys() & b.keys()}
    # Only measures some common question has on both sides: the AI score is not offered when no judge ran.
    default = tuple(name for name in verdict_basis() if name not in incomparable and name in both)
    if requested:
        if requested not in both:
            raise EvalError(f"no common question has {requested} in both campaigns", where="basis",
                            expected=", ".join(sorted(both)) or "a measure present in both")
        caution = f" (its judges differ in model or prompt: {NOT_COMPARABLE})" if requested in incomparable else ""
        return (requested,), f"{requested}, as asked{caution}"
    left_out = sorted(name for name in incomparable & both if name in verdict_basis())
    note = (f"; {', '.join(left_out)} decides nothing: its judges differ in model or prompt, so {NOT_COMPARABLE}"
            if left_out else "")
    sides = {config_side(key) for key in diff}
    if len(sides) == 1 and (side := sides.pop()) in SIDES:
        # The side's first measure both campaigns can be compared on, else its last (answer overlap).
        judges = judged_by(side)
        chosen = next((name for name in judges if name in both - incomparable), judges[-1])
        return (chosen, *default), f"{chosen}: a {side}-side setting changed ({', '.join(diff)}){note}"
    order = "coverage, else sources found, then nDCG@10, ROUGE-L"
    judged = default and family(default[0]) == "judge"
    return default, f"the suite order: {'AI score, else ' if judged else ''}{order}{note}"


NOT_COMPARABLE = "its scores are not comparable"


def incomparable_judges(a_judges: Mapping[str, set[tuple[str, str]]],
                        b_judges: Mapping[str, set[tuple[str, str]]]) -> frozenset[str]:
    """The judge measures (`judge.NAME` and its pass rate) whose judges differ between A and B in model or prompt
    (`*_judges`: each judge's (model, prompt hash) pairs among its scored verdicts)."""
    names = [name for name in a_judges.keys() & b_judges.keys() if a_judges[name] != b_judges[name]]
    return frozenset(f"judge.{name}{suffix}" for name in names for suffix in ("", PASS_SUFFIX))


def config_side(key: str) -> str:
    """"retrieval" or "generation" for a configuration key of that side of the system, else "other"."""
    from evalcore.targets.target_config import GENERATION_SIDE, RETRIEVAL_SIDE, TargetConfig

    if key in TargetConfig.keys_in(*RETRIEVAL_SIDE):
        return "retrieval"
    return "generation" if key in TargetConfig.keys_in(*GENERATION_SIDE) else "other"


def question_entry(key: QuestionKey, a: ComparedRows, i: int | None, b: ComparedRows, j: int | None,
                   order: tuple[str, ...]) -> QuestionDiff:
    """One line of the per-question table: question i of A and question j of B (None: not asked there)."""
    if i is None or j is None:
        text = a.texts[i] if i is not None else b.texts[j] if j is not None else ""
        return QuestionDiff(qid=key[0], question=text, answer_a=a.answers[i] if i is not None else None,
                            answer_b=b.answers[j] if j is not None else None,
                            verdict=Change.NEW if i is None else Change.REMOVED, basis=None, a=None, b=None,
                            diagnosis_a=a.diagnosis[i] if i is not None else None,
                            diagnosis_b=b.diagnosis[j] if j is not None else None,
                            queries_a=a.queries[i] if i is not None else (),
                            queries_b=b.queries[j] if j is not None else (),
                            judges_a=a.judges[i] if i is not None else {},
                            judges_b=b.judges[j] if j is not None else {})
    kind, basis, a_value, b_value = verdict(a.errors[i], b.errors[j], a.values[i], b.values[j], order)
    # A failed question retrieved nothing: "relevant passages left" would only echo the failure.
    changes = passage_changes(a, i, b, j) if basis != "error" else Changes()
    answer_a, answer_b = a.answers[i], b.answers[j]
    return QuestionDiff(qid=key[0], question=a.texts[i], answer_a=answer_a, answer_b=answer_b, verdict=kind,
                        basis=basis, a=a_value, b=b_value, error_a=a.errors[i] or None, error_b=b.errors[j] or None,
                        answer_changed=(answer_a or "").strip() != (answer_b or "").strip(),
                        entered=changes.entered, left=changes.left, sources_entered=changes.sources_entered,
                        sources_left=changes.sources_left, diagnosis_a=a.diagnosis[i], diagnosis_b=b.diagnosis[j],
                        queries_a=a.queries[i], queries_b=b.queries[j], judges_a=a.judges[i], judges_b=b.judges[j])


def paired_values(qids: list[int], a_values: list[Values], b_values: list[Values]) -> tuple[dict[str, Paired],
                                                                                         np.ndarray]:
    """Per measure (by name): the common questions (their ids, in order) where both sides have it, with both values;
    and the table of B - A (a row per common question with a measure, a column per measure, NaN where a side lacks
    it)."""
    a_columns, b_columns = value_columns(a_values), value_columns(b_values)
    names = sorted(a_columns.keys() & b_columns.keys())
    ids = np.array(qids, dtype=np.int64)
    table = np.full((len(qids), len(names)), np.nan)
    paired = {}
    for j, name in enumerate(names):
        a, b = a_columns[name], b_columns[name]
        both = ~(np.isnan(a) | np.isnan(b))   # a measure's values are never NaN (row_values): NaN is absent
        paired[name] = Paired(ids[both], a[both], b[both])
        table[both, j] = paired[name].b - paired[name].a
    # A question with no measure on both sides (failed in both) is not resampled: a measure present on
    # every other question keeps the interval it would get alone.
    return {name: values for name, values in paired.items() if values.a.size}, \
        table[~np.isnan(table).all(axis=1)][:, [paired[name].a.size > 0 for name in names]]


def value_columns(rows: list[Values]) -> dict[str, np.ndarray]:
    """Each measure's values over the rows, NaN where a row has none."""
    columns: dict[str, np.ndarray] = {}
    for i, values in enumerate(rows):
        for name, value in values.items():
            column = columns.get(name)
            if column is None:
                column = columns[name] = np.full(len(rows), np.nan)
            column[i] = value
    return columns


def config_diff(a: Campaign, b: Campaign) -> dict[str, list[Any]]:
    """Keys of the system under test whose values differ: key -> [value in A, value in B] (where it ran is none)."""
    mine, theirs = under_test(a.config), under_test(b.config)
    return {k: [mine.get(k), theirs.get(k)] for k in sorted(mine.keys() | theirs.keys())
            if mine.get(k) != theirs.get(k)}


def warnings_for(a: Campaign, b: Campaign, a_judges: dict[str, set[tuple[str, str]]],
                 b_judges: dict[str, set[tuple[str, str]]], diff: dict[str, list[Any]], common: int) -> list[str]:
    """Why the comparison may not mean what it seems to mean (`*_judges`: each judge's (model, prompt hash) pairs)."""
    out = []
    if len(diff) > 1:
        out.append(f"the configurations differ in {len(diff)} settings ({', '.join(diff)}): "
                   "a change cannot be attributed to one of them")
    if a.dataset_hash and b.dataset_hash and a.dataset_hash != b.dataset_hash:
        out.append("the dataset content differs (content hash): the questions or labels changed")
    if (a.kind, a.source) != (b.kind, b.source):
        out.append(f"different question sets ({a.kind} {a.source} vs {b.kind} {b.source})")
    for name in sorted(a_judges.keys() & b_judges.keys()):
        if a_judges[name] != b_judges[name]:
            out.append(f"judge {name} used a different model or prompt: its scores are not comparable")
    for side, campaign in (("A", a), ("B", b)):
        if campaign.status != CampaignStatus.SUCCEEDED:
            out.append(f"campaign {side} ({campaign.name or campaign.id}) {campaign.status_text}: results may be "
                       "partial")
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
    return compare_rows(a_campaign, ComparedRows.of(a_rows), b_campaign, ComparedRows.of(b_rows), seed=seed,
                        resamples=resamples, effect=effect, basis=basis, tolerances=tolerances)


def compare_rows(a_campaign: Campaign, a: ComparedRows, b_campaign: Campaign, b: ComparedRows, *, seed: int = 0,
                 resamples: int = stats.RESAMPLES, effect: float = power.EFFECT, basis: str | None = None,
                 tolerances: Mapping[str, float] | None = None, process: statistics_process.Statistics | None = None,
                 ) -> Comparison:
    """compare_results on the questions as a comparison reads them (`ComparedRows`, from records or the store).

    Rows read with their rest pending (`read_compared(..., pending=True)`) are finished once the statistics are under
    way; the questions' lines (KeptQuestions: what the store keeps and the faces write) are written beside them too.
    With a started `process` (worker), the statistics are computed there (in process if it gives nothing back).
    """
    check_draws(seed, resamples)
    effect = power.check_effect(effect)
    a_at = {key: i for i, key in enumerate(a.keys)}   # a question asked twice: its last result
    b_at = {key: j for j, key in enumerate(b.keys)}
    keys = list(a_at) + [k for k in b_at if k not in a_at]
    common = [k for k in a_at if k in b_at]
    a_common, b_common = [a.values[a_at[k]] for k in common], [b.values[b_at[k]] for k in common]
    diff = config_diff(a_campaign, b_campaign)
    order, reason = choose_basis(diff, a_common, b_common, basis, incomparable_judges(a.setups, b.setups))
    paired, table = paired_values([k[0] for k in common], a_common, b_common)
    # The statistics are numpy's (drawing, counting, matrix products, the GIL released) while the questions' lines are
    # Python's: on a second core they take no longer than the lines alone.
    # Two threads: the statistics' task, and the sign flips it hands back to the same pool.
    turns = conversation_turns(common, a, a_at)
    job: dict[str, Any] = {"paired": paired, "table": table, "seed": seed, "resamples": resamples, "effect": effect,
                           "clusters": {qid: name for qid, (name, _) in turns.items()} if clustered(turns) else None}
    with ThreadPoolExecutor(2, thread_name_prefix="comparison-statistics") as pool:
        statistics = pool.submit(process.entries, job) if process else pool.submit(measure_entries, **job, pool=pool)
        a.finish()
        b.finish()
        with no_cycle_collection():
            questions = KeptQuestions.of([question_entry(k, a, a_at.get(k), b, b_at.get(k), order) for k in keys])
        measures = statistics.result()
        if measures is None:   # the process gave nothing back: the same numbers, computed here
            measures = measure_entries(**job, pool=pool)
    clusters = job["clusters"]
    cost = cost_delta([a.costs[a_at[k]] for k in common], [b.costs[b_at[k]] for k in common], seed=seed,
                      resamples=resamples,
                      clusters=[clusters.get(k[0], f"question {k[0]}") for k in common] if clusters else None)
    notes = notes_for(a_campaign, b_campaign, diff, common=len(common), measured=set(paired))
    notes += one_sided(a_common, b_common, set(paired))
    if job["clusters"]:
        count = len(set(job["clusters"].values()))
        notes.append(f"{counted(count, 'conversation')}: the pairs are matched by conversation and turn, and the "
                     "intervals and tests resample whole conversations (a question asked alone counts as one); the "
                     "per-turn figures, which take turns as independent, are kept beside them")
    return Comparison(a=CampaignHeader.of(a_campaign), b=CampaignHeader.of(b_campaign), questions=questions,
                      measures=measures, config_diff=diff, seed=seed, resamples=resamples, notes=notes,
                      warnings=warnings_for(a_campaign, b_campaign, a.setups, b.setups, diff, len(common)),
                      effect=effect, paired=paired, basis=order[0] if order else None,
                      basis_reason=reason, cost=cost, turns=turns).with_tolerances(tolerances or {})


def conversation_turns(common: Sequence[QuestionKey], a: ComparedRows, a_at: Mapping[QuestionKey, int],
                       ) -> dict[int, tuple[str, int]]:
    """Each common question's conversation and turn (by question id): the pairs are matched by (conversation, turn),
    through their question's id and text, which a conversation's snapshot gives each turn."""
    out: dict[int, tuple[str, int]] = {}
    for key in common:
        i = a_at[key]
        if a.conversations and (conversation := a.conversations[i]) is not None:
            out[key[0]] = (conversation, a.turns[i] or 1)
    return out


def clustered(turns: Mapping[int, tuple[str, int]]) -> bool:
    """Whether a conversation has two turns or more among the common questions (else each is its own cluster)."""
    return any(count > 1 for count in Counter(name for name, _ in turns.values()).values())


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
        notes += [f"{name} is measured only in {side} ({counted(count, 'question')}): not compared"
                  for name, count in sorted(counts.items())]
    return notes


def load(store: Store, campaign_id: str, tenant: str | None, principal: Principal | None = None,
         ) -> tuple[Campaign, list[QuestionResult]]:
    """A campaign record and its result rows (NotFound for another tenant's, as for a missing one)."""
    return get_campaign(store, campaign_id, tenant=scope(principal, tenant)), compared_results(store, campaign_id)


def compared_results(store: Store, campaign_id: str) -> list[QuestionResult]:
    """A campaign's results as a comparison reads them: without the detail it does not use (campaign_results)."""
    return campaign_results(store, campaign_id, detail=False)


def computed(store: Store, a: Campaign, b: Campaign, *, seed: int, resamples: int, **options: Any) -> Comparison:
    """The comparison of two stored campaigns computed from their rows (stored.compare_campaigns keeps it)."""
    process = statistics_process.start(a.finished, b.finished)   # it gets ready while the campaigns are read
    if process is None:
        power.prepare()
    try:
        # Reading, pairing and writing the lines builds a few million objects that hold no cycles; in a process
        # that already holds many (a server, a notebook) each collection would walk all of those again.
        with no_cycle_collection():
            return compare_rows(a, read_compared(store, a.id, pending=True), b,
                                read_compared(store, b.id, pending=True), seed=seed, resamples=resamples,
                                process=process, **options)
    finally:
        if process is not None:
            process.close()
