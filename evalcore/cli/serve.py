"""`python -m evalcore serve`: the REST API on uvicorn."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from evalcore.cli import SUMMARIES
from evalcore.cli._common import Commands, add_db_option
from evalcore.cli.worker import add_cap_options, serve_queue
from evalcore.errors import EvalError


def register(commands: Commands) -> None:
    """Add `serve`."""
    parser = commands.add_parser("serve", help=SUMMARIES["serve"])
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    add_db_option(parser)
    add_cap_options(parser)
    parser.add_argument("--datasets", type=Path, metavar="DIR",
                        help="folder whose subfolders are the dataset_ids clients may name "
                             "(default: a checkout's dataset/, else ./dataset; 'default' is its samples/, else "
                             "the built-in sample)")
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    # Imported here so other commands do not pay for loading the web stack.
    import uvicorn

    from evalcore.api import create_app

    if args.datasets is not None and not args.datasets.is_dir():
        raise EvalError("no such folder", where="--datasets", found=str(args.datasets),
                        fix="give a folder whose subfolders each hold the five Parquet files")
    # The engine's own lines (a campaign's dataset statistics) go to the server's log beside uvicorn's.
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    app = create_app(args.db, dataset_root=args.datasets)
    serve_queue(args)  # launches are queued; this server's threads claim campaigns, as do the other servers'
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0
