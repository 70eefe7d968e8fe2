"""The dashboard router: `streamlit run app.py` opens on the built-in sample dataset.

With no API key in the store it opens as the local admin of tenant `default`; once a key exists (or
EVALCORE_REQUIRE_LOGIN=1) every page asks for one first, and shows what the key's tenant owns.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import ui
from evalcore.access import Action, Principal
from evalcore.compare import power

# No icons: Streamlit fetches Material icons from fonts.gstatic.com (fails offline) and emoji
# need a font headless browsers lack.
st.set_page_config(page_title="evalcore", layout="wide")
ui.no_delay()  # small writes go out at once: see ui.no_delay

PAGES = {file: st.Page(file, title=title, default=file == "pages/datasets.py") for file, title in (
    ("pages/datasets.py", "Datasets"), ("pages/suites.py", "Suites"), ("pages/run.py", "Run"),
    ("pages/campaigns.py", "Campaigns"), ("pages/compare.py", "Compare"), ("pages/traces.py", "Traces"))}
# Suites and Run change things: the workspace's administrators only (viewers read results).
ADMIN_PAGES = {"pages/suites.py", "pages/run.py"}


def pages_for(principal: Principal | None) -> dict[str, st.Page]:
    """The pages (by file) this principal's navigation lists."""
    if principal is None or principal.can(Action.CHANGE):
        return PAGES
    return {file: page for file, page in PAGES.items() if file not in ADMIN_PAGES}


st.session_state["_routed"] = True  # ui.page: this session's pages run under this router
principal = ui.signed_in()
ui.session_cookie()  # before the sign-in form stops the script: a sign-out clears the browser's cookie
if principal is None:  # the sign-in form whatever the URL (it stops the script); the page asked for opens after it
    ui.keep_deep_link()
    st.navigation([st.Page(ui.sign_in_page, title="Sign in", url_path="sign-in", default=True),
                   *(st.Page(ui.sign_in_page, title="Sign in", url_path=Path(file).stem) for file in PAGES)],
                  position="hidden").run()
    st.stop()  # the sign-in form stops first: this only tells the type checker
allowed = pages_for(principal)
page = ui.sidebar_navigation(list(allowed.values()))
# A deep link kept across the sign-in opens its page, unless this principal's navigation has no such page.
if (deep_link := st.session_state.pop("_deep_link", None)) in allowed:
    st.switch_page(deep_link)
with st.sidebar:
    ui.identity(principal)
    ui.poll(ui.activity)
page.run()
# Once the page is out: the server's first comparison then finds scipy.special (its power figures) imported.
power.prepare()
