"""Suites: list, create, edit cases in a table, import a CSV with a line-by-line report, download."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

import ui
from evalcore.access.principals import Action, Principal
from evalcore.campaigns.launching import LaunchRequest
from evalcore.datasets import SAMPLE_FOLDER
from evalcore.language.text import counted
from evalcore.metrics.answer_checks import checks_cell
from evalcore.suites import (
    MAX_CASES,
    MAX_SOURCES,
    Case,
    IfExists,
    Suite,
    create_suite,
    delete_suite,
    list_suites,
    parse_suite_csv,
    replace_suite,
    suite_csv_bytes,
    suite_named,
)

NEW = "(new suite)"
SAMPLE_SUITE = SAMPLE_FOLDER / "suite.csv"
SAMPLE_NAME = "sample"
UPLOADS = "suite-imports"  # imports done in this session: the uploader's key changes with each, which empties it
COLUMNS = {
    "question": st.column_config.TextColumn("question", required=True, width="large"),
    "expected_answer": st.column_config.TextColumn("expected answer", width="medium"),
    "expected_sources": st.column_config.TextColumn(
        "expected sources",
        help=f"Titles, file names (even partial) or document ids, separated by |; at most {MAX_SOURCES}."),
    "checks": st.column_config.TextColumn(
        "checks", width="medium",
        help="Exact checks the answer must pass, separated by ; (\\; inside one): contains:TEXT, not_contains:TEXT, "
             "contains_any:A|B, contains_all:A|B, regex:PATTERN, json_valid, json_schema:SCHEMA, length:MIN..MAX, "
             "number_close:TOLERANCE."),
    "conversation": st.column_config.TextColumn(
        "conversation", help="The conversation this question is a turn of (empty: asked alone)."),
    "turn": st.column_config.TextColumn(
        "turn", help="Its turn in the conversation, from 1 (empty: the conversation's rows in table order)."),
}
# What to do when a suite of the name exists: the choices, in words.
CHOICES = {"replace": IfExists.REPLACE, "keep both": IfExists.KEEP_BOTH}


def case_row(case: Case) -> dict[str, str]:
    """A suite case as a row of the case editor."""
    return {"question": case.question, "expected_answer": case.expected_answer or "",
            "expected_sources": " | ".join(case.expected_sources), "checks": checks_cell(case.checks),
            "conversation": case.conversation or "", "turn": "" if case.turn is None else str(case.turn)}


def editor_cases(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of the case editor as case mappings; rows left entirely empty are dropped."""
    rows = frame.astype(object).where(frame.notna(), "").to_dict("records")
    return [row for row in rows if any(str(value).strip() for value in row.values())]


def existing_choice(name: str, key: str, principal: Principal) -> IfExists | None:
    """REFUSE when no suite has the name; else what the user chose to do with the one that has (None: not yet)."""
    existing = suite_named(ui.store(), name, principal=principal)
    if existing is None:
        return IfExists.REFUSE
    st.warning(f"A suite named {ui.escape_md(existing.name)} already exists ({len(existing.cases)} cases, updated "
               f"{ui.fmt_when(existing.updated_at)}): give another name, or choose what to do with it.")
    how = st.radio("The existing suite", list(CHOICES), index=None, horizontal=True, key=f"{key}-existing",
                   captions=["it takes these cases and this target; its id and campaigns stay",
                             f"import under a free name, {ui.escape_md(name)} (2)"])
    return CHOICES[how] if how else None


def import_cases(cases: list[Case], name: str, choice: IfExists, principal: Principal, target_id: str,
                 places: list[str] | None = None) -> None:
    """Create the suite (or replace the one of that name) running target_id, pick it, and say what happened (`places`:
    each case's line in its file, named if one is refused)."""
    created = create_suite(ui.store(), name=name, target_id=target_id, cases=cases, principal=principal,
                           if_exists=choice, places=places)
    ui.select_next_run("suite_id", created.id)
    st.session_state.pop("import-sample", None)
    # A new key empties the uploader: the imported file would otherwise stay, and say its suite already exists.
    st.session_state[UPLOADS] = st.session_state.get(UPLOADS, 0) + 1
    replaced = "replacing the cases of" if created.created_at != created.updated_at else "into"
    ui.flash(f"Imported {counted(len(created.cases), 'case')} {replaced} {created.name}.")
    st.rerun()


def launch_suite(suite: Suite, use_judge: bool, principal: Principal) -> None:
    """A campaign of the saved suite on its target, then the Campaigns page open on it."""
    campaign_id = ui.manager().launch(LaunchRequest(suite_id=suite.id, use_judge=use_judge, principal=principal))
    st.session_state["launched"] = [campaign_id, *st.session_state.get("launched", [])]
    ui.select_next_run("campaign_id", campaign_id)
    ui.flash(f"Launched a campaign of {suite.name} ({campaign_id}): its progress is below.")
    st.switch_page("pages/campaigns.py")


