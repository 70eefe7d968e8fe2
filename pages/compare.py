"""Compare: two campaigns question by question with per-measure deltas and intervals, or a sweep of N."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import streamlit as st

import ui
from evalcore.access.principals import Action, Principal
from evalcore.campaigns import Campaign, list_campaigns
from evalcore.campaigns.trust import comparison_trust
from evalcore.compare import Change, Comparison, Sweep, compare_campaigns, compare_sweep, power
from evalcore.compare.charts import (
    delta_figure,
    delta_specs,
    scatter_figure,
    scatter_spec,
    series_figure,
    series_spec,
    stages_figure,
    stages_spec,
    unchanged_line,
)
from evalcore.compare.export_context import ExportContext, Fact, comparison_context, source_names, sweep_context
from evalcore.compare.pairing import Group, by_questions, default_pair, group_of
from evalcore.compare.pairwise_job import PAIRWISE_JOB, asks_local_model, kept_pairwise, start_pairwise
from evalcore.compare.preference import INTERVAL, TEST, Preference
from evalcore.compare.report import comparison_report, sweep_report
from evalcore.compare.tables import (
    MEASURE_COLUMNS,
    measure_frame,
    moved_frame,
    pairwise_frame,
    question_frame,
    sweep_frame,
    transition_frame,
)
from evalcore.jobs.job_queue import Job, JobStatus, cancel_job, get_job, list_jobs
from evalcore.judges import LOCAL_PAIRWISE_NOTE
from evalcore.language.text import counted
from evalcore.metrics import judged_by

VERDICTS = [str(change) for change in Change]
EVERY = "every dataset and suite"
Version = tuple[str, str]  # a campaign's id and results version (ui.version)
PairVersions = tuple[str, Version, Version, Principal, str]  # database, campaigns A and B, who asks, basis
MEASURES, PER_QUESTION, STAGES, QUESTIONS = "Measures", "Per question", "Failure stages", "Questions"
PAIRWISE = "Pairwise judge"
SECTIONS = [MEASURES, PER_QUESTION, STAGES, QUESTIONS, PAIRWISE]
PAIR, SWEEP = "pair", "sweep"
MODES = {PAIR: "two campaigns", SWEEP: "a sweep (N campaigns, one key varied)"}  # as the URL names them: as shown
CONVERSATIONS = "Conversations"


# cache_resource, not cache_data: a comparison of 10,000 questions is immutable once computed, and
# cache_data would unpickle a copy of it on every rerun (seconds); this keeps one object per
# process and principal, shared by that principal's sessions (the page never changes it). Across
# processes the engine keeps the comparison in the store, so a new process reads it back instead of
# recomputing it. A few pairs are kept (tens of MB each at 10,000 questions with their answers).
@st.cache_resource(show_spinner="Comparing (paired bootstrap and randomization tests)…", max_entries=4)
def cached_comparison(db: str, a_version: Version, b_version: Version, principal: Principal, basis: str) -> Comparison:
    """compare_campaigns(...) for these versions of the two campaigns (default effect size; "" = automatic basis).

    `basis` has no default: Streamlit keys the cache by the arguments as given, so a call that left it out
    would be another entry, and the stored comparison read twice."""
    return compare_campaigns(ui.store(), a_version[0], b_version[0], principal=principal, basis=basis or None)


@st.cache_resource(show_spinner=False, max_entries=16)
def for_effect(db: str, a_version: Version, b_version: Version, principal: Principal, basis: str,
               effect: float) -> Comparison:
    """The cached comparison with the questions needed for another effect size (it shares the questions)."""
    return cached_comparison(db, a_version, b_version, principal, basis).with_effect(effect)


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_questions(db: str, a_version: Version, b_version: Version, principal: Principal, basis: str = "",
                     ) -> pa.Table:
    """The per-question table of a comparison as an Arrow table, built once.

    st.dataframe converts a pandas frame to Arrow on every run (0.3 s for 10,000 questions with
    their answers); an Arrow table, filtered with Arrow, is sent as it is.
    """
    return pa.Table.from_pandas(question_frame(cached_comparison(db, a_version, b_version, principal, basis).questions),
                                preserve_index=False)


@st.cache_data(show_spinner="Comparing the sweep…", max_entries=8)
def cached_sweep(db: str, versions: tuple[Version, ...], principal: Principal) -> Sweep:
    """compare_sweep over the campaigns, recomputed only when one of them changed."""
    return compare_sweep(ui.store(), [version[0] for version in versions], principal=principal)


def with_tolerance(comparison: Comparison) -> Comparison:
    """The comparison with the verdicts under the tolerance asked for the measure deciding most of them."""
    decided_by = comparison.deciding
    if decided_by is None:
        return comparison
    default = comparison.tolerance(decided_by)
    tolerance = ui.number_input(st.number_input,
                                f"Smallest meaningful difference of {decided_by} (a smaller change is the same)",
                                f"tolerance-{decided_by}", "tolerance", default, min_value=0.0, step=0.005,
                                format="%.4g",
                                help="A question's verdict is better or worse only when its value changed by at least "
                                     "this much. Default: 0.01 for 0-1 measures, 1 for 0-100 scores, any change for "
                                     "pass/fail, labels and judge scores.")
    return comparison if tolerance == default else comparison.with_tolerances({decided_by: tolerance})


def report_names() -> str:
    """How the report names each question's judge results: ours, or the evaluators' documented names when ticked."""
    return "evaluator" if st.checkbox(
        "Report: judge fields under the evaluators' names", key="report-names",
        help="gpt_retrieval, retrieval_reason, response_completeness_result, groundedness_pro_label… instead of "
             "score, completeness, groundedness_pro in the report's judge results per question") else "project"


def pick_questions(campaigns: list[Campaign], sources: dict[Group, str]) -> list[Campaign]:
    """The dataset or suite to compare on (the default pair's first), and its campaigns, newest first; or every
    campaign, grouped by dataset or suite."""
    groups = by_questions(campaigns)
    choices: list[Group | str] = [g for g, members in groups.items() if len(members) > 1] + [EVERY]
    pair = default_pair(campaigns)
    ui.open_on("compare-questions", "questions", choices, group_of(pair[1]) if pair else EVERY, text=group_text)
    group = ui.remembered_select("Questions", choices, "compare-questions",
                                 format_func=lambda g: g if g == EVERY
                                 else f"{sources[g]} · {len(groups[g])} campaigns",
                                 help="Campaigns compare question by question: those on the same dataset or suite.")
    ui.keep(questions=group_text(group))
    return [c for members in groups.values() for c in members] if isinstance(group, str) else groups[group]  # EVERY


def group_text(group: Group | str) -> str:
    """A dataset or suite to compare on as the URL names it: "dataset:default", "suite:<id>", or "every"."""
    return "every" if group == EVERY else ":".join(group)


def diagnosis_section(comparison: Comparison, context: ExportContext) -> None:
    """Where the common questions failed in A and in B, how they moved, and the questions behind each move."""
    cells = comparison.transitions
    st.subheader("Failure stages: A → B")
    if not cells:
        st.caption("No failure stage: neither campaign has one (their results were stored before failure "
                   "attribution existed).")
        return
    ui.chart(partial(stages_figure, comparison, context), context.file_stem("stages"), key="stages",
             spec=stages_spec(comparison, context))
    st.dataframe(transition_frame(cells), hide_index=True)
    moves = sorted(cells, key=lambda cell: cell.a == cell.b)  # the questions that moved first
    cell = ui.remembered_select("Questions from stage A to stage B", moves, "compare-transition",
                                format_func=lambda c: f"{c.a} → {c.b} ({c.count})")
    questions = moved_frame(comparison, cell)
    st.dataframe(ui.cells(questions), hide_index=True, height=240)
    ui.table_download(questions, context.file_stem("stages"), key="stages-csv",
                      context=context.with_fact(Fact("stages", f"{cell.a} → {cell.b}", None)).csv_columns())


def measures_section(comparison: Comparison, context: ExportContext, measures: pd.DataFrame, effect: float) -> None:
    """Every measure's B − A with its interval (the chart), then the table with the power of each."""
    st.subheader("Measures: B − A with 95% intervals")
    if measures.empty:
        st.info("No measure is present in both campaigns.")
        return
    ui.chart(partial(delta_figure, comparison, context), context.file_stem("compare"), key="deltas",
             spec=delta_specs(comparison, context))
    if comparison.unchanged:
        st.caption(ui.escape_md(unchanged_line(comparison)))
    for line in comparison.disagreements:
        st.info(ui.escape_md(f"The interval and the test disagree on {line}."))
    shown = measures[MEASURE_COLUMNS]
    # Missing values as empty text: a table cell never says "None".
    texts = shown.assign(mde=[f"±{v:.3g}" if pd.notna(v) else "" for v in shown["mde"]],
                         n_required=[f"{int(v):,}" if pd.notna(v) else "" for v in shown["n_required"]],
                         power_note=shown["power_note"].fillna(""))
    st.dataframe(texts, hide_index=True, column_config={
        "mde": st.column_config.TextColumn("detects ±", help="smallest difference this comparison could see (80% "
                                           "power, alpha 0.05, paired t); empty: see the next columns"),
        "n_required": st.column_config.TextColumn(f"questions for ±{effect:g}",
                                                  help="questions needed to see this effect size"),
        "power_note": st.column_config.TextColumn("no power because")})
    ui.table_download(shown, context.file_stem("measures"), key="measures-csv", context=context.csv_columns())


def scatter_section(comparison: Comparison, context: ExportContext, measures: pd.DataFrame) -> None:
    """One measure's value in A against B, question by question."""
    st.subheader("Per question: A against B")
    if measures.empty:
        st.info("No measure is present in both campaigns.")
        return
    names = list(measures["measure"])
    ui.open_on("compare-measure", "measure", names, judged_by("retrieval")[0])
    measure = ui.remembered_select("Measure", names, "compare-measure")  # kept while another section is open
    ui.keep(measure=measure)
    delta = next(m for m in comparison.measures if m.measure == measure)
    paired = comparison.paired[measure]
    ui.chart(partial(scatter_figure, paired, measure, context, delta), context.file_stem("scatter", measure),
             key="scatter", spec=scatter_spec(paired, measure, context, delta))


def questions_section(versions: PairVersions, context: ExportContext) -> None:
    """The questions with their verdicts, filtered by verdict, and their CSV."""
    st.subheader("Questions")
    keep = ui.remembered_multiselect("Verdicts", VERDICTS, "compare-verdicts", [v for v in VERDICTS if v != "same"])
    questions = cached_questions(*versions)
    questions = questions.filter(pc.is_in(questions["verdict"], value_set=pa.array(keep, pa.string())))
    st.dataframe(values_as_text(questions), hide_index=True)
    shown_verdicts = Fact("verdicts shown", ", ".join(keep) or "none", None)
    ui.table_download(questions, context.file_stem("questions"), key="questions-csv",
                      context=context.with_fact(shown_verdicts).csv_columns())


def values_as_text(table: pa.Table) -> pa.Table:
    """ui.cells of an Arrow table (a comparison's questions, filtered in Arrow): a column with a gap as text, "—"
    in the gap, numbers to 4 decimals, true/false as yes/no; the CSV keeps the values."""
    for position, name in enumerate(table.column_names):
        column = table[name]
        if column.null_count == 0:
            continue
        if pa.types.is_null(column.type):
            text = pa.nulls(len(table), pa.string())
        elif pa.types.is_boolean(column.type):
            text = pc.if_else(column, "yes", "no")
        elif pa.types.is_floating(column.type) or pa.types.is_integer(column.type):
            text = pc.cast(pc.round(column, 4), pa.string())
        else:
            text = pc.cast(column, pa.string())
        table = table.set_column(position, name, pc.fill_null(text, "—"))
    return table


def conversations_section(comparison: Comparison) -> None:
    """Each conversation's verdict; then one conversation's turns side by side: A's answer, B's, the verdict and the
    failure stage on each side."""
    st.subheader("Conversations: A and B turn by turn")
    found = {c.conversation: c for c in comparison.conversations}
    st.caption("The intervals and tests of the measures resample whole conversations. A conversation is better when "
               "more of its turns are better in B than worse.")
    st.dataframe(pd.DataFrame([{"conversation": c.conversation, "turns": len(c.turns), "better": c.better,
                                "worse": c.worse, "verdict": c.verdict} for c in found.values()]), hide_index=True)
    name = st.selectbox("Conversation", list(found), key="compare-conversation")
    if name is None:
        return
    diffs = {q.qid: q for q in comparison.questions}
    rows = []
    for turn in found[name].turns:
        diff = diffs.get(turn.qid)
        rows.append({"turn": turn.turn, "question": diff.question if diff else "", "answer A": diff.answer_a if diff
                     else None, "answer B": diff.answer_b if diff else None, "verdict": turn.verdict,
                     "stage A": turn.stage_a, "stage B": turn.stage_b})
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def percent(value: float | None) -> str:
    """A share as a percentage, "-" when there is none."""
    return "-" if value is None else f"{value:.0%}"


def pairwise_section(a: Campaign, b: Campaign, preference: Preference | None, principal: Principal) -> None:
    """The pairwise judge: a button to ask it (with B's judge keys), then its figures and every question's verdict."""
    st.subheader("Pairwise judge: which answers are better")
    st.caption("A judge reads both answers of each question, with the passages each was built from and the reference "
               "answers, and says which is better or a tie; asked again with the answers swapped, a verdict that "
               "changes is a tie. Its model: B's judge settings. Every call is cached.")
    if principal.can(Action.CHANGE):
        if asks_local_model(b, {}):
            st.warning(LOCAL_PAIRWISE_NOTE)
        job = pairwise_job(a.id, b.id, principal)
        if job is not None and job.active:
            ui.poll(partial(follow_pairwise, job.id, principal), 1.0)
        elif st.button("Ask the pairwise judge", key="ask-pairwise"):
            with ui.guard():
                start_pairwise(ui.store(), a.id, b.id, principal=principal)
                ui.wake_jobs()
                st.rerun()  # the job is followed from the next run on
        if job is not None and job.status == JobStatus.FAILED:
            st.error(ui.escape_md(f"The pairwise judge failed: {job.error}"))
    if preference is None:
        st.info("The pairwise judge has not been asked on these two campaigns (as they are now).")
        return
    counts = preference.counts
    low, high = preference.interval or (None, None)
    columns = st.columns(4)
    columns[0].metric("B preferred (ties half)", percent(preference.win_rate),
                      help=INTERVAL + (f": {low:.0%} to {high:.0%}" if low is not None and high is not None else ""))
    columns[1].metric("B wins / ties / A wins", f"{counts['B']} / {counts['tie']} / {counts['A']}",
                      help=f"{counted(counts['unknown'], 'question')} without a readable verdict in both orders")
    columns[2].metric("Flipped with the order", percent(preference.flip_rate),
                      help=f"{preference.flips} of {preference.readable}: the judge's position bias (each a tie)")
    columns[3].metric("Sign test p", f"{preference.p_value:.3g}", help=TEST)
    st.caption(ui.escape_md(f"{preference.summary}. Judge: {preference.signature}."))
    st.dataframe(ui.cells(pairwise_frame(preference)), hide_index=True)


def pairwise_job(a_id: str, b_id: str, principal: Principal) -> Job | None:
    """The newest pairwise job on these two campaigns, or None."""
    return next((job for job in list_jobs(ui.store(), kind=PAIRWISE_JOB, principal=principal)
                 if (job.params.get("a"), job.params.get("b")) == (a_id, b_id)), None)


def follow_pairwise(job_id: str, principal: Principal) -> None:
    """A running pairwise job's progress, with a button to cancel it; the page again once it ended (its figures)."""
    job = get_job(ui.store(), job_id, principal=principal)
    if not job.active:
        st.rerun()  # the whole page: the kept verdicts, the summary line, the report
    done = f"{job.done} of {job.total} questions" if job.total else "starting"
    st.progress(job.done / job.total if job.total else 0.0,
                text=f"Pairwise judge {job.status.value}: {done}, each in both orders")
    if st.button("Cancel the pairwise judge", key="cancel-pairwise"):
        with ui.guard():
            cancel_job(ui.store(), job_id, principal=principal)
            st.rerun()


def label(campaign: Campaign, sources: dict[Group, str]) -> str:
    """A campaign in the pickers: its dataset or suite first (the pickers list them grouped), then ui.campaign_label."""
    return f"{sources[group_of(campaign)]} · {ui.campaign_label(campaign)}"


def pair_indices(options: list[Campaign]) -> tuple[int, int]:
    """The positions of the proposed A and B among the options (the two newest when none is comparable)."""
    pair = default_pair(options)
    return (options.index(pair[0]), options.index(pair[1])) if pair else (1, 0)


principal = ui.page("Compare")
store = ui.store()
campaigns = [c for c in list_campaigns(store, principal=principal) if c.finished]
if len(campaigns) < 2:
    st.info("Comparing needs two campaigns with results.")
    ui.run_link(principal, "Run campaigns")
    st.stop()
by_id = {c.id: c for c in campaigns}
sources = source_names(store, campaigns, principal=principal)
ui.open_on("compare-mode", "mode", list(MODES))
mode = st.radio("Compare", list(MODES), horizontal=True, key="compare-mode", format_func=MODES.get)
ui.keep(mode=mode)
options = pick_questions(campaigns, sources)
ids = [c.id for c in options]

if mode == PAIR:
    a_index, b_index = pair_indices(options)
    left, right = st.columns(2)
    ui.open_on("compare-a", "a", ids, ids[a_index])
    ui.open_on("compare-b", "b", ids, ids[b_index])
    with left:
        a_id = ui.remembered_select("A (baseline)", ids, "compare-a", format_func=lambda i: label(by_id[i], sources))
    with right:
        b_id = ui.remembered_select("B (candidate)", ids, "compare-b", format_func=lambda i: label(by_id[i], sources))
    ui.keep(a=a_id, b=b_id)
    if a_id == b_id:
        st.info("A and B are the same campaign: pick two different ones.")
        st.stop()
    a, b = by_id[a_id], by_id[b_id]
    effect = ui.number_input(st.number_input, "Effect size to detect (in each measure's units)", "effect", "effect",
                             power.EFFECT, min_value=1e-6, step=0.01, format="%.3f",
                             help="The questions needed to see a difference this large with 80% power at alpha 0.05 "
                                  "(paired t). The 'detects' column is the smallest difference this comparison "
                                  "could see.")
    pair_versions = (ui.db_path(), ui.version(a), ui.version(b), principal)
    with ui.guard():
        automatic = cached_comparison(*pair_versions, "")  # the automatic basis: the entry the page shows below
        choices = ["", *(m.measure for m in automatic.measures)]
        ui.open_on("basis", "basis", choices, "", text=lambda m: m or "automatic")
        basis = st.selectbox("Decide each question's verdict by", choices, key="basis",
                             format_func=lambda m: m or f"automatic ({automatic.basis or 'nothing in common'})",
                             help="Automatic follows what differs: nDCG@10 for a retrieval-side change, the AI score "
                                  "(else ROUGE-L) for a generation-side one, else the suite order.")
        ui.keep(basis=basis or "automatic")
        versions = (*pair_versions, basis)
        comparison = for_effect(*versions, float(effect))
        comparison = with_tolerance(comparison)
        context = comparison_context(comparison, a, b, sources)
        st.caption(ui.escape_md(f"Verdicts by {comparison.basis_reason}."))
        if comparison.cost is not None:  # what B's change costs beside what it gains
            st.info(ui.escape_md(f"{comparison.trade_off} ({comparison.cost.text()})."))
        for warning in comparison.warnings:
            st.warning(ui.escape_md(warning))
        if comparison.power_warnings:  # one line, the measure by measure reasons folded under it
            weak = [m.measure for m in comparison.measures if m.under_powered]
            st.warning(ui.escape_md(f"No difference found on {counted(len(weak), 'measure')} where this comparison "
                                    f"could not "
                                    f"have seen one of ±{comparison.effect:g} ({power.POWER:.0%} power, alpha "
                                    f"{power.ALPHA:g}): {', '.join(weak)}."))
            with st.expander("What each of them could have seen, and the questions it would need"):
                st.markdown("\n".join(f"- {ui.escape_md(w)}" for w in comparison.power_warnings))
        for note in comparison.notes:
            st.info(ui.escape_md(note))
        trust = comparison_trust(store, a.id, b.id, principal=principal).lines()
        for line in trust:  # which judged differences to trust
            st.caption(ui.escape_md(line))
        if comparison.config_diff:
            differences = comparison.config_diff.items()
            st.dataframe(pd.DataFrame([{"key": k, "A": str(x), "B": str(y)} for k, (x, y) in differences]),
                         hide_index=True)
        counts = comparison.verdicts
        for col, verdict in zip(st.columns(len(VERDICTS)), VERDICTS, strict=False):
            col.metric(verdict, counts.get(verdict, 0))
        if comparison.tolerance_note:
            st.caption(ui.escape_md(comparison.tolerance_note[0].upper() + comparison.tolerance_note[1:] + "."))
        preference = kept_pairwise(store, a.id, b.id, principal=principal)
        comparison = replace(comparison, pairwise=preference)
        if preference is not None:
            st.caption(ui.escape_md(preference.summary))
        names = report_names()
        ui.html_download("Report (HTML)", partial(comparison_report, comparison, a, b, sources, names=names,
                                                  trust=trust),
                         context.file_stem("report"), key="report",
                         help="One HTML file that opens without network: both campaigns and their settings, the "
                              "differences, verdicts, measures with their chart and power, and every question.")

        # One section at a time, computed only when open: a first visit draws the measures, not every chart
        # and table of the comparison (the report above holds them all).
        # The same sections for every pair: the open one stays open when another pair is picked.
        shown = [*SECTIONS, CONVERSATIONS] if comparison.conversations else SECTIONS
        ui.open_on("compare-section", "section", shown)
        tabs = dict(zip(shown, st.tabs(shown, key="compare-section", on_change="rerun"), strict=True))
        ui.keep(section=st.session_state["compare-section"])
        measures = measure_frame(comparison)
        if tabs[MEASURES].open:
            with tabs[MEASURES]:
                measures_section(comparison, context, measures, effect)
        if tabs[PER_QUESTION].open:
            with tabs[PER_QUESTION]:
                scatter_section(comparison, context, measures)
        if tabs[STAGES].open:
            with tabs[STAGES]:
                diagnosis_section(comparison, context)
        if tabs[QUESTIONS].open:
            with tabs[QUESTIONS]:
                questions_section(versions, context)
        if tabs[PAIRWISE].open:
            with tabs[PAIRWISE]:
                pairwise_section(a, b, preference, principal)
        if CONVERSATIONS in tabs and tabs[CONVERSATIONS].open:
            with tabs[CONVERSATIONS]:
                conversations_section(comparison)
else:
    baseline_group = [c.id for c in options if group_of(c) == group_of(options[0])]
    if "sweep-campaigns" in st.session_state:  # those still offered (another dataset or suite offers others)
        st.session_state["sweep-campaigns"] = [i for i in st.session_state["sweep-campaigns"] if i in ids]
    elif (listed := ui.asked("campaigns")) is not None:
        st.session_state["sweep-campaigns"] = [i for i in listed.split(",") if i in ids]  # a link's campaigns
    chosen = st.multiselect("Campaigns (the first is the baseline)", ids, key="sweep-campaigns",
                            default=None if "sweep-campaigns" in st.session_state else baseline_group[:3][::-1],
                            format_func=lambda i: label(by_id[i], sources))
    ui.keep(campaigns=",".join(chosen))
    with ui.guard():
        sweep = cached_sweep(ui.db_path(), tuple(ui.version(by_id[i]) for i in chosen), principal)
        members = [by_id[i] for i in chosen]
        context = sweep_context(sweep, members, sources)
        for warning in sweep.warnings:
            st.warning(ui.escape_md(warning))
        table = sweep_frame(sweep, by_id)
        st.dataframe(ui.cells(table), hide_index=True)
        ui.table_download(table, context.file_stem("sweep"), key="sweep-csv", context=context.csv_columns())
        series = list(sweep.series)
        ui.open_on("sweep-measure", "measure", series, series[ui.index_of(series, judged_by("retrieval")[0])]
                   if series else None)
        measure = st.selectbox("Measure", series, key="sweep-measure")
        ui.keep(measure=measure)
        if measure:
            ui.chart(partial(series_figure, sweep, measure, context), context.file_stem("sweep", measure), key="sweep",
                     spec=series_spec(sweep, measure, context))
        names = report_names()
        ui.html_download(
            "Report (HTML)", partial(sweep_report, store, sweep, members, sources, measure=measure, principal=principal,
                                     names=names),
            context.file_stem("report"), key="report",
            help="One HTML file that opens without network: the sweep's table and chart, and the comparison of the "
                 "baseline with the last campaign (settings, verdicts, measures, power, every question).")
