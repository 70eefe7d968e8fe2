"""Compare: two campaigns question by question with per-measure deltas and intervals, or a sweep of N."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa
import pyarrow.compute as pc
import streamlit as st

import ui
from evalcore.access import Principal
from evalcore.campaigns import list_campaigns
from evalcore.compare import Comparison, Paired, QuestionDiff, Sweep, compare_campaigns, compare_sweep, power
from evalcore.compare.comparison import Passage
from evalcore.metrics import MEASURES, display_order

VERDICTS = ["better", "worse", "same", "new", "removed", "unscored"]


# cache_resource, not cache_data: a comparison of 10,000 questions is immutable once computed, and
# cache_data would unpickle a copy of it on every rerun (seconds); this keeps one object per
# process and principal, shared by that principal's sessions (the page never changes it). Across
# processes the engine keeps the comparison in the store, so a new process reads it back instead of
# recomputing it. A few pairs are kept (tens of MB each at 10,000 questions with their answers).
@st.cache_resource(show_spinner="Comparing (paired bootstrap and randomization tests)…", max_entries=4)
def cached_comparison(db: str, a_version: tuple, b_version: tuple, principal: Principal,
                      basis: str = "") -> Comparison:
    """compare_campaigns(...) for these versions of the two campaigns (default effect size; "" = automatic basis)."""
    return compare_campaigns(ui.store(), a_version[0], b_version[0], principal=principal, basis=basis or None)


@st.cache_resource(show_spinner=False, max_entries=16)
def for_effect(db: str, a_version: tuple, b_version: tuple, principal: Principal, basis: str,
               effect: float) -> Comparison:
    """The cached comparison with the questions needed for another effect size (it shares the questions)."""
    return cached_comparison(db, a_version, b_version, principal, basis).with_effect(effect)


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_questions(db: str, a_version: tuple, b_version: tuple, principal: Principal, basis: str = "") -> pa.Table:
    """The per-question table of a comparison as an Arrow table, built once.

    st.dataframe converts a pandas frame to Arrow on every run (0.3 s for 10,000 questions with
    their answers); an Arrow table, filtered with Arrow, is sent as it is.
    """
    return pa.Table.from_pandas(verdict_table(cached_comparison(db, a_version, b_version, principal, basis).questions),
                                preserve_index=False)


@st.cache_data(show_spinner="Comparing the sweep…", max_entries=8)
def cached_sweep(db: str, versions: tuple, principal: Principal) -> Sweep:
    """compare_sweep over the campaigns, recomputed only when one of them changed."""
    return compare_sweep(ui.store(), [version[0] for version in versions], principal=principal)


def delta_figure(measures: pd.DataFrame) -> go.Figure:
    """B − A per measure (in the given order, top down) with its 95% interval; significant ones starred."""
    rows = measures.iloc[::-1]  # Plotly draws the first category at the bottom
    low, high = rows["ci_low"].fillna(rows["delta"]), rows["ci_high"].fillna(rows["delta"])
    colors = ["#2e7d32" if r.improved else "#c62828" if r.significant else "#607d8b" for r in rows.itertuples()]
    labels = [f"{d:+.3f}{' *' if s else ''}" for d, s in zip(rows["delta"], rows["significant"])]
    figure = go.Figure(go.Scatter(
        x=rows["delta"], y=rows["measure"], mode="markers+text", text=labels, textposition="top center",
        marker={"color": colors, "size": 10},
        error_x={"type": "data", "symmetric": False, "array": high - rows["delta"], "arrayminus": rows["delta"] - low},
        customdata=rows[["n", "p_value", "test", "detects", "needs"]],
        hovertemplate="%{y}: %{x:+.4f}<br>n=%{customdata[0]} · p=%{customdata[1]:.4f}<br>%{customdata[2]}"
                      "<br>%{customdata[3]}<br>%{customdata[4]}<extra></extra>"))
    figure.add_vline(x=0, line_dash="dot", line_color="#9e9e9e")
    figure.update_layout(title="B − A (95% paired bootstrap interval; * p < 0.05)", height=max(300, 32 * len(rows) + 120),
                         xaxis_title="difference", yaxis={"automargin": True, "range": [-0.7, len(rows) - 0.3]})
    return figure


def scatter_figure(values: Paired, measure: str) -> go.Figure:
    """One point per common question: the measure in A against B, with the diagonal."""
    low = min(0.0, float(values.a.min(initial=0.0)), float(values.b.min(initial=0.0)))
    high = max(1.0, float(values.a.max(initial=1.0)), float(values.b.max(initial=1.0)))
    figure = go.Figure(go.Scatter(x=values.a, y=values.b, mode="markers", customdata=values.qids, opacity=0.7,
                                  hovertemplate="question %{customdata}: A %{x:.3f} · B %{y:.3f}<extra></extra>"))
    figure.add_shape(type="line", x0=low, y0=low, x1=high, y1=high, line={"dash": "dot", "color": "#9e9e9e"})
    figure.update_layout(title=f"{measure} per question (above the diagonal: B is higher)",
                         xaxis_title=f"A {measure}", yaxis_title=f"B {measure}", height=480)
    return figure


def measures_table(comparison: Comparison) -> pd.DataFrame:
    """One row per measure in display order; `detects` and `needs` say what it could detect, as text for the hover."""
    rows = sorted(comparison.measures, key=lambda m: display_order(m.measure))
    table = pd.DataFrame([m.to_dict() for m in rows])
    if table.empty:
        return table
    table["detects"] = [f"n = {m.n} can detect ±{m.mde:.2g}" if m.mde is not None else m.power_note for m in rows]
    table["needs"] = [f"±{m.effect:g} needs {m.n_required:,} questions" if m.n_required else "" for m in rows]
    table["signature"] = [getattr(MEASURES.get(m.measure), "signature", "") for m in rows]
    return table


def verdict_table(questions: list[QuestionDiff]) -> pd.DataFrame:
    """The per-question verdicts with the relevant passages that entered or left the retrieved list."""
    def titles(entries: tuple[Passage, ...]) -> str:
        return " | ".join(f"{e.pid} {e.title}".strip() for e in entries)

    return pd.DataFrame([{"qid": q.qid, "question": q.question, "verdict": q.verdict, "basis": q.basis,
                          "A": q.a, "B": q.b, "answer changed": q.answer_changed,
                          "relevant entered": titles(q.entered), "relevant left": titles(q.left),
                          "answer A": q.answer_a, "answer B": q.answer_b} for q in questions],
                        columns=["qid", "question", "verdict", "basis", "A", "B", "answer changed", "relevant entered",
                                 "relevant left", "answer A", "answer B"])


def sweep_table(result: Sweep) -> pd.DataFrame:
    """One row per campaign of the sweep: the varied value, each measure's mean, the verdict counts."""
    return pd.DataFrame([{"campaign": row.id, result.key or "value": str(row.value),
                          **{name: m.mean for name, m in row.measures.items()},
                          **{f"vs baseline: {k}": v for k, v in (row.verdicts or {}).items()}}
                         for row in result.table])