def import_panel(data: bytes, filename: str, key: str, principal: Principal, target_id: str) -> None:
    """The line-by-line report of a CSV, its name, what to do with a suite of that name, and the import button
    (the suite runs target_id)."""
    report = parse_suite_csv(data, source=filename)
    st.code("\n".join(report.report_lines()), language=None, wrap_lines=True)
    lines = "all"
    if report.rejected:
        st.warning(f"{counted(len(report.rejected), 'line')} rejected: nothing is imported unless you choose the "
                   "valid lines.")
        lines = st.radio("Import", ["nothing", "the valid lines"], horizontal=True, key=f"{key}-lines")
    name = st.text_input("New suite name", value=Path(filename).stem, key=f"{key}-name")
    choice = existing_choice(name, key, principal) if name.strip() else None
    if st.button(f"Import {counted(len(report.cases), 'case')}", key=f"{key}-import",
                 disabled=lines == "nothing" or not report.cases or choice is None):
        import_cases(report.cases, name, choice or IfExists.REFUSE, principal, target_id, report.places)


principal = ui.page("Suites", needs=Action.CHANGE)
store = ui.store()
suites = list_suites(store, principal=principal)
by_id = {s.id: s for s in suites}
if suites:
    ui.open_on("suite_id", "suite", list(by_id))
    chosen = ui.table_picker("Suite", ui.suite_frame(suites, principal),
                             {s.id: f"{s.name} · {len(s.cases)} cases · {s.id}" for s in suites}, "suite_id",
                             key="suites", first=NEW)
else:
    st.info("No suite yet: create one below or import a CSV (question ; expected answer ; sources).")
    chosen = NEW
suite = by_id.get(chosen)
ui.keep(suite=suite.id if suite else None)
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

save, launch, download, remove = st.columns([1, 1, 1, 2])
if save.button("Save" if suite else "Create", type="primary"):
    with ui.guard():
        if suite:
            replace_suite(store, suite.id, name=name, target_id=target_id, cases=cases, principal=principal)
        else:
            created = create_suite(store, name=name, target_id=target_id, cases=cases, principal=principal)
            ui.select_next_run("suite_id", created.id)
        st.session_state.pop(f"cases-{chosen}", None)  # the saved rows are the editor's new starting table
        ui.flash(f"Saved {counted(len(cases), 'case')}.")
        st.rerun()
if suite:
    unsaved = (name != suite.name or cases != [case_row(c) for c in suite.cases]
               or (suite.target_id in target_ids and target_id != suite.target_id))
    judged = launch.checkbox("AI score", key="launch-judge", help="Adds the AI score (1-5 against the expected "
                             "answer), asked of the target's own chat model, else of its configured judge model.")
    if launch.button("Launch", disabled=unsaved or not suite.cases,
                     help="Save the changes first: a campaign runs the saved suite." if unsaved else
                     "Runs a campaign of this suite on its target; the Run page sets every option."):
        with ui.guard():
            launch_suite(suite, judged, principal)
    with ui.guard():
        # The same bytes as `python -m evalcore suites export`: they import back to the same suite.
        download.download_button("CSV to import (;)", data=suite_csv_bytes(suite.cases),
                                 file_name=f"{suite.name} (import).csv", mime="text/csv", on_click="ignore",
                                 key="suite-download", help="The import format, separated by ';' (Excel in "
                                 "Europe opens it in columns): it imports back to the same suite.")
        download.download_button("CSV for analysis (,)", data=suite_csv_bytes(suite.cases, delimiter=","),
                                 file_name=f"{suite.name}.csv", mime="text/csv", on_click="ignore",
                                 key="suite-download-analysis", help="Comma-separated with a header row, one "
                                 "column per field: pandas.read_csv and spreadsheets outside Europe read it as "
                                 "it is (it imports too).")
    confirm = remove.checkbox("Also delete its campaigns", key="confirm-delete",
                              help="Deleting a suite deletes its campaigns.")
    if remove.button("Delete suite", disabled=not confirm):
        with ui.guard():
            delete_suite(store, suite.id, principal=principal)
            ui.select_next_run("suite_id", NEW)
            st.rerun()

st.subheader("Import a CSV", anchor=False)
if SAMPLE_SUITE.is_file() and st.button("Add the sample suite", help=f"Imports {SAMPLE_SUITE.name}: questions about "
                                        "the sample dataset's documents."):
    sample = parse_suite_csv(SAMPLE_SUITE.read_bytes(), source=SAMPLE_SUITE.name)
    if suite_named(store, SAMPLE_NAME, principal=principal) is None:  # one click, unless it would be a duplicate
        with ui.guard():
            import_cases(sample.cases, SAMPLE_NAME, IfExists.REFUSE, principal, target_id)
    st.session_state["import-sample"] = True
uploads = st.session_state.get(UPLOADS, 0)
upload = st.file_uploader("question ; expected answer ; sources (separator ; or , detected, header optional)",
                          type=["csv", "txt"], key="suite_csv" + (f"-{uploads}" if uploads else ""))
with ui.guard():
    if upload is not None:
        st.session_state.pop("import-sample", None)
        import_panel(upload.getvalue(), upload.name, "import", principal, target_id)
    elif st.session_state.get("import-sample"):
        st.caption(f"The sample suite ({SAMPLE_SUITE.name}):")
        import_panel(SAMPLE_SUITE.read_bytes(), f"{SAMPLE_NAME}.csv", "sample", principal, target_id)
