"""`python -m evalcore run`: a campaign in the foreground with a progress bar."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalcore.campaigns import (
    Aggregate,
    Campaign,
    CampaignManager,
    Progress,
    Summary,
    campaign_aggregates,
    campaign_diagnosis,
    campaign_results,
    campaign_summary,
    find_campaign,
    get_campaign,
    list_campaigns,
)
from evalcore.campaigns.launching import LaunchRequest, sweep_requests
from evalcore.campaigns.pace import duration_text
from evalcore.cli import SUMMARIES, _common, _gates, program
from evalcore.cli._common import JUDGE_FLAGS, Commands, add_db_option, add_judge_model_flags, add_sweep_columns
from evalcore.compare.pairing import previous
from evalcore.costs import cost_line
from evalcore.datasets import dataset_summary, load_dataset
from evalcore.diagnosis import STAGES, StageCounts
from evalcore.errors import EvalError
from evalcore.gates import (
    BOUNDS,
    Check,
    Exit,
    Gate,
    campaign_checks,
    cost_checks,
    exit_code,
    gates_from_toml,
    parse_gate,
    question_failures,
    unknown_checks,
    worst,
)
from evalcore.judges import JUDGES, local_notes
from evalcore.judges.scale import HIGHEST, LOWEST, PASS_MARK
from evalcore.language.text import counted
from evalcore.metrics import panels
from evalcore.store import Store, db_location, redact
from evalcore.suites import find_suite, get_suite
from evalcore.targets import TargetConfig
from evalcore.targets.generators import judge_model_name, judged_locally
from evalcore.targets.presets import QUICK_START
from evalcore.targets.saved_targets import get_target
from evalcore.targets.target_config import parse_sweep, read_prompt_files, setting_notes, sweep_values

POLL_S = 0.5  # seconds between refreshes of the progress bar


def register(commands: Commands) -> None:
    """Add the `run` subcommand."""
    parser = commands.add_parser("run", help=SUMMARIES["run"],
                                 description="Run a target over a dataset or a suite, with a progress bar.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", metavar="ID_OR_DIR",
                        help="'default', a folder name under dataset/ or in the working folder, or a folder path")
    source.add_argument("--suite", metavar="ID_OR_NAME", help="a suite, by its id or its name")
    parser.add_argument("--config", type=Path, metavar="FILE.toml", help="target configuration (default: built-in)")
    parser.add_argument("--target", metavar="ID", help="saved target configuration id (instead of --config)")
    add_db_option(parser)
    parser.add_argument("--concurrency", type=int, metavar="N",
                        help="questions in flight (default: cores - 1, or 8 for remote models)")
    parser.add_argument("--no-cache", action="store_true", help="do not reuse cached model replies")
    parser.add_argument("--judge", action="extend", nargs="+", default=[], metavar="NAME",
                        help=f"LLM judges to run on each answer: {', '.join(JUDGES)}")
    parser.add_argument("--judge-samples", type=int, default=1, metavar="N",
                        help="ask each judge N times (temperature 0.7) and record the spread (default 1)")
    parser.add_argument("--time-limit", type=_common.positive_seconds, metavar="S",
                        help="seconds per question, above 0 (default 240)")
    parser.add_argument("--limit", type=int, metavar="N", help="run only the first N questions")
    parser.add_argument("--tenant", default="default", help="workspace owning the campaign")
    parser.add_argument("--name", help="a name to recognise the campaign by (default: made from its configuration)")
    parser.add_argument("--sweep", metavar="KEY=V1,V2,...",
                        help="one campaign per value of one configuration key, run one after the other, then "
                             "compared (e.g. retriever=bm25,vector,hybrid)")
    parser.add_argument("--max-failed-share", type=float, metavar="F",
                        help="stop once more than this share of the questions failed (default 0.5; 1 = never stop)")
    costs = parser.add_argument_group("cost", "amounts in the currency of the prices (docs/costs.md)")
    costs.add_argument("--estimate", action="store_true",
                       help="print what the campaign would cost (from this configuration's earlier campaigns, else "
                            "by counting the prompts of a sample of its questions) and exit without running it")
    costs.add_argument("--max-cost", type=_common.amount, metavar="AMOUNT",
                       help="stop between questions once the campaign has cost this much (status over_budget; "
                            "`campaigns resume ID --max-cost LARGER` goes on); sets the configuration's max_cost")
    costs.add_argument("--fail-over-cost", type=_common.amount, metavar="AMOUNT",
                       help="exit 4 when the campaign cost more than this (or has a model without a price)")
    add_judge_options(parser)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one configuration key, e.g. graded_label_max=3; repeatable")
    _common.add_execution_options(parser)
    add_sweep_columns(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_gate_options(parser)
    parser.set_defaults(handler=run_command)


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    """--fail-under, --gate-bound and --junit: the run fails a build when a measure is under its mark."""
    gating = parser.add_argument_group("quality gates", f"exit codes: {_gates.EXIT_CODES}")
    gating.add_argument("--fail-under", action="append", default=[], metavar="MEASURE=V",
                        help="exit 4 when the campaign's mean of MEASURE is under V (over V where lower is better), "
                             "e.g. ndcg@10=0.7 or judge.groundedness=4; repeatable; adds to the [gates] table of "
                             "--config")
    gating.add_argument("--max-unknown-share", type=_common.share, metavar="F",
                        help="exit 4 when more than this share of a judge's verdicts is unreadable (unknown), "
                             "e.g. 0.2: a judge that cannot answer readably fails the build")
    gating.add_argument("--gate-bound", choices=BOUNDS,
                        help="take the gates on the mean (default) or on the lower (pessimistic) end of its 95%% "
                             "bootstrap interval")
    _gates.add_report_options(parser)


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """The judges' model keys, their pass marks, their own prompts and the rubrics (run, rejudge)."""
    judging = parser.add_argument_group("judges", "the judges' model (default: the target's own chat model)")
    add_judge_model_flags(judging)
    judging.add_argument("--judge-threshold", action="append", default=[], metavar="NAME=V",
                         help=f"pass mark of a judge on {LOWEST}-{HIGHEST} (default {PASS_MARK:g}), e.g. score=4; "
                              "claims: a share of supported claims, 0-1 (default 1); repeatable")
    judging.add_argument("--judge-prompt", action="append", default=[], metavar="NAME=FILE",
                         help="a judge's own prompt for this campaign, read from a file in the shape of the "
                              "built-in ones, e.g. score=prompts/score.txt; repeatable")
    judging.add_argument("--rubric", action="append", default=[], metavar="NAME=FILE",
                         help="a judge defined in plain words (criteria, steps, scale, pass mark, inputs), read from "
                              "a file; repeatable (see docs/judges.md)")


