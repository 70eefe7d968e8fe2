"""`python -m evalcore campaigns ...`: list, show, resume, retry-failed, cancel, delete, export."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from evalcore.campaigns import (
    ConversationSummary,
    QuestionResult,
    campaign_conversations,
    campaign_results,
    campaign_summary,
    get_campaign,
)
from evalcore.campaigns.export import FORMATS, export_campaign
from evalcore.campaigns.listing import HEADLINE, SORT_KEYS, CampaignRow, campaign_rows, search_rows, sort_rows
from evalcore.campaigns.recompute import recompute_abstention
from evalcore.cli import SUMMARIES
from evalcore.cli._common import (
    Commands,
    add_campaign_argument,
    add_db_option,
    add_execution_options,
    amount,
    manager_of,
    run_on,
    store_of,
    write_file,
)
from evalcore.cli.run import Report, follow, format_report
from evalcore.judges import FIELD_NAMES
from evalcore.language.text import counted


def register(commands: Commands) -> None:
    """Add the `campaigns` subcommand and its actions."""
    parser = commands.add_parser("campaigns", help=SUMMARIES["campaigns"])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every campaign: name, dataset or suite, status, date, key settings, "
                                 "headline measures (newest first)")
    listing.add_argument("--search", metavar="TEXT", help="only campaigns whose name, id, dataset or suite, status or "
                         "settings hold every word of TEXT (case ignored)")
    listing.add_argument("--sort", choices=SORT_KEYS, default="created", metavar="COLUMN",
                         help=f"sort by one of: {', '.join(SORT_KEYS)} (default: created, newest first; measures best "
                              "first; text A-Z)")
    listing.add_argument("--reverse", action="store_true", help="the other way round")
    listing.add_argument("--tenant", help="only this workspace")
    listing.add_argument("--json", action="store_true")
    add_db_option(listing)
    listing.set_defaults(handler=list_command)
    for name, handler, text in (
        ("show", show_command, "one campaign: status, configuration, aggregates, failed questions"),
        ("resume", resume_command, "run the questions without a result (foreground)"),
        ("retry-failed", retry_command, "run again the questions that failed (foreground)"),
        ("cancel", cancel_command, "stop dispatching questions of a running campaign"),
        ("delete", delete_command, "delete a campaign and its results"),
        ("conversations", conversations_command, "its conversations: turns, share passed, first failing turn"),
    ):
        action = actions.add_parser(name, help=text)
        add_campaign_argument(action)
        add_db_option(action)
        if name in ("show", "resume", "retry-failed", "conversations"):
            action.add_argument("--json", action="store_true")
        if name in ("resume", "retry-failed"):
            action.add_argument("--concurrency", type=int, metavar="N")
            action.add_argument("--dataset", metavar="ID_OR_DIR",
                                help="where the campaign's dataset is now, if its folder moved (same content)")
            action.add_argument("--force", action="store_true",
                                help="take over a campaign another live process still owns (e.g. paused with "
                                     "Ctrl-Z): it stops at its next write and its questions in flight are asked again")
            add_execution_options(action)
        if name == "conversations":
            action.add_argument("--judge", action="store_true",
                                help="first ask the judges that read each whole conversation (does an answer "
                                     "contradict an earlier one; did it reach what the user asked) with the "
                                     "campaign's judge model, and keep their verdicts")
        if name == "resume":
            action.add_argument("--max-cost", type=amount, metavar="AMOUNT",
                                help="a new budget (max_cost) in the prices' currency: a campaign stopped at its "
                                     "budget goes on with a larger one")
        action.set_defaults(handler=handler)
    rename = actions.add_parser("rename", help="give a campaign another name")
    add_campaign_argument(rename)
    rename.add_argument("name", metavar="NAME")
    add_db_option(rename)
    rename.set_defaults(handler=rename_command)
    recompute = actions.add_parser("recompute-abstention",
                                   help="recompute an ended campaign's abstention measures under the current rule "
                                   "(only a marker makes a question unanswerable; no expected answer is no reference)")
    add_campaign_argument(recompute)
    add_db_option(recompute)
    recompute.set_defaults(handler=recompute_command)
    export = actions.add_parser("export", help="results as csv, jsonl or a TREC run file")
    add_campaign_argument(export)
    export.add_argument("--format", choices=sorted(FORMATS), required=True)
    export.add_argument("--out", type=Path, metavar="FILE", help="write here instead of standard output")
    export.add_argument("--names", choices=FIELD_NAMES, default="project",
                        help="the judges' flat fields: project (score, completeness, groundedness_pro) or evaluator "
                        "(the evaluators' documented names: gpt_retrieval, response_completeness, "
                        "groundedness_pro_label)")
    add_db_option(export)
    export.set_defaults(handler=export_command)


def list_command(args: argparse.Namespace) -> int:
    """Print the campaigns as a table (or JSON), searched and sorted."""
    rows = sort_rows(search_rows(campaign_rows(store_of(args), args.tenant), args.search), args.sort, args.reverse)
    if args.json:
        print(json.dumps([{**row.campaign.to_dict(), **row.to_dict()} for row in rows], indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no campaign matches" if args.search else "no campaigns")
        return 0
    measures = [name for name in HEADLINE if any(name in row.headline for row in rows)]  # no empty column
    header = ("name", "dataset/suite", "status", "created", "progress", "retriever", "reranker", "generator", "top-k",
              *measures, "cost", "id")
    print("\n".join(_table([header, *(_list_cells(row, measures) for row in rows)])))
    return 0


def _list_cells(row: CampaignRow, measures: list[str]) -> tuple[str, ...]:
    c, s = row.campaign, row.settings
    means = tuple("-" if row.headline.get(name) is None else f"{row.headline[name]:.3f}" for name in measures)
    return (c.name, f"{c.kind} {row.source_name}", c.status_text,
            time.strftime("%Y-%m-%d %H:%M", time.localtime(c.created_at)),
            f"{c.finished}/{c.total}", s.retriever, s.reranker, s.generator, "-" if s.top_k is None else str(s.top_k),
            *means, row.cost.text(), c.id)


def _table(lines: list[tuple[str, ...]]) -> list[str]:
    """Columns padded to their widest cell (names and sources, the first two, cut at 40 characters; ids never)."""
    lines = [tuple(cell[:39] + "…" if column < 2 and len(cell) > 40 else cell for column, cell in enumerate(line))
             for line in lines]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in lines]


def conversations_command(args: argparse.Namespace) -> int:
    """Print a campaign's conversations: a line each (share passed, first failing turn), then its turns."""
    store = store_of(args)
    if args.judge:
        from evalcore.campaigns.talk_judges import judge_conversations

        judge_conversations(store, args.id)
    results = campaign_conversations(store, args.id)
    summary = ConversationSummary.of(results)
    if args.json:
        print(json.dumps({**summary.to_dict(), "results": [r.to_dict() for r in results]}, indent=2,
                         ensure_ascii=False))
        return 0
    if not results:
        print("no conversation: every question of this campaign was asked alone")
        return 0
    mean = "-" if summary.mean_share_passed is None else f"{summary.mean_share_passed:.0%}"
    print(f"{counted(summary.conversations, 'conversation')}, {summary.all_passed} with every judged turn passed, "
          f"mean share of turns passed {mean}")
    for result in results:
        share = "-" if result.share_passed is None else f"{result.share_passed:.0%}"
        first = f"first failing turn {result.first_failing_turn} ({result.first_failure})" \
            if result.first_failing_turn else "no turn failed"
        print(f"conversation {result.conversation}: {result.passed}/{result.judged} turns passed ({share}), {first}")
        for judge, verdict in result.judges.items():
            print(f"  {judge}: {verdict.result} ({verdict.reason})")
        for turn in result.turns:
            print(f"  turn {turn.turn} [{turn.error and 'error' or turn.stage or '-'}] {turn.question}")
    return 0


