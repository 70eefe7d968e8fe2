"""Traces: what production answered, judged without references: volume and each measure per day or week with
intervals, the worst traces, metadata filters, and two releases or windows compared, unpaired."""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Any

import pandas as pd
import streamlit as st

import ui
from evalcore.access.principals import Action, Principal
from evalcore.campaigns import Campaign, CampaignKind, list_campaigns
from evalcore.compare.production import (
    EFFECT_MEAN,
    EFFECT_RATE,
    Group,
    JudgedTrace,
    PeriodFigures,
    compare_groups,
    judged_traces,
    measure_names,
    parse_group,
    stamp,
    timeline,
    worst_traces,
)
from evalcore.language.text import counted
from evalcore.telemetry import Trace, TraceFilter, import_text, list_traces
from evalcore.telemetry.stored import metadata_values

SHOWN_KEYS_SKIPPED = ("service.instance.id",)  # a process's id: no filter anyone wants


def figures_frame(figures: list[PeriodFigures]) -> pd.DataFrame:
    """The timeline as a table (one row per period and measure)."""
    return pd.DataFrame([f.to_dict() for f in figures],
                        columns=["period", "measure", "volume", "n", "mean", "low", "high", "passed", "judged",
                                 "pass_rate", "pass_low", "pass_high"])


def interval_spec(frame: pd.DataFrame, value: str, low: str, high: str, title: str) -> dict[str, Any]:
    """A Vega-Lite chart of a value per period with its 95% interval as a band, one line per measure."""
    return {
        "title": title, "data": {"values": frame.to_dict("records")}, "height": 260,
        "encoding": {"x": {"field": "period", "type": "ordinal", "title": None},
                     "color": {"field": "measure", "type": "nominal"}},
        "layer": [
            {"mark": {"type": "errorband", "opacity": 0.25},
             "encoding": {"y": {"field": low, "type": "quantitative", "title": value}, "y2": {"field": high}}},
            {"mark": {"type": "line", "point": True},
             "encoding": {"y": {"field": value, "type": "quantitative"},
                          "tooltip": [{"field": "period"}, {"field": "measure"}, {"field": value, "format": ".3f"},
                                      {"field": low, "format": ".3f"}, {"field": high, "format": ".3f"},
                                      {"field": "n"}]}},
        ],
    }


def traces_table(traces: list[Trace]) -> pd.DataFrame:
    """Traces as rows people scan: when, question, answer, documents, model, metadata."""
    return pd.DataFrame([{"number": t.number, "time (UTC)": stamp(t.started_at), "question": ui.short(t.question),
                          "answer": ui.short(t.answer), "documents": len(t.documents), "model": t.model,
                          **{k: str(v) for k, v in t.metadata.items() if k not in SHOWN_KEYS_SKIPPED}}
                         for t in traces])


def metadata_filters(traces: list[Trace]) -> tuple[tuple[str, str], ...]:
    """The sidebar's metadata filters: one key, and the values kept."""
    values = {key: found for key, found in metadata_values(traces).items() if key not in SHOWN_KEYS_SKIPPED}
    if not values:
        return ()
    key = st.sidebar.selectbox("Filter by metadata", ["(none)", *values], key="traces-filter-key")
    if key == "(none)":
        return ()
    value = st.sidebar.selectbox(f"{key} =", values[key], key="traces-filter-value")
    return ((key, value),)


def day_window(traces: list[Trace]) -> tuple[float | None, float | None]:
    """The sidebar's window of days (UTC), the first to the last trace's by default."""
    if not traces:
        return None, None
    first = datetime.fromtimestamp(min(t.started_at for t in traces), UTC).date()
    last = datetime.fromtimestamp(max(t.started_at for t in traces), UTC).date()
    chosen = st.sidebar.date_input("Days (UTC)", (first, last), min_value=first, max_value=last, key="traces-days")
    if not isinstance(chosen, tuple) or len(chosen) != 2:
        return None, None
    start = datetime.combine(chosen[0], time(), UTC).timestamp()
    return start, datetime.combine(chosen[1], time(), UTC).timestamp() + 86_400


def import_form(principal: Principal) -> None:
    """Admins: import a trace file (OTLP JSON or JSONL)."""
    if not principal.can(Action.SEND_TRACES):
        return
    with st.expander("Import a trace file"):
        upload = st.file_uploader("OTLP JSON (.json, OpenInference attributes) or JSONL (.jsonl)",
                                  type=["json", "jsonl"], key="traces-upload")
        if upload is not None and st.button("Import", key="traces-import"):
            with ui.guard():
                report = import_text(ui.store(), upload.getvalue().decode("utf-8-sig", "replace"),
                                     source=upload.name, otlp=not upload.name.endswith(".jsonl"), principal=principal)
                st.success(ui.escape_md(report.lines()[0]))
                for rejected in report.rejected[:50]:
                    st.warning(ui.escape_md(rejected.line()))


