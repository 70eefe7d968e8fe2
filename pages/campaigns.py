"""Campaigns: the list, one campaign's metric panel and summary, its sections (questions, conversations when its
questions are turns of some, failure stages, labels, configuration), actions and exports; each section is a function
of ui.campaign given what it shows."""

from __future__ import annotations

import streamlit as st

import ui
from evalcore.access.principals import Action
from evalcore.campaigns import campaign_conversations, get_campaign, list_campaigns
from ui.campaign.actions import actions, judge_again
from ui.campaign.conversations import conversations_section
from ui.campaign.exports import exports_section
from ui.campaign.labels import agreement_section
from ui.campaign.panel import configuration_section, panel
from ui.campaign.questions import diagnosis_section, questions_section

QUESTIONS, STAGES, LABELS, CONFIGURATION = "Questions", "Failure stages", "Labels", "Configuration"
CONVERSATIONS = "Conversations"
SECTIONS = [QUESTIONS, STAGES, LABELS, CONFIGURATION]

principal = ui.page("Campaigns")
store = ui.store()
campaigns = list_campaigns(store, principal=principal)
if not campaigns:
    st.info("No campaign yet.")
    ui.run_link(principal, "Run a first campaign")
    st.stop()
by_id = {c.id: c for c in campaigns}
ui.open_on("campaign_id", "campaign", list(by_id))  # a link to a campaign opens it, not the newest
shown_id = ui.campaign_picker(ui.rows_of(campaigns, principal), "campaign_id", key="campaigns")
if shown_id is None:
    st.stop()
campaign = by_id[shown_id]
if ui.asked("campaign") not in (None, shown_id):  # another campaign: the question and labels of the last one go
    ui.keep(question=None, judge=None, labelling=None)
ui.keep(campaign=shown_id)
st.subheader(ui.escape_md(campaign.name), anchor=False)
if campaign.answers_from is not None:
    judged = by_id.get(campaign.answers_from)
    st.caption(ui.escape_md(f"Judges again the answers of {judged.name if judged else campaign.answers_from}: its "
                            "target was not asked."))
if principal.can(Action.CHANGE):
    actions(store, principal, campaign)
    judge_again(store, principal, campaign)
if campaign.active:
    ui.poll(lambda: panel(store, principal, campaign))
else:
    panel(store, principal, campaign)
# One section at a time below the panel, computed only when open: a first visit draws the questions, not the
# failure-stage chart and the configuration too.
talks = campaign_conversations(store, campaign.id, principal=principal)
shown_sections = [QUESTIONS, CONVERSATIONS, *SECTIONS[1:]] if talks else SECTIONS
ui.open_on("campaign-section", "section", shown_sections)
sections = dict(zip(shown_sections, st.tabs(shown_sections, key="campaign-section", on_change="rerun"),
                    strict=True))
ui.keep(section=st.session_state["campaign-section"])
if CONVERSATIONS in sections and sections[CONVERSATIONS].open:
    with sections[CONVERSATIONS]:
        conversations_section(store, principal, campaign, talks)
if sections[QUESTIONS].open:
    with sections[QUESTIONS]:
        questions_section(principal, campaign)
if sections[STAGES].open:
    with sections[STAGES]:
        if campaign.active:  # refreshed while it runs, as the panel is
            ui.poll(lambda: diagnosis_section(store, principal, get_campaign(store, campaign.id, principal=principal)))
        else:
            diagnosis_section(store, principal, campaign)
if sections[LABELS].open:
    with sections[LABELS]:
        agreement_section(store, principal, campaign)
if sections[CONFIGURATION].open:
    with sections[CONFIGURATION]:
        configuration_section(campaign)
exports_section(store, principal, campaign)
