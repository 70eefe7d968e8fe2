"""A campaign's results as files: CSV, JSONL and a TREC run, built when their button is clicked."""

from __future__ import annotations

from functools import partial

import streamlit as st

from evalcore.access.principals import Principal
from evalcore.campaigns import Campaign
from evalcore.campaigns.export import export_campaign
from evalcore.errors import EvalError
from evalcore.store import Store

CHECKED = 1000  # an external target's campaign up to this many questions: its TREC run is tried before it is offered
FORMATS = (("csv", "text/csv", "CSV", "csv"), ("jsonl", "application/jsonl", "JSONL", "jsonl"),
           ("trec", "text/plain", "TREC run", "run.txt"))


def export(store: Store, principal: Principal, campaign_id: str, fmt: str, names: str) -> bytes:
    """The campaign as a file (the CSV is formula-safe, with a BOM)."""
    return export_campaign(store, campaign_id, fmt, principal=principal,
                           names=names).encode("utf-8-sig" if fmt == "csv" else "utf-8")


def trec_refusal(store: Store, principal: Principal, campaign: Campaign) -> str | None:
    """Why this campaign has no TREC run (an external target's sources may have no id), else None: tried at once
    for a finished campaign of an HTTP agent or a results file (ours always rank passages)."""
    if campaign.config.get("kind", "rag") == "rag" or campaign.active or campaign.total > CHECKED:
        return None
    try:
        export_campaign(store, campaign.id, "trec", principal=principal)
    except EvalError as error:
        return f"{error.message} ({error.fix})"
    return None


def exports_section(store: Store, principal: Principal, campaign: Campaign) -> None:
    """A download button per format, and whether judge fields take the evaluators' names."""
    st.caption("Export")
    cols = st.columns([1, 1, 1, 4])
    names = "evaluator" if cols[3].checkbox(
        "Judge fields under the evaluators' names", key="export-names",
        help="gpt_retrieval, retrieval_reason, response_completeness_result, groundedness_pro_label… instead of "
        "score, completeness, groundedness_pro (CSV and JSONL)") else "project"
    no_trec = trec_refusal(store, principal, campaign)
    for col, (fmt, mime, label, suffix) in zip(cols, FORMATS, strict=False):
        col.download_button(label, data=partial(export, store, principal, campaign.id, fmt, names),
                            file_name=f"{campaign.id}.{suffix}", mime=mime, key=f"export-{fmt}", on_click="ignore",
                            disabled=fmt == "trec" and no_trec is not None,
                            help=no_trec if fmt == "trec" else None)
    if no_trec is not None:
        st.caption(f"TREC run: {no_trec}")