def series_figure(result: Sweep, measure: str) -> go.Figure:
    """The measure's mean (with its 95% interval) for each value of the swept key."""
    points = pd.DataFrame(result.series[measure])
    points["x"] = points["x"].astype(str).map(ui.chart_text)  # swept values are stored text (model names, URLs)
    figure = go.Figure(go.Scatter(
        x=points["x"], y=points["mean"], mode="lines+markers",
        error_y={"type": "data", "symmetric": False, "array": points["ci_high"].fillna(points["mean"]) - points["mean"],
                 "arrayminus": points["mean"] - points["ci_low"].fillna(points["mean"])}))
    figure.update_layout(title=f"{measure} by {result.key or 'campaign'} (mean, 95% bootstrap interval)",
                         xaxis_title=result.key or "campaign", yaxis_title=measure, height=420)
    return figure


principal = ui.page("Compare")
store = ui.store()
campaigns = [c for c in list_campaigns(store, principal=principal) if c.finished]
if len(campaigns) < 2:
    st.info("Comparing needs two campaigns with results.")
    ui.run_link(principal, "Run campaigns")
    st.stop()
by_id = {c.id: c for c in campaigns}
ids = list(by_id)
mode = st.radio("Compare", ["two campaigns", "a sweep (N campaigns, one key varied)"], horizontal=True)

