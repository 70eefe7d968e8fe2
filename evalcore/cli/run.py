"""`python -m evalcore run`: a campaign in the foreground with a progress bar."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.campaigns.pace import duration_text
from evalcore.cli import SUMMARIES, _common
from evalcore.cli._common import Commands, add_db_option
from evalcore.errors import EvalError
from evalcore.judges.prompts import JUDGES
from evalcore.targets.config import TargetConfig, parse_sweep, sweep_values

if TYPE_CHECKING:
    from evalcore.campaigns import Aggregate, Campaign, CampaignManager, Progress, Summary
    from evalcore.diagnosis import StageCounts
    from evalcore.store import Store

# The engine is imported inside the functions that use it: `--help` and the other commands do not load it.
POLL_S = 0.5


def register(commands: Commands) -> None:
    """Add the `run` subcommand."""
    parser = commands.add_parser("run", help=SUMMARIES["run"],
                                 description="Run a target over a dataset or a suite, with a progress bar.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", metavar="ID_OR_DIR", help="dataset id under dataset/ ('default') or a folder")
    source.add_argument("--suite", metavar="ID", help="suite id")
    parser.add_argument("--config", type=Path, metavar="FILE.toml", help="target configuration (default: built-in)")
    parser.add_argument("--target", metavar="ID", help="saved target configuration id (instead of --config)")
    add_db_option(parser)
    parser.add_argument("--concurrency", type=int, metavar="N", help="questions in flight (default: cores - 1, or 8 for remote models)")
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
    judging = parser.add_argument_group("judges", "the judges' model (default: the target's own chat model)")
    for flag, key, kind, text in JUDGE_FLAGS:
        judging.add_argument(flag, dest=key, type=kind, metavar=key.removeprefix("judge_").upper(), help=text)
    judging.add_argument("--judge-threshold", action="append", default=[], metavar="NAME=V",
                         help="pass mark of a judge on 1-5 (default 3), e.g. score=4; repeatable")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one configuration key, e.g. graded_label_max=3; repeatable")
    _common.add_execution_options(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run_command)


JUDGE_FLAGS = (
    ("--judge-kind", "judge_kind", str, "auto (the target's model, else the one below), openai or local"),
    ("--judge-model", "judge_model", str, "the judges' model on an OpenAI-compatible endpoint, e.g. gpt-4o-mini"),
    ("--judge-base-url", "judge_base_url", str, "its endpoint (default: the target's base_url)"),
    ("--judge-api-key-env", "judge_api_key_env", str, "the NAME of the variable holding its key"),
    ("--judge-temperature", "judge_temperature", float, "its temperature (default 0)"),
    ("--judge-max-tokens", "judge_max_tokens", int, "its reply length limit (default 300)"),
)


def run_command(args: argparse.Namespace) -> int:
    """Launch, follow to the end, report; with --sweep, once per value, then the sweep's comparison."""
    from evalcore.campaigns.manager import sweep_name
    from evalcore.cli.compare import format_sweep
    from evalcore.compare import compare_sweep

    manager = _common.manager_of(args)
    config, target_id = configuration(manager, args)
    config = config.run_on(*_common.run_on(args))  # where it runs: still the saved target it was
    if not args.sweep:
        return follow(manager, launch(manager, args, config, target_id, args.name), as_json=args.json)
    key, values = parse_sweep(args.sweep)
    ids, codes = [], []
    for value, each in zip(values, config.sweep(key, values), strict=True):
        # One after the other: a suite runs one campaign at a time, and the cores are shared.
        ids.append(launch(manager, args, each, None, sweep_name(args.name, each, key, value)))
        codes.append(follow(manager, ids[-1], as_json=args.json))
    sweep = compare_sweep(manager.store, ids)
    print(json.dumps(sweep.to_dict(), indent=2, ensure_ascii=False, default=str) if args.json
          else "\n".join(format_sweep(sweep)))
    return max(codes)


