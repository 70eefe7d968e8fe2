"""API keys: created once, stored as a hash only, verified by lookup, revocable; the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.access.api_keys import create_key, hash_secret, list_keys, revoke_key, verify_key
from evalcore.errors import EvalError
from evalcore.store import Store


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "keys.db") as opened:
        yield opened


def test_create_then_verify_grants_what_was_asked(store: Store) -> None:
    key_id, secret = create_key(store, tenant="acme", role="viewer", capability="full-access")
    info = verify_key(store, secret)
    assert info is not None
    assert (info.id, info.tenant, info.role, info.capability) == (key_id, "acme", "viewer", "full-access")
    assert secret.startswith("ek_")
    assert len(secret) >= 40
    assert info.prefix == secret[:8]


def test_secrets_are_random_and_wrong_ones_fail(store: Store) -> None:
    _, first = create_key(store, tenant="acme", role="admin")
    _, second = create_key(store, tenant="acme", role="admin")
    assert first != second
    assert verify_key(store, first[:-1] + ("A" if first[-1] != "A" else "B")) is None
    assert verify_key(store, "") is None
    assert verify_key(store, "not-a-key") is None
    assert verify_key(store, "ek_" + "x" * 500) is None


def test_only_the_hash_is_stored(store: Store, tmp_path: Path) -> None:
    _, secret = create_key(store, tenant="acme", role="admin")
    rows = store.read("SELECT * FROM api_keys")
    assert rows[0]["key_hash"] == hash_secret(secret)
    store.close()
    data = b"".join(p.read_bytes() for p in tmp_path.glob("keys.db*"))
    assert secret.encode() not in data
    assert secret[8:].encode() not in data
    assert hash_secret(secret).encode() in data


def test_revoke_is_immediate_and_idempotent(store: Store) -> None:
    key_id, secret = create_key(store, tenant="acme", role="admin")
    assert revoke_key(store, key_id).revoked_at is not None
    assert verify_key(store, secret) is None
    assert revoke_key(store, key_id).revoked_at is not None
    with pytest.raises(EvalError, match="no API key"):
        revoke_key(store, "key_missing")


@pytest.mark.parametrize(("field", "kwargs"), [
    ("tenant", {"tenant": "has_underscore", "role": "admin"}),
    ("tenant", {"tenant": "", "role": "admin"}),
    ("role", {"tenant": "acme", "role": "owner"}),
    ("capability", {"tenant": "acme", "role": "admin", "capability": "everything"}),
])
def test_bad_values_are_refused_by_name(store: Store, field: str, kwargs: dict) -> None:
    with pytest.raises(EvalError) as caught:
        create_key(store, **kwargs)
    assert caught.value.where == field
    assert list_keys(store) == []


def test_list_filters_by_tenant(store: Store) -> None:
    create_key(store, tenant="acme", role="admin")
    create_key(store, tenant="other", role="viewer")
    assert [k.tenant for k in list_keys(store)] == ["acme", "other"]
    assert [k.tenant for k in list_keys(store, "other")] == ["other"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalcore", "keys", *args], check=False, capture_output=True,
                          text=True,
                          cwd=Path(__file__).resolve().parent.parent, timeout=60)


def test_cli_create_list_revoke(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    created = _cli("create", "--tenant", "acme", "--role", "admin", "--capability", "full-access", "--db", db)
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("ek_")
    assert "shown once" in created.stderr
    listed = _cli("list", "--db", db)
    assert "acme" in listed.stdout
    assert "full-access" in listed.stdout
    assert secret not in listed.stdout
    key_id = created.stderr.split()[1]
    assert _cli("revoke", key_id, "--db", db).returncode == 0
    with Store(db) as store:
        assert verify_key(store, secret) is None
    refused = _cli("create", "--tenant", "a_b", "--role", "admin", "--db", db)
    assert refused.returncode == 2
    assert "error: tenant" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_cli_list_and_revoke_refuse_a_mistyped_database(tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    for args in (("list", "--db", str(typo)), ("revoke", "key_x", "--db", str(typo))):
        result = _cli(*args)
        assert result.returncode == 2
        assert "--db" in result.stderr
        assert str(typo) in result.stderr
    assert not typo.exists()
