"""`python -m evalcore corpus import FOLDER --out DATASET`: a folder of documents as a dataset's corpus."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Self

from evalcore.cli import SUMMARIES, program
from evalcore.cli._common import positive_int


def register(commands: Any) -> None:
    """Add the `corpus` command group."""
    parser = commands.add_parser("corpus", help=SUMMARIES["corpus"])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    ingest = actions.add_parser(
        "import", help="read Markdown, text, HTML, PDF and Word (.docx) files into a dataset with no questions yet",
        description="Read every document under FOLDER (subfolders included; hidden files left out) into a new "
                    "dataset whose corpus.parquet holds their passages: id, text, title, file_name, page (PDF), "
                    "position. Prints what was read and each file skipped, and why. Exit 2 when nothing is "
                    "readable (nothing is written).")
    ingest.add_argument("folder", help="the folder of documents")
    ingest.add_argument("--out", required=True, metavar="DATASET",
                        help="the dataset to write: a folder name under dataset/, or a folder path (must not exist)")
    ingest.add_argument("--chunk-size", type=positive_int, metavar="WORDS",
                        help="words per passage (jieba words for Chinese; default: the chunk_size key, 200)")
    ingest.add_argument("--chunk-overlap", type=int, metavar="WORDS",
                        help="words shared by consecutive passages (default: the chunk_overlap key, 40)")
    ingest.add_argument("--config", type=Path, metavar="TOML",
                        help="take chunk_size and chunk_overlap from this target configuration")
    ingest.add_argument("--encoding", help="the encoding of text, Markdown and HTML files that are not UTF-8 "
                                           "(default: detected, file by file)")
    ingest.add_argument("--replace", action="store_true", help="replace the dataset if it exists")
    ingest.add_argument("--json", action="store_true", help="print the report as JSON")
    ingest.set_defaults(handler=_import)


def _import(args: argparse.Namespace) -> int:
    from evalcore.datasets import resolve_dataset
    from evalcore.documents import Chunking, import_corpus
    from evalcore.targets.target_config import TargetConfig

    config = TargetConfig.from_toml(args.config) if args.config else None
    chunking = Chunking.of(args.chunk_size, args.chunk_overlap, config)
    out = resolve_dataset(args.out)
    with _Bar() as bar:
        report = import_corpus(Path(args.folder).expanduser(), out, chunking=chunking, encoding=args.encoding,
                               replace=args.replace, progress=bar.show)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        print("\n".join(report.lines()))
        print(f"next: {program()} dataset stats {out}")
    return 0


class _Bar:
    """A progress bar of the files read on standard error when it is a terminal; elsewhere none."""

    def __init__(self) -> None:
        self._bar: Any = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()

    def show(self, done: int, total: int, name: str) -> None:
        """Move the bar to `done` of `total` files, naming the one being read."""
        if self._bar is None:
            if not getattr(sys.stderr, "isatty", lambda: False)():
                return
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="files", file=sys.stderr, disable=None)
        self._bar.update(done - self._bar.n)
        self._bar.set_postfix_str(name[-60:], refresh=True)
