"""Messages: the one error display, actions guarded against user-fixable errors, success after a rerun, upload
reports."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from evalcore.datasets import FILES
from evalcore.errors import EvalError
from ui.text import escape_md


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
