"""Charts: Vega-Lite on the page, Plotly for the PNG and HTML downloads; bars, failure stages, histograms."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from evalcore.compare.charts import stage_bars_spec
from evalcore.diagnosis import StageCounts
from ui.text import escape_md

CHROMIUM = "/usr/bin/chromium"
if Path(CHROMIUM).exists():
    # kaleido drives a browser through choreographer, which looks here first.
    os.environ.setdefault("BROWSER_PATH", CHROMIUM)


def png_bytes(figure: Any) -> bytes:
    """A Plotly figure as PNG (kaleido, headless chromium)."""
    image: bytes = figure.to_image(format="png", width=1100, height=figure.layout.height or 550, scale=2)
    return image


def html_bytes(figure: Any) -> bytes:
    """A Plotly figure as a self-contained HTML page (plotly.js inlined, works offline)."""
    document: str = figure.to_html(include_plotlyjs=True, full_html=True)
    return document.encode("utf-8")


def chart(figure: Any, name: str, key: str, spec: dict[str, Any] | list[dict[str, Any]] | None = None) -> None:
    """Show a chart with its PNG and HTML downloads as `name`.png and .html (both built only when clicked).

    `figure` is a Plotly figure, or a function making it. With a Vega-Lite `spec` of the same chart (the
    engine draws both: evalcore.compare.charts), the page shows the spec, whose script a browser loads about
    a second sooner than Plotly's, and the downloads are the Plotly figure; without one, the figure is shown.
    A list of specs is one chart drawn in panels, one under the other (the figure has them all).
    Either way the title says what it shows (names, questions, what changed, date).
    """
    make = figure if callable(figure) else lambda: figure
    if spec is not None:
        for position, panel in enumerate([spec] if isinstance(spec, dict) else spec):
            st.vega_lite_chart(spec=panel, key=f"{key}-chart" + (f"-{position}" if position else ""))
    else:
        st.plotly_chart(make(), key=f"{key}-chart", config={"toImageButtonOptions": {"filename": name}})
    left, right, _ = st.columns([1, 1, 4])
    if Path(os.environ.get("BROWSER_PATH", CHROMIUM)).exists():
        left.download_button("PNG", data=lambda: png_bytes(make()), file_name=f"{name}.png", mime="image/png",
                             key=f"{key}-png", on_click="ignore")
    else:  # kaleido renders with a local Chromium and must never download one
        left.button("PNG", key=f"{key}-png", disabled=True,
                    help="PNG export needs Chromium: `apt-get install chromium`, or set BROWSER_PATH to a Chrome "
                         "binary.")
    right.download_button("HTML", data=lambda: html_bytes(make()), file_name=f"{name}.html", mime="text/html",
                          key=f"{key}-html", on_click="ignore")


def bars(frame: pd.DataFrame, title: str, share: bool = False) -> None:
    """A bar chart of a two-column table (categories, then values), categories in table order.

    Streamlit's own (Vega-Lite) chart: its script is a fraction of Plotly's, so a page's first chart shows
    a second or more sooner in a browser that has not loaded it yet. Vega shows text as text.
    """
    x, y = frame.columns[:2]
    scale = {"scale": {"domain": [0, 1]}} if share else {}
    spec = {"title": title, "mark": {"type": "bar", "tooltip": True}, "height": 260,
            "encoding": {"x": {"field": x, "type": "ordinal", "sort": None, "axis": {"labelAngle": 0}},
                         "y": {"field": y, "type": "quantitative", **scale}}}
    st.vega_lite_chart(frame.astype({x: str}), spec)


def stage_bar(counts: StageCounts, key: str) -> None:
    """One horizontal bar of the questions per failure stage, stages in their order and colours (Vega-Lite, as
    the Compare page's: the Campaigns page needs no Plotly)."""
    st.vega_lite_chart(spec=stage_bars_spec({"questions": counts}), key=key)
    st.caption(escape_md(" · ".join(f"{stage} {count:,}" for stage, count in counts.counts.items() if count)
                         + f" (of {counts.total:,} questions)"))


def histogram(values: list[int], name: str, title: str, bins: int = 30) -> None:
    """A histogram binned here (the browser gets the bins, not every value)."""
    counts, edges = np.histogram(values or [0], bins=bins)
    frame = pd.DataFrame({"from": edges[:-1], "to": edges[1:], "count": counts})
    spec = {"title": title, "mark": {"type": "bar", "tooltip": True}, "height": 260,
            "encoding": {"x": {"field": "from", "bin": {"binned": True}, "type": "quantitative", "title": name},
                         "x2": {"field": "to"}, "y": {"field": "count", "type": "quantitative", "title": "passages"}}}
    st.vega_lite_chart(frame, spec)
