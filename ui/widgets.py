"""Widgets that remember their value across runs and changing options, and polling without a rerun."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import streamlit as st

T = TypeVar("T")


def remembered_select(label: str, options: Sequence[T], state_key: str, **kwargs: Any) -> T:
    """remembered(st.selectbox, …) over options that change (at least one): a pick that is no longer an option
    gives way to the remembered one, else to the first option.

    The widget has a key and no `index`: an `index` computed from the remembered value changes the
    widget's identity after every pick, so Streamlit dropped every second pick.
    """
    widget_key = f"{state_key}-pick"
    if st.session_state.get(widget_key) not in options:
        st.session_state.pop(widget_key, None)
        if st.session_state.get(state_key) not in options:
            st.session_state[state_key] = options[0]
    return remembered(st.selectbox, label, state_key, options[0], options=options, **kwargs)


def remembered(widget: Callable[..., Any], label: str, state_key: str, default: T, **kwargs: Any) -> T:
    """A widget (text input, checkbox, multiselect) that opens on the value remembered under state_key
    (`default` at first) and remembers each change, also across runs that do not draw it: Streamlit forgets a
    widget's value then (a section in a tab that is not open)."""
    widget_key = f"{state_key}-pick"
    if widget_key not in st.session_state:
        st.session_state[widget_key] = st.session_state.get(state_key, default)
    value: T = widget(label, key=widget_key, **kwargs)
    st.session_state[state_key] = value
    return value


def remembered_multiselect(label: str, options: Sequence[T], state_key: str, default: Sequence[T], **kwargs: Any,
                           ) -> list[T]:
    """remembered(st.multiselect, …): the remembered picks that are still options (`default` at first)."""
    st.session_state[state_key] = [o for o in st.session_state.get(state_key, default) if o in options]
    return list(remembered(st.multiselect, label, state_key, default, options=options, **kwargs))


def select_next_run(state_key: str, value: Any) -> None:
    """Make remembered_select(…, state_key) open on value at the next rerun."""
    st.session_state[state_key] = value
    st.session_state.pop(f"{state_key}-pick", None)


def index_of(options: Sequence[object], value: object) -> int:
    """The position of value in options, or 0 (the default choice) when it is not there."""
    return options.index(value) if value in options else 0


def poll(fn: Callable[[], None], seconds: float | None = 2) -> None:
    """Run fn now and again every few seconds (never when None), without rerunning the page (a fragment)."""
    st.fragment(run_every=seconds)(fn)()
