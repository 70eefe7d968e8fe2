"""API keys: high-entropy random tokens shown once, stored only as their SHA-256 hash."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import time
from typing import NamedTuple

from evalcore.errors import EvalError
from evalcore.store import Store

ROLES = ("admin", "viewer")
# run_evaluations and full-access both open the evaluation routes; "none" makes a key
# that authenticates but reaches only key introspection (e.g. a monitoring probe).
CAPABILITIES = ("run_evaluations", "full-access", "none")
EVALUATION_CAPABILITIES = frozenset({"run_evaluations", "full-access"})
SECRET_PREFIX = "ek_"
# Underscores are excluded because evaluation task ids join the tenant with underscores.
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,63}$")


class KeyInfo(NamedTuple):
    """What a key grants; never the secret itself."""

    id: str
    tenant: str
    role: str
    capability: str
    prefix: str
    created_at: float
    revoked_at: float | None


def hash_secret(secret: str) -> str:
    """The stored form of a secret (random tokens need no slow hash: there is nothing to guess)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def check_tenant(tenant: str) -> str:
    """The tenant name if valid, else an EvalError saying what a tenant may contain."""
    if not TENANT_PATTERN.match(tenant):
        raise EvalError(f"invalid tenant {tenant!r}", where="tenant",
                        expected="1-64 letters, digits, '.' or '-', starting with a letter or digit")
    return tenant


def _check_choice(value: str, choices: tuple[str, ...], where: str) -> str:
    if value not in choices:
        raise EvalError(f"unknown {where} {value!r}", where=where, expected=" or ".join(choices))
    return value


def create_key(store: Store, *, tenant: str, role: str, capability: str = "run_evaluations") -> tuple[str, str]:
    """Create a key; returns (key_id, secret). The secret is not stored and cannot be shown again."""
    check_tenant(tenant)
    _check_choice(role, ROLES, "role")
    _check_choice(capability, CAPABILITIES, "capability")
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    key_id = "key_" + secrets.token_hex(6)
    row = (key_id, tenant, role, capability, hash_secret(secret), secret[:8], time.time())

    def insert(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO api_keys (id, tenant, role, capability, key_hash, prefix, created_at, revoked_at)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?, NULL)", row)

    store.write(insert)
    return key_id, secret


def _info(row: sqlite3.Row) -> KeyInfo:
    return KeyInfo(row["id"], row["tenant"], row["role"], row["capability"], row["prefix"],
                   row["created_at"], row["revoked_at"])


def verify_key(store: Store, secret: str) -> KeyInfo | None:
    """The active key with this secret, or None (unknown, revoked or malformed)."""
    if not secret.startswith(SECRET_PREFIX) or len(secret) > 128:
        return None
    digest = hash_secret(secret)
    # Lookup by hash: the secret is never compared byte by byte, so timing reveals nothing about it.
    rows = store.read("SELECT * FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL", (digest,))
    if not rows or not hmac.compare_digest(rows[0]["key_hash"], digest):
        return None
    return _info(rows[0])


def list_keys(store: Store, tenant: str | None = None) -> list[KeyInfo]:
    """Every key (or one tenant's), oldest first."""
    if tenant is None:
        rows = store.read("SELECT * FROM api_keys ORDER BY created_at, id")
    else:
        rows = store.read("SELECT * FROM api_keys WHERE tenant = ? ORDER BY created_at, id", (tenant,))
    return [_info(row) for row in rows]


def revoke_key(store: Store, key_id: str) -> KeyInfo:
    """Revoke a key at once (idempotent); EvalError when the id is unknown."""
    def revoke(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (time.time(), key_id))

    store.write(revoke)
    rows = store.read("SELECT * FROM api_keys WHERE id = ?", (key_id,))
    if not rows:
        raise EvalError(f"no API key with id {key_id!r}", where="key id", fix="see `python -m evalcore keys list`")
    return _info(rows[0])
