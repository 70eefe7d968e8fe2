"""`python -m evalcore suites import|list|export|delete`: question suites."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from evalcore.campaigns.listing import suite_rows
from evalcore.cli import SUMMARIES, program
from evalcore.cli._common import Commands, add_db_option, store_of
from evalcore.errors import EvalError
from evalcore.language.text import counted
from evalcore.suites import (
    Case,
    DuplicateName,
    IfExists,
    create_suite,
    delete_suite,
    find_suite,
    parse_suite_csv,
    parse_suite_jsonl,
    suite_csv_bytes,
)
from evalcore.targets.saved_targets import ID_NAMES


def register(commands: Commands) -> None:
    """Add the `suites` command group."""
    parser = commands.add_parser("suites", help=SUMMARIES["suites"])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    imp = actions.add_parser("import", help="import a CSV (question;expected answer;sources, optional checks and "
                             "conversation columns) or a JSONL file (.jsonl) as a new suite")
    imp.add_argument("file", type=Path, help="CSV file, ';' or ',' separated, optional header line")
    imp.add_argument("--name", required=True, help="suite name")
    imp.add_argument("--target", "--agent", dest="target", required=True, metavar="ID",
                     help=ID_NAMES["agent_id"])
    imp.add_argument("--tenant", default="default", help="workspace (default: default)")
    imp.add_argument("--valid-only", action="store_true", help="import the valid lines even if others are rejected")
    existing = imp.add_mutually_exclusive_group()
    existing.add_argument("--replace", dest="if_exists", action="store_const", const=IfExists.REPLACE,
                          default=IfExists.REFUSE,
                          help="when a suite of that name exists: give it these cases and this target (its id and "
                               "campaigns stay)")
    existing.add_argument("--keep-both", dest="if_exists", action="store_const", const=IfExists.KEEP_BOTH,
                          help="when a suite of that name exists: import under the first free name, 'NAME (2)'")
    imp.set_defaults(handler=import_command)
    listing = actions.add_parser("list", help="list suites")
    listing.add_argument("--tenant", help="only this workspace")
    listing.set_defaults(handler=list_command)
    export = actions.add_parser("export", help="write a suite as CSV (imports back to the same suite)")
    export.add_argument("id", help="the suite, by its id or its name")
    export.add_argument("--out", type=Path, help="output file (default: standard output)")
    export.set_defaults(handler=export_command)
    delete = actions.add_parser("delete", help="delete a suite and its campaigns")
    delete.add_argument("id", help="suite id")
    delete.set_defaults(handler=delete_command)
    for action in (imp, listing, export, delete):
        add_db_option(action)


def read_cases(data: bytes, args: argparse.Namespace) -> tuple[list[Case], list[str] | None]:
    """The cases of a CSV file (its line-by-line report printed) with each one's line, or of a JSONL file (a .jsonl
    name)."""
    if args.file.suffix.lower() == ".jsonl":
        return list(parse_suite_jsonl(data, source=str(args.file))), None
    report = parse_suite_csv(data, source=str(args.file))
    for line in report.report_lines():
        print(line)
    if report.rejected and not args.valid_only:
        raise EvalError(f"{counted(len(report.rejected), 'line')} rejected: nothing imported", where=str(args.file),
                        fix="correct those lines, or pass --valid-only to import the valid ones")
    if not report.cases:
        raise EvalError("no valid case to import", where=str(args.file))
    return report.cases, report.places


def import_command(args: argparse.Namespace) -> int:
    """Print the line-by-line report; import nothing when a line is rejected, unless --valid-only."""
    try:
        data = args.file.read_bytes()
    except OSError as error:
        raise EvalError(f"cannot read the file ({error.strerror})", where=str(args.file)) from None
    cases, places = read_cases(data, args)
    try:
        suite = create_suite(store_of(args, create=True), tenant=args.tenant, name=args.name, target_id=args.target,
                             cases=cases, if_exists=args.if_exists, places=places)
    except DuplicateName as error:
        raise EvalError(f"a suite named {args.name!r} already exists ({error.existing_id}): nothing imported",
                        where="--name", fix="give another --name, or pass --replace (that suite gets these cases, "
                        "its campaigns stay) or --keep-both (imported as 'NAME (2)')") from None
    replaced = suite.created_at != suite.updated_at  # an existing suite took the cases
    print(f"imported {counted(len(suite.cases), 'case')} into suite {suite.id} ({suite.name})"
          + (", replacing its cases (its campaigns keep theirs)" if replaced else ""))
    return 0


def list_command(args: argparse.Namespace) -> int:
    """One line per suite: name, dataset, cases, target, updated, its last campaign, id."""
    rows = suite_rows(store_of(args), tenant=args.tenant)
    if not rows:
        print(f"no suite yet: import one with `{program()} suites import FILE.csv --name N --target ID`")
        return 0
    width = max(len(f"{r.suite.tenant}/{r.suite.name}") for r in rows)
    print(f"{'name':<{width}}  {'dataset':<12}  {'cases':>5}  {'target':<20}  {'updated':<16}  {'last campaign':<24}  "
          "id")
    for row in rows:
        s = row.suite
        updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.updated_at))
        last = row.last.campaign.status_text if row.last else "never run"
        print(f"{s.tenant + '/' + s.name:<{width}}  {row.dataset:<12}  {len(s.cases):>5}  {s.target_id:<20}  "
              f"{updated:<16}  {last:<24}  {s.id}")
    return 0


def export_command(args: argparse.Namespace) -> int:
    """Write the suite's CSV to --out or standard output: the same bytes as the dashboard's download."""
    data = suite_csv_bytes(find_suite(store_of(args), args.id).cases)
    if args.out is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    else:
        try:
            args.out.write_bytes(data)
        except OSError as error:
            raise EvalError(f"cannot write the file ({error.strerror})", where=str(args.out)) from None
        print(f"wrote {args.out}")
    return 0


def delete_command(args: argparse.Namespace) -> int:
    """Delete the suite (its campaigns go with it)."""
    delete_suite(store_of(args), args.id)
    print(f"deleted suite {args.id}")
    return 0
