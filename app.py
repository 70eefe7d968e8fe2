"""The dashboard router: `streamlit run app.py` opens on the built-in sample dataset.

With no API key in the store it opens as the local admin of tenant `default`; once a key exists (or
EVALCORE_REQUIRE_LOGIN=1) every page asks for one first, and shows what the key's tenant owns.
"""

from __future__ import annotations

import streamlit as st

import ui
from evalcore.access import Action, Principal

# No icons: Streamlit fetches Material icons from fonts.gstatic.com (fails offline) and emoji
# need a font headless browsers lack.
st.set_page_config(page_title="evalcore", layout="wide")

PAGES = [
    st.Page("pages/datasets.py", title="Datasets", default=True),
    st.Page("pages/suites.py", title="Suites"),
    st.Page("pages/run.py", title="Run"),
    st.Page("pages/campaigns.py", title="Campaigns"),
    st.Page("pages/compare.py", title="Compare"),
]
# Suites and Run change things: the workspace's administrators only (viewers read results).
ADMIN_PAGES = {"Suites", "Run"}


def pages_for(principal: Principal | None) -> list[st.Page]:
    """The pages this principal's navigation lists."""
    if principal is None or principal.can(Action.CHANGE):
        return PAGES
    return [p for p in PAGES if p.title not in ADMIN_PAGES]


st.session_state["_routed"] = True  # ui.page: this session's pages run under this router
principal = ui.signed_in()
if principal is None:  # one page whatever the URL, the sign-in form (it stops the script)
    st.navigation([st.Page(ui.sign_in_page, title="Sign in", url_path="sign-in")], position="hidden").run()
page = st.navigation(pages_for(principal))
if deep_link := st.session_state.pop("_deep_link", None):
    st.switch_page(deep_link)
with st.sidebar:
    ui.identity(principal)
    ui.poll(ui.activity)
page.run()
