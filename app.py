"""The dashboard router: `streamlit run app.py` opens on the built-in sample dataset."""

from __future__ import annotations

import streamlit as st

import ui

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

st.session_state["_routed"] = True  # ui.title: this session's pages run under this router
page = st.navigation(PAGES)
if deep_link := st.session_state.pop("_deep_link", None):
    st.switch_page(deep_link)
with st.sidebar:
    ui.poll(ui.activity)
page.run()
