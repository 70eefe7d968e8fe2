"""What `run` and `compare` share to fail a build: the report options, the reports, the exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.cli._common import write_file
from evalcore.errors import EvalError
from evalcore.gates.exits import Exit

if TYPE_CHECKING:
    from evalcore.gates import Check

EXIT_CODES = ", ".join(f"{code.value} {code.label}" for code in Exit)


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """--junit FILE; the step summary needs no option (GITHUB_STEP_SUMMARY names its file)."""
    parser.add_argument("--junit", type=Path, metavar="FILE.xml",
                        help="write the checks as a JUnit XML report (one test case per gate and per failed "
                             "question); a Markdown summary is appended to $GITHUB_STEP_SUMMARY when it is set")


def report(args: argparse.Namespace, title: str, verdict: str, checks: Sequence[Check], code: Exit) -> int:
    """Print one line per failed check, write the reports, return the exit code."""
    out = sys.stderr if getattr(args, "json", False) else sys.stdout
    for check in checks:
        if not check.passed and check.kind != "question":
            print(check.failure(), file=out)
    gated = [c for c in checks if c.kind != "question"]
    if gated:
        print(f"checks: {sum(c.passed for c in gated)} of {len(gated)} passed; exit code {code.value} "
              f"({code.label})", file=out)
    from evalcore.gates import junit_xml, step_summary  # the reports (an XML library): only for a gated command

    if args.junit:
        write_file(args.junit, junit_xml(title, checks), "the JUnit report")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        append(Path(summary), step_summary(title, verdict, checks))
    return code.value


def append(path: Path, text: str) -> None:
    """Append to the step summary file; a path that cannot be written is a user error."""
    try:
        with path.open("a", encoding="utf-8") as file:
            file.write(text)
    except OSError as error:
        raise EvalError(f"cannot append the step summary ({error.strerror or error})", where=str(path),
                        fix="GITHUB_STEP_SUMMARY must name a file in a folder you can write to") from None
