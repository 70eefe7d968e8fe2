"""The Campaigns page's "Conversations" section: each conversation's share of turns passed and first failing turn,
then one conversation turn by turn with its retrieved passages."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import ui
from evalcore.access.principals import Action, Principal
from evalcore.campaigns import Campaign, ConversationResult, ConversationSummary, campaign_results
from evalcore.campaigns.talk_judges import judge_conversations
from evalcore.language.text import counted
from evalcore.store import Store
from ui.campaign.result import show_result
from ui.campaign.tables import stage_line

# The conversation judges as the table names them.
JUDGE_COLUMNS = {"conversation_contradiction": "no contradiction", "conversation_goal": "goal reached"}


def conversations_section(store: Store, principal: Principal, campaign: Campaign,
                          found: list[ConversationResult]) -> None:
    """Each conversation's share of turns passed and first failing turn; then one conversation turn by turn, each
    with its answer, stage and retrieved passages."""
    summary = ConversationSummary.of(found)
    mean = "-" if summary.mean_share_passed is None else f"{summary.mean_share_passed:.0%}"
    st.caption(f"{counted(summary.conversations, 'conversation')} · {summary.all_passed} with every judged turn "
               f"passed · mean share of turns passed {mean}")
    st.dataframe(pd.DataFrame([{"conversation": c.conversation, "turns": len(c.turns), "passed": c.passed,
                                "judged": c.judged, "share passed": c.share_passed,
                                "first failing turn": c.first_failing_turn, "how": c.first_failure,
                                **{JUDGE_COLUMNS.get(name, name): str(verdict.result)
                                   for name, verdict in c.judges.items()}}
                               for c in found]), hide_index=True)
    if principal.can(Action.CHANGE) and not campaign.active and st.button(
            "Judge the conversations", key=f"judge-conversations-{campaign.id}",
            help="Ask the judges that read each whole conversation, with the campaign's judge model: does an answer "
                 "contradict an earlier one, did the conversation reach what the user asked. Their verdicts are "
                 "kept (asked again, they replace them)."):
        with ui.guard():
            judge_conversations(store, campaign.id, principal=principal)
            ui.flash(f"Judged {counted(len(found), 'conversation')}.")
            st.rerun()
    by_name = {c.conversation: c for c in found}
    name = st.selectbox("Conversation", list(by_name), key=f"conversation-{campaign.id}")
    if name is None:
        return
    turns = by_name[name].turns
    results = {r.question.position: r for r in campaign_results(store, campaign.id, principal=principal,
                                                                 positions=[t.position for t in turns])}
    for judge, verdict in by_name[name].judges.items():
        st.text(f"{JUDGE_COLUMNS.get(judge, judge)}: {verdict.result} ({verdict.reason})")
    for turn in turns:
        result = results.get(turn.position)
        if result is not None:
            with st.expander(f"Turn {turn.turn} · {stage_line(result)}", expanded=turn.passed is False):
                show_result(result)
