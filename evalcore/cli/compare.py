"""`python -m evalcore compare A B [C ...]`: two campaigns side by side, or a sweep of several."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.campaigns import CampaignKind, NotFound, get_campaign
from evalcore.campaigns.trust import comparison_trust
from evalcore.cli import SUMMARIES, _gates
from evalcore.cli._common import (
    JUDGE_FLAGS,
    Commands,
    add_campaign_argument,
    add_db_option,
    add_judge_model_flags,
    add_sweep_columns,
    positive_int,
    store_of,
    write_file,
)
from evalcore.compare import (
    Change,
    Comparison,
    MeasureDelta,
    QuestionDiff,
    compare_campaigns,
    power,
)
from evalcore.compare.deltas import KeptQuestions
from evalcore.compare.exact import RESAMPLES
from evalcore.datasets.names import dataset_label
from evalcore.diagnosis import STAGES, Transition
from evalcore.errors import EvalError
from evalcore.judges import FIELD_NAMES, LOCAL_PAIRWISE_NOTE
from evalcore.language.text import counted
from evalcore.store import Store
from evalcore.store.campaign_statuses import CampaignStatus

if TYPE_CHECKING:
    from evalcore.compare.preference import Preference
    from evalcore.compare.sweep import Sweep

SHOWN_VERDICTS = (Change.WORSE, Change.BETTER, Change.NEW, Change.REMOVED)
SWEEP_COLUMNS = 6  # measures a sweep's table shows when it has none of the headline ones


def register(commands: Commands) -> None:
    """Add the `compare` command."""
    parser = commands.add_parser("compare", help=SUMMARIES["compare"])
    add_campaign_argument(parser, "ids", nargs="+", help="campaign A (baseline) and B, each by id, name or the "
                          "start of either (unique); more campaigns compare a sweep")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the bootstrap and randomization test")
    parser.add_argument("--resamples", type=positive_int, default=RESAMPLES, help=f"resamples (default {RESAMPLES})")
    parser.add_argument("--effect", type=effect_size, default=power.EFFECT,
                        help=f"difference to detect, in each measure's units: the questions needed to see it "
                             f"(default {power.EFFECT})")
    parser.add_argument("--basis", metavar="MEASURE",
                        help="the measure deciding each question's verdict (default: follows what differs: nDCG@10 "
                             "for a retrieval-side change, the AI score or else ROUGE-L for a generation-side one)")
    parser.add_argument("--tolerance", type=tolerance, action="append", default=[], metavar="[MEASURE=]VALUE",
                        help="the smallest difference of a question's measure that changes its verdict (below it: "
                             "same); MEASURE=VALUE for one measure, VALUE for all; repeatable (default: 0.01 for 0-1 "
                             "measures, 1 for 0-100 scores, any change for pass/fail, labels and judge scores)")
    parser.add_argument("--report", type=Path, metavar="FILE.html",
                        help="also write the comparison as one HTML file that opens without network (names, "
                             "settings, verdicts, measures with their chart, power, every question); for a sweep, "
                             "its baseline against the last campaign, with the sweep's table and chart")
    parser.add_argument("--names", choices=FIELD_NAMES, default="project",
                        help="how the report names each question's judge results: project (score, completeness, "
                             "groundedness_pro) or evaluator (the evaluators' documented names: gpt_retrieval, "
                             "retrieval_reason, response_completeness_result, groundedness_pro_label)")
    parser.add_argument("--fail-if-worse", type=measure_list, action="extend", default=[], metavar="M1,M2",
                        help="exit 5 when B is significantly worse than A (the comparison's paired test, p < 0.05) "
                             "on any of these measures, e.g. ndcg@10,rougel; `headline`: the measures that decide "
                             f"verdicts. Exit codes: {_gates.EXIT_CODES}")
    pairwise = parser.add_argument_group(
        "pairwise judge", "a judge reads both answers of each common question (with their passages and the references) "
                          "and says which is better, asked in both orders; kept with the comparison")
    pairwise.add_argument("--pairwise", action="store_true",
                          help="ask the pairwise judge (each model call cached: asking again on the same answers asks "
                               "nothing); its model: B's judge keys unless --judge-* are given")
    pairwise.add_argument("--pairwise-limit", type=positive_int, metavar="N",
                          help="only the first N common answered questions (default: all)")
    add_judge_model_flags(pairwise)
    _gates.add_report_options(parser)
    add_sweep_columns(parser)
    add_db_option(parser)
    parser.set_defaults(handler=compare_command)


def measure_list(text: str) -> list[str]:
    """argparse type: comma-separated measure names."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected measure names separated by commas, found {text!r}")
    return names


