"""Who is signed in: the sign-in form and its back-off, the session cookie, identity, and the start of every page."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlparse

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from evalcore.access.api_keys import (
    MAX_SECRET,
    SESSION_TTL_S,
    end_session,
    login_required,
    session_principal,
    sign_in,
    start_session,
)
from evalcore.access.principals import LOCAL, Action, LoginThrottle, Principal, is_loopback
from ui.engine import store
from ui.text import escape_md

SESSION_TOKEN = "_session_token"  # this session's sign-in (evalcore.access.api_keys.start_session), never the API key
SESSION_COOKIE = "evalcore_session"  # the same token in the browser: a reload or a new tab stays signed in
SIGNED_OUT = "_signed_out"  # set by the sign-out button for the run it triggers (session_cookie)
# Failed sign-ins back off per session and per client address, across every session of this process.
THROTTLE = LoginThrottle()
REFUSED = "Sign-in refused: this key is unknown, revoked, malformed, or not allowed to open evaluations."
CREATE_KEY = "python -m evalcore keys create --tenant T --role admin --capability full-access"


def signed_in() -> Principal | None:
    """Who this session acts as: the local admin when no key exists, else the signed-in key (None: nobody).

    Refuses to go on when the server listens beyond this machine with no key to sign in with.
    """
    required = login_required(store())
    address = st.get_option("server.address")
    if not required and not is_loopback(address):
        st.error(f"This dashboard listens on {escape_md(address or 'every network interface')} and no API key "
                 "exists, so anyone who can reach it would be an admin. Create a key first, then sign in with it: "
                 f"`{CREATE_KEY}`. Or serve it on localhost only (`server.address` in .streamlit/config.toml).")
        st.stop()
    if not required:
        return LOCAL
    # This session's token, else the browser's (a reload or another tab): checked on every run, so a sign-out
    # anywhere, an expired session or a revoked key ends it at the next click.
    cookie = st.context.cookies.get(SESSION_COOKIE)
    token = st.session_state.get(SESSION_TOKEN) or (cookie if isinstance(cookie, str) else "")
    principal = session_principal(store(), token) if token else None
    if principal is None:
        st.session_state.pop(SESSION_TOKEN, None)
    else:
        st.session_state[SESSION_TOKEN] = token
    return principal


def session_cookie() -> None:
    """Make the browser's session cookie hold this session's token (after signed_in: none once signed out): the
    token only, never the key, for the session's lifetime, sent to this app only. Written on every run where the
    browser's cookie (as sent when this session opened) differs, so a run cut short by a page switch loses none.

    Right after a sign-out the sign-in form (sign_in_page) clears it and reloads the page: nothing to do here."""
    token = st.session_state.get(SESSION_TOKEN) or ""
    cookie = st.context.cookies.get(SESSION_COOKIE)
    if token == (cookie if isinstance(cookie, str) else "") or st.session_state.get(SIGNED_OUT):
        return
    _write_cookie(token)


def _write_cookie(token: str, *, reload: bool = False) -> None:
    """The browser's session cookie set to this token (none: cleared), then the page reloaded if asked."""
    age = int(SESSION_TTL_S) if token else 0
    then = " window.location.reload();" if reload else ""
    st.html(f"<script>document.cookie = {json.dumps(f'{SESSION_COOKIE}={token}')} + "
            f"'; path=/; max-age={age}; SameSite=Strict';{then}</script>", unsafe_allow_javascript=True)


def sign_out() -> None:
    """End this session's sign-in everywhere (every tab of every browser holding its token), and clear the cookie."""
    if token := st.session_state.pop(SESSION_TOKEN, None):
        end_session(store(), token)
    st.session_state[SIGNED_OUT] = True


def sign_in_page() -> NoReturn:
    """The sign-in form alone; stops the script (nothing else is shown before a key is accepted)."""
    st.title("Sign in")
    st.caption("This dashboard asks for an API key (one from `python -m evalcore keys create`). "
               "It sees what the key's tenant owns, with the key's role.")
    with st.form("sign-in"):
        st.text_input("API key", type="password", max_chars=MAX_SECRET, key="sign-in-key",
                      autocomplete="current-password")  # a password manager may fill it
        st.form_submit_button("Sign in", type="primary", on_click=_attempt_sign_in)
    if st.session_state.pop("_refused", False):
        st.error(REFUSED)  # one message for every refusal: it never tells whether a key exists
    if st.session_state.pop(SIGNED_OUT, False):
        # Right after a sign-out the browser reloads: the form opens in a new session. Redrawn in the old one it
        # could come up blank, once in a few dozen sign-outs under load (the sidebar's timed refresh, gone from
        # this run, still finishing in the browser).
        _write_cookie("", reload=True)
    st.stop()


