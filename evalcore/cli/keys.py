"""`python -m evalcore keys create|list|revoke`: API keys for the REST API."""

from __future__ import annotations

import argparse
import sys
import time

from evalcore.access.api_keys import CAPABILITIES, ROLES, create_key, list_keys, revoke_key
from evalcore.access.principals import Principal
from evalcore.cli import SUMMARIES
from evalcore.cli._common import Commands, add_db_option, store_of


def register(commands: Commands) -> None:
    """Add `keys` and its three subcommands."""
    parser = commands.add_parser("keys", help=SUMMARIES["keys"])
    actions = parser.add_subparsers(dest="keys_command", required=True, metavar="ACTION")

    create = actions.add_parser("create", help="create a key and print its secret (shown once)")
    create.add_argument("--tenant", required=True, help="the tenant the key acts for (letters, digits, '.', '-')")
    create.add_argument("--role", required=True, choices=ROLES, help="admin creates and launches, viewer reads")
    create.add_argument("--capability", default="run_evaluations", choices=CAPABILITIES,
                        help="run_evaluations (default) or full-access open the evaluation routes; with role "
                             "viewer either one only reads")
    create.set_defaults(handler=_create)

    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--tenant", help="only this tenant's keys")
    listing.set_defaults(handler=_list)

    revoke = actions.add_parser("revoke", help="revoke a key at once")
    revoke.add_argument("key_id", metavar="ID", help="the key id shown by `keys create` or `keys list`")
    revoke.set_defaults(handler=_revoke)

    for sub in (create, listing, revoke):
        add_db_option(sub)


def _create(args: argparse.Namespace) -> int:
    key_id, secret = create_key(store_of(args, create=True), tenant=args.tenant, role=args.role,
                                capability=args.capability)
    # The secret alone on stdout, so `KEY=$(python -m evalcore keys create ...)` works.
    print(secret)
    abilities = Principal(args.tenant, args.role, args.capability).abilities
    print(f"created {key_id} (tenant {args.tenant}, role {args.role}, capability {args.capability}: it "
          f"{abilities}); the secret above is shown once and only its hash is stored", file=sys.stderr)
    return 0


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(stamp)) if stamp else "-"


def _list(args: argparse.Namespace) -> int:
    keys = list_keys(store_of(args), args.tenant)
    print(f"{'id':<18} {'tenant':<16} {'role':<7} {'capability':<16} {'prefix':<9} {'created (UTC)':<17} revoked")
    for key in keys:
        print(f"{key.id:<18} {key.tenant:<16} {key.role:<7} {key.capability:<16} {key.prefix:<9} "
              f"{_when(key.created_at):<17} {_when(key.revoked_at)}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    key = revoke_key(store_of(args), args.key_id)
    print(f"revoked {key.id} (tenant {key.tenant}, role {key.role})")
    return 0