def judge_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The judge keys the options give (--judge-*, their tables' entries read from files), then --set's keys."""
    overrides: dict[str, Any] = {key: getattr(args, key) for key in JUDGE_FLAGS if getattr(args, key) is not None}
    if args.judge_threshold:
        overrides["judge_thresholds"] = pairs(args.judge_threshold, float)
    for key, given in (("judge_prompts", args.judge_prompt), ("rubrics", args.rubric)):
        if given:
            overrides[key] = read_prompt_files({key: pairs(given, str)}, Path.cwd())[key]
    return overrides | pairs(args.set, None)


def run_command(args: argparse.Namespace) -> int:
    """Launch, follow to the end, report; with --sweep, once per value, then the sweep's comparison."""
    manager = _common.manager_of(args, create=True)
    if args.suite:  # a suite's id or its name
        args.suite = find_suite(manager.store, args.suite, args.tenant).id
    config, target_id = configuration(manager, args)
    config = config.run_on(*_common.run_on(args))  # where it runs: still the saved target it was
    if args.max_cost is not None:
        config = config.with_values(max_cost=args.max_cost)
    gates = run_gates(args)  # a mistyped gate fails before the run, not after it
    changed = [*pairs(args.set, None), *([parse_sweep(args.sweep)[0]] if args.sweep else [])]
    for note in setting_notes(config, changed):
        print(f"note: {note}", file=sys.stderr)
    request = launch_request(args, config, target_id)
    if args.estimate:
        return print_estimate(manager, request, args)
    if not args.sweep:
        campaign_id = launch(manager, request, as_json=args.json)
        if follow(manager, campaign_id, as_json=args.json) == LOST_EXIT:
            return LOST_EXIT
        return gate_campaigns(manager.store, args, gates, [campaign_id])
    key, values = parse_sweep(args.sweep)
    ids = []
    # One after the other: a suite runs one campaign at a time, and the cores are shared.
    for each in sweep_requests(request, key, values, one_after_another=True):
        ids.append(launch(manager, each, as_json=args.json))
        if follow(manager, ids[-1], as_json=args.json) == LOST_EXIT:
            return LOST_EXIT
    from evalcore.cli.compare import format_sweep, sweep_columns  # a sweep's table: not loaded for one campaign
    from evalcore.compare import compare_sweep

    sweep = compare_sweep(manager.store, ids)
    print(json.dumps(sweep.to_dict(), indent=2, ensure_ascii=False, default=str) if args.json
          else "\n".join(format_sweep(sweep, sweep_columns(sweep, args.measures, args.all))))
    return gate_campaigns(manager.store, args, gates, ids)


def print_estimate(manager: CampaignManager, request: LaunchRequest, args: argparse.Namespace) -> int:
    """`run --estimate`: what the launch would cost (each request of a sweep), nothing run."""
    requests = sweep_requests(request, *parse_sweep(args.sweep), one_after_another=True) if args.sweep else [request]
    estimates = [manager.estimate(each) for each in requests]
    if args.json:
        print(json.dumps([estimate.to_dict() for estimate in estimates], indent=2, ensure_ascii=False))
    else:
        print("\n".join(estimate.text() for estimate in estimates))
    return 0


def run_gates(args: argparse.Namespace) -> list[Gate]:
    """The gates of --config's [gates] table, then --fail-under's (a measure given twice keeps the later mark)."""
    gates = gates_from_toml(args.config) if args.config else []
    if args.gate_bound:
        gates = [replace(g, bound=args.gate_bound) for g in gates]
    bound = args.gate_bound or (gates[0].bound if gates else "mean")
    gates += [parse_gate(text, bound) for text in args.fail_under]
    return list({g.measure: g for g in gates}.values())


def gate_campaigns(store: Store, args: argparse.Namespace, gates: list[Gate], ids: list[str]) -> int:
    """Take the gates on each campaign (their names prefixed in a sweep), report, and return the exit code."""
    checks: list[Check] = []
    codes: list[Exit] = []
    lines: list[tuple[str, str]] = []
    for campaign_id in ids:
        campaign = get_campaign(store, campaign_id)
        # Without gates only the failed questions are reported: a campaign without any reads no results.
        rows = campaign_results(store, campaign_id) if gates or campaign.failed else []
        own = campaign_checks(gates, rows) + question_failures(rows)
        if args.max_unknown_share is not None:
            own += unknown_checks(campaign_summary(store, campaign_id), args.max_unknown_share)
        if args.fail_over_cost is not None:
            own += cost_checks(campaign_summary(store, campaign_id), args.fail_over_cost)
        if len(ids) > 1:
            own = [replace(check, name=f"{campaign.name}: {check.name}") for check in own]
        checks += own
        codes.append(exit_code(campaign.status, own))
        state = f"{campaign.status_text}, {campaign.finished}/{campaign.total} questions, {campaign.failed} failed"
        lines.append((f"{campaign.name} ({campaign.id})", state))
    code = worst(codes)
    title = f"evalcore run: {lines[0][0]}" if len(ids) == 1 else f"evalcore run --sweep {args.sweep}"
    verdict = f"**exit code {code.value}: {code.label}**\n\n" + "\n".join(f"- {name}: {state}" for name, state in lines)
    return _gates.report(args, title, verdict, checks, code)


def configuration(manager: CampaignManager, args: argparse.Namespace) -> tuple[TargetConfig, str | None]:
    """The configuration to run, and the saved target it still is (None once changed by an option).

    --config, else --target, else the suite's target, else the quick start the dashboard also starts
    from; then --judge-* and --set override single keys.
    """
    target_id = args.target or (get_suite(manager.store, args.suite, args.tenant).target_id if args.suite else None)
    if args.config:
        config, target_id = TargetConfig.from_toml(args.config), None
    elif target_id not in (None, "", "default"):
        config = get_target(manager.store, target_id, args.tenant)
    else:
        config, target_id = (TargetConfig() if args.suite else QUICK_START.config), None
    overrides = judge_overrides(args)
    for key in ("judge_thresholds", "judge_prompts", "rubrics"):  # their entries add to the configuration's
        if key in overrides:
            overrides[key] = {**dict(config.value(key)), **overrides[key]}
    if not overrides:
        return config, target_id
    return TargetConfig.from_dict({**config.to_dict(), **overrides}), None


def pairs(items: list[str], kind: type | None) -> dict[str, Any]:
    """`NAME=VALUE` options as a dict; values typed as numbers or text (or by `kind`); EvalError on a bad one."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise EvalError("expected NAME=VALUE", where=item, fix="e.g. score=4 or graded_label_max=3")
        typed = sweep_values(value)
        if kind is float and not (len(typed) == 1 and isinstance(typed[0], (int, float))):
            raise EvalError("expected a number", where=item, found=value)
        out[name.strip()] = value if kind is str or len(typed) != 1 else typed[0]
    return out


def launch_request(args: argparse.Namespace, config: TargetConfig, target_id: str | None) -> LaunchRequest:
    """The launch the command's options ask for."""
    return LaunchRequest(
        dataset=args.dataset, suite_id=args.suite, config=config, target_id=target_id, tenant=args.tenant,
        judges=tuple(args.judge), concurrency=args.concurrency, cache=not args.no_cache,
        time_limit=args.time_limit, limit=args.limit, judge_samples=args.judge_samples,
        max_failed_share=args.max_failed_share, name=args.name,
    )


def launch(manager: CampaignManager, request: LaunchRequest, *, as_json: bool) -> str:
    """Launch one campaign, after printing what it runs (and on which data)."""
    config, out = request.config or TargetConfig(), sys.stderr if as_json else sys.stdout
    print(f"configuration: {config.describe()}; changed from the defaults: "
          f"{json.dumps(config.changed(), ensure_ascii=False) if config.changed() else 'nothing'}", file=out,
          flush=True)
    if request.judges or config.judge.rubrics:
        judged_by = judge_model_name(config)
        if judged_by is not None:
            print(f"judges ({', '.join([*request.judges, *dict(config.judge.rubrics)])}) ask {judged_by}", file=out,
                  flush=True)
        if judged_locally(config):
            for note in local_notes(request.judges):
                print(f"note: {note}", file=sys.stderr, flush=True)
    if request.dataset is not None:
        print(f"dataset {dataset_summary(load_dataset(request.dataset))}", file=out, flush=True)
    return manager.launch(request)


def follow(manager: CampaignManager, campaign_id: str, *, as_json: bool) -> int:
    """Show progress until the campaign ends (Ctrl-C cancels it), then print it; 0 when it succeeded, LOST_EXIT when
    another process took it over."""
    print(f"campaign {campaign_id}", file=sys.stderr if as_json else sys.stdout, flush=True)
    campaign = get_campaign(manager.store, campaign_id)
    try:
        with progress_bar(campaign) as bar:
            while campaign.active and not manager.lost(campaign_id):
                # Until it ends (its runner's thread joined), for at most a refresh of the bar: the command ends with
                # its campaign, not up to a refresh later.
                campaign = manager.wait(campaign_id, timeout=POLL_S)
                if bar is not None:
                    show_progress(bar, campaign.progress(), campaign.failed)
    except KeyboardInterrupt:
        manager.cancel(campaign_id)
        print(f"cancelling; resume with `{program()} campaigns resume {campaign_id}`", file=sys.stderr)
    # Cancelled, or ended under another owner before this process's runner noticed that it lost the campaign: the
    # runner stops (within a heartbeat), and then lost() tells.
    campaign = manager.wait(campaign_id)
    if manager.lost(campaign_id):
        print(f"this process lost campaign {campaign_id}: another process took it over (or it was deleted), and "
              f"its results are that process's (`{program()} campaigns show ID` shows them)", file=sys.stderr)
        return LOST_EXIT
    report = Report.of(manager.store, campaign)
    print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) if as_json else format_report(report))
    print("\n".join(next_lines(manager.store, campaign)), file=sys.stderr if as_json else sys.stdout)
    return campaign.status.exit_code


