"""`python -m evalcore store copy`: move a store from SQLite to PostgreSQL (or back), verified table by table."""

from __future__ import annotations

import argparse

from evalcore.cli import SUMMARIES
from evalcore.cli._common import Commands
from evalcore.errors import EvalError
from evalcore.store import db_location, open_store, redact
from evalcore.store.copy import copy_store


def register(commands: Commands) -> None:
    """Add `store copy`."""
    parser = commands.add_parser("store", help=SUMMARIES["store"])
    actions = parser.add_subparsers(dest="store_command", required=True, metavar="ACTION")
    copy = actions.add_parser("copy", help="copy every table into an empty store; check row counts and checksums")
    copy.add_argument("--from", dest="source", required=True, metavar="PATH|URL",
                      help="the store to copy: a SQLite file (sqlite:PATH or PATH) or a postgresql:// URL")
    copy.add_argument("--to", dest="destination", required=True, metavar="PATH|URL",
                      help="an empty store: a new SQLite file, or an empty PostgreSQL database")
    copy.set_defaults(handler=_copy)


def _copy(args: argparse.Namespace) -> int:
    if db_location(args.source) == db_location(args.destination):
        raise EvalError("the source and the destination are the same store", where="--to",
                        found=redact(args.destination))
    with open_store(args.source, create=False) as source, open_store(args.destination) as destination:
        tables = copy_store(source, destination)
    print(f"{'table':<20} {'rows':>9} {'copied':>9}  checksum (SHA-256 of the rows)")
    for table in tables:
        mark = "same" if table.same else f"DIFFERS: copied {table.copied_checksum[:16]}"
        print(f"{table.table:<20} {table.rows:>9} {table.copied_rows:>9}  {table.checksum[:16]} {mark}")
    if not all(table.same for table in tables):
        raise EvalError("the copy differs from the source", where=redact(args.destination),
                        fix="look at the tables marked DIFFERS; copy again into an empty store")
    print(f"copied {sum(t.rows for t in tables)} rows from {redact(args.source)} to {redact(args.destination)}")
    return 0
