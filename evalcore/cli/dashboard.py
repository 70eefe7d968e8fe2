"""`evalcore dashboard`: the Streamlit dashboard, from the installed package or from the checkout."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tomllib
from pathlib import Path

from evalcore.cli import SUMMARIES
from evalcore.cli._common import Commands
from evalcore.errors import EvalError

PACKAGE = Path(__file__).resolve().parent.parent


def register(commands: Commands) -> None:
    """Add `dashboard`."""
    parser = commands.add_parser(
        "dashboard", help=SUMMARIES["dashboard"],
        description="Run the dashboard (streamlit run on its app.py, with its settings) over the store of this "
                    "folder ($EVALCORE_DB, else .evalcore/evalcore.db).",
        epilog="Streamlit's own options follow --, e.g. evalcore dashboard -- --server.headless true")
    parser.add_argument("--host", help="address to listen on (default localhost; another one asks for an API key "
                                       "first, see docs/access.md)")
    parser.add_argument("--port", type=int, help="port (default 8501)")
    parser.add_argument("streamlit", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.set_defaults(handler=_dashboard)


def dashboard_app() -> Path:
    """The dashboard's app.py: the copy installed in the package (setup.py puts it there), else the checkout's."""
    for app in (PACKAGE / "dashboard" / "app.py", PACKAGE.parent / "app.py"):
        if app.is_file() and (app.parent / "pages").is_dir():
            return app
    raise EvalError("the dashboard is not installed with this copy of evalcore", where=str(PACKAGE),
                    fix="install the package from its repository (pip install .), or run it from a checkout: "
                        "streamlit run app.py")


def streamlit_command(args: argparse.Namespace) -> list[str]:
    """`python -m streamlit run APP` with the dashboard's settings as options (Streamlit reads a settings file only
    from the working folder), then --host, --port and the options given after --."""
    app = dashboard_app()
    settings = tomllib.loads((app.parent / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    options = [f"--{section}.{key}={_option_text(value)}" for section, keys in settings.items()
               for key, value in keys.items()]
    if args.host:
        options.append(f"--server.address={args.host}")
    if args.port:
        options.append(f"--server.port={args.port}")
    rest = args.streamlit[1:] if args.streamlit[:1] == ["--"] else args.streamlit
    return [sys.executable, "-m", "streamlit", "run", str(app), *options, *rest]


def _option_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _dashboard(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("streamlit") is None:
        raise EvalError("Streamlit is not installed", where="dashboard",
                        fix="pip install evalcore installs it (or pip install -r requirements.txt in a checkout)")
    command = streamlit_command(args)
    sys.stdout.flush()
    os.execv(command[0], command)  # this process becomes Streamlit's: Ctrl-C and signals reach it directly
    return 0
