"""A campaign's results as files: CSV, JSONL and a TREC run, built when their button is clicked."""

from __future__ import annotations

from functools import partial

import streamlit as st

from evalcore.access import Principal
from evalcore.campaigns.export import export_campaign
from evalcore.store import Store

FORMATS = (("csv", "text/csv", "CSV", "csv"), ("jsonl", "application/jsonl", "JSONL", "jsonl"),
           ("trec", "text/plain", "TREC run", "run.txt"))


def export(store: Store, principal: Principal, campaign_id: str, fmt: str, names: str) -> bytes:
    """The campaign as a file (the CSV is formula-safe, with a BOM)."""
    return export_campaign(store, campaign_id, fmt, principal=principal,
                           names=names).encode("utf-8-sig" if fmt == "csv" else "utf-8")


def exports_section(store: Store, principal: Principal, campaign_id: str) -> None:
    """A download button per format, and whether judge fields take the evaluators' names."""
    st.caption("Export")
    cols = st.columns([1, 1, 1, 4])
    names = "evaluator" if cols[3].checkbox(
        "Judge fields under the evaluators' names", key="export-names",
        help="gpt_retrieval, retrieval_reason, response_completeness_result, groundedness_pro_label… instead of "
        "score, completeness, groundedness_pro (CSV and JSONL)") else "project"
    for col, (fmt, mime, label, suffix) in zip(cols, FORMATS, strict=False):
        col.download_button(label, data=partial(export, store, principal, campaign_id, fmt, names),
                            file_name=f"{campaign_id}.{suffix}", mime=mime, key=f"export-{fmt}", on_click="ignore")
