"""Suites: list, create, edit cases in a table, import a CSV with a line-by-line report, download."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

import ui
from evalcore.access import Action
from evalcore.datasets import DATASET_ROOT
from evalcore.suites import MAX_CASES, MAX_SOURCES, Case, create_suite, delete_suite, list_suites, replace_suite
from evalcore.suites.csvfile import export_suite_csv, parse_suite_csv

NEW = "(new suite)"
SAMPLE_SUITE = DATASET_ROOT / "samples" / "suite.csv"
COLUMNS = {
    "question": st.column_config.TextColumn("question", required=True, width="large"),
    "expected_answer": st.column_config.TextColumn("expected answer", width="medium"),
    "expected_sources": st.column_config.TextColumn(
        "expected sources", help=f"Titles, file names (even partial) or document ids, separated by |; at most {MAX_SOURCES}."),
}


def case_row(case: Case) -> dict[str, str]:
    """A suite case as a row of the case editor."""
    return {"question": case.question, "expected_answer": case.expected_answer or "",
            "expected_sources": " | ".join(case.expected_sources)}


def editor_cases(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of the case editor as case mappings; rows left entirely empty are dropped."""
    rows = frame.astype(object).where(frame.notna(), "").to_dict("records")
    return [row for row in rows if any(str(value).strip() for value in row.values())]


principal = ui.page("Suites", needs=Action.CHANGE)
store = ui.store()
suites = list_suites(store, principal=principal)
if suites:
    st.dataframe(pd.DataFrame([{"name": s.name, "id": s.id, "cases": len(s.cases), "target": s.target_id,
                                "updated": ui.fmt_when(s.updated_at)} for s in suites]), hide_index=True)
else:
    st.info("No suite yet: create one below or import a CSV (question ; expected answer ; sources).")

ids = [NEW, *(s.id for s in suites)]
by_id = {s.id: s for s in suites}
chosen = ui.remembered_select("Suite", ids, "suite_id", format_func=lambda i: i if i == NEW else f"{by_id[i].name} · {i}")
suite = by_id.get(chosen)
targets = ui.target_choices(store, principal)
name = st.text_input("Name", value=suite.name if suite else "")
target_ids = list(targets)
target_id = st.selectbox("Target", target_ids, format_func=lambda i: targets[i],
                     index=ui.index_of(target_ids, suite.target_id if suite else None),
                     help="The saved configuration a campaign of this suite runs.") or "default"
rows = pd.DataFrame([case_row(c) for c in suite.cases] if suite else [], columns=list(COLUMNS), dtype="string")
edited = st.data_editor(rows, column_config=COLUMNS, num_rows="dynamic", hide_index=True, key=f"cases-{chosen}")
cases = editor_cases(edited)
st.caption(f"{len(cases)}/{MAX_CASES} cases")

save, download, remove = st.columns([1, 1, 2])
if save.button("Save" if suite else "Create", type="primary"):
    with ui.guard():
        if suite:
            replace_suite(store, suite.id, name=name, target_id=target_id, cases=cases, principal=principal)
        else:
            created = create_suite(store, name=name, target_id=target_id, cases=cases, principal=principal)
            ui.select_next_run("suite_id", created.id)
        st.session_state.pop(f"cases-{chosen}", None)  # the saved rows are the editor's new starting table
        ui.flash(f"Saved {len(cases)} case(s).")
        st.rerun()
if suite:
    with ui.guard():
        download.download_button("CSV", data=ui.spreadsheet_bytes(export_suite_csv(suite.cases)), file_name=f"{suite.name}.csv",
                                 mime="text/csv", on_click="ignore")
    confirm = remove.checkbox("Also delete its campaigns", key="confirm-delete", help="Deleting a suite deletes its campaigns.")
    if remove.button("Delete suite", disabled=not confirm):
        with ui.guard():
            delete_suite(store, suite.id, principal=principal)
            ui.select_next_run("suite_id", NEW)
            st.rerun()

st.subheader("Import a CSV")
if SAMPLE_SUITE.is_file() and st.button("Add the sample suite", help=f"Imports {SAMPLE_SUITE.name}: questions about the sample dataset's documents."):
    with ui.guard():
        sample = parse_suite_csv(SAMPLE_SUITE.read_bytes(), source=SAMPLE_SUITE.name)
        created = create_suite(store, name="sample", target_id="default", cases=sample.cases, principal=principal)
        ui.select_next_run("suite_id", created.id)
        ui.flash(f"Added the sample suite ({len(created.cases)} cases) as {created.id}.")
        st.rerun()
upload = st.file_uploader("question ; expected answer ; sources (separator ; or , detected, header optional)",
                          type=["csv", "txt"], key="suite_csv")
if upload is not None:
    with ui.guard():
        report = parse_suite_csv(upload.getvalue(), source=upload.name)
        st.code("\n".join(report.report_lines()), language=None, wrap_lines=True)
        choice = "all"
        if report.rejected:
            st.warning(f"{len(report.rejected)} line(s) rejected: nothing is imported unless you choose the valid lines.")
            choice = st.radio("Import", ["nothing", "the valid lines"], horizontal=True)
        import_name = st.text_input("New suite name", value=Path(upload.name).stem, key="import-name")
        if st.button(f"Import {len(report.cases)} case(s) as a new suite", disabled=choice == "nothing" or not report.cases):
            created = create_suite(store, name=import_name, target_id=target_id, cases=report.cases, principal=principal)
            ui.select_next_run("suite_id", created.id)
            ui.flash(f"Imported {len(created.cases)} case(s) into {created.id}.")
            st.rerun()
