"""`python -m evalcore traces import|list|show|settings|prune|run|timeline|compare`: production traces in, judged
without references, watched over time and compared across releases."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from evalcore.cli import SUMMARIES
from evalcore.cli._common import Commands, add_campaign_argument, add_db_option, manager_of, positive_int, store_of
from evalcore.errors import EvalError
from evalcore.language.text import counted

NONE_WORDS = ("none", "off", "")


def register(commands: Commands) -> None:
    """Add `traces` and its subcommands."""
    parser = commands.add_parser("traces", help=SUMMARIES["traces"])
    actions = parser.add_subparsers(dest="traces_command", required=True, metavar="ACTION")
    load = actions.add_parser("import", help="import trace files: OTLP JSON (.json, OpenInference attributes) or "
                                             "JSONL (.jsonl: time, question, answer, contexts, metadata)")
    load.add_argument("files", type=Path, nargs="+", metavar="FILE")
    load.set_defaults(handler=_import)
    listed = actions.add_parser("list", help="the stored traces, newest first")
    add_filters(listed)
    listed.add_argument("--limit", type=positive_int, default=20, metavar="N", help="show N (default 20)")
    listed.add_argument("--search", default="", metavar="WORDS", help="words of the question")
    listed.set_defaults(handler=_list)
    show = actions.add_parser("show", help="one trace: question, documents, answer, model, tokens, metadata")
    show.add_argument("number", type=int, metavar="NUMBER")
    show.set_defaults(handler=_show)
    settings = actions.add_parser("settings", help="a tenant's retention and redaction patterns (shown, or changed)")
    settings.add_argument("--retention-days", metavar="DAYS|none",
                          help="delete traces older than this many days ('none': keep them)")
    settings.add_argument("--redact", action="append", metavar="NAME=REGEX",
                          help="an operator pattern replaced by [NAME] before storage; repeatable; replaces the "
                               "tenant's patterns (give --redact '' to clear them)")
    settings.add_argument("--default-patterns", choices=("on", "off"),
                          help="redact e-mail addresses, phone numbers and card numbers (default on)")
    settings.set_defaults(handler=_settings)
    prune = actions.add_parser("prune", help="delete traces older than each tenant's retention now")
    prune.add_argument("--tenant", help="only this tenant (default: every tenant)")
    prune.set_defaults(handler=_prune)
    run = actions.add_parser("run", help="judge a stratified, seeded sample of traces without references "
                                         "(a campaign)")
    add_filters(run)
    run.add_argument("--per", type=positive_int, default=100, metavar="N", help="traces per stratum (default 100)")
    run.add_argument("--by", default="", metavar="day|week|KEY",
                     help="strata: per day, per week or per value of a metadata key (default: one stratum)")
    run.add_argument("--seed", type=int, default=0, help="the draw's seed (default 0)")
    run.add_argument("--judge", action="extend", nargs="+", default=[], metavar="NAME",
                     help="judges that need no reference: groundedness, groundedness_pro, relevance, retrieval, "
                          "claims, refusal or a rubric (default groundedness relevance)")
    run.add_argument("--concurrency", type=int, metavar="N", help="traces judged at once")
    run.add_argument("--name", help="a name to recognise the campaign by")
    run.add_argument("--config", type=Path, metavar="FILE.toml", help="a configuration with the judges' model")
    run.add_argument("--target", metavar="ID", help="a saved configuration with the judges' model")
    run.add_argument("--no-cache", action="store_true", help="do not reuse cached judge replies")
    from evalcore.cli.run import add_judge_options

    add_judge_options(run)
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override one configuration key, e.g. judge_max_tokens=400; repeatable")
    run.set_defaults(handler=_run)
    over_time = actions.add_parser("timeline", help="volume and each measure per day or week with intervals, and "
                                                    "the worst traces")
    add_campaign_argument(over_time, "campaigns", nargs="+", help="traces campaigns (ids or names)")
    over_time.add_argument("--period", choices=("day", "week"), default="day")
    over_time.add_argument("--worst", metavar="MEASURE", help="list the 10 worst traces by this measure")
    add_filters(over_time)
    over_time.set_defaults(handler=_timeline)
    compare = actions.add_parser("compare", help="two groups of judged traces (two releases, two windows), "
                                                 "unpaired: intervals, test, power, MDE, traces needed")
    add_campaign_argument(compare, "campaigns", nargs="+", help="traces campaigns (ids or names)")
    compare.add_argument("--a", required=True, metavar="KEY=VALUE|FROM..TO", help="group A, e.g. release=v1")
    compare.add_argument("--b", required=True, metavar="KEY=VALUE|FROM..TO", help="group B, e.g. release=v2")
    compare.add_argument("--effect-mean", type=float, default=0.25, metavar="D",
                         help="the change in a mean score to size the groups for (default 0.25)")
    compare.add_argument("--effect-rate", type=float, default=0.05, metavar="D",
                         help="the change in a pass rate to size the groups for (default 0.05)")
    compare.set_defaults(handler=_compare)
    for sub in (load, listed, show, settings, prune, run, over_time, compare):
        add_db_option(sub)
        sub.add_argument("--json", action="store_true", help="print the result as JSON")
        if sub is not prune:
            sub.add_argument("--tenant", default="default", help="the workspace (default: default)")


def add_filters(parser: argparse.ArgumentParser) -> None:
    """--since, --until and --where: which traces."""
    parser.add_argument("--since", metavar="DATE", help="traces started at or after (ISO date or time, UTC)")
    parser.add_argument("--until", metavar="DATE", help="traces started before (ISO date or time, UTC)")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                        help="a metadata value, e.g. release=v2; repeatable (all of them)")


def _selection(args: argparse.Namespace) -> Any:
    from evalcore.compare.production import moment
    from evalcore.telemetry import TraceFilter
    from evalcore.telemetry.stored import parse_filters

    return TraceFilter(moment(args.since or "", "since"), moment(args.until or "", "until"),
                       parse_filters(args.where), getattr(args, "search", ""))


def _print(args: argparse.Namespace, data: Any, lines: list[str]) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else "\n".join(lines))


def _import(args: argparse.Namespace) -> int:
    from evalcore.telemetry import import_file

    store = store_of(args, create=True)
    reports = [import_file(store, path, tenant=args.tenant) for path in args.files]
    _print(args, [r.to_dict() for r in reports], [line for r in reports for line in r.lines()])
    return 0 if all(r.stored or r.duplicates or r.waiting for r in reports) else 1


def _list(args: argparse.Namespace) -> int:
    from evalcore.compare.production import stamp
    from evalcore.telemetry import list_traces

    found = list_traces(store_of(args), _selection(args), tenant=args.tenant)
    shown = found[:args.limit]
    lines = [counted(len(found), "trace") + (f", the {len(shown)} newest:" if len(shown) < len(found) else ":")]
    for trace in shown:
        labels = " ".join(f"{k}={v}" for k, v in trace.metadata.items() if not k.startswith("service.instance"))
        lines.append(f"  {trace.number:>6}  {stamp(trace.started_at)}  {trace.question[:60]!r}  "
                     f"{counted(len(trace.documents), 'doc')}  {labels}")
    _print(args, {"total": len(found), "traces": [t.to_dict() for t in shown]}, lines)
    return 0


def _show(args: argparse.Namespace) -> int:
    from evalcore.compare.production import stamp
    from evalcore.telemetry import get_trace

    trace = get_trace(store_of(args), args.number, tenant=args.tenant)
    lines = [f"trace {trace.number} ({trace.trace_id}) at {stamp(trace.started_at)} from {trace.source}",
             f"question: {trace.question}", f"answer: {trace.answer}",
             f"model: {trace.model or '?'} · tokens {trace.prompt_tokens} + {trace.completion_tokens}"
             + (f" · {trace.latency_s:.2f} s" if trace.latency_s is not None else "")]
    lines += [f"  [{i}] {d.id or '-'} ({'-' if d.score is None else f'{d.score:.3f}'}): {d.text[:100]}"
              for i, d in enumerate(trace.documents, 1)]
    lines += [f"  {key} = {value}" for key, value in trace.metadata.items()]
    _print(args, trace.to_dict(), lines)
    return 0


def _settings(args: argparse.Namespace) -> int:
    from evalcore.telemetry import set_trace_settings, trace_settings
    from evalcore.telemetry.redaction import parse_pattern
    from evalcore.telemetry.stored import UNCHANGED

    store = store_of(args, create=True)
    retention: Any = UNCHANGED
    if args.retention_days is not None:
        text = args.retention_days.strip().lower()
        try:
            retention = None if text in NONE_WORDS else float(text)
        except ValueError:
            raise EvalError("expected a number of days or 'none'", where="--retention-days", found=text) from None
    patterns = None if args.redact is None else [parse_pattern(spec) for spec in args.redact if spec]
    defaults = None if args.default_patterns is None else args.default_patterns == "on"
    changed = args.retention_days is not None or patterns is not None or defaults is not None
    settings = (set_trace_settings(store, args.tenant, retention_days=retention, default_patterns=defaults,
                                   patterns=patterns) if changed else trace_settings(store, args.tenant))
    days = settings.retention_days
    keep = "kept" if days is None else f"kept {days:g} " + ("day" if days == 1 else "days")
    redacted = "redacted" if settings.default_patterns else "NOT redacted"
    lines = [f"tenant {settings.tenant}: traces {keep}; e-mail, phone and card numbers {redacted}"]
    lines += [f"  pattern {name}: {text}" for name, text in settings.patterns]
    _print(args, settings.to_dict(), lines)
    return 0


def _prune(args: argparse.Namespace) -> int:
    from evalcore.telemetry import apply_retention

    deleted = apply_retention(store_of(args), tenant=args.tenant)
    _print(args, deleted, [f"tenant {tenant}: {counted(count, 'trace')} deleted" for tenant, count in deleted.items()]
           or ["no tenant has a retention set"])
    return 0


def _run(args: argparse.Namespace) -> int:
    from evalcore.campaigns.launching import LaunchRequest
    from evalcore.cli.run import follow, judge_overrides
    from evalcore.compare.production import moment
    from evalcore.targets import TargetConfig
    from evalcore.targets.saved_targets import get_target
    from evalcore.telemetry import TraceSample
    from evalcore.telemetry.stored import parse_filters

    manager = manager_of(args)
    if args.config:
        config = TargetConfig.from_toml(args.config)
    elif args.target:
        config = get_target(manager.store, args.target, args.tenant)
    else:
        config = TargetConfig()
    overrides = judge_overrides(args)
    if overrides:
        config = TargetConfig.from_dict({**config.to_dict(), **overrides})
    sample = TraceSample(args.per, args.by, args.seed, moment(args.since or "", "since"),
                         moment(args.until or "", "until"), parse_filters(args.where))
    campaign_id = manager.launch(LaunchRequest(traces=sample, config=config, tenant=args.tenant,
                                               judges=tuple(args.judge), concurrency=args.concurrency,
                                               cache=not args.no_cache, name=args.name))
    return follow(manager, campaign_id, as_json=args.json)


def _campaign_ids(args: argparse.Namespace) -> list[str]:
    from evalcore.campaigns import find_campaign

    store = store_of(args)
    return [find_campaign(store, ref, args.tenant).id for ref in args.campaigns]


def _timeline(args: argparse.Namespace) -> int:
    from evalcore.compare.production import judged_traces, stamp, timeline, worst_traces
    from evalcore.telemetry import list_traces

    store = store_of(args)
    selection = _selection(args)
    rows = [row for row in judged_traces(store, _campaign_ids(args)) if selection.keeps(row.trace)
            and (selection.since is None or row.trace.started_at >= selection.since)
            and (selection.until is None or row.trace.started_at < selection.until)]
    figures = timeline(rows, list_traces(store, selection, tenant=args.tenant), args.period)
    lines = [f"{'period':<11} {'measure':<24} {'volume':>6} {'n':>5} {'mean [95% CI]':>22} {'pass rate [95% CI]':>24}"]
    for f in figures:
        mean = "-" if f.mean is None else f"{f.mean:.2f}" + ("" if f.low is None else f" [{f.low:.2f}, {f.high:.2f}]")
        rate = "-" if f.pass_rate is None else f"{f.pass_rate:.0%} [{f.pass_low:.0%}, {f.pass_high:.0%}]"
        lines.append(f"{f.period:<11} {f.measure:<24} {f.volume:>6} {f.n:>5} {mean:>22} {rate:>24}")
    worst = worst_traces(rows, args.worst, 10) if args.worst else []
    if worst:
        lines += ["", f"worst by {args.worst}:"] + [
            f"  {row.trace.number:>6} {stamp(row.trace.started_at)} {row.measures[args.worst]:.2f} "
            f"{row.trace.question[:70]!r}" for row in worst]
    _print(args, {"periods": [f.to_dict() for f in figures], "worst": [r.trace.to_dict() for r in worst]}, lines)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from evalcore.compare.production import compare_groups, judged_traces, parse_group

    rows = judged_traces(store_of(args), _campaign_ids(args))
    found = compare_groups(rows, parse_group(args.a), parse_group(args.b), effect_mean=args.effect_mean,
                           effect_rate=args.effect_rate)
    lines = [f"A = {found.a}, B = {found.b} (unpaired: different questions)"]
    for d in found.deltas:
        if d.difference is None:
            lines.append(f"  {d.measure:<30} n {d.n_a}/{d.n_b}: {d.note}")
            continue
        interval = "" if d.low is None else f" [{d.low:+.3f}, {d.high:+.3f}]"
        test = "" if d.p_value is None else f" {d.test} p={d.p_value:.3g}{' *' if d.significant else ''}"
        power = "" if d.mde is None else f"; MDE {d.mde:.3f}, power {d.power:.0%}"
        needed = "" if d.needed_per_group is None else f"; {d.needed_per_group} per group to see {d.effect:g}"
        lines.append(f"  {d.measure:<30} n {d.n_a}/{d.n_b}: {d.a:.3f} -> {d.b:.3f}, B-A {d.difference:+.3f}"
                     f"{interval}{test}{power}{needed}" + (f" ({d.note})" if d.note else ""))
    _print(args, found.to_dict(), lines)
    return 0
