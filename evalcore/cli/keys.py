"""`python -m evalcore keys create|list|revoke`: API keys for the REST API."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from evalcore.errors import EvalError
from evalcore.keys import CAPABILITIES, ROLES, create_key, list_keys, revoke_key
from evalcore.store import Store, default_db_path


def register(commands: argparse._SubParsersAction) -> None:
    """Add `keys` and its three subcommands."""
    parser = commands.add_parser("keys", help="create, list and revoke API keys")
    actions = parser.add_subparsers(dest="keys_command", required=True, metavar="ACTION")

    create = actions.add_parser("create", help="create a key and print its secret (shown once)")
    create.add_argument("--tenant", required=True, help="the tenant the key acts for (letters, digits, '.', '-')")
    create.add_argument("--role", required=True, choices=ROLES, help="admin creates and launches, viewer reads")
    create.add_argument("--capability", default="run_evaluations", choices=CAPABILITIES,
                        help="run_evaluations (default) or full-access open the evaluation routes")
    create.set_defaults(handler=_create)

    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--tenant", help="only this tenant's keys")
    listing.set_defaults(handler=_list)

    revoke = actions.add_parser("revoke", help="revoke a key at once")
    revoke.add_argument("key_id", metavar="ID", help="the key id shown by `keys create` or `keys list`")
    revoke.set_defaults(handler=_revoke)

    for sub in (create, listing, revoke):
        sub.add_argument("--db", help="database file (default .evalcore/evalcore.db or $EVALCORE_DB)")


def _create(args: argparse.Namespace) -> int:
    with Store(args.db) as store:
        key_id, secret = create_key(store, tenant=args.tenant, role=args.role, capability=args.capability)
    # The secret alone on stdout, so `KEY=$(python -m evalcore keys create ...)` works.
    print(secret)
    print(f"created {key_id} (tenant {args.tenant}, role {args.role}, capability {args.capability}); "
          "the secret above is shown once and only its hash is stored", file=sys.stderr)
    return 0


def _existing(db: str | None) -> Store:
    """The store for listing and revoking: a mistyped --db must not answer with a new, empty database."""
    path = Path(db) if db else default_db_path()
    if not path.is_file():
        raise EvalError("no database there", where="--db", found=str(path),
                        fix="give the --db that `keys create` and `serve` use (or set EVALCORE_DB)")
    return Store(path)


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(stamp)) if stamp else "-"


def _list(args: argparse.Namespace) -> int:
    with _existing(args.db) as store:
        keys = list_keys(store, args.tenant)
    print(f"{'id':<18} {'tenant':<16} {'role':<7} {'capability':<16} {'prefix':<9} {'created (UTC)':<17} revoked")
    for key in keys:
        print(f"{key.id:<18} {key.tenant:<16} {key.role:<7} {key.capability:<16} {key.prefix:<9} "
              f"{_when(key.created_at):<17} {_when(key.revoked_at)}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    with _existing(args.db) as store:
        key = revoke_key(store, args.key_id)
    print(f"revoked {key.id} (tenant {key.tenant}, role {key.role})")
    return 0
