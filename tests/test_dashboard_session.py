"""Signed in as people expect: a session that survives reloads and tabs (a token, never the key), ends everywhere
on sign-out, with its key's revocation or at its expiry; the sidebar says what a key can do."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import streamlit as st
from streamlit import config

from evalcore.access.api_keys import create_key, end_session, principal_of, revoke_key, session_principal, start_session
from evalcore.access.principals import Principal
from evalcore.campaigns import get_manager
from evalcore.cli import main
from evalcore.store import Store
from tests.test_dashboard_access import assert_clean, open_app, sign_in, titles


@pytest.mark.parametrize(("role", "capability", "says"), [
    ("viewer", "run_evaluations", "launches and changes nothing"),
    ("admin", "run_evaluations", "saving or changing a target configuration needs full-access"),
    ("admin", "full-access", "This key does everything in its tenant"),
])
def test_the_sidebar_says_what_the_signed_in_key_can_do(role: str, capability: str, says: str, tmp_path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "evalcore.db")
    _, secret = create_key(get_manager(db).store, tenant="acme", role=role, capability=capability)
    at = sign_in(open_app(db, monkeypatch), secret)
    assert_clean(at)
    sidebar = " ".join(c.value for c in at.sidebar.caption).replace("\\", "")
    assert f"role **{role}** · capability {capability}" in sidebar
    assert says in sidebar
    assert Principal("acme", role, capability).abilities in sidebar


@pytest.mark.parametrize(("role", "capability"), [("viewer", "run_evaluations"), ("admin", "run_evaluations"),
                                                  ("admin", "full-access"), ("admin", "none")])
def test_what_a_key_can_do_is_a_sentence_after_this_key(role: str, capability: str) -> None:
    verb = Principal("acme", role, capability).abilities.split()[0]
    assert verb in {"does", "reads,", "reads"}  # "This key does ...", "This key reads ...": never "This key everything"


def test_keys_create_says_what_the_key_can_do(tmp_path, capsys) -> None:
    assert main(["keys", "create", "--tenant", "acme", "--role", "viewer", "--db", str(tmp_path / "e.db")]) == 0
    assert "capability run_evaluations: it reads campaigns" in capsys.readouterr().err


def test_a_session_token_lasts_until_signed_out_revoked_or_expired(tmp_path) -> None:
    with Store(tmp_path / "e.db") as store:
        key_id, secret = create_key(store, tenant="acme", role="viewer")
        principal = principal_of(store, key_id)
        token = start_session(store, principal)
        assert token.startswith("es_")
        assert secret not in token
        assert session_principal(store, token) == principal
        assert not store.read("SELECT 1 FROM dashboard_sessions WHERE token_hash = ?", (token,))  # only its hash
        assert session_principal(store, secret) is None  # the API key is no session token
        assert session_principal(store, token + "x") is None
        assert session_principal(store, "") is None
        end_session(store, token)
        assert session_principal(store, token) is None
        assert session_principal(store, start_session(store, principal, ttl_s=-1)) is None  # expired
        other = start_session(store, principal)
        revoke_key(store, key_id)
        assert session_principal(store, other) is None


def test_a_sign_in_is_kept_by_another_tab_and_a_sign_out_ends_it_there(tmp_path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "evalcore.db")
    _, secret = create_key(get_manager(db).store, tenant="acme", role="admin", capability="full-access")
    first = sign_in(open_app(db, monkeypatch), secret)
    token = first.session_state["_session_token"]
    assert titles(first) == ["Datasets"]
    assert secret not in token
    # The browser is told to keep the token (not the key) for the session's lifetime, for this app only.
    [cookie] = [element.proto.body for element in first.get("html") if "document.cookie" in element.proto.body]
    assert f"evalcore_session={token}" in cookie
    assert "max-age=43200" in cookie
    assert "SameSite=Strict" in cookie
    second = open_app(db, monkeypatch)  # a new tab: the browser sends the session's cookie
    assert titles(second) == ["Sign in"]
    second.session_state["_session_token"] = token
    second.run()
    assert titles(second) == ["Datasets"]
    first.sidebar.button(key="sign-out").click().run()
    assert titles(first) == ["Sign in"]
    # The browser forgets the token and reloads: the form opens in a new session, with nothing of the old one.
    [cleared] = [element.proto.body for element in first.get("html") if "document.cookie" in element.proto.body]
    assert "evalcore_session=" + '"' in cleared
    assert "max-age=0" in cleared
    assert "window.location.reload()" in cleared
    first.run()  # a later run of the same session (before the reload lands) neither clears nor reloads again
    assert not [element for element in first.get("html") if "document.cookie" in element.proto.body]
    second.run()  # its next click
    assert titles(second) == ["Sign in"]


def test_the_folder_menu_is_hidden_and_the_routers_own_menu_shows(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before app.py first runs, Streamlit draws a menu of pages/ file names: the configuration hides it, and the
    router turns the sidebar menu on for its own navigation only."""
    settings = tomllib.loads((Path(__file__).parent.parent / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert settings["client"]["showSidebarNavigation"] is False
    st.set_option("client.showSidebarNavigation", False)
    seen: list[bool] = []
    navigation = st.navigation

    def recording(*args, **kwargs):
        seen.append(config.get_option("client.showSidebarNavigation"))
        return navigation(*args, **kwargs)

    monkeypatch.setattr(st, "navigation", recording)
    try:
        at = open_app(str(tmp_path / "evalcore.db"), monkeypatch)
        assert_clean(at)
        assert titles(at) == ["Datasets"]
        assert seen
        assert all(seen)  # every run of the router (the root address forwards to /datasets: two runs)
        assert config.get_option("client.showSidebarNavigation") is False  # the folder's menu stays hidden
    finally:
        st.set_option("client.showSidebarNavigation", True)