def comparison_section(rows: list[JudgedTrace], traces: list[Trace]) -> None:
    """Two groups of judged traces, unpaired: by a metadata value or by a window."""
    st.subheader("Compare two releases or windows")
    values = {key: found for key, found in metadata_values(row.trace for row in rows).items()
              if key not in SHOWN_KEYS_SKIPPED and len(found) > 1}
    how = st.radio("Groups", ["metadata value", "windows"], horizontal=True, key="traces-groups")
    groups: tuple[Group, Group] | None = None
    with ui.guard():
        if how == "metadata value" and values:
            key = st.selectbox("Key", list(values), key="traces-compare-key",
                               index=list(values).index("release") if "release" in values else 0)
            left, right = st.columns(2)
            a = left.selectbox("A", values[key], key="traces-compare-a")
            b = right.selectbox("B", values[key], index=min(1, len(values[key]) - 1), key="traces-compare-b")
            groups = parse_group(f"{key}={a}"), parse_group(f"{key}={b}")
        elif how == "windows":
            left, right = st.columns(2)
            a_text = left.text_input("A (FROM..TO, ISO dates)", key="traces-window-a")
            b_text = right.text_input("B (FROM..TO, ISO dates)", key="traces-window-b")
            if a_text and b_text:
                groups = parse_group(a_text), parse_group(b_text)
        else:
            st.caption("No metadata key has two values among the judged traces.")
        if groups is None:
            return
        effect_mean = st.number_input("Change in a mean score to size the groups for", 0.01, 4.0, EFFECT_MEAN,
                                      key="traces-effect-mean")
        effect_rate = st.number_input("Change in a pass rate to size the groups for", 0.01, 0.99, EFFECT_RATE,
                                      key="traces-effect-rate")
        found = compare_groups(rows, *groups, effect_mean=effect_mean, effect_rate=effect_rate)
        st.caption(ui.escape_md(f"A = {found.a}, B = {found.b}: different questions, so the comparison is unpaired "
                                "(Welch's t for means, Newcombe's interval and the z-test for pass rates)."))
        st.dataframe(ui.cells(pd.DataFrame([d.to_dict() for d in found.deltas])), hide_index=True)


def main() -> None:
    principal = ui.page("Traces")
    store = ui.store()
    import_form(principal)
    every = list_traces(store, principal=principal)
    if not every:
        st.info("No trace yet: import a file (`python -m evalcore traces import FILE`) or send them to "
                "POST /v1/traces with a send_traces key.")
        return
    since, until = day_window(every)
    chosen = TraceFilter(since, until, metadata_filters(every))
    traces = list_traces(store, chosen, principal=principal)
    ui.open_on("traces-period", "per", ["day", "week"])
    period = st.sidebar.radio("Per", ["day", "week"], horizontal=True, key="traces-period")
    campaigns: list[Campaign] = [c for c in list_campaigns(store, principal=principal)
                                 if c.kind == CampaignKind.TRACES]
    st.caption(ui.escape_md(f"{len(traces)} of {counted(len(every), 'trace')}; "
                            f"{counted(len(campaigns), 'traces campaign')}"))
    if "traces-campaigns" not in st.session_state and (listed := ui.asked("judged")) is not None:
        st.session_state["traces-campaigns"] = [c.id for c in campaigns if c.id in listed.split(",")]  # a link's
    picked = st.multiselect("Judged by", [c.id for c in campaigns],
                            default=None if "traces-campaigns" in st.session_state else [c.id for c in campaigns[:1]],
                            format_func=lambda cid: next(c.name for c in campaigns if c.id == cid),
                            key="traces-campaigns")
    ui.keep(per=period, judged=",".join(picked) or None)
    kept = {t.number for t in traces}
    rows = [row for row in judged_traces(store, picked, principal=principal) if row.trace.number in kept]
    figures = timeline(rows, traces, period)
    volume = pd.DataFrame([{"period": f.period, "traces": f.volume} for f in figures]).drop_duplicates("period")
    if volume.empty:  # no measure yet: volume alone
        volume = pd.DataFrame([{"period": period_key, "traces": count} for period_key, count in
                               pd.Series([stamp(t.started_at)[:10] for t in traces]).value_counts().sort_index()
                               .items()])
    st.vega_lite_chart(spec={"title": f"Traces per {period}", "data": {"values": volume.to_dict("records")},
                             "mark": "bar", "height": 180,
                             "encoding": {"x": {"field": "period", "type": "ordinal", "title": None},
                                          "y": {"field": "traces", "type": "quantitative"}}}, key="traces-volume")
    frame = figures_frame(figures)
    if rows:
        rates = frame.dropna(subset=["pass_rate"])
        if not rates.empty:
            st.vega_lite_chart(spec=interval_spec(rates, "pass_rate", "pass_low", "pass_high",
                                                  f"Pass rate per {period} (Wilson 95% interval)"),
                               key="traces-pass")
        means = frame.dropna(subset=["mean"])
        if not means.empty:
            st.vega_lite_chart(spec=interval_spec(means, "mean", "low", "high", f"Mean per {period} (95% t interval)"),
                               key="traces-mean")
        st.download_button("Figures (CSV)", data=ui.csv_bytes(frame), file_name="traces-timeline.csv",
                           mime="text/csv", key="traces-csv")
        measure = st.selectbox("Worst traces by", measure_names(rows), key="traces-worst")
        worst = worst_traces(rows, measure, 20)
        st.dataframe(ui.cells(traces_table([row.trace for row in worst]).assign(
            **{measure: [row.measures[measure] for row in worst]})), hide_index=True)
        comparison_section(rows, traces)
    else:
        st.caption("No judged trace in this selection: judge a sample with `python -m evalcore traces run`.")
    with st.expander("The traces"):
        st.dataframe(ui.cells(traces_table(traces[:500])), hide_index=True)


main()