def compare_command(args: argparse.Namespace) -> int:
    """Compare and print as text or JSON."""
    if len(args.ids) < 2:
        raise EvalError("compare needs at least two campaigns", found=str(len(args.ids)), expected=">= 2")
    if len(args.ids) > 2 and (args.fail_if_worse or args.junit):
        raise EvalError("--fail-if-worse and --junit compare two campaigns, not a sweep", where="ids",
                        found=str(len(args.ids)), fix="give the baseline and one candidate")
    ids = args.ids  # resolved to ids (resolve_campaigns)
    ask_pairwise(args, ids)
    if len(ids) == 2:
        tolerances = dict(pair for given in args.tolerance for pair in given)  # later ones win
        result: Comparison | Sweep = compare_campaigns(store_of(args), ids[0], ids[1], seed=args.seed,
                                                       resamples=args.resamples, effect=args.effect,
                                                       basis=args.basis, tolerances=tolerances,
                                                       read_later=True)   # the store is open until the process ends
    else:
        from evalcore.compare.sweep import compare_sweep  # a sweep's module: only for three campaigns or more

        result = compare_sweep(store_of(args), ids, seed=args.seed, resamples=args.resamples)
    trust = comparison_trust(store_of(args), ids[0], ids[1]) if isinstance(result, Comparison) else None
    if args.json and isinstance(result, Comparison):
        from evalcore.compare.json_text import comparison_text

        print(comparison_text(result, {"agreement": trust.to_dict()} if trust is not None else None, lines=True))
    elif args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2, default=str))
    elif isinstance(result, Comparison):
        # The summary first, out at once: the changed questions' lines (thousands of records decoded) follow it.
        print("\n".join(summary_lines(result, campaign_names(store_of(args), (result.a.id, result.b.id)))),
              flush=True)
        rest = [question_line(q) for q in shown_questions(result)] + (trust.lines() if trust is not None else []) \
            + pairwise_lines(result.pairwise)
        if rest:
            print("\n".join(rest))
    else:
        print("\n".join(format_sweep(result, sweep_columns(result, args.measures, args.all))))
    if args.report:
        write_report(args, ids, result)
    if not isinstance(result, Comparison) or not (args.fail_if_worse or args.junit):
        return 0
    return gate_comparison(args, result)


def ask_pairwise(args: argparse.Namespace, ids: list[str]) -> None:
    """With --pairwise, ask the pairwise judge on A and B (kept, so the comparison carries it)."""
    judge = {key: getattr(args, key) for key in JUDGE_FLAGS if getattr(args, key) is not None}
    if not args.pairwise:
        if judge or args.pairwise_limit:
            raise EvalError("--judge-* and --pairwise-limit are for the pairwise judge", where="--pairwise",
                            found="not given", fix="add --pairwise, or leave them out")
        return
    if len(ids) != 2:
        raise EvalError("the pairwise judge compares two campaigns, not a sweep", where="--pairwise",
                        found=str(len(ids)), fix="give A and B")
    from evalcore.compare.pairwise_job import asks_local_model, judge_comparison  # the judge's model: only when asked

    if asks_local_model(get_campaign(store_of(args), ids[1]), judge):
        print(f"note: {LOCAL_PAIRWISE_NOTE}", file=sys.stderr, flush=True)
    preference = judge_comparison(store_of(args), ids[0], ids[1], judge=judge, limit=args.pairwise_limit)
    print(f"asked the pairwise judge on {counted(len(preference.verdicts), 'question')}", file=sys.stderr)


