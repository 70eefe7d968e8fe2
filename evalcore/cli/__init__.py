"""The command line: every module of this package registers its own subcommands."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence

from evalcore.errors import EvalError


def build_parser() -> argparse.ArgumentParser:
    """Collect the subcommands of every module in evalcore.cli (each has `register`)."""
    parser = argparse.ArgumentParser(prog="python -m evalcore", description="RAG evaluation workbench")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue  # shared helpers, not commands
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; user mistakes print one line per problem and exit 2, never a traceback."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except EvalError as error:
        for line in error.problems:
            print(f"error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): say nothing more, and keep Python's own flush at
        # exit from failing on the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
