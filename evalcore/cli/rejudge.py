"""`rejudge`: judge a finished campaign's answers again with other judges, without asking its target again."""

from __future__ import annotations

import argparse
import sys

from evalcore.campaigns import get_campaign
from evalcore.campaigns.rejudging import RejudgeRequest
from evalcore.cli import SUMMARIES, _common
from evalcore.cli._common import Commands, add_campaign_argument, add_db_option
from evalcore.cli.run import add_judge_options, follow, judge_overrides
from evalcore.judges import JUDGES, LOCAL_JUDGE_NOTE
from evalcore.targets import TargetConfig
from evalcore.targets.generators import judged_locally


def register(commands: Commands) -> None:
    """Add the `rejudge` subcommand."""
    parser = commands.add_parser(
        "rejudge", help=SUMMARIES["rejudge"],
        description="Judge the stored answers of a finished campaign again, with another judge model, prompt or "
                    "rubric: a new campaign that reads the answers where they are stored (its target is not "
                    "asked) and differs only in its judges. Compare the two to see what the judges change.")
    add_campaign_argument(parser, "campaign", help="the campaign to judge again: its id, its name, or the start of "
                          "either")
    parser.add_argument("--judge", action="extend", nargs="+", default=[], metavar="NAME",
                        help=f"the judges: {', '.join(JUDGES)}, or a rubric's name (default: the campaign's "
                             "judges, and the rubrics given)")
    add_judge_options(parser)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change one judge key, e.g. judge_kind=local; repeatable (other keys are the "
                             "campaign's and cannot change)")
    parser.add_argument("--judge-samples", type=_common.positive_int, metavar="N",
                        help="ask each judge N times (default: as the campaign did)")
    parser.add_argument("--concurrency", type=_common.positive_int, metavar="N",
                        help="questions judged at once (default: as the campaign ran)")
    parser.add_argument("--no-cache", action="store_true", help="do not reuse cached judge replies")
    parser.add_argument("--name", help="a name to recognise it by (default: the campaign's, with its judges)")
    parser.add_argument("--tenant", help="only a campaign of this workspace (default: any)")
    add_db_option(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=rejudge_command)


def rejudge_command(args: argparse.Namespace) -> int:
    """Launch the re-judge, follow it to the end and print it, like `run`."""
    manager = _common.manager_of(args)
    source = get_campaign(manager.store, args.campaign)  # its id (resolve_campaigns)
    settings = judge_overrides(args)
    request = RejudgeRequest(source.id, judges=tuple(args.judge), settings=settings, name=args.name,
                             tenant=args.tenant, concurrency=args.concurrency, judge_samples=args.judge_samples,
                             cache=not args.no_cache)
    out = sys.stderr if args.json else sys.stdout
    print(f"judging again the answers of {source.name!r} ({source.id}): its target is not asked", file=out,
          flush=True)
    if judged_locally(TargetConfig.from_dict({**source.config, **settings})):
        print(f"note: {LOCAL_JUDGE_NOTE}", file=sys.stderr, flush=True)
    return follow(manager, manager.rejudge(request), as_json=args.json)
