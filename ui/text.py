"""Text and numbers as the pages show them: Markdown escaping, short lines, values, dates, hover help, static tables."""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any

import pandas as pd
import streamlit as st

from evalcore.campaigns import Campaign
from evalcore.errors import EvalError
from evalcore.metrics import MEASURES

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$=&])")


def escape_md(text: object) -> str:
    """Text shown literally by Streamlit Markdown (labels, captions, tooltips, alerts): every markup character
    is backslash-escaped (no link, image, HTML, code span, math or colour directive), newlines become spaces."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\r", " ").replace("\n", " ")


STATIC_ROWS = 20


def text_table(frame: pd.DataFrame) -> None:
    """A few rows of reading (passages, references) as a static table: long text wraps, and the browser loads
    no table grid for it. st.table renders Markdown, so every cell and header goes through escape_md. More
    than STATIC_ROWS rows go to the scrolling grid, as they are."""
    if len(frame) > STATIC_ROWS:
        st.dataframe(cells(frame), hide_index=True)
        return
    shown = pd.DataFrame({escape_md(column): [escape_md(value) for value in frame[column]] for column in frame.columns})
    st.table(shown, hide_index=True)


def cells(frame: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """A table as people read it: a missing cell is "—" (a table shows a missing value as "None"). Only a column
    with a gap changes: numbers become text to `digits` significant digits, true/false become yes/no."""
    out = {}
    for name in frame.columns:
        column = frame[name]
        out[name] = [cell(value, digits) for value in column] if column.isna().any() else column
    return pd.DataFrame(out, index=frame.index, columns=frame.columns)


def cell(value: object, digits: int = 4) -> object:
    """One cell of a column with gaps, as text (cells)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return value if isinstance(value, str) else str(value)


def short(text: str | None, limit: int = 80) -> str:
    """One line of at most `limit` characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def fmt_value(value: float | None, digits: int = 3) -> str:
    """A measure value, or an em dash when absent."""
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_when(timestamp: float | None) -> str:
    """A local date and time, or an em dash."""
    return "—" if not timestamp else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def measure_help(name: str, signature: str | None = None) -> str:
    """The hover text of a number: its formula and the signature that produced it."""
    measure = MEASURES.get(name)
    doc = getattr(measure, "doc", "") if measure else ""
    sig = signature or (getattr(measure, "signature", "") if measure else "")
    # A stored signature holds model names: escaped text, never a code span a backtick could close.
    return "\n\n".join(part for part in (doc, f"signature: {escape_md(sig)}" if sig else "") if part) or escape_md(name)


def campaign_label(campaign: Campaign) -> str:
    """How a campaign is named in pickers: name, id, status, progress."""
    return f"{campaign.name} · {campaign.id} · {campaign.status_text} · {campaign.finished}/{campaign.total}"


def json_object(name: str, text: str) -> dict[str, Any]:
    """A form field's JSON object (headers, a body's extra keys); an EvalError naming the field otherwise."""
    expected = 'a JSON object such as {"X-Key": "${MY_KEY}"}'
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError as error:
        raise EvalError(f"not valid JSON ({error.msg})", where=name, found=short(text), expected=expected) from None
    if not isinstance(value, dict):  # a list or a number is valid JSON but no set of headers
        raise EvalError("not a JSON object", where=name, found=short(text), expected=expected)
    return value
