"""A campaign's questions: a page at a time, filtered, one in full; and where they failed (failure stages)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import ui
from evalcore.access.principals import Principal
from evalcore.campaigns import Campaign, campaign_diagnosis
from evalcore.diagnosis import NOT_ATTRIBUTED
from evalcore.metrics import question_columns
from evalcore.store import Store
from ui.campaign.result import show_result
from ui.campaign.tables import abstention_text, results_table

PAGE_SIZE = 100  # questions in the table and its picker at a time
# Per question: the headline measures and the retrieval ones people sort by first.
QUESTION_MEASURES = question_columns()


def questions_section(principal: Principal, campaign: Campaign) -> None:
    """The questions as a table, a page at a time, filtered by words or errors, and one of them in full."""
    st.subheader("Questions", anchor=False)
    chosen = campaign.id
    lines = ui.cached_lines(campaign, principal)  # what the filter reads; whole results only for the page shown
    search, only_errors, paging = st.columns([4, 1, 1], vertical_alignment="bottom")
    with search:  # both kept while another section is open
        needle = ui.remembered(st.text_input, "Filter questions", "campaign-filter", "",
                               placeholder="words of the question or the answer")
    with only_errors:
        errors_only = ui.remembered(st.checkbox, "Only errors", "campaign-errors", False)
    matching = [line.position for line in lines if (not errors_only or line.error)
                and (not needle or needle.casefold() in f"{line.text} {line.answer or ''}".casefold())]
    pages = max((len(matching) + PAGE_SIZE - 1) // PAGE_SIZE, 1)
    seeded = open_question(chosen, matching)
    number = paging.number_input(f"Page (of {pages})", min_value=1, max_value=pages, value=None if seeded else 1,
                                 key=f"page-{chosen}") or 1
    shown = ui.results_at(campaign, principal, tuple(matching[(number - 1) * PAGE_SIZE: number * PAGE_SIZE]))
    if shown:
        # One question in full at a time: a click on its row, or the picker, chooses it.
        labels = {str(r.question.position): f"{r.question.qid} · {'error' if r.outcome.error else 'ok'} · "
                  f"{ui.short(r.question.text, 100)}" for r in shown}
        # The measures' columns: those of the campaign's questions (any of them has it), whatever the page.
        present = ui.aggregates(campaign, principal)
        overview = results_table(shown, [name for name in QUESTION_MEASURES if name in present])
        picked = ui.table_picker("Question", overview, labels, f"question-{chosen}", key=f"questions-{chosen}")
        ui.keep(question=picked)
        show_result(next(r for r in shown if str(r.question.position) == picked))
    else:
        st.caption("No question matches." if lines else "No question has finished yet.")


def open_question(chosen: str, matching: list[int]) -> bool:
    """A link to a question (its position) opens it: its page of the table, then it in the picker. True when it set
    the page (the page's input then takes no default)."""
    state_key = f"question-{chosen}"
    asked = ui.asked("question")
    if state_key in st.session_state or asked is None or not asked.isdigit() or int(asked) not in matching:
        return False
    st.session_state[state_key] = asked
    st.session_state[f"page-{chosen}"] = matching.index(int(asked)) // PAGE_SIZE + 1
    return True


def diagnosis_section(store: Store, principal: Principal, campaign: Campaign) -> None:
    """Where the questions failed (a bar of the stages, the questions of one) and whether the target declines well."""
    counts = campaign_diagnosis(store, campaign.id, principal=principal)
    if counts.total == counts.counts.get(NOT_ATTRIBUTED, 0):
        st.caption("No failure stage: no question has finished yet, or its results were stored before failure "
                   "attribution existed.")
        return
    st.caption("Failure attribution: the stage at which each question went wrong")
    ui.stage_bar(counts, key="stages-chart")
    if (abstention := abstention_text(ui.aggregates(campaign, principal))) is not None:
        st.caption(ui.escape_md(f"Abstention: {abstention}"))
    present = [stage for stage, count in counts.counts.items() if count]
    stage = st.selectbox("Questions at stage", present, format_func=lambda s: f"{s} ({counts.counts[s]})",
                         key=f"stage-{campaign.id}")
    rows = [r for r in ui.cached_results(campaign, principal) if (r.outcome.diagnosis or NOT_ATTRIBUTED) == stage]
    st.dataframe(ui.cells(pd.DataFrame([{"qid": r.question.qid, "question": r.question.text, "answer": r.outcome.answer,
                                "error": r.outcome.error, **{name: r.outcome.measures.get(name)
                                                             for name in QUESTION_MEASURES}}
                                        for r in rows])), hide_index=True, height=200)