def show_command(args: argparse.Namespace) -> int:
    """Print one campaign with its aggregates and the errors of its failed questions."""
    store = store_of(args)
    report = Report.of(store, get_campaign(store, args.id))
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return 0
    campaign = report.campaign
    [row] = campaign_rows(store, campaigns=[campaign], means={})  # the dataset or the suite by name
    print(f"campaign {campaign.id} {campaign.name!r} ({campaign.kind} {row.source_name}, tenant {campaign.tenant})")
    changed = _changed(campaign.config)
    print("configuration (changed from defaults): "
          f"{json.dumps(changed, ensure_ascii=False) if changed else 'defaults'}")
    print(format_report(report))
    results = campaign_results(store, args.id)
    failures = [r for r in results if r.outcome.error]
    for result in failures[:10]:
        print(f"  question {result.question.qid}: {result.outcome.error}")
    if len(failures) > 10:
        print(f"  ... and {len(failures) - 10} more (export to see them all)")
    _print_failed_checks(results)
    return 0


def _print_failed_checks(results: list[QuestionResult]) -> None:
    """The exact checks each question's answer failed (the first ten questions with one)."""
    failed = [(r.question.qid, [check for check, passed in r.outcome.check_results.items() if not passed])
              for r in results]
    failed = [(qid, checks) for qid, checks in failed if checks]
    if failed:
        print(f"exact checks failed on {counted(len(failed), 'question')}:")
    for qid, checks in failed[:10]:
        print(f"  question {qid}: {'; '.join(checks)}")
    if len(failed) > 10:
        print(f"  ... and {len(failed) - 10} more (export to see them all)")