LOST_EXIT = 6  # the campaign was taken over by another process: what it did is not this process's
def next_lines(store: Store, campaign: Campaign) -> list[str]:
    """The campaign's name and id, and the command to type next: compare a re-judge with the campaign whose answers it
    judged, any other with the previous campaign on the same questions, or look at it."""
    if campaign.answers_from is not None:
        baseline: Campaign | None = get_campaign(store, campaign.answers_from)
    else:
        earlier = [c for c in list_campaigns(store, campaign.tenant)
                   if c.id != campaign.id and c.finished and c.created_at < campaign.created_at]
        baseline = previous(campaign, earlier)
    command = f"{program()} compare {handle(store, baseline)} {handle(store, campaign)}" if baseline \
        else f"{program()} campaigns show {campaign.id}"
    if store.location != db_location():  # a store named by --db: the next command names it too (no URL's password)
        command += f" --db {shlex.quote(redact(store.location))}"
    return ["", f"campaign {campaign.name!r} ({campaign.id})", f"next: {command}"]


def handle(store: Store, campaign: Campaign) -> str:
    """How to name a campaign on the command line: its name (quoted for the shell) when it finds it, else its id."""
    try:
        found = find_campaign(store, campaign.name, campaign.tenant).id == campaign.id
    except EvalError:
        found = False
    return shlex.quote(campaign.name) if found else campaign.id


