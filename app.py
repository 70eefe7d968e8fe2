"""The dashboard router: `streamlit run app.py` opens on the built-in sample dataset.

With no API key in the store it opens as the local admin of tenant `default`; once a key exists (or
EVALCORE_REQUIRE_LOGIN=1) every page asks for one first, and shows what the key's tenant owns.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import ui
from evalcore.access.principals import Action, Principal
from evalcore.compare import power

# No icons: Streamlit fetches Material icons from fonts.gstatic.com (fails offline) and emoji
# need a font headless browsers lack.
st.set_page_config(page_title="evalcore", layout="wide")
ui.no_delay()  # small writes go out at once: see ui.no_delay

TITLES = {"pages/datasets.py": "Datasets", "pages/suites.py": "Suites", "pages/run.py": "Run",
          "pages/campaigns.py": "Campaigns", "pages/compare.py": "Compare", "pages/traces.py": "Traces"}
# Suites and Run change things: the workspace's administrators only (viewers read results).
ADMIN_PAGES = {"pages/suites.py", "pages/run.py"}
HOME = "home"  # the root URL's page: it opens Datasets at its own address


def home() -> None:
    """The root URL: Datasets at its address (/datasets), with the query parameters the URL had."""
    st.switch_page("pages/datasets.py", query_params=st.query_params.to_dict())


def pages_for(principal: Principal | None) -> dict[str, st.Page]:
    """Every page (by file) at its address (/datasets, /run, ...) whoever asks: those this principal may not use are
    left out of its navigation's list, and say why when opened by their address."""
    return {file: st.Page(file, title=title, url_path=Path(file).stem,
                          visibility="visible" if principal is None or principal.can(Action.CHANGE)
                          or file not in ADMIN_PAGES else "hidden")
            for file, title in TITLES.items()}


st.session_state["_routed"] = True  # ui.page: this session's pages run under this router
principal = ui.signed_in()
ui.session_cookie()  # before the sign-in form stops the script: a sign-out clears the browser's cookie
if principal is None:  # the sign-in form whatever the URL (it stops the script); the page asked for opens after it
    ui.keep_deep_link()
    # The same addresses as once signed in: the page asked for (and its query parameters) is the one that opens.
    st.navigation([st.Page(ui.sign_in_page, title="Sign in", url_path=HOME, default=True),
                   *(st.Page(ui.sign_in_page, title="Sign in", url_path=Path(file).stem) for file in TITLES)],
                  position="hidden").run()
    st.stop()  # the sign-in form stops first: this only tells the type checker
pages = pages_for(principal)
page = ui.sidebar_navigation([st.Page(home, title="Datasets", url_path=HOME, default=True, visibility="hidden"),
                              *pages.values()])
# A deep link kept across a first run outside this router opens its page, with its query parameters.
if (deep_link := st.session_state.pop("_deep_link", None)) in pages:
    st.switch_page(deep_link, query_params=st.query_params.to_dict())
with st.sidebar:
    ui.identity(principal)
    ui.poll(ui.activity)
    link = st.empty()  # filled once the page has put its selection in the URL
try:
    page.run()
finally:  # also when the page stops early (st.stop): what it showed so far has its link
    with link.container():
        ui.link_box(page.url_path)
# Once the page is out: the server's first comparison then finds scipy.special (its power figures) imported.
power.prepare()