def _changed(config: dict[str, Any]) -> dict[str, Any]:
    from evalcore.targets import TargetConfig

    return TargetConfig.from_dict(config).changed()


def resume_command(args: argparse.Namespace) -> int:
    """Resume in the foreground."""
    manager = manager_of(args)
    campaign_id = manager.resume(args.id, concurrency=args.concurrency, dataset=args.dataset, force=args.force,
                                 run_on=run_on(args), max_cost=args.max_cost)
    return follow(manager, campaign_id, as_json=args.json)


def retry_command(args: argparse.Namespace) -> int:
    """Retry the failed questions in the foreground."""
    manager = manager_of(args)
    campaign_id = manager.retry_failed(args.id, concurrency=args.concurrency, dataset=args.dataset, force=args.force,
                                       run_on=run_on(args))
    return follow(manager, campaign_id, as_json=args.json)


def rename_command(args: argparse.Namespace) -> int:
    """Rename a campaign."""
    campaign = manager_of(args).rename(args.id, args.name)
    print(f"renamed {campaign.id} to {campaign.name!r}")
    return 0


def recompute_command(args: argparse.Namespace) -> int:
    """Recompute a campaign's answerability and abstention measures, on request."""
    changed = recompute_abstention(store_of(args), args.id)
    print(f"recomputed {args.id}: {counted(changed, 'question')} changed answerability")
    return 0


def cancel_command(args: argparse.Namespace) -> int:
    """Ask the process running the campaign to stop dispatching."""
    manager_of(args).cancel(args.id)
    print(f"cancel requested for {args.id}")
    return 0


def delete_command(args: argparse.Namespace) -> int:
    """Delete a campaign and its results."""
    manager_of(args).delete(args.id)
    print(f"deleted {args.id}")
    return 0


def export_command(args: argparse.Namespace) -> int:
    """Write the results in the chosen format; the judges' unreadable verdicts counted on standard error (each row says
    `unknown` in its `<judge>_result`)."""
    store = store_of(args)
    text = export_campaign(store, args.id, args.format, names=args.names)
    if args.out is None:
        sys.stdout.write(text)
    else:
        write_file(args.out, text, "the export")
        print(f"wrote {args.out}", file=sys.stderr)
    for line in campaign_summary(store, args.id).unknown_lines():
        print(line, file=sys.stderr)
    return 0
