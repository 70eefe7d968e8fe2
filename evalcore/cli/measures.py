"""`python -m evalcore measures [--python] [--json]`: every measure the registry holds, the operator's in Python too."""

from __future__ import annotations

import argparse
import json
from typing import Any

from evalcore.cli import SUMMARIES


def register(commands: Any) -> None:
    """Add the `measures` command."""
    parser = commands.add_parser("measures", help=SUMMARIES["measures"])
    parser.add_argument("--python", action="store_true", help="only the operator's measures in Python")
    parser.add_argument("--json", action="store_true", help="print JSON: name, panel, direction, values, signature")
    parser.set_defaults(handler=_list)


def _list(args: argparse.Namespace) -> int:
    from evalcore.metrics.registry import listing

    rows = listing(python_only=args.python)  # a registration that cannot be read is an error, not a shorter list
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print("no measure in Python: see the evalcore.measures entry points and EVALCORE_MEASURES")
    for row in rows:
        better = "higher" if row["higher_is_better"] else "lower"
        print(f"{row['measure']!s:32} {row['panel']!s:28} {better:6} {row['values']!s:18} {row['signature']}")
    return 0