def pairwise_lines(preference: Preference | None) -> list[str]:
    """The pairwise judge's figures, then each question's verdict with its reason (nothing when it was not asked)."""
    if preference is None:
        return []
    from evalcore.compare.preference import INTERVAL, TEST

    lines = [preference.summary, f"  {INTERVAL}; {TEST}; judge {preference.signature}"]
    for verdict in preference.verdicts:
        flip = " (flipped with the order: a tie)" if verdict.flipped else ""
        text = " ".join(verdict.question.split())[:60]
        lines.append(f"  q{verdict.qid} {verdict.winner}{flip}: {text}  [{' '.join(verdict.reason.split())[:160]}]")
    return lines


def gate_comparison(args: argparse.Namespace, comparison: Comparison) -> int:
    """Check the named measures for a significant regression of B against A, report, and return the exit code."""
    from evalcore.gates import exit_code, worse_checks  # the checks (the statistics, the registry): only when asked

    checks = worse_checks(comparison, args.fail_if_worse)
    code = exit_code(None, checks)
    worse = [c.name.split()[0] for c in checks if not c.passed]
    verdict = f"**exit code {code.value}: {code.label}**" + (f" (significantly worse: {', '.join(worse)})"
                                                                 if worse else "")
    names = campaign_names(store_of(args), (comparison.a.id, comparison.b.id))
    a, b = (f"{names.get(side.id, side.id)} ({side.id})" for side in (comparison.a, comparison.b))
    return _gates.report(args, f"evalcore compare: {a} → {b}", verdict, checks, code)


def campaign_names(store: Store, ids: Iterable[str]) -> dict[str, str]:
    """The campaigns' names as they are now (a campaign deleted since its comparison was kept has none)."""
    names = {}
    for campaign_id in ids:
        try:
            names[campaign_id] = get_campaign(store, campaign_id).name
        except NotFound:
            pass
    return names


def write_report(args: argparse.Namespace, ids: list[str], result: Comparison | Sweep) -> None:
    """Write the HTML report of the comparison (or of the sweep) to --report."""
    from evalcore.compare.export_context import source_names  # the report's charts and tables: only when asked
    from evalcore.compare.report import comparison_report, sweep_report

    store = store_of(args)
    campaigns = [get_campaign(store, campaign_id) for campaign_id in ids]
    sources = source_names(store, campaigns)
    trust = comparison_trust(store, campaigns[0].id, campaigns[1].id).lines()
    text = comparison_report(result, campaigns[0], campaigns[1], sources, names=args.names, trust=trust) \
        if isinstance(result, Comparison) else sweep_report(store, result, campaigns, sources, names=args.names)
    write_file(args.report, text, "the report")
    print(f"wrote {args.report}", file=sys.stderr)


def effect_size(text: str) -> float:
    """argparse type: a positive number."""
    try:
        return power.check_effect(float(text))
    except (ValueError, EvalError):
        raise argparse.ArgumentTypeError(f"expected a positive number, found {text!r}") from None


def tolerance(text: str) -> list[tuple[str, float]]:
    """argparse type: `MEASURE=VALUE` (one measure) or `VALUE` (every measure), VALUE a number of at least 0."""
    from evalcore.metrics import MEASURES  # the measure registry: only when a tolerance is given

    name, _, value = text.rpartition("=")
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number >= 0 or (name and name not in MEASURES):
        raise argparse.ArgumentTypeError(f"expected MEASURE=VALUE or VALUE (a number >= 0, a registered measure), "
                                         f"found {text!r}")
    return [(name, number)] if name else [(measure, number) for measure in MEASURES]


def num(value: float | None, digits: int = 4) -> str:
    """A number in a few significant digits, '-' when absent."""
    return "-" if value is None else f"{value:.{digits}g}"


def format_comparison(comparison: Comparison, names: dict[str, str] | None = None) -> list[str]:
    """The comparison as a readable report; `names` (campaign id -> name, as now) head A's and B's lines."""
    return summary_lines(comparison, names) + [question_line(q) for q in shown_questions(comparison)]


