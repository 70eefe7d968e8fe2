"""The command line: every module of this package registers its own subcommands."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from evalcore.errors import EvalError
from evalcore.language.text import shown

# The module that registers each command. Running a command imports only its module: importing
# them all (the campaign engine, pandas, the HTTP stack) costs a second or more, which `score`
# over a TREC run would pay for nothing. A test checks this table against what the modules register.
COMMANDS = {"campaigns": "campaigns", "compare": "compare", "config": "config", "ask": "config",
            "corpus": "corpus", "dashboard": "dashboard", "dataset": "dataset", "keys": "keys",
            "labels": "labels", "measures": "measures", "rejudge": "rejudge",
            "run": "run", "score": "score", "score-text": "score", "serve": "serve", "store": "store",
            "suites": "suites", "testset": "testset", "traces": "traces", "worker": "worker"}
# Each command's line in `python -m evalcore --help`, which lists them without importing any module
# (in the order the modules register them; a test checks the overview against the full parser).
SUMMARIES = {
    "campaigns": "list, inspect, resume, cancel, delete and export campaigns",
    "compare": "compare campaigns: verdicts per question, deltas with 95%% intervals",
    "config": "show, check or compare target configurations (TOML)",
    "ask": "ask a target one question; print the ranked passages and the answer",
    "corpus": "import a folder of documents (Markdown, text, HTML, PDF, Word) as a dataset's corpus",
    "dashboard": "run the dashboard (Streamlit) on this folder's store",
    "dataset": "check a dataset folder or print its statistics",
    "keys": "create, list and revoke API keys",
    "labels": "label questions for the judges; judge-vs-people agreement",
    "measures": "list every measure with its signature, the operator's measures in Python too",
    "rejudge": "judge a finished campaign's answers again with other judges (a new campaign)",
    "run": "run a campaign in the foreground and print its aggregates",
    "score": "per-query retrieval measures of a TREC run, like trec_eval -q",
    "score-text": "BLEU and ROUGE of answers in a JSONL file",
    "serve": "serve the REST API (OpenAPI at /docs and /openapi.json)",
    "store": "move the store between SQLite and PostgreSQL",
    "suites": "import, list, export and delete question suites",
    "testset": "generate a test set from a corpus with a model; its quality report; review its questions",
    "traces": "production traces: import, list, judge a sample, follow over time, compare releases",
    "worker": "claim queued campaigns from the store and run them (no pages, no API)",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of one known command, or of every module in evalcore.cli (each has `register`)."""
    parser, commands = top_parser()
    names = [COMMANDS[command]] if command in COMMANDS else sorted(
        m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))  # _common: helpers
    for name in names:
        importlib.import_module(f"{__name__}.{name}").register(commands)
    return parser


def program() -> str:
    """How this process was started, as the commands its messages suggest are spelled: `evalcore` when run as the
    installed command, `python -m evalcore` otherwise (a checkout)."""
    return "evalcore" if Path(sys.argv[0]).stem == "evalcore" else "python -m evalcore"


def top_parser() -> tuple[argparse.ArgumentParser, Any]:
    """The program's parser and its (still empty) commands (argparse's _SubParsersAction, private in typeshed)."""
    parser = argparse.ArgumentParser(prog=program(), description="RAG evaluation workbench")
    return parser, parser.add_subparsers(dest="command", required=True, metavar="COMMAND")


def overview() -> argparse.ArgumentParser:
    """The parser when no command is named (`--help`, or nothing): every command's line, no module imported."""
    parser, commands = top_parser()
    for name, summary in SUMMARIES.items():
        commands.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; user mistakes print one line per problem and exit 2, never a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((word for word in argv if not word.startswith("-")), None)
    args = (build_parser(command) if command else overview()).parse_args(argv)
    sys.stdout, sys.stderr = TerminalText.over(sys.stdout), TerminalText.over(sys.stderr)
    try:
        from evalcore.cli._common import resolve_campaigns  # here: `--help` and the overview import nothing more

        resolve_campaigns(args)
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
    finally:
        sys.stdout, sys.stderr = TerminalText.under(sys.stdout), TerminalText.under(sys.stderr)


class TerminalText:
    """A terminal's text stream on which whatever is printed shows its control characters escaped: a stored
    name cannot send the operator's terminal an escape sequence. (A pipe or a file gets the text as it is.)"""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    @classmethod
    def over(cls, stream: TextIO) -> TextIO:
        """The stream, wrapped when it is a terminal."""
        return cast(TextIO, cls(stream)) if stream.isatty() else stream

    @staticmethod
    def under(stream: TextIO) -> TextIO:
        """The stream a wrapper wraps (the stream itself otherwise)."""
        return stream.stream if isinstance(stream, TerminalText) else stream

    def write(self, text: str) -> int:
        """Write with control characters escaped; returns the length given."""
        self.stream.write(shown(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
