"""Links to what a page shows: its selection kept in the URL's query parameters, read back when a session opens
the page (a reload, a pasted link, the page after the sign-in form), and the link to copy."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlencode

import streamlit as st

T = TypeVar("T")

LINK_LABEL = "Link to this view"


def asked(name: str) -> str | None:
    """The URL's value of a query parameter (None when the URL has none)."""
    value = st.query_params.get(name)
    return value if isinstance(value, str) and value else None


def open_on(state_key: str, name: str, options: Sequence[T], default: T | None = None,
            text: Callable[[T], str] = str) -> None:
    """Before a remembered widget (ui.remembered_select, ui.remembered): on the session's first run of it, open on
    the option the URL names (an unknown value is ignored); else keep the remembered pick while it is an option,
    else `default` when given."""
    if state_key not in st.session_state and (value := asked(name)) is not None:
        found = [option for option in options if text(option) == value]
        if found:
            st.session_state[state_key] = found[0]
            return
    if default is not None and st.session_state.get(state_key) not in options:
        st.session_state[state_key] = default


def number_input(widget: Callable[..., float | None], label: str, key: str, name: str, default: float,
                 **kwargs: Any) -> float:
    """A number input (st.number_input, or a column's) that opens on the URL's value on the session's first run of
    it (when it reads as a number in range), and keeps its value in the URL."""
    seeded = False
    if key not in st.session_state and (value := asked(name)) is not None:
        try:
            number = float(value)
        except ValueError:
            number = -math.inf
        low, high = kwargs.get("min_value", -math.inf), kwargs.get("max_value", math.inf)
        if low <= number <= high and math.isfinite(number):
            st.session_state[key] = type(default)(number)
            seeded = True
    # No default beside a value set in the session: Streamlit would warn of the two.
    shown = widget(label, value=None if seeded else default, key=key, **kwargs)
    result = default if shown is None else shown
    keep(**{name: number_text(result)})
    return result


def keep(**values: str | None) -> None:
    """Put these values in the URL (a None removes its parameter); nothing is sent when the URL has them already."""
    for name, value in values.items():
        if value is None:
            if name in st.query_params:
                del st.query_params[name]
        elif st.query_params.get(name) != value:
            st.query_params[name] = value


def number_text(value: float) -> str:
    """A number as the URL holds it: 0.01, 3, never 1e-05 nor 3.0."""
    return f"{value:.10f}".rstrip("0").rstrip(".") or "0"


def view_link(url_path: str) -> str:
    """The full address of what the page shows now: the browser's address of the page and the query parameters
    (a path from the app's root where the browser's address is unknown, as in tests)."""
    base = st.context.url or f"/{url_path}"
    query = urlencode(st.query_params.to_dict())
    return f"{base}?{query}" if query else base


def link_box(url_path: str) -> None:
    """The link to copy (the code box's copy button, or select it), under a name that says what it opens."""
    st.caption(f"{LINK_LABEL} (opens the same page, selection and section; copy it with the button on its right)")
    st.code(view_link(url_path), language=None, wrap_lines=True)
