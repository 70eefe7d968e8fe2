"""People's labels of a campaign's questions: each judge's agreement with them, the labelling queue, the CSV files."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import ui
from evalcore.access.principals import Action, Principal
from evalcore.campaigns import Campaign
from evalcore.campaigns.question_labels import (
    campaign_agreement,
    campaign_labels,
    import_labels_csv,
    labels_csv,
    set_label,
)
from evalcore.language.text import counted
from evalcore.store import Store
from ui.campaign.result import show_for_labelling
from ui.campaign.tables import agreement_lines, key_help, next_unlabelled, scale_keys

NEXT, PREVIOUS = "right", "left"  # keys of the labelling queue; each label has its own key


def agreement_section(store: Store, principal: Principal, campaign: Campaign) -> None:
    """Each labelled judge against the labels, then the queue that walks the questions to label for one judge."""
    if not campaign.judges:
        st.caption("This campaign ran no judge: there is nothing to label.")
        return
    found = campaign_agreement(store, campaign.id, principal=principal)
    if found:
        st.caption("Agreement of each judge with the labels (weighted kappa on ordinal scales)")
        for line in agreement_lines(found):
            st.text(line)
    ui.open_on(f"label-judge-{campaign.id}", "judge", list(campaign.judges))
    judge = st.selectbox("Label for the judge", list(campaign.judges), key=f"label-judge-{campaign.id}")
    ui.keep(judge=judge)
    if judge in found:
        matrix = found[judge]
        st.caption(f"Confusion matrix of {judge}: rows are the labels, columns the judge's verdicts")
        st.dataframe(pd.DataFrame(matrix.matrix, index=list(matrix.categories), columns=list(matrix.categories)))
    if principal.can(Action.LABEL):
        label_queue(store, principal, campaign, judge)
    labels_files(store, principal, campaign)


def label_queue(store: Store, principal: Principal, campaign: Campaign, judge: str) -> None:
    """One answered question at a time, the first unlabelled first: its texts, a button (and key) per label."""
    answered = [r for r in ui.cached_results(campaign, principal) if not r.outcome.error]
    done = {x.qid: x for x in campaign_labels(store, campaign.id, principal=principal) if x.judge == judge}
    if not answered:
        st.caption("No answered question yet.")
        return
    cursor_key = f"label-at-{campaign.id}-{judge}"
    qids = [r.question.qid for r in answered]
    ui.open_on(cursor_key, "labelling", range(len(answered)), text=lambda i: str(qids[i]))  # a link to a question
    at = st.session_state.get(cursor_key, next_unlabelled(answered, done, -1))
    at = min(max(at, 0), len(answered) - 1)
    result = answered[at]
    ui.keep(labelling=str(result.question.qid))
    st.caption(f"{len(done)} of {len(answered)} answered questions labelled for {judge} · question {at + 1} "
               f"of {len(answered)} · keys: {key_help(scale_keys(campaign, judge))}, ← previous, → next")
    show_for_labelling(result, done.get(result.question.qid))
    note = st.text_input("Note (optional)", key=f"label-note-{campaign.id}-{judge}-{result.question.qid}")
    cols = st.columns(len(scale_keys(campaign, judge)) + 2)
    for col, (label, key) in zip(cols, scale_keys(campaign, judge).items(), strict=False):
        if col.button(label, key=f"label-{label}", shortcut=key, help=f"key {key}"):
            done[result.question.qid] = set_label(store, campaign.id, result.question.qid, judge, label, note=note,
                                                  principal=principal)
            st.session_state[cursor_key] = next_unlabelled(answered, done, at)
            st.rerun()
    if cols[-2].button("Previous", key="label-previous", shortcut=PREVIOUS):
        st.session_state[cursor_key] = max(at - 1, 0)
        st.rerun()
    if cols[-1].button("Next", key="label-next", shortcut=NEXT):
        st.session_state[cursor_key] = next_unlabelled(answered, done, at)
        st.rerun()


def labels_files(store: Store, principal: Principal, campaign: Campaign) -> None:
    """The labels as CSV, and labels from a CSV (qid, judge, label; note and author optional)."""
    left, right = st.columns(2)
    left.download_button("Labels (CSV)", data=lambda: labels_csv(store, campaign.id, principal=principal)
                         .encode("utf-8-sig"), file_name=f"{campaign.id}-labels.csv", mime="text/csv",
                         key="labels-export")
    if principal.can(Action.LABEL):
        upload = right.file_uploader("Import labels (CSV)", type=["csv"], key=f"labels-import-{campaign.id}")
        if upload is not None and right.button("Import", key="labels-import-go"):
            with ui.guard():
                count = import_labels_csv(store, campaign.id, upload.getvalue().decode("utf-8-sig"), source=upload.name,
                                          principal=principal)
                ui.flash(f"{counted(count, 'label')} imported")
                st.rerun()
