"""What several commands share: the --db option and the one store of a process, argument types, file output."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalError
from evalcore.store import Store

if TYPE_CHECKING:
    from evalcore.campaigns import CampaignManager

Commands = Any  # argparse's _SubParsersAction, private in typeshed
DB_HELP = "database file, or a postgresql://USER@HOST:PORT/DB URL (default: $EVALCORE_DB or .evalcore/evalcore.db)"


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """--db, on every command that reads or writes the database."""
    parser.add_argument("--db", metavar="PATH|URL", help=DB_HELP)


def add_execution_options(parser: argparse.ArgumentParser) -> None:
    """--executor and --scheduler: where the questions are answered (this machine, or a Dask cluster)."""
    parser.add_argument("--executor", choices=("local", "dask"),
                        help="local: threads of this process; dask: the workers of a Dask cluster "
                             "(default: the configuration's executor key, else local)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="the Dask scheduler (default: the configuration's scheduler key, else "
                             "$EVALCORE_DASK_SCHEDULER)")


CAMPAIGN_HELP = "the campaign: its id, its name, or the start of either (case ignored)"


def add_campaign_argument(parser: argparse.ArgumentParser, dest: str = "id", **kwargs: Any) -> None:
    """A positional argument naming a campaign (or several, `nargs`): resolved to ids by `resolve_campaigns` before
    the command runs, so that every command takes a campaign's name as well as its id."""
    parser.add_argument(dest, metavar="CAMPAIGN", help=kwargs.pop("help", CAMPAIGN_HELP), **kwargs)
    parser.set_defaults(campaign_arguments=(*(parser.get_default("campaign_arguments") or ()), dest))


def resolve_campaigns(args: argparse.Namespace) -> None:
    """Replace each campaign argument's text by the id of the campaign it names (`find_campaign`: an id, a name, the
    start of one; the same message for an ambiguous or unknown one whatever the command), within --tenant if any."""
    dests = getattr(args, "campaign_arguments", ())
    if not dests:
        return
    from evalcore.campaigns import find_campaign

    store = store_of(args)
    tenant = getattr(args, "tenant", None)
    for dest in dests:
        given = getattr(args, dest)
        if isinstance(given, list):
            setattr(args, dest, [find_campaign(store, text, tenant).id for text in given])
        else:
            setattr(args, dest, find_campaign(store, given, tenant).id)


def run_on(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The executor and scheduler given on the command line (None: the configuration's)."""
    return args.executor, args.scheduler


def manager_of(args: argparse.Namespace, *, create: bool = False) -> CampaignManager:
    """The process's campaign manager for --db: one writer per database, whatever the command. A store that does not
    exist is refused (a typo must not answer from, or write to, a new empty database) unless `create` (the commands
    that start one: run, serve, keys create, suites import, config save)."""
    from evalcore.campaigns import get_manager  # the engine loads only for commands that use it

    return get_manager(args.db, create=create)


def store_of(args: argparse.Namespace, *, create: bool = False) -> Store:
    """The store of --db (shared with the campaign manager); `create` as for manager_of."""
    return manager_of(args, create=create).store


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, found {text!r}")
    return value


def share(text: str) -> float:
    """argparse type: a share from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:   # nan compares false
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1, found {text!r}")
    return value


def amount(text: str) -> float:
    """argparse type: an amount of money of at least 0, in the prices' currency."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected an amount of at least 0 (in the prices' currency), found {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds above 0 (nan and inf would switch a limit off)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, found {text!r}")
    return value


def write_file(path: Path, text: str, what: str = "the file") -> None:
    """Write text, creating missing folders; a path that cannot be written is a user error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise EvalError(f"cannot write {what} ({error.strerror or error})", where=str(path),
                        fix="give a file path in a folder you can write to") from None


def add_sweep_columns(parser: argparse.ArgumentParser) -> None:
    """The options choosing the measures of a sweep's table (compare with 3+ campaigns, run --sweep)."""
    columns = parser.add_mutually_exclusive_group()
    columns.add_argument("--measures", type=lambda text: [m.strip() for m in text.split(",") if m.strip()],
                         metavar="M1,M2,...", help="the sweep table's measures (default: the headline measures, "
                                                   "those deciding verdicts: ndcg@10, rougel, coverage, …)")
    columns.add_argument("--all", action="store_true", help="every measure in the sweep table")


def add_judge_model_flags(group: argparse._ArgumentGroup) -> None:
    """--judge-kind, --judge-model, ...: the judges' model keys, typed and explained by their configuration key."""
    from evalcore.targets.target_config import KEYS  # here: the other commands start without the configuration's module

    for key in JUDGE_FLAGS:
        group.add_argument("--" + key.replace("_", "-"), dest=key, type=type(KEYS[key].default),
                           metavar=key.removeprefix("judge_").upper(), help=KEYS[key].help)


# The judges' model keys that have a flag of their own (--judge-kind ...); type and help come from the key.
JUDGE_FLAGS = ("judge_kind", "judge_model", "judge_base_url", "judge_api_key_env", "judge_temperature",
               "judge_max_tokens", "judge_structured_output")
