"""A campaign's progress, metric panels and summary, and its configuration."""

from __future__ import annotations

import streamlit as st

import ui
from evalcore.access.principals import Principal
from evalcore.campaigns import Campaign, get_campaign
from evalcore.campaigns.pace import duration_text
from evalcore.campaigns.result_rows import load_signatures
from evalcore.costs import cost_line
from evalcore.language.text import counted
from evalcore.metrics import panels
from evalcore.store import Store
from ui.campaign.tables import measure_value

PANEL_COLUMNS = 4  # measures a row of a panel shows


def panel(store: Store, principal: Principal, listed: Campaign) -> None:
    """Progress, the metric panels and the summary (refreshed while it runs: `listed` is the campaign as the page
    read it)."""
    campaign = get_campaign(store, listed.id, principal=principal)
    if not campaign.active and listed.active:
        st.rerun()  # it just finished: redraw the whole page (question list, buttons) once
    ui.show_progress(campaign)
    if campaign.error:
        st.text(f"error: {campaign.error}")
    aggregates = ui.aggregates(campaign, principal)
    signatures = load_signatures(store, campaign.id)
    for title, names in panels(aggregates):
        st.caption(ui.escape_md(title))
        cols = st.columns(PANEL_COLUMNS)  # four a row: a name as long as graded.top1_relevance is not cut
        for position, name in enumerate(names):
            value = aggregates[name]
            hover = f"mean over {counted(value.count, 'question')}\n\n" + ui.measure_help(name, signatures.get(name))
            cols[position % PANEL_COLUMNS].metric(ui.escape_md(name), measure_value(name, value), help=hover)
    summary = ui.summary(campaign, principal)
    st.caption("Summary")
    cols = st.columns(8)
    cols[0].metric("Answered", summary.answered)
    cols[1].metric("Failed", summary.failed)
    cols[2].metric("Sources found", ui.fmt_value(summary.sources_found_rate, 2))
    cols[3].metric("Mean coverage", ui.fmt_value(summary.mean_coverage, 2))
    cols[4].metric("Mean AI score", ui.fmt_value(summary.mean_judge_score, 2))
    cols[5].metric("Mean response time", duration_text(summary.mean_latency_s))
    cols[6].metric("Tokens", summary.total_tokens,
                   help=f"answers {summary.tokens.total} · judges {summary.judge_tokens.total} · "
                        f"total {summary.total_tokens}")
    cols[7].metric("Cost", summary.cost.text(), help=ui.escape_md(cost_line(summary.usage, campaign.finished)))
    if summary.unknown:
        st.caption("Unreadable verdicts (unknown, never a pass): " + ", ".join(
            f"{ui.escape_md(name)} {count} of {summary.judged.get(name, 0)}"
            for name, count in summary.unknown.items()))
    for line in summary.warnings:
        st.warning(ui.escape_md(line))
    if summary.skipped:
        st.caption("Not judged for want of a reference answer: "
                   + ", ".join(f"{ui.escape_md(name)} {count}" for name, count in summary.skipped.items()))
    if summary.no_claim:
        st.caption("Answers that make no claim (refusals: marked, not scored): "
                   + ", ".join(f"{ui.escape_md(name)} {count}" for name, count in summary.no_claim.items()))
    if summary.cut:
        st.warning("Context cut to fit the judge model's context window (the judge saw less than the answer's "
                   "prompt): " + ", ".join(f"{ui.escape_md(name)} {count}" for name, count in summary.cut.items()))


def configuration_section(campaign: Campaign) -> None:
    """The configuration snapshot the campaign ran with, and where it comes from."""
    st.json(campaign.config, expanded=False)
    st.caption(ui.escape_md(f"id {campaign.id} · dataset hash {campaign.dataset_hash or '—'} · judges "
                            f"{', '.join(campaign.judges) or 'none'} · cache {'on' if campaign.cache else 'off'} "
                            f"({campaign.cache_hits} hits) · created {ui.fmt_when(campaign.created_at)}"))
