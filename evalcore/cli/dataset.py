"""`python -m evalcore dataset check|stats DIR`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from evalcore.cli import SUMMARIES
from evalcore.datasets import dataset_stats, load_dataset


def register(commands: Any) -> None:
    """Add the `dataset` command group."""
    parser = commands.add_parser("dataset", help=SUMMARIES["dataset"])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="validate the five Parquet files; exit 2 with one line per problem")
    check.add_argument("dir", help="'default', a folder name under dataset/, or a folder path")
    check.set_defaults(handler=_check)
    stats = actions.add_parser("stats", help="print the dataset statistics")
    stats.add_argument("dir", help="'default', a folder name under dataset/, or a folder path")
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.set_defaults(handler=_stats)


def _check(args: argparse.Namespace) -> int:
    ds = load_dataset(args.dir)
    labeled = sum(1 for q in ds.questions if q.relevant)
    answers = sum(len(q.references) for q in ds.questions)
    print(f"ok {ds.path}: {_count(len(ds.questions), 'question')} ({labeled} labeled), "
          f"{_count(len(ds.passages), 'passage')}, {_count(answers, 'answer')}")
    return 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _stats(args: argparse.Namespace) -> int:
    stats = dataset_stats(load_dataset(args.dir)).to_dict()
    if args.json:
        print(json.dumps(stats, ensure_ascii=False, indent=2))
        return 0
    for key, value in stats.items():
        if key == "relevant_per_labeled_query":
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
        print(f"{key:32} {_fmt(value)}")
    return 0


def _fmt(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
