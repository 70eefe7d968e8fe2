"""Progress of running campaigns: one line of text, a bar, and the activity on every page."""

from __future__ import annotations

import streamlit as st

from evalcore.campaigns import Campaign, CampaignStatus, list_campaigns
from evalcore.campaigns.pace import duration_text
from ui.engine import store
from ui.session import signed_in
from ui.text import escape_md


def progress_text(campaign: Campaign) -> str:
    """Questions finished of total, the stage before them with its chunks, failed, rate and time left, in one line."""
    progress = campaign.progress()
    parts = [f"{progress.finished}/{progress.total} questions"]
    if progress.stage is not None:
        chunks = f" {progress.stage_done}/{progress.stage_total} chunks" if progress.stage_total else ""
        parts.append(f"preparing the knowledge base: {progress.stage}{chunks}")
    elif campaign.status == CampaignStatus.RUNNING and campaign.pace_at is None:
        parts.append("starting")
    elif campaign.status == CampaignStatus.QUEUED:
        parts.append("waiting for a worker: campaigns run a few at a time")
    if campaign.failed:
        parts.append(f"{campaign.failed} failed")
    if progress.rate_per_s:
        parts.append(f"{progress.rate_per_s:.1f} q/s")
    if campaign.active and progress.eta_s is not None:
        parts.append(f"{duration_text(progress.eta_s)} left" + (" in this step" if progress.stage else ""))
    return " · ".join(parts)


def show_progress(campaign: Campaign) -> None:
    """A progress bar of the current stage (the index build's chunks, then the questions) with its status line."""
    st.progress(campaign.progress().share,
                text=escape_md(f"{campaign.name} · {campaign.status_text} · {progress_text(campaign)}"))


def activity() -> None:
    """The signed-in tenant's campaigns in progress, on every page (polled: the workers never touch Streamlit)."""
    principal = signed_in()
    running = [c for c in list_campaigns(store(), principal=principal) if c.active] if principal else []
    if running:
        st.caption("Running campaigns")
        for campaign in running:
            show_progress(campaign)
