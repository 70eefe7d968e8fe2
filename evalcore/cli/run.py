"""`python -m evalcore run`: a campaign in the foreground with a progress bar."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from evalcore.campaigns import (
    CampaignManager,
    campaign_aggregates,
    campaign_summary,
    get_campaign,
)
from evalcore.cli import _common
from evalcore.cli._common import Commands, add_db_option
from evalcore.store import ACTIVE

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
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Launch, follow to the end, report."""
    from evalcore.targets import TargetConfig

    manager = _common.manager_of(args)
    config = TargetConfig.from_toml(args.config) if args.config else None
    campaign_id = manager.launch(
        dataset=args.dataset, suite_id=args.suite, config=config, target_id=args.target, tenant=args.tenant,
        judges=tuple(args.judge), concurrency=args.concurrency, cache=not args.no_cache,
        time_limit=args.time_limit, limit=args.limit, judge_samples=args.judge_samples,
    )
    return follow(manager, campaign_id, as_json=args.json)


def follow(manager: CampaignManager, campaign_id: str, *, as_json: bool) -> int:
    """Show progress until the campaign ends (Ctrl-C cancels it), then print it; 0 when it succeeded."""
    from tqdm import tqdm

    print(f"campaign {campaign_id}", file=sys.stderr if as_json else sys.stdout, flush=True)
    campaign = get_campaign(manager.store, campaign_id)
    try:
        # A resumed campaign starts at what it already has, so the rate is this session's.
        with tqdm(total=campaign["total"], initial=campaign["finished"], unit="q", file=sys.stderr, disable=None) as bar:
            while campaign["status"] in ACTIVE:
                time.sleep(POLL_S)
                campaign = get_campaign(manager.store, campaign_id)
                bar.update(campaign["finished"] - bar.n)
                bar.set_description(campaign["progress"]["stage"] or "", refresh=False)
                bar.set_postfix(failed=campaign["failed"], refresh=False)
    except KeyboardInterrupt:
        manager.cancel(campaign_id)
        print(f"cancelling; resume with `python -m evalcore campaigns resume {campaign_id}`", file=sys.stderr)
        campaign = manager.wait(campaign_id)
    report = {
        "campaign": campaign,
        "aggregates": campaign_aggregates(manager.store, campaign_id),
        "summary": campaign_summary(manager.store, campaign_id),
    }
    print(json.dumps(report, indent=2, ensure_ascii=False) if as_json else format_report(report))
    return 0 if campaign["status"] == "succeeded" else 1


def format_report(report: dict[str, Any]) -> str:
    """Status line, aggregates table and summary as plain text."""
    campaign, summary = report["campaign"], report["summary"]
    lines = [f"status: {campaign['status']}" + (f" ({campaign['error']})" if campaign["error"] else ""),
             f"questions: {campaign['finished']}/{campaign['total']} finished, {campaign['failed']} failed"]
    lines += aggregates_table(report["aggregates"])
    latency = summary["mean_latency_s"]
    lines += ["", f"mean latency: {'-' if latency is None else f'{latency:.3f} s'}",
              f"tokens: {summary['tokens']['prompt']} prompt + {summary['tokens']['completion']} completion",
              f"cache hits: {campaign['cache_hits']}"]
    return "\n".join(lines)


GROUP_TITLES = {"retrieval": "Retrieval measures", "generation": "Generation measures",
                "suite": "Suite measures", "judge": "Judge scores", "other": "Other measures"}


def aggregates_table(aggregates: dict[str, dict[str, Any]]) -> list[str]:
    """Lines of the aggregates, grouped as seed 000's panel (retrieval, then generation, ...)."""
    from evalcore.metrics import MEASURES

    if not aggregates:
        return []
    order = {name: position for position, name in enumerate(MEASURES)}
    groups: dict[str, list[str]] = {group: [] for group in GROUP_TITLES}
    for name in sorted(aggregates, key=lambda n: (order.get(n, len(order)), n)):
        measure = MEASURES.get(name)
        groups[measure.group if measure and measure.group in groups else "other"].append(name)
    width = max(len(name) for name in aggregates)
    lines = []
    for group, names in groups.items():
        if names:
            lines += ["", GROUP_TITLES[group], f"  {'measure':<{width}}  {'mean':>8}  {'n':>5}"]
            lines += [_aggregate_line(name, aggregates[name], width) for name in names]
    return lines


def _aggregate_line(name: str, value: dict[str, Any], width: int) -> str:
    mean = "-" if value["mean"] is None else f"{value['mean']:.4f}"
    return f"  {name:<{width}}  {mean:>8}  {value['count']:>5}"