def shown_questions(comparison: Comparison) -> list[QuestionDiff]:
    """The questions the report lists (those whose verdict moved), in order; only they are decoded when kept."""
    kept = comparison.questions
    return kept.with_verdicts(SHOWN_VERDICTS) if isinstance(kept, KeptQuestions) else \
        [q for q in kept if q.verdict in SHOWN_VERDICTS]


def summary_lines(comparison: Comparison, names: dict[str, str] | None = None) -> list[str]:
    """The report's lines before its questions: the campaigns, verdicts, transitions, measures and power."""
    a, b = comparison.a, comparison.b
    names = names or {}
    # A dataset by its name, never the folder it was read from: the report may be passed on.
    source = {c.id: dataset_label(c.source) if c.kind == CampaignKind.DATASET else c.source for c in (a, b)}
    status = {c.id: CampaignStatus(c.status).label for c in (a, b)}  # words, not the stored value
    lines = [f"A (baseline) {names.get(a.id, a.id)}  ({a.id})  {a.kind} {source[a.id]}  {status[a.id]}",
             f"B            {names.get(b.id, b.id)}  ({b.id})  {b.kind} {source[b.id]}  {status[b.id]}"]
    lines += [f"config {key}: {values[0]!r} -> {values[1]!r}" for key, values in comparison.config_diff.items()]
    lines += [f"warning: {w}" for w in comparison.warnings + comparison.power_warnings]
    lines += [f"note: {n}" for n in comparison.notes]
    lines.append("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(comparison.verdicts.items()))
                 + f" (by {comparison.basis_reason})")
    if comparison.tolerance_note:
        lines.append(f"tolerance: {comparison.tolerance_note}")
    if comparison.cost is not None:
        lines.append(f"cost: {comparison.trade_off} ({comparison.cost.text()})")
    lines += transition_lines(comparison.transitions)
    width = max([28, *(len(m.measure) for m in comparison.measures)])  # long names stay in their column
    if not comparison.measures:
        lines.append("no measure to compare: no question has the same measure in both campaigns")
    else:
        lines.append(f"{'measure':{width}} {'n':>4} {'A':>8} {'B':>8} {'delta':>9} {'95% CI':>21} {'p':>8}  test")
    for m in comparison.measures:
        ci = f"[{num(m.ci_low)}, {num(m.ci_high)}]"
        flag = " *" if m.significant else ""
        lines.append(f"{m.measure:{width}} {m.n:4d} {num(m.mean_a):>8} {num(m.mean_b):>8} "
                     f"{num(m.delta):>9} {ci:>21} {num(m.p_value, 3):>8}{flag}  {m.test}")
    lines.append(f"* p < 0.05 (seed {comparison.seed}, {comparison.resamples} resamples)")
    lines += [f"tests disagree on {line}" for line in comparison.disagreements]
    if comparison.measures:
        lines.append(f"power (paired t, {power.POWER:.0%} at alpha {power.ALPHA:g}): the smallest difference each "
                     f"measure could show, and the questions needed to see ±{comparison.effect:g}")
        lines += [f"  {m.measure:{width}} {power_line(m)}" for m in comparison.measures if not m.unchanged]
        if comparison.unchanged:
            lines.append("  the same in A and B on every question (nothing to test): "
                         f"{', '.join(comparison.unchanged)}")
    return lines


def transition_lines(cells: list[Transition]) -> list[str]:
    """The failure stages of the common questions, A's (rows) against B's (columns), then who moved where."""
    if not cells:
        return []
    present = [stage for stage in STAGES if any(stage in (cell.a, cell.b) for cell in cells)]
    count = {(cell.a, cell.b): cell.count for cell in cells}
    width = max(len(stage) for stage in present) + 2
    lines = [f"failure stages, A (rows) -> B (columns), {sum(count.values())} common questions:",
             f"  {'':{width}}" + "".join(f"{stage:>{width}}" for stage in present)]
    lines += [f"  {a:{width}}" + "".join(f"{count.get((a, b), 0):>{width}}" for b in present) for a in present]
    for cell in cells:
        if cell.a != cell.b:
            named = " ".join(f"q{qid}" for qid in cell.qids[:LISTED])
            more = f" ... and {cell.count - LISTED} more: --json lists them all" if cell.count > LISTED else ""
            lines.append(f"  {cell.a} -> {cell.b}: {cell.count} ({named}{more})")
    return lines