if mode == "two campaigns":
    left, right = st.columns(2)
    a_id = left.selectbox("A (baseline)", ids, index=1, format_func=lambda i: ui.campaign_label(by_id[i]))
    b_id = right.selectbox("B (candidate)", ids, index=0, format_func=lambda i: ui.campaign_label(by_id[i]))
    if a_id == b_id:
        st.info("A and B are the same campaign: pick two different ones.")
        st.stop()
    effect = st.number_input("Effect size to detect (in each measure's units)", min_value=1e-6, value=power.EFFECT,
                             step=0.01, format="%.3f", key="effect",
                             help="The questions needed to see a difference this large with 80% power at alpha 0.05 "
                                  "(paired t). The 'detects' column is the smallest difference this comparison "
                                  "could see.")
    versions = (ui.db_path(), ui.version(by_id[a_id]), ui.version(by_id[b_id]), principal)
    with ui.guard():
        automatic = cached_comparison(*versions)
        choices = ["", *(m.measure for m in automatic.measures)]
        basis = st.selectbox("Decide each question's verdict by", choices, key="basis",
                             format_func=lambda m: m or f"automatic ({automatic.basis or 'nothing in common'})",
                             help="Automatic follows what differs: nDCG@10 for a retrieval-side change, the AI score "
                                  "(else ROUGE-L) for a generation-side one, else the suite order.")
        versions = (*versions, basis)
        comparison = for_effect(*versions, float(effect))
        st.caption(ui.escape_md(f"Verdicts by {comparison.basis_reason}."))
        for warning in comparison.warnings:
            st.warning(ui.escape_md(warning))
        if comparison.power_warnings:
            st.warning("\n".join(f"- {ui.escape_md(w)}" for w in comparison.power_warnings))
        for note in comparison.notes:
            st.info(ui.escape_md(note))
        if comparison.config_diff:
            st.dataframe(pd.DataFrame([{"key": k, "A": str(a), "B": str(b)} for k, (a, b) in comparison.config_diff.items()]),
                         hide_index=True)
        counts = comparison.verdicts
        for col, verdict in zip(st.columns(len(VERDICTS)), VERDICTS):
            col.metric(verdict, counts.get(verdict, 0))

        st.subheader("Measures: B − A with 95% intervals")
        measures = measures_table(comparison)
        if measures.empty:
            st.info("No measure is present in both campaigns.")
        else:
            ui.chart(delta_figure(measures), f"deltas-{a_id}-vs-{b_id}", key="deltas")
            shown = measures[["measure", "n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "significant",
                              "mde", "n_required", "power_note", "test", "signature"]]
            st.dataframe(shown, hide_index=True, column_config={
                "mde": st.column_config.NumberColumn("detects ±", help="smallest difference this comparison "
                                                     "could see (80% power, alpha 0.05, paired t)", format="%.3g"),
                "n_required": st.column_config.NumberColumn(f"questions for ±{effect:g}", format="%d",
                                                            help="questions needed to see this effect size"),
                "power_note": st.column_config.TextColumn("no power because")})
            ui.table_download(shown, f"measures-{a_id}-vs-{b_id}", key="measures-csv")

            st.subheader("Per question: A against B")
            measure = st.selectbox("Measure", list(measures["measure"]),
                                   index=ui.index_of(list(measures["measure"]), "ndcg@10"))
            ui.chart(scatter_figure(comparison.paired[measure], measure), f"scatter-{measure}-{a_id}-vs-{b_id}",
                     key="scatter")

        st.subheader("Questions")
        keep = st.multiselect("Verdicts", VERDICTS, default=[v for v in VERDICTS if v != "same"])
        questions = cached_questions(*versions)
        questions = questions.filter(pc.is_in(questions["verdict"], value_set=pa.array(keep, pa.string())))
        st.dataframe(questions, hide_index=True)
        ui.table_download(questions, f"questions-{a_id}-vs-{b_id}", key="questions-csv")
else:
    chosen = st.multiselect("Campaigns (the first is the baseline)", ids, default=ids[:3][::-1],
                            format_func=lambda i: ui.campaign_label(by_id[i]))
    with ui.guard():
        sweep = cached_sweep(ui.db_path(), tuple(ui.version(by_id[i]) for i in chosen), principal)
        for warning in sweep.warnings:
            st.warning(ui.escape_md(warning))
        table = sweep_table(sweep)
        st.dataframe(table, hide_index=True)
        ui.table_download(table, "sweep", key="sweep-csv")
        names = list(sweep.series)
        measure = st.selectbox("Measure", names, index=ui.index_of(names, "ndcg@10"))
        if measure:
            ui.chart(series_figure(sweep, measure), f"sweep-{measure}", key="sweep")
