"""The one rule of who may do what (access.Principal) and the keys that sign in to the dashboard."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.access.api_keys import create_key, login_required, principal_of, revoke_key, sign_in, verify_key
from evalcore.access.principals import LOCAL, Action, Forbidden, Principal, scope
from evalcore.store import Store

# (role, capability) -> the actions it may do
RIGHTS = [
    ("admin", "full-access", {Action.READ, Action.LABEL, Action.CHANGE, Action.CONFIGURE, Action.SEND_TRACES}),
    ("admin", "run_evaluations", {Action.READ, Action.LABEL, Action.CHANGE, Action.SEND_TRACES}),
    ("admin", "none", set()),
    ("viewer", "full-access", {Action.READ}),
    ("viewer", "run_evaluations", {Action.READ}),
    ("viewer", "none", set()),
    # an application's exporter: sends traces, reads nothing
    ("admin", "send_traces", {Action.SEND_TRACES}),
    ("viewer", "send_traces", {Action.SEND_TRACES}),
]


@pytest.mark.parametrize(("role", "capability", "allowed"), RIGHTS)
def test_each_role_and_capability_may_do_exactly_these_actions(role: str, capability: str, allowed: set) -> None:
    principal = Principal("acme", role, capability)
    assert {action for action in Action if principal.can(action)} == allowed
    for action in set(Action) - allowed:
        with pytest.raises(Forbidden):
            principal.require(action)


def test_viewers_label_only_when_the_operator_allows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    viewer = Principal("acme", "viewer", "run_evaluations")
    assert not viewer.can(Action.LABEL)
    monkeypatch.setenv("EVALCORE_VIEWERS_LABEL", "1")
    assert viewer.can(Action.LABEL)
    assert not viewer.can(Action.CHANGE)
    assert not Principal("acme", "viewer", "none").can(Action.LABEL)


def test_a_principal_limits_a_call_to_its_tenant_and_none_is_the_local_operator() -> None:
    assert scope(None, None) is None
    assert scope(None, "acme") == "acme"
    assert scope(Principal("acme", "viewer", "run_evaluations"), "other") == "acme"
    with pytest.raises(Forbidden, match="admin key"):
        scope(Principal("acme", "viewer", "run_evaluations"), None, Action.CHANGE)
    assert LOCAL.is_local
    assert LOCAL.tenant == "default"
    assert all(LOCAL.can(action) for action in Action)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "keys.db") as opened:
        yield opened


def test_sign_in_accepts_active_keys_that_open_evaluations_only(store: Store) -> None:
    key_id, secret = create_key(store, tenant="acme", role="viewer", capability="run_evaluations")
    _, probe = create_key(store, tenant="acme", role="admin", capability="none")
    assert sign_in(store, f" {secret}\n") == Principal("acme", "viewer", "run_evaluations", key_id)
    assert principal_of(store, key_id) == Principal("acme", "viewer", "run_evaluations", key_id)
    assert verify_key(store, probe) is not None
    assert sign_in(store, probe) is None
    for wrong in ("", "ek_", "nope", secret + "x", secret[:-1], "ek_" + "a" * 10_000):
        assert sign_in(store, wrong) is None
    revoke_key(store, key_id)
    assert sign_in(store, secret) is None
    assert principal_of(store, key_id) is None


def test_login_is_required_once_any_key_exists_or_when_asked(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALCORE_REQUIRE_LOGIN", raising=False)
    assert not login_required(store)
    monkeypatch.setenv("EVALCORE_REQUIRE_LOGIN", "1")
    assert login_required(store)
    monkeypatch.setenv("EVALCORE_REQUIRE_LOGIN", "0")
    key_id, _ = create_key(store, tenant="acme", role="admin", capability="full-access")
    revoke_key(store, key_id)
    assert login_required(store)  # revoking every key does not reopen the dashboard