BAR = "{desc}{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}{postfix}]"


def progress_bar(campaign: Campaign) -> AbstractContextManager[Any]:
    """A progress bar on standard error when it is a terminal; elsewhere none (tqdm would show none there either, and
    importing it takes 0.2 s)."""
    if not getattr(sys.stderr, "isatty", lambda: False)():
        return nullcontext()
    from tqdm import tqdm

    # tqdm's own rate and time left would mix the stages: the bar shows the campaign's (its recent rate).
    bar: AbstractContextManager[Any] = tqdm(total=campaign.total, initial=campaign.finished, unit="questions",
                                            file=sys.stderr, disable=None, bar_format=BAR)
    return bar


def show_progress(bar: Any, progress: Progress, failed: int) -> None:
    """The bar counts the index build's chunks while it runs, then the questions; the postfix says the rest."""
    if bar.disable:  # not a terminal
        return
    stage = progress.stage is not None
    total, done, unit = ((progress.stage_total or 0), (progress.stage_done or 0), "chunks") if stage \
        else (progress.total, progress.finished, "questions")
    if (bar.total, bar.unit) != (total, unit):
        bar.reset(total=total)
        bar.unit = unit
    bar.update(done - bar.n)
    bar.set_description(f"preparing the knowledge base: {progress.stage}" if stage else "questions", refresh=False)
    postfix = [] if stage else [f"{failed} failed"]
    if progress.rate_per_s:
        postfix.append(f"{progress.rate_per_s:.1f} q/s")
    if progress.eta_s is not None:
        postfix.append(f"{duration_text(progress.eta_s)} left")
    bar.set_postfix_str(", ".join(postfix), refresh=True)


