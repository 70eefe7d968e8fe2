"""`python -m evalcore labels set|import|export|agreement`: people's labels of questions, and how far judges agree."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path

from evalcore.campaigns.question_labels import campaign_agreement, import_labels_csv, labels_csv, set_label
from evalcore.cli import SUMMARIES
from evalcore.cli._common import Commands, add_campaign_argument, add_db_option, store_of
from evalcore.errors import EvalError
from evalcore.language.text import counted
from evalcore.metrics.agreement import Agreement


def register(commands: Commands) -> None:
    """Add `labels` and its subcommands."""
    parser = commands.add_parser("labels", help=SUMMARIES["labels"])
    actions = parser.add_subparsers(dest="labels_command", required=True, metavar="ACTION")
    put = actions.add_parser("set", help="label one question for one judge (replaces a previous label)")
    add_campaign_argument(put, "campaign_id")
    put.add_argument("qid", type=int, metavar="QID")
    put.add_argument("judge", metavar="JUDGE")
    put.add_argument("label", metavar="LABEL", help="on the judge's scale (1-5, a rubric's label) or pass / fail")
    put.add_argument("--note", default="", help="why, in a few words")
    put.set_defaults(handler=_set)
    load = actions.add_parser("import", help="labels from a CSV file (qid, judge, label; note, author optional)")
    add_campaign_argument(load, "campaign_id")
    load.add_argument("file", type=Path, metavar="FILE")
    load.set_defaults(handler=_import)
    dump = actions.add_parser("export", help="the campaign's labels as CSV")
    add_campaign_argument(dump, "campaign_id")
    dump.add_argument("--out", type=Path, help="write to this file (default: standard output)")
    dump.set_defaults(handler=_export)
    agree = actions.add_parser("agreement", help="each labelled judge against the labels: n, accuracy, kappa")
    add_campaign_argument(agree, "campaign_id")
    agree.add_argument("--json", action="store_true", help="print the result as JSON")
    agree.set_defaults(handler=_agreement)
    for sub in (put, load, dump, agree):
        add_db_option(sub)
    for sub in (put, load):
        sub.add_argument("--author", default=getpass.getuser(), help="who labels (default: the user name)")


def _set(args: argparse.Namespace) -> int:
    label = set_label(store_of(args), args.campaign_id, args.qid, args.judge, args.label, note=args.note,
                      author=args.author)
    print(f"question {label.qid}: {label.judge} labelled {label.label} by {label.author}")
    return 0


def _import(args: argparse.Namespace) -> int:
    try:
        text = args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise EvalError(f"cannot read the labels ({error})", where=str(args.file)) from None
    count = import_labels_csv(store_of(args), args.campaign_id, text, author=args.author, source=str(args.file))
    print(f"{counted(count, 'label')} imported into {args.campaign_id}")
    return 0


def _export(args: argparse.Namespace) -> int:
    text = labels_csv(store_of(args), args.campaign_id)
    if args.out:
        args.out.write_text(text, encoding="utf-8", newline="")
    else:
        sys.stdout.write(text)
    return 0


def _agreement(args: argparse.Namespace) -> int:
    results = campaign_agreement(store_of(args), args.campaign_id)
    if args.json:
        print(json.dumps({name: a.to_dict() for name, a in results.items()}, indent=2))
        return 0
    if not results:
        print("no label yet: label questions with `labels set` or `labels import`")
    for agreement in results.values():
        print("\n".join(agreement_lines(agreement)))
    return 0


def agreement_lines(agreement: Agreement) -> list[str]:
    """A judge's agreement as text: the figures, then the confusion matrix (rows: people, columns: judge)."""
    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    interval = agreement.interval
    lines = [f"judge {agreement.judge}: {counted(agreement.n, 'labelled question')}, "
             f"accuracy {number(agreement.accuracy)}, "
             f"kappa {number(agreement.kappa)}"
             + (f", weighted kappa {number(agreement.weighted_kappa)} (linear {number(agreement.linear_kappa)})"
                if agreement.weighted_kappa is not None else "")
             + (f", 95% interval {interval[0]:.3f} to {interval[1]:.3f}" if interval else "")]
    width = max(len(c) for c in agreement.categories) + 2
    lines.append("  people \\ judge " + "".join(f"{c:>{width}}" for c in agreement.categories))
    lines += [f"  {c:<15}" + "".join(f"{x:>{width}}" for x in row)
              for c, row in zip(agreement.categories, agreement.matrix, strict=True)]
    return lines
