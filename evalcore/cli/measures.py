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
    from evalcore.metrics.measure import PANELS, SCALES
    from evalcore.metrics.python_measures import FAMILY
    from evalcore.metrics.registry import MEASURES, check_python_measures

    check_python_measures()  # a registration that cannot be read is an error, not a shorter list
    panels, scales = dict(PANELS), dict(SCALES)
    rows = [{"measure": m.name, "panel": panels[m.family], "better": "higher" if m.higher_is_better else "lower",
             "values": "pass/fail (1/0)" if m.binary else scales[m.scale], "signature": m.signature, "doc": m.doc}
            for m in MEASURES.values() if not args.python or m.family == FAMILY]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print("no measure in Python: see the evalcore.measures entry points and EVALCORE_MEASURES")
    for row in rows:
        print(f"{row['measure']:32} {row['panel']:28} {row['better']:6} {row['values']:18} {row['signature']}")
    return 0