@dataclass(frozen=True)
class Report:
    """What `run` and `campaigns show` print: the campaign, its aggregates, its summary, its failure stages."""

    campaign: Campaign
    aggregates: dict[str, Aggregate]
    summary: Summary
    diagnosis: StageCounts

    @classmethod
    def of(cls, store: Store, campaign: Campaign) -> Report:
        """The report of a stored campaign."""
        return cls(campaign, campaign_aggregates(store, campaign.id), campaign_summary(store, campaign.id),
                   campaign_diagnosis(store, campaign.id))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"campaign": self.campaign.to_dict(),
                "aggregates": {name: value.to_dict() for name, value in self.aggregates.items()},
                "summary": self.summary.to_dict(), "diagnosis": self.diagnosis.to_dict()}


def format_report(report: Report) -> str:
    """Status line, aggregates table and summary as plain text."""
    campaign, summary = report.campaign, report.summary
    lines = [f"status: {campaign.status_text}" + (f" ({campaign.error})" if campaign.error else ""),
             f"questions: {campaign.finished}/{campaign.total} finished, {campaign.failed} failed"]
    if campaign.answers_from is not None:
        lines.append(f"judges again the answers of campaign {campaign.answers_from} (its target was not asked)")
    lines += aggregates_table(report.aggregates)
    lines += diagnosis_lines(report.diagnosis)
    latency = summary.mean_latency_s
    lines += ["", f"mean latency: {'-' if latency is None else f'{latency:.3f} s'}",
              f"tokens: {summary.tokens.prompt} prompt + {summary.tokens.completion} completion"]
    if summary.judge_tokens.total or summary.judged:
        lines += [f"judge tokens: {summary.judge_tokens.prompt} prompt + {summary.judge_tokens.completion} completion",
                  f"total tokens: {summary.total_tokens}"]
    lines.append(cost_line(summary.usage, campaign.finished))
    lines.append(f"cache hits: {campaign.cache_hits}")
    lines += judge_lines(summary)
    return "\n".join(lines)