def _attempt_sign_in() -> None:
    """The form's callback (before the rerun it triggers): check the key after the back-off this session earned."""
    secret = st.session_state.pop("sign-in-key", "") or ""
    session = st.session_state.setdefault("_session", secrets.token_hex(8))
    address = f"address:{client_address()}"
    principal = THROTTLE.attempt(f"session:{session}", address, lambda: sign_in(store(), secret))
    if principal is None:
        st.session_state["_refused"] = True
    else:
        st.session_state[SESSION_TOKEN] = start_session(store(), principal)


def client_address() -> str:
    """The client's IP address as the server saw the connection ("local" when none: localhost, tests).

    Forwarded-for headers are not trusted (any client can write them); behind a proxy every client
    shares the proxy's address, and so its back-off.
    """
    address = st.context.ip_address
    return address if isinstance(address, str) and address else "local"


def identity(principal: Principal) -> None:
    """Who is signed in (sidebar), with the sign-out button; the local admin says why no sign-in was asked."""
    if principal.is_local:
        st.caption(f"Local admin of tenant {escape_md(principal.tenant)}: no API key exists, so no sign-in is asked. "
                   f"Creating one turns sign-in on: `{CREATE_KEY}`")
        return
    st.caption(f"Signed in: tenant **{escape_md(principal.tenant)}** · role **{escape_md(principal.role)}** · "
               f"capability {escape_md(principal.capability)}. This key {escape_md(principal.abilities)}.")
    st.button("Sign out", key="sign-out", on_click=sign_out, help="Ends this sign-in in every tab")


def page(text: str, needs: Action = Action.READ) -> Principal:
    """Start a page: route through app.py if needed, ask for a key if needed, check the role, show the title."""
    if "_routed" not in st.session_state:
        _route_through_app()
    principal = signed_in()
    if principal is None:
        sign_in_page()
    st.title(text)
    if (reason := principal.refusal(needs)) is not None:
        st.info(f"This page is reserved to the workspace's administrators: {escape_md(reason)}.")
        st.stop()
    if message := st.session_state.pop("_flash", None):
        st.success(escape_md(message))
    return principal


def _route_through_app() -> None:
    """Rerun through app.py's navigation, then come back to the page the URL names.

    Until some session has run app.py, Streamlit serves a deep link (/campaigns) straight from the
    pages/ folder (its multipage v1 mode): no app.py, so a narrow layout and a sidebar listing "app".
    """
    keep_deep_link()
    st.switch_page("app.py", query_params=st.query_params.to_dict())


def sidebar_navigation(pages: list[StreamlitPage]) -> StreamlitPage:
    """st.navigation with its menu in the sidebar. Until a session has run app.py, Streamlit draws a menu of the
    pages/ folder's file names (lowercase, for the seconds the first imports take): the configuration hides that
    menu (client.showSidebarNavigation = false), and the option is turned on for this call only, so that the
    router's own menu shows."""
    hidden = st.get_option("client.showSidebarNavigation")
    st.set_option("client.showSidebarNavigation", True)
    try:
        return st.navigation(pages)
    finally:
        st.set_option("client.showSidebarNavigation", hidden)


def keep_deep_link() -> None:
    """Remember the page the URL names (/campaigns), so that app.py opens it (with the URL's query parameters) once
    the session may see it."""
    name = urlparse(st.context.url or "").path.rstrip("/").rsplit("/", 1)[-1]
    if name and (Path(__file__).parent.parent / "pages" / f"{name}.py").is_file():
        st.session_state["_deep_link"] = f"pages/{name}.py"


def run_link(principal: Principal, label: str) -> None:
    """A link to the Run page, for those who may launch (viewers' navigation has no Run page)."""
    if principal.can(Action.CHANGE):
        st.page_link("pages/run.py", label=label)