def configuration(manager: CampaignManager, args: argparse.Namespace) -> tuple[TargetConfig, str | None]:
    """The configuration to run, and the saved target it still is (None once changed by an option).

    --config, else --target, else the suite's target, else the quick start the dashboard also starts
    from; then --judge-* and --set override single keys.
    """
    from evalcore.suites import get_suite
    from evalcore.targets.presets import QUICK_START
    from evalcore.targets.saved import get_target

    target_id = args.target or (get_suite(manager.store, args.suite, args.tenant).target_id if args.suite else None)
    if args.config:
        config, target_id = TargetConfig.from_toml(args.config), None
    elif target_id not in (None, "", "default"):
        config = get_target(manager.store, target_id, args.tenant)
    else:
        config, target_id = (TargetConfig() if args.suite else QUICK_START.config), None
    overrides = {key: getattr(args, key) for _, key, _, _ in JUDGE_FLAGS if getattr(args, key) is not None}
    if args.judge_threshold:
        overrides["judge_thresholds"] = {**dict(config.judge_thresholds), **pairs(args.judge_threshold, float)}
    overrides |= pairs(args.set, None)
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
        out[name.strip()] = typed[0] if len(typed) == 1 else value
    return out


def launch(manager: CampaignManager, args: argparse.Namespace, config: TargetConfig, target_id: str | None,
           name: str | None = None) -> str:
    """Launch one campaign with the command's options, after printing what it runs."""
    print(f"configuration: {config.describe()}; changed from the defaults: "
          f"{json.dumps(config.changed(), ensure_ascii=False) if config.changed() else 'nothing'}",
          file=sys.stderr if args.json else sys.stdout, flush=True)
    return manager.launch(
        dataset=args.dataset, suite_id=args.suite, config=config, target_id=target_id, tenant=args.tenant,
        judges=tuple(args.judge), concurrency=args.concurrency, cache=not args.no_cache,
        time_limit=args.time_limit, limit=args.limit, judge_samples=args.judge_samples,
        max_failed_share=args.max_failed_share, name=name,
    )


def follow(manager: CampaignManager, campaign_id: str, *, as_json: bool) -> int:
    """Show progress until the campaign ends (Ctrl-C cancels it), then print it; 0 when it succeeded."""
    from tqdm import tqdm

    from evalcore.campaigns import get_campaign

    print(f"campaign {campaign_id}", file=sys.stderr if as_json else sys.stdout, flush=True)
    campaign = get_campaign(manager.store, campaign_id)
    try:
        # tqdm's own rate and time left would mix the stages: the bar shows the campaign's (its recent rate).
        with tqdm(total=campaign.total, initial=campaign.finished, unit="questions", file=sys.stderr, disable=None,
                  bar_format=BAR) as bar:
            while campaign.active:
                time.sleep(POLL_S)
                campaign = get_campaign(manager.store, campaign_id)
                show_progress(bar, campaign.progress(), campaign.failed)
    except KeyboardInterrupt:
        manager.cancel(campaign_id)
        print(f"cancelling; resume with `python -m evalcore campaigns resume {campaign_id}`", file=sys.stderr)
        campaign = manager.wait(campaign_id)
    report = Report.of(manager.store, campaign)
    print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) if as_json else format_report(report))
    return campaign.status.exit_code


BAR = "{desc}{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}{postfix}]"


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
        from evalcore.campaigns import campaign_aggregates, campaign_diagnosis, campaign_summary

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
    lines += aggregates_table(report.aggregates)
    lines += diagnosis_lines(report.diagnosis)
    latency = summary.mean_latency_s
    lines += ["", f"mean latency: {'-' if latency is None else f'{latency:.3f} s'}",
              f"tokens: {summary.tokens.prompt} prompt + {summary.tokens.completion} completion",
              f"cache hits: {campaign.cache_hits}"]
    return "\n".join(lines)


def aggregates_table(aggregates: dict[str, Aggregate]) -> list[str]:
    """Lines of the aggregates, one block per panel (retrieval, then generation, ...)."""
    from evalcore.metrics import panels

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
    from evalcore.diagnosis import STAGES

    if not counts.total:
        return []
    lines = ["", f"failure attribution ({counts.labeled} of {counts.total} questions labeled)"]
    return lines + [f"  {stage:<16} {count:>5}  {count / counts.total:6.1%}" for stage, count in counts.counts.items()
                    if count or stage in STAGES[:4]]


def _aggregate_line(name: str, value: Aggregate, width: int) -> str:
    mean = "-" if value.mean is None else f"{value.mean:.4f}"
    return f"  {name:<{width}}  {mean:>8}  {value.count:>5}"
