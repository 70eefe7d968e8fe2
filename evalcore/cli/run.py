"""`python -m evalcore run`: a campaign in the foreground with a progress bar."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcore.campaigns import (
    Aggregate,
    Campaign,
    CampaignManager,
    CampaignStatus,
    Summary,
    campaign_aggregates,
    campaign_summary,
    get_campaign,
)
from evalcore.cli import _common
from evalcore.cli._common import Commands, add_db_option
from evalcore.cli.compare import format_sweep
from evalcore.compare import compare_sweep
from evalcore.metrics import panels
from evalcore.targets import TargetConfig
from evalcore.targets.config import parse_sweep
from evalcore.targets.saved import get_target

POLL_S = 0.5


def register(commands: Commands) -> None:
    """Add the `run` subcommand."""
    parser = commands.add_parser("run", help="run a campaign in the foreground and print its aggregates",
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
                        help="LLM judges to run on each answer: score, retrieval, groundedness, groundedness_pro, "
                             "relevance, completeness")
    parser.add_argument("--judge-samples", type=int, default=1, metavar="N",
                        help="ask each judge N times (temperature 0.7) and record the spread (default 1)")
    parser.add_argument("--time-limit", type=float, metavar="S", help="seconds per question (default 240)")
    parser.add_argument("--limit", type=int, metavar="N", help="run only the first N questions")
    parser.add_argument("--tenant", default="default", help="workspace owning the campaign")
    parser.add_argument("--name", help="a name to recognise the campaign by (default: made from its configuration)")
    parser.add_argument("--sweep", metavar="KEY=V1,V2,...",
                        help="one campaign per value of one configuration key, run one after the other, then "
                             "compared (e.g. retriever=bm25,vector,hybrid)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Launch, follow to the end, report; with --sweep, once per value, then the sweep's comparison."""
    manager = _common.manager_of(args)
    config = TargetConfig.from_toml(args.config) if args.config else None
    if not args.sweep:
        return follow(manager, launch(manager, args, config, args.name), as_json=args.json)
    if config is None:
        config = get_target(manager.store, args.target, args.tenant) if args.target else TargetConfig()
    key, values = parse_sweep(args.sweep)
    ids, codes = [], []
    for value, each in zip(values, config.sweep(key, values), strict=True):
        # One after the other: a suite runs one campaign at a time, and the cores are shared.
        ids.append(launch(manager, args, each, f"{args.name or each.describe()} · {key}={value}"))
        codes.append(follow(manager, ids[-1], as_json=args.json))
    sweep = compare_sweep(manager.store, ids)
    print(json.dumps(sweep.to_dict(), indent=2, ensure_ascii=False, default=str) if args.json
          else "\n".join(format_sweep(sweep)))
    return max(codes)


def launch(manager: CampaignManager, args: argparse.Namespace, config: TargetConfig | None,
           name: str | None = None) -> str:
    """Launch one campaign with the command's options."""
    return manager.launch(
        dataset=args.dataset, suite_id=args.suite, config=config, target_id=args.target, tenant=args.tenant,
        judges=tuple(args.judge), concurrency=args.concurrency, cache=not args.no_cache,
        time_limit=args.time_limit, limit=args.limit, judge_samples=args.judge_samples,
        name=name,
    )


def follow(manager: CampaignManager, campaign_id: str, *, as_json: bool) -> int:
    """Show progress until the campaign ends (Ctrl-C cancels it), then print it; 0 when it succeeded."""
    from tqdm import tqdm

    print(f"campaign {campaign_id}", file=sys.stderr if as_json else sys.stdout, flush=True)
    campaign = get_campaign(manager.store, campaign_id)
    try:
        # A resumed campaign starts at what it already has, so the rate is this session's.
        with tqdm(total=campaign.total, initial=campaign.finished, unit="q", file=sys.stderr, disable=None) as bar:
            while campaign.active:
                time.sleep(POLL_S)
                campaign = get_campaign(manager.store, campaign_id)
                bar.update(campaign.finished - bar.n)
                bar.set_description(campaign.progress().stage or "", refresh=False)
                bar.set_postfix(failed=campaign.failed, refresh=False)
    except KeyboardInterrupt:
        manager.cancel(campaign_id)
        print(f"cancelling; resume with `python -m evalcore campaigns resume {campaign_id}`", file=sys.stderr)
        campaign = manager.wait(campaign_id)
    report = Report(campaign, campaign_aggregates(manager.store, campaign_id), campaign_summary(manager.store, campaign_id))
    print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) if as_json else format_report(report))
    return 0 if campaign.status == CampaignStatus.SUCCEEDED else 1


@dataclass(frozen=True)
class Report:
    """What `run` and `campaigns show` print: the campaign, its aggregates and its summary."""

    campaign: Campaign
    aggregates: dict[str, Aggregate]
    summary: Summary

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"campaign": self.campaign.to_dict(),
                "aggregates": {name: value.to_dict() for name, value in self.aggregates.items()},
                "summary": self.summary.to_dict()}


def format_report(report: Report) -> str:
    """Status line, aggregates table and summary as plain text."""
    campaign, summary = report.campaign, report.summary
    lines = [f"status: {campaign.status}" + (f" ({campaign.error})" if campaign.error else ""),
             f"questions: {campaign.finished}/{campaign.total} finished, {campaign.failed} failed"]
    lines += aggregates_table(report.aggregates)
    latency = summary.mean_latency_s
    lines += ["", f"mean latency: {'-' if latency is None else f'{latency:.3f} s'}",
              f"tokens: {summary.tokens.prompt} prompt + {summary.tokens.completion} completion",
              f"cache hits: {campaign.cache_hits}"]
    return "\n".join(lines)


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


def _aggregate_line(name: str, value: Aggregate, width: int) -> str:
    mean = "-" if value.mean is None else f"{value.mean:.4f}"
    return f"  {name:<{width}}  {mean:>8}  {value.count:>5}"