LISTED = 20   # question ids named per moved cell: thousands of them would fill the terminal


def power_line(m: MeasureDelta) -> str:
    """'n = 74 can detect ±0.031 (bootstrap ±0.03); ±0.02 needs 180 questions', or why not."""
    if m.mde is None:
        return m.power_note or ""
    bootstrap = f" (bootstrap ±{m.mde_bootstrap:.2g})" if m.mde_bootstrap is not None else ""
    return f"n = {m.n} can detect ±{m.mde:.2g}{bootstrap}; ±{m.effect:g} needs {m.n_required:,} questions"


def question_line(q: QuestionDiff) -> str:
    """One changed question: verdict, basis, values, passages that moved."""
    text = " ".join(q.question.split())[:60]
    line = f"{q.verdict:8} q{q.qid} {text}"
    if q.basis == "error":
        failed = [f"failed in {side}: {' '.join(error.split())[:80]}"
                  for side, error in (("A", q.error_a), ("B", q.error_b)) if error]
        line += f"  [{'; '.join(failed)}]"
    elif q.basis:
        line += f"  [{q.basis}: {num(q.a)} -> {num(q.b)}]"
    moved = [f"+{p.pid}" for p in q.entered] + [f"-{p.pid}" for p in q.left]
    moved += [f"+{s}" for s in q.sources_entered or ()] + [f"-{s}" for s in q.sources_left or ()]
    line += f"  relevant: {' '.join(moved)}" if moved else ""
    if q.queries_a or q.queries_b:
        line += f"  queries: {queries_text(q.queries_a)} -> {queries_text(q.queries_b)}"
    return line


def queries_text(queries: tuple[str, ...]) -> str:
    """A side's transformed queries, each cut to 60 characters, or "(the question)" without any."""
    return " | ".join(repr(" ".join(text.split())[:60]) for text in queries) or "(the question)"


def sweep_columns(sweep: Sweep, asked: list[str] | None = None, every: bool = False) -> list[str]:
    """The measures a sweep's table shows, in panel order: those asked, every one, or the headline measures
    present (else the first few present)."""
    from evalcore.campaigns.listing import HEADLINE  # the measure registry: a sweep's, not a kept pair's
    from evalcore.metrics import display_order

    present = sorted(sweep.series, key=display_order)
    if asked:
        unknown = [name for name in asked if name not in present]
        if unknown:
            raise EvalError("no campaign of the sweep has this measure", where="--measures", found=", ".join(unknown),
                            expected=", ".join(present) or "a measure of the campaigns")
        return sorted(asked, key=display_order)
    if every:
        return present
    return [name for name in present if name in HEADLINE] or present[:SWEEP_COLUMNS]


def format_sweep(sweep: Sweep, measures: list[str] | None = None) -> list[str]:
    """The sweep as a table: one row per campaign, one column per measure (full names; `sweep_columns` by default)."""
    names = sweep_columns(sweep) if measures is None else measures
    lines = [f"sweep over {sweep.key or '(no single key)'}; baseline {sweep.baseline}"]
    lines += [f"warning: {w}" for w in sweep.warnings]
    width = max([len("value"), *(len(str(row.value)) for row in sweep.table)])
    widths = [max(len(name), 9) for name in names]
    lines.append(f"{'value':>{width}} " + " ".join(f"{name:>{w + 1}}" for name, w in zip(names, widths, strict=False)))
    for row in sweep.table:
        cells = []
        for name, cell_width in zip(names, widths, strict=False):
            mean = row.measures[name].mean if name in row.measures else None
            mark = "*" if (delta := (row.deltas or {}).get(name)) and delta.significant else " "
            cells.append(f"{num(mean):>{cell_width}}{mark}")
        lines.append(f"{row.value!s:>{width}} " + " ".join(cells))
    lines.append("* significantly different from the baseline (p < 0.05)")
    hidden = len(sweep.series) - len(names)
    if hidden > 0:
        lines.append(f"{counted(hidden, 'more measure')}: --measures M1,M2,... or --all")
    return lines