def judge_lines(summary: Summary) -> list[str]:
    """Per judge, what its figures leave out: unreadable verdicts (a warning above a fifth), questions skipped for want
    of a reference answer, contexts cut, answers that make no claim."""
    lines = summary.unknown_lines()
    lines += [f"judge {name}: {counted(count, 'question')} skipped: no reference answer"
              for name, count in summary.skipped.items()]
    lines += [f"judge {name}: context cut to fit the judge model's context window on {counted(count, 'question')}"
              for name, count in summary.cut.items()]
    lines += [f"judge {name}: no claim in {counted(count, 'answer')} (refusals: marked, not scored)"
              for name, count in summary.no_claim.items()]
    return lines


def aggregates_table(aggregates: dict[str, Aggregate]) -> list[str]:
    """Lines of the aggregates, one block per panel (retrieval, then generation, ...)."""
    if not aggregates:
        return []
    width = max(len(name) for name in aggregates)
    lines = []
    for title, names in panels(aggregates):
        lines += ["", f"{title} measures", f"  {'measure':<{width}}  {'mean':>8}  {'n':>5}"]
        lines += [_aggregate_line(name, aggregates[name], width) for name in names]
    return lines


def diagnosis_lines(counts: StageCounts) -> list[str]:
    """Where the questions failed: one line per stage with its count and share of the questions."""
    if not counts.total:
        return []
    lines = ["", f"failure attribution ({counts.labeled} of {counts.total} questions labeled)"]
    return lines + [f"  {stage:<16} {count:>5}  {count / counts.total:6.1%}" for stage, count in counts.counts.items()
                    if count or stage in STAGES[:4]]


def _aggregate_line(name: str, value: Aggregate, width: int) -> str:
    mean = "-" if value.mean is None else f"{value.mean:.4f}"
    return f"  {name:<{width}}  {mean:>8}  {value.count:>5}"
