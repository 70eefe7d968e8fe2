"""API keys: high-entropy random tokens shown once, stored only as their SHA-256 hash."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import time
from typing import NamedTuple

from evalcore.access.principals import CAPABILITIES, EVALUATION_CAPABILITIES, ROLES, Principal
from evalcore.errors import EvalError
from evalcore.store import Row, Store, api_key_rows

__all__ = ["CAPABILITIES", "EVALUATION_CAPABILITIES", "ROLES", "KeyInfo", "check_tenant", "create_key", "end_session",
           "hash_secret", "list_keys", "login_required", "principal_of", "revoke_key", "session_principal", "sign_in",
           "start_session", "verify_key"]
SECRET_PREFIX = "ek_"
# Longer input is cut before hashing: a secret is 46 characters, and hashing megabytes costs time.
MAX_SECRET = 128
SESSION_PREFIX = "es_"  # a dashboard session token, never an API key
SESSION_TTL_S = 12 * 3600.0  # a dashboard session lasts a working day
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

    def principal(self) -> Principal:
        """Who acts with this key."""
        return Principal(tenant=self.tenant, role=self.role, capability=self.capability, key_id=self.id)


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

    store.write(lambda conn: api_key_rows.insert_key(conn, row))
    return key_id, secret


def _info(row: Row) -> KeyInfo:
    return KeyInfo(row["id"], row["tenant"], row["role"], row["capability"], row["prefix"],
                   row["created_at"], row["revoked_at"])


def verify_key(store: Store, secret: str) -> KeyInfo | None:
    """The active key with this secret, or None (unknown, revoked or malformed)."""
    well_formed = secret.startswith(SECRET_PREFIX) and len(secret) <= MAX_SECRET
    digest = hash_secret(secret[:MAX_SECRET])
    # Lookup by hash: the secret is never compared byte by byte, so timing reveals nothing about it;
    # malformed secrets are looked up too, so that every refusal takes the same path.
    row = api_key_rows.active_key_by_hash(store, digest)
    if not well_formed or row is None or not hmac.compare_digest(row["key_hash"], digest):
        return None
    return _info(row)


def sign_in(store: Store, secret: str) -> Principal | None:
    """The principal of a dashboard sign-in, or None; keys without an evaluation capability cannot sign in."""
    key = verify_key(store, secret.strip())
    if key is None or key.capability not in EVALUATION_CAPABILITIES:
        return None
    return key.principal()


def principal_of(store: Store, key_id: str) -> Principal | None:
    """The principal of a signed-in key if the key is still active (revoking it ends its sessions)."""
    row = api_key_rows.active_key(store, key_id)
    return _info(row).principal() if row is not None else None


def start_session(store: Store, principal: Principal, ttl_s: float = SESSION_TTL_S) -> str:
    """A new dashboard session for a signed-in key: its token (kept by the browser; only its hash is stored)."""
    token = SESSION_PREFIX + secrets.token_urlsafe(32)
    now = time.time()
    row = (hash_secret(token), principal.key_id, now, now + ttl_s)

    store.write(lambda conn: api_key_rows.insert_session(conn, row))
    return token


def session_principal(store: Store, token: str) -> Principal | None:
    """The principal of a session token while the session lasts: not expired, not signed out, its key not revoked."""
    if not token.startswith(SESSION_PREFIX) or len(token) > MAX_SECRET:
        return None
    key_id = api_key_rows.session_key(store, hash_secret(token), time.time())
    return principal_of(store, key_id) if key_id is not None else None


def end_session(store: Store, token: str) -> None:
    """Sign a session out: its token stops working in every tab and browser that holds it."""
    digest, now = hash_secret(token[:MAX_SECRET]), time.time()
    store.write(lambda conn: api_key_rows.end_session(conn, digest, now))


def login_required(store: Store) -> bool:
    """Whether the dashboard asks for a key: once any key exists (even revoked), or EVALCORE_REQUIRE_LOGIN=1."""
    if os.environ.get("EVALCORE_REQUIRE_LOGIN", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    return api_key_rows.any_key(store)


def list_keys(store: Store, tenant: str | None = None) -> list[KeyInfo]:
    """Every key (or one tenant's), oldest first."""
    return [_info(row) for row in api_key_rows.key_rows(store, tenant)]


def revoke_key(store: Store, key_id: str) -> KeyInfo:
    """Revoke a key at once (idempotent); EvalError when the id is unknown."""
    store.write(lambda conn: api_key_rows.revoke(conn, key_id))
    row = api_key_rows.key_row(store, key_id)
    if row is None:
        raise EvalError(f"no API key with id {key_id!r}", where="key id", fix="see `python -m evalcore keys list`")
    return _info(row)
