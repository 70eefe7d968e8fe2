"""`python -m evalcore serve`: the REST API on uvicorn."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    """Add `serve`."""
    parser = commands.add_parser("serve", help="serve the REST API (OpenAPI at /docs and /openapi.json)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--db", help="database file (default .evalcore/evalcore.db or $EVALCORE_DB)")
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    # Imported here so other commands do not pay for loading the web stack.
    import uvicorn

    from evalcore.api import create_app

    uvicorn.run(create_app(args.db), host=args.host, port=args.port, log_level="info")
    return 0
