"""Messages: the one error display, actions guarded against user-fixable errors, success after a rerun, upload
and document import reports."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pandas as pd
import streamlit as st

from evalcore.datasets import FILES
from evalcore.documents import ImportReport
from evalcore.errors import EvalError
from ui.text import escape_md, text_table


def show_error(error: EvalError) -> None:
    """Show a user-fixable error as a readable message: what, where, found/expected, fix, every problem."""
    lines = [escape_md(error.message)]
    if error.where:
        lines.append(f"**Where:** {escape_md(error.where)}")
    if error.found is not None or error.expected is not None:
        lines.append(f"**Found:** {escape_md(str(error.found))} · **expected:** {escape_md(str(error.expected))}")
    if error.fix:
        lines.append(f"**Fix:** {escape_md(error.fix)}")
    if len(error.problems) > 1 or (error.problems and error.problems[0] != error.line()):
        lines += [f"- {escape_md(problem)}" for problem in error.problems]
    st.error("\n\n".join(lines))


@contextmanager
def guard() -> Iterator[None]:
    """Run a user action; an EvalError becomes a message instead of a traceback."""
    try:
        yield
    except EvalError as error:
        show_error(error)


def flash(message: str) -> None:
    """Show a success message after the next rerun (st.rerun would wipe one shown now)."""
    st.session_state["_flash"] = message


def upload_report(problems: dict[str, list[str]]) -> None:
    """One line per file: ok, or each of its problems."""
    if set(problems) == {""}:  # refused before the files were read (size, name)
        st.error("\n".join(f"- {escape_md(p)}" for p in problems[""]))
        return
    # Files that are not one of the five (an unreadable zip, a stray file) first: they often explain the rest.
    for file in [*sorted(set(problems) - {f"{f}.parquet" for f in FILES}), *(f"{f}.parquet" for f in FILES)]:
        if file in problems:
            st.error(f"**{escape_md(file or 'upload')}**\n\n" + "\n".join(f"- {escape_md(p)}" for p in problems[file]))
        elif file:
            st.success(f"**{escape_md(file)}**: no problem found")


def import_report(report: ImportReport) -> None:
    """What an import of documents read (one line), then each file skipped and each page without text, and why."""
    st.success(escape_md(report.summary()))
    if report.skipped:
        st.warning(f"Not read ({len(report.skipped)}):")
        text_table(pd.DataFrame({"file": [s.file for s in report.skipped], "why": [s.reason for s in report.skipped]}))
    if report.pages_without_text:
        pages = report.pages_without_text
        st.caption(f"{len(pages)} PDF pages gave no text (their passages are missing):")
        text_table(pd.DataFrame({"file": [s.file for s in pages], "page": [str(s.page) for s in pages],
                                 "why": [s.reason for s in pages]}))
    decoded = [d for d in report.documents if d.encoding]
    if decoded:
        st.caption("Read in another encoding than UTF-8 (check their accents): "
                   + escape_md(", ".join(f"{d.file} ({d.encoding})" for d in decoded)))
