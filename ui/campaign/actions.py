"""What an admin does to a campaign: rename, resume, retry failed, cancel, delete, recompute abstention, judge again."""

from __future__ import annotations

from typing import Any

import streamlit as st

import ui
from evalcore.access.principals import Action, Principal
from evalcore.campaigns import Campaign, get_campaign
from evalcore.campaigns.recompute import recompute_abstention
from evalcore.campaigns.rejudging import JUDGEABLE, RejudgeRequest
from evalcore.costs import money
from evalcore.errors import EvalError
from evalcore.judges import JUDGES
from evalcore.language.text import counted
from evalcore.store import Store
from evalcore.store.campaign_statuses import CampaignStatus

RUBRIC_HELP = ("Optional: a judge defined in plain words, e.g. '# output: 1-5', '# reads: question, answer, "
               "expected', then [criteria] and its text (see the Run page's rubric judges)")
JUDGE_AGAIN_OPEN = "rejudge-open"  # whether the "Judge again" form is open (Session State)


def actions(store: Store, principal: Principal, campaign: Campaign) -> None:
    """Rename, resume, retry failed, cancel, delete, recompute abstention (admins only): each refused with a message
    when it does not apply."""
    manager = ui.manager()
    active, chosen = campaign.active, campaign.id
    with st.form(f"rename-{chosen}", border=False, enter_to_submit=True):
        name, button = st.columns([4, 1], vertical_alignment="bottom")
        new_name = name.text_input("Name", value=campaign.name, max_chars=200, key=f"name-{chosen}")
        if button.form_submit_button("Rename"):
            with ui.guard():
                manager.rename(chosen, new_name, principal=principal)
                ui.flash(f"Renamed to {' '.join(new_name.split())}.")
                st.rerun()
    budget = larger_budget(campaign)
    cols = st.columns([1, 1, 1, 1, 2])
    if cols[0].button("Resume", disabled=active or campaign.finished >= campaign.total):
        with ui.guard():
            manager.resume(chosen, principal=principal, max_cost=budget)
            st.rerun()
    if cols[1].button("Retry failed", disabled=active or not campaign.failed):
        with ui.guard():
            manager.retry_failed(chosen, principal=principal)
            st.rerun()
    if cols[2].button("Cancel", disabled=not active):
        with ui.guard():
            manager.cancel(chosen, principal=principal)
            # It stays "running" until its questions in flight (or the corpus indexing) finish.
            ui.flash(f"Cancellation requested for {campaign.name}: it stops once the work in progress ends.")
            st.rerun()
    confirm = cols[4].checkbox("Confirm deletion", key=f"confirm-{chosen}")
    if cols[3].button("Delete", disabled=not confirm):
        with ui.guard():
            manager.delete(chosen, principal=principal)
            ui.flash(f"Deleted {campaign.name}.")
            st.rerun()
    if st.button("Recompute abstention", disabled=active, help="Recompute which questions are unanswerable and the "
                 "abstention measures under the current rule (only a marker makes a question unanswerable; "
                 "no expected answer is no reference). Stored campaigns never change otherwise."):
        with ui.guard():
            changed = recompute_abstention(store, chosen, principal=principal)
            ui.flash(f"Recomputed abstention: {counted(changed, 'question')} changed.")
            st.rerun()


def larger_budget(campaign: Campaign) -> float | None:
    """For a campaign stopped at its budget, the larger budget it is resumed with (an input, twice the old one to
    start with); None for others, which resume with the budget they have."""
    old = float(campaign.config.get("max_cost") or 0.0)
    if campaign.status != CampaignStatus.OVER_BUDGET or old <= 0:  # no budget of its own: its tenant's daily one
        return None
    st.caption(ui.escape_md(f"It stopped at its budget of {money(old)}: resume it with a larger one."))
    return float(st.number_input("New budget (max_cost)", min_value=0.0, value=2 * old, format="%.6g",
                                 key=f"budget-{campaign.id}", help="In the currency of the prices; it must be above "
                                 "what the campaign has spent. Saved in its configuration's max_cost."))


def judge_again(store: Store, principal: Principal, campaign: Campaign) -> None:
    """A finished campaign's answers judged again by other judges, a model, a rubric: a new campaign that asks
    nothing of the target (evalcore.campaigns.rejudging)."""
    rubrics, chosen = list(campaign.config.get("rubrics") or {}), campaign.id
    # Its form is drawn only once opened: a first visit to the page does not draw its seven fields.
    box = st.expander("Judge again", key=JUDGE_AGAIN_OPEN, on_change="rerun")
    if not box.open:
        return
    with box, st.form(f"rejudge-{chosen}", border=False):
        st.caption("A new campaign judges these answers again, without asking the target: compare the two to see "
                   "what the judges change, and how far they agree.")
        judges = st.multiselect("Judges", [*JUDGES, *rubrics], default=list(campaign.judges), key="rejudge-judges")
        settings: dict[str, str] = {}
        if principal.can(Action.CONFIGURE):
            model, base_url, key_env = st.columns(3)
            settings = {"judge_model": model.text_input("Judge model", key="rejudge-model", placeholder="gpt-4o-mini"),
                        "judge_base_url": base_url.text_input("Judge base URL", key="rejudge-url"),
                        "judge_api_key_env": key_env.text_input("Variable holding its key", key="rejudge-key-env")}
        rubric_name, rubric_text = st.columns([1, 3])
        name = rubric_name.text_input("Rubric name", key="rejudge-rubric-name", placeholder="optional")
        text = rubric_text.text_area("Rubric", key="rejudge-rubric", height=120, help=RUBRIC_HELP)
        if not st.form_submit_button("Judge again", disabled=campaign.status not in JUDGEABLE):
            return
    rubric = name.strip()
    given: dict[str, Any] = {key: value.strip() for key, value in settings.items() if value.strip()}
    given |= {"rubrics": {rubric: text}} if rubric else {}
    with ui.guard():
        if text.strip() and not rubric:
            raise EvalError("a rubric needs a name", where="Rubric name", fix="name it: lower-case letters, digits, _")
        judged = [*judges, *([rubric] if rubric else [])]
        new = ui.manager().rejudge(RejudgeRequest(chosen, judges=tuple(judged), settings=given, principal=principal))
        ui.flash(f"Judging again as {get_campaign(store, new, principal=principal).name}.")
        ui.select_next_run("campaign_id", new)
        st.rerun()
