"""Campaigns: the list, one campaign's metric panel and summary, one question in full, actions, exports."""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

import ui
from evalcore.access import Action
from evalcore.campaigns import (
    Aggregate,
    Campaign,
    ConversationResult,
    ConversationSummary,
    QuestionResult,
    campaign_conversations,
    campaign_diagnosis,
    campaign_results,
    get_campaign,
    list_campaigns,
)
from evalcore.campaigns.export import export_campaign
from evalcore.campaigns.labels import (
    Label,
    campaign_agreement,
    campaign_labels,
    import_labels_csv,
    judge_scale,
    labels_csv,
    set_label,
)
from evalcore.campaigns.listing import HEADLINE
from evalcore.campaigns.pace import duration_text
from evalcore.campaigns.recompute import recompute_abstention
from evalcore.campaigns.rejudging import JUDGEABLE, RejudgeRequest
from evalcore.campaigns.result_rows import load_signatures
from evalcore.diagnosis import NOT_ATTRIBUTED, relevance
from evalcore.errors import EvalError
from evalcore.judges import JUDGES, Verdict
from evalcore.metrics import MEASURES, panels
from evalcore.metrics.agreement import Agreement
from evalcore.targets import Retrieved

PAGE_SIZE = 100  # questions in the table and its picker at a time
PANEL_COLUMNS = 4  # measures a row of a panel shows
# Per question: the headline measures and the retrieval ones people sort by first.
QUESTION_MEASURES = ("recall", "mrr", *HEADLINE)
QUESTIONS, STAGES, LABELS, CONFIGURATION = "Questions", "Failure stages", "Labels", "Configuration"
CONVERSATIONS = "Conversations"
SECTIONS = [QUESTIONS, STAGES, LABELS, CONFIGURATION]
RUBRIC_HELP = ("Optional: a judge defined in plain words, e.g. '# output: 1-5', '# reads: question, answer, "
               "expected', then [criteria] and its text (see the Run page's rubric judges)")
NEXT, PREVIOUS = "right", "left"  # keys of the labelling queue; each label has its own key
JUDGE_AGAIN_OPEN = "rejudge-open"  # whether the "Judge again" form is open (Session State)


def results_table(results: list[QuestionResult], measures: list[str]) -> pd.DataFrame:
    """The per-question overview of a page of questions: question, answer, error, measures, latency (the measures'
    and the latency's columns are numbers, empty where a question has none)."""
    frame = pd.DataFrame([{"qid": r.question.qid, "question": ui.short(r.question.text),
                           "answer": ui.short(r.outcome.answer),
                           "error": ui.short(r.outcome.error) if r.outcome.error else "",
                           "latency s": r.outcome.latency_s,
                           **{name: r.outcome.measures.get(name) for name in measures}} for r in results],
                         columns=["qid", "question", "answer", "error", "latency s", *measures])
    return frame.astype(dict.fromkeys(["latency s", *measures], "float64"))


def hit_mark(result: QuestionResult, hit: Retrieved) -> str:
    """hit or miss by the qrels, else by the expected sources (as failure attribution decides); "—" when neither
    exists."""
    relevant = relevance(result.question.relevant, result.question.expected_sources)
    return "—" if relevant is None else "hit" if relevant(hit) else "miss"


def label_text(relevant: dict[int, int], pid: int | None) -> str:
    """A retrieved passage's qrels label as shown: the label, or "unlabeled" (never "None")."""
    label = relevant.get(pid) if pid is not None else None
    return "unlabeled" if label is None else str(label)


def retrieved_table(result: QuestionResult) -> pd.DataFrame:
    """The retrieved passages in rank order, each marked hit or miss, with its qrels label when there is one."""
    relevant = result.question.relevant or {}
    in_context = len(result.outcome.context) if result.outcome.context == result.outcome.retrieved[
        :len(result.outcome.context)] else 0
    return pd.DataFrame([{"rank": rank, "pid": hit.pid, "title": hit.title, "score": hit.score,
                          "context": rank <= in_context,
                          "hit": hit_mark(result, hit), "label": label_text(relevant, hit.pid),
                          "text": ui.short(hit.text, 200)} for rank, hit in enumerate(result.outcome.retrieved, 1)])


def show_result(result: QuestionResult) -> None:
    """One question in full: texts as plain text, retrieved passages marked hit or miss with labels."""
    question, outcome = result.question, result.outcome
    st.text(f"Question: {question.text}")
    count = len(outcome.queries)
    for number, query in enumerate(outcome.queries, 1):  # what a query transformation retrieved with
        st.text(f"Retrieved with{f' ({number} of {count})' if count > 1 else ''}: {query}")
    st.text(f"Answer: {outcome.answer if outcome.answer is not None else '(none)'}")
    st.text(stage_line(result))
    if outcome.error:
        st.code(outcome.error, language=None, wrap_lines=True)
    retrieved = retrieved_table(result)
    if not retrieved.empty:
        st.dataframe(retrieved, hide_index=True)
    references = [*question.references, *([question.expected_answer] if question.expected_answer else [])]
    if references:
        st.dataframe(pd.DataFrame({"reference / expected answer": references}), hide_index=True)
    if question.expected_sources:
        st.text(f"Expected sources: {' | '.join(question.expected_sources)}")
        names = dict.fromkeys(s.label for s in outcome.sources)  # ordered, once each
        st.text(f"Retrieved sources: {' | '.join(names) or '(none)'}")
    measures = [{"measure": name, "value": value, "signature": outcome.signatures.get(name, "")}
                for name, value in outcome.measures.items()]
    if measures:
        st.dataframe(pd.DataFrame(measures), hide_index=True)
    judges = [{"judge": name, "score": v.score, "label": v.label, "result": v.result, "threshold": v.threshold,
               "reason": v.reason,
               "model": v.model, "samples": ", ".join(ui.fmt_value(x, 1) for x in v.samples or ()) or None,
               "context": v.context_cut or "seen whole"}
              for name, v in outcome.judges.items()]
    if judges:
        st.dataframe(pd.DataFrame(judges), hide_index=True)
    for name, verdict in outcome.judges.items():
        if verdict.claims is not None:
            show_claims(name, verdict, outcome.context)
    for note in outcome.notes:
        st.text(f"note: {note}")
    st.caption(f"latency {ui.fmt_value(outcome.latency_s, 3)} s · tokens {outcome.prompt_tokens}"
               f"+{outcome.completion_tokens} · attempts {result.attempts}")


def show_claims(judge: str, verdict: Verdict, context: tuple[Retrieved, ...]) -> None:
    """A claims verdict's claims, each with its verdict and the passage it rests on (rank, id, title, text)."""
    if not verdict.claims:
        st.caption(ui.escape_md(f"Judge {judge}: the answer makes no claim (a refusal): marked, not scored."))
        return
    st.caption(ui.escape_md(f"Judge {judge}: {verdict.reason}"))

    def passage(rank: int | None) -> Retrieved | None:
        return context[rank - 1] if rank is not None and rank <= len(context) else None

    st.dataframe(pd.DataFrame([{"claim": c.claim, "verdict": c.verdict, "passage": c.passage,
                                "passage id": c.passage_id or None, "title": hit.title if hit else None,
                                "passage text": ui.short(hit.text, 300) if hit else None}
                               for c in verdict.claims for hit in [passage(c.passage)]]), hide_index=True)


def stage_line(result: QuestionResult) -> str:
    """Where the question failed, and whether declining was the right answer."""
    answerable = " · unanswerable: declining is the right answer" if result.question.answerable is False else ""
    return f"Failure stage: {result.outcome.diagnosis or NOT_ATTRIBUTED}{answerable}"


def abstention_text(aggregates: dict[str, Aggregate]) -> str | None:
    """Whether the target declines what it cannot answer, and only that, in words; None without the measures."""
    def part(name: str, text: str) -> str | None:
        value = aggregates.get(name)
        if value is None or value.mean is None:
            return None
        return text.format(n=round(value.mean * value.count), of=value.count, rate=value.mean)

    parts = [part("correct_abstention", "declined {n} of {of} unanswerable questions ({rate:.0%})"),
             part("hallucination", "answered {n} of them anyway ({rate:.0%} hallucination)"),
             part("false_abstention", "declined {n} of {of} answerable questions ({rate:.0%} false abstention)")]
    return " · ".join(p for p in parts if p) or None


def diagnosis_section(campaign: Campaign) -> None:
    """Where the questions failed (a bar of the stages, the questions of one) and whether the target declines well."""
    counts = campaign_diagnosis(store, campaign.id, principal=principal)
    if counts.total == counts.counts.get(NOT_ATTRIBUTED, 0):
        st.caption("No failure stage: no question has finished yet, or its results were stored before failure "
                   "attribution existed.")
        return
    st.caption("Failure attribution: the stage at which each question went wrong")
    ui.stage_bar(counts, key="stages-chart")
    if (abstention := abstention_text(ui.aggregates(campaign, principal))) is not None:
        st.caption(ui.escape_md(f"Abstention: {abstention}"))
    present = [stage for stage, count in counts.counts.items() if count]
    stage = st.selectbox("Questions at stage", present, format_func=lambda s: f"{s} ({counts.counts[s]})",
                         key=f"stage-{campaign.id}")
    rows = [r for r in ui.cached_results(campaign, principal) if (r.outcome.diagnosis or NOT_ATTRIBUTED) == stage]
    st.dataframe(pd.DataFrame([{"qid": r.question.qid, "question": r.question.text, "answer": r.outcome.answer,
                                "error": r.outcome.error, **{name: r.outcome.measures.get(name)
                                                             for name in ("recall", "rougel", "coverage")}}
                               for r in rows]), hide_index=True, height=200)


principal = ui.page("Campaigns")
store = ui.store()
campaigns = list_campaigns(store, principal=principal)
if not campaigns:
    st.info("No campaign yet.")
    ui.run_link(principal, "Run a first campaign")
    st.stop()
by_id = {c.id: c for c in campaigns}
shown_id = ui.campaign_picker(ui.rows_of(campaigns, principal), "campaign_id", key="campaigns")
if shown_id is None:
    st.stop()
chosen: str = shown_id


def actions(campaign: Campaign) -> None:
    """Rename, resume, retry failed, cancel, delete, recompute abstention (admins only): each refused with a message
    when it does not apply."""
    manager = ui.manager()
    active = campaign.active
    with st.form(f"rename-{chosen}", border=False, enter_to_submit=True):
        name, button = st.columns([4, 1], vertical_alignment="bottom")
        new_name = name.text_input("Name", value=campaign.name, max_chars=200, key=f"name-{chosen}")
        if button.form_submit_button("Rename"):
            with ui.guard():
                manager.rename(chosen, new_name, principal=principal)
                ui.flash(f"Renamed to {' '.join(new_name.split())}.")
                st.rerun()
    cols = st.columns([1, 1, 1, 1, 2])
    if cols[0].button("Resume", disabled=active or campaign.finished >= campaign.total):
        with ui.guard():
            manager.resume(chosen, principal=principal)
            st.rerun()
    if cols[1].button("Retry failed", disabled=active or not campaign.failed):
        with ui.guard():
            manager.retry_failed(chosen, principal=principal)
            st.rerun()
    if cols[2].button("Cancel", disabled=not active):
        with ui.guard():
            manager.cancel(chosen, principal=principal)
            # It stays "running" until its questions in flight (or the corpus indexing) finish.
            ui.flash(f"Cancellation requested for {campaign.name}: it stops once the work in progress ends.")
            st.rerun()
    confirm = cols[4].checkbox("Confirm deletion", key=f"confirm-{chosen}")
    if cols[3].button("Delete", disabled=not confirm):
        with ui.guard():
            manager.delete(chosen, principal=principal)
            ui.flash(f"Deleted {campaign.name}.")
            st.rerun()
    if st.button("Recompute abstention", disabled=active, help="Recompute which questions are unanswerable and the "
                 "abstention measures under the current rule (only a marker makes a question unanswerable; "
                 "no expected answer is no reference). Stored campaigns never change otherwise."):
        with ui.guard():
            changed = recompute_abstention(store, chosen, principal=principal)
            ui.flash(f"Recomputed abstention: {changed} question(s) changed.")
            st.rerun()


def judge_again(campaign: Campaign) -> None:
    """A finished campaign's answers judged again by other judges, a model, a rubric: a new campaign that asks
    nothing of the target (evalcore.campaigns.rejudging)."""
    rubrics = list(campaign.config.get("rubrics") or {})
    # Its form is drawn only once opened: a first visit to the page does not draw its seven fields.
    box = st.expander("Judge again", key=JUDGE_AGAIN_OPEN, on_change="rerun")
    if not box.open:
        return
    with box, st.form(f"rejudge-{chosen}", border=False):
        st.caption("A new campaign judges these answers again, without asking the target: compare the two to see "
                   "what the judges change, and how far they agree.")
        judges = st.multiselect("Judges", [*JUDGES, *rubrics], default=list(campaign.judges), key="rejudge-judges")
        settings: dict[str, str] = {}
        if principal.can(Action.CONFIGURE):
            model, base_url, key_env = st.columns(3)
            settings = {"judge_model": model.text_input("Judge model", key="rejudge-model", placeholder="gpt-4o-mini"),
                        "judge_base_url": base_url.text_input("Judge base URL", key="rejudge-url"),
                        "judge_api_key_env": key_env.text_input("Variable holding its key", key="rejudge-key-env")}
        rubric_name, rubric_text = st.columns([1, 3])
        name = rubric_name.text_input("Rubric name", key="rejudge-rubric-name", placeholder="optional")
        text = rubric_text.text_area("Rubric", key="rejudge-rubric", height=120, help=RUBRIC_HELP)
        if not st.form_submit_button("Judge again", disabled=campaign.status not in JUDGEABLE):
            return
    rubric = name.strip()
    given: dict[str, Any] = {key: value.strip() for key, value in settings.items() if value.strip()}
    given |= {"rubrics": {rubric: text}} if rubric else {}
    with ui.guard():
        if text.strip() and not rubric:
            raise EvalError("a rubric needs a name", where="Rubric name", fix="name it: lower-case letters, digits, _")
        judged = [*judges, *([rubric] if rubric else [])]
        new = ui.manager().rejudge(RejudgeRequest(chosen, judges=tuple(judged), settings=given, principal=principal))
        ui.flash(f"Judging again as {get_campaign(store, new, principal=principal).name}.")
        ui.select_next_run("campaign_id", new)
        st.rerun()


def measure_value(name: str, value: Aggregate) -> str:
    """A measure's mean as shown in large type; a rate (pass/fail measure) with the questions it is over."""
    measure = MEASURES.get(name.split(":")[0])
    rate = name.endswith(":pass") or bool(measure and measure.binary)
    return f"{value.mean:.0%} of {value.count}" if rate and value.mean is not None else ui.fmt_value(value.mean)


def panel() -> None:
    """Progress, the metric panels and the summary (refreshed while it runs)."""
    campaign = get_campaign(store, chosen, principal=principal)
    if not campaign.active and by_id[chosen].active:
        st.rerun()  # it just finished: redraw the whole page (question list, buttons) once
    ui.show_progress(campaign)
    if campaign.error:
        st.text(f"error: {campaign.error}")
    aggregates = ui.aggregates(campaign, principal)
    signatures = load_signatures(store, chosen)
    for title, names in panels(aggregates):
        st.caption(ui.escape_md(title))
        cols = st.columns(PANEL_COLUMNS)  # four a row: a name as long as graded.top1_relevance is not cut
        for position, name in enumerate(names):
            value = aggregates[name]
            hover = f"mean over {value.count} question(s)\n\n" + ui.measure_help(name, signatures.get(name))
            cols[position % PANEL_COLUMNS].metric(ui.escape_md(name), measure_value(name, value), help=hover)
    summary = ui.summary(campaign, principal)
    st.caption("Summary")
    cols = st.columns(7)
    cols[0].metric("Answered", summary.answered)
    cols[1].metric("Failed", summary.failed)
    cols[2].metric("Sources found", ui.fmt_value(summary.sources_found_rate, 2))
    cols[3].metric("Mean coverage", ui.fmt_value(summary.mean_coverage, 2))
    cols[4].metric("Mean AI score", ui.fmt_value(summary.mean_judge_score, 2))
    cols[5].metric("Mean response time", duration_text(summary.mean_latency_s))
    cols[6].metric("Tokens", summary.total_tokens,
                   help=f"answers {summary.tokens.total} · judges {summary.judge_tokens.total} · "
                        f"total {summary.total_tokens}")
    if summary.unknown:
        st.caption("Unreadable verdicts (unknown, never a pass): " + ", ".join(
            f"{ui.escape_md(name)} {count} of {summary.judged.get(name, 0)}"
            for name, count in summary.unknown.items()))
    for line in summary.warnings:
        st.warning(ui.escape_md(line))
    if summary.skipped:
        st.caption("Not judged for want of a reference answer: "
                   + ", ".join(f"{ui.escape_md(name)} {count}" for name, count in summary.skipped.items()))
    if summary.no_claim:
        st.caption("Answers that make no claim (refusals: marked, not scored): "
                   + ", ".join(f"{ui.escape_md(name)} {count}" for name, count in summary.no_claim.items()))
    if summary.cut:
        st.warning("Context cut to fit the judge model's context window (the judge saw less than the answer's "
                   "prompt): " + ", ".join(f"{ui.escape_md(name)} {count}" for name, count in summary.cut.items()))


def conversations_section(campaign: Campaign, found: list[ConversationResult]) -> None:
    """Each conversation's share of turns passed and first failing turn; then one conversation turn by turn, each
    with its answer, stage and retrieved passages."""
    summary = ConversationSummary.of(found)
    mean = "-" if summary.mean_share_passed is None else f"{summary.mean_share_passed:.0%}"
    st.caption(f"{summary.conversations} conversation(s) · {summary.all_passed} with every judged turn passed · "
               f"mean share of turns passed {mean}")
    st.dataframe(pd.DataFrame([{"conversation": c.conversation, "turns": len(c.turns), "passed": c.passed,
                                "judged": c.judged, "share passed": c.share_passed,
                                "first failing turn": c.first_failing_turn, "how": c.first_failure}
                               for c in found]), hide_index=True)
    by_name = {c.conversation: c for c in found}
    name = st.selectbox("Conversation", list(by_name), key=f"conversation-{campaign.id}")
    if name is None:
        return
    turns = by_name[name].turns
    results = {r.question.position: r for r in campaign_results(store, campaign.id, principal=principal,
                                                                 positions=[t.position for t in turns])}
    for turn in turns:
        result = results.get(turn.position)
        if result is not None:
            with st.expander(f"Turn {turn.turn} · {stage_line(result)}", expanded=turn.passed is False):
                show_result(result)


def configuration_section(campaign: Campaign) -> None:
    """The configuration snapshot the campaign ran with, and where it comes from."""
    st.json(campaign.config, expanded=False)
    st.caption(ui.escape_md(f"id {campaign.id} · dataset hash {campaign.dataset_hash or '—'} · judges "
                            f"{', '.join(campaign.judges) or 'none'} · cache {'on' if campaign.cache else 'off'} "
                            f"({campaign.cache_hits} hits) · created {ui.fmt_when(campaign.created_at)}"))


def questions_section(campaign: Campaign) -> None:
    """The questions as a table, a page at a time, filtered by words or errors, and one of them in full."""
    st.subheader("Questions", anchor=False)
    lines = ui.cached_lines(campaign, principal)  # what the filter reads; whole results only for the page shown
    search, only_errors, paging = st.columns([4, 1, 1], vertical_alignment="bottom")
    with search:  # both kept while another section is open
        needle = ui.remembered(st.text_input, "Filter questions", "campaign-filter", "",
                               placeholder="words of the question or the answer")
    with only_errors:
        errors_only = ui.remembered(st.checkbox, "Only errors", "campaign-errors", False)
    matching = [line.position for line in lines if (not errors_only or line.error)
                and (not needle or needle.casefold() in f"{line.text} {line.answer or ''}".casefold())]
    pages = max((len(matching) + PAGE_SIZE - 1) // PAGE_SIZE, 1)
    number = paging.number_input(f"Page (of {pages})", min_value=1, max_value=pages, value=1, key=f"page-{chosen}")
    shown = ui.results_at(campaign, principal, tuple(matching[(number - 1) * PAGE_SIZE: number * PAGE_SIZE]))
    if shown:
        # One question in full at a time: a click on its row, or the picker, chooses it.
        labels = {str(r.question.position): f"{r.question.qid} · {'error' if r.outcome.error else 'ok'} · "
                  f"{ui.short(r.question.text, 100)}" for r in shown}
        # The measures' columns: those of the campaign's questions (any of them has it), whatever the page.
        present = ui.aggregates(campaign, principal)
        overview = results_table(shown, [name for name in QUESTION_MEASURES if name in present])
        picked = ui.table_picker("Question", overview, labels, f"question-{chosen}", key=f"questions-{chosen}")
        show_result(next(r for r in shown if str(r.question.position) == picked))
    else:
        st.caption("No question matches." if lines else "No question has finished yet.")


def agreement_section(campaign: Campaign) -> None:
    """Each labelled judge against the labels, then the queue that walks the questions to label for one judge."""
    if not campaign.judges:
        st.caption("This campaign ran no judge: there is nothing to label.")
        return
    found = campaign_agreement(store, campaign.id, principal=principal)
    if found:
        st.caption("Agreement of each judge with the labels (weighted kappa on ordinal scales)")
        for line in agreement_lines(found):
            st.text(line)
    judge = st.selectbox("Label for the judge", list(campaign.judges), key=f"label-judge-{campaign.id}")
    if judge in found:
        matrix = found[judge]
        st.caption(f"Confusion matrix of {judge}: rows are the labels, columns the judge's verdicts")
        st.dataframe(pd.DataFrame(matrix.matrix, index=list(matrix.categories), columns=list(matrix.categories)))
    if principal.can(Action.LABEL):
        label_queue(campaign, judge)
    labels_files(campaign)


def agreement_lines(found: dict[str, Agreement]) -> list[str]:
    """One line per labelled judge: questions labelled, accuracy, kappa, weighted kappa, its interval."""
    def number(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    return [f"{name}: {a.n} labelled · accuracy {number(a.accuracy)} · kappa {number(a.kappa)}"
            + (f" · weighted kappa {number(a.weighted_kappa)} (linear {number(a.linear_kappa)})"
               if a.weighted_kappa is not None else "")
            + (f" · 95% interval {a.interval[0]:.2f} to {a.interval[1]:.2f}" if a.interval else "")
            for name, a in found.items()]


def label_queue(campaign: Campaign, judge: str) -> None:
    """One answered question at a time, the first unlabelled first: its texts, a button (and key) per label."""
    answered = [r for r in ui.cached_results(campaign, principal) if not r.outcome.error]
    done = {x.qid: x for x in campaign_labels(store, campaign.id, principal=principal) if x.judge == judge}
    if not answered:
        st.caption("No answered question yet.")
        return
    cursor_key = f"label-at-{campaign.id}-{judge}"
    at = st.session_state.get(cursor_key, next_unlabelled(answered, done, -1))
    at = min(max(at, 0), len(answered) - 1)
    result = answered[at]
    st.caption(f"{len(done)} of {len(answered)} answered questions labelled for {judge} · question {at + 1} "
               f"of {len(answered)} · keys: {key_help(scale_keys(campaign, judge))}, ← previous, → next")
    show_for_labelling(result, done.get(result.question.qid))
    note = st.text_input("Note (optional)", key=f"label-note-{campaign.id}-{judge}-{result.question.qid}")
    cols = st.columns(len(scale_keys(campaign, judge)) + 2)
    for col, (label, key) in zip(cols, scale_keys(campaign, judge).items(), strict=False):
        if col.button(label, key=f"label-{label}", shortcut=key, help=f"key {key}"):
            done[result.question.qid] = set_label(store, campaign.id, result.question.qid, judge, label, note=note,
                                                  principal=principal)
            st.session_state[cursor_key] = next_unlabelled(answered, done, at)
            st.rerun()
    if cols[-2].button("Previous", key="label-previous", shortcut=PREVIOUS):
        st.session_state[cursor_key] = max(at - 1, 0)
        st.rerun()
    if cols[-1].button("Next", key="label-next", shortcut=NEXT):
        st.session_state[cursor_key] = next_unlabelled(answered, done, at)
        st.rerun()


def scale_keys(campaign: Campaign, judge: str) -> dict[str, str]:
    """Each label of the judge's scale and its key: 1-5 by their digits, other labels by their rank, then p and f."""
    labels = judge_scale(campaign, judge).labels
    keys = {label: label if label.isdigit() else str(rank) for rank, label in enumerate(labels, 1)}
    return keys | ({"pass": "p", "fail": "f"} if "pass" not in keys else {})


def key_help(keys: dict[str, str]) -> str:
    """The keys of the labels, each with its label when they differ (`p pass`)."""
    return ", ".join(key if key == label else f"{key} {label}" for label, key in keys.items())


def next_unlabelled(answered: list[QuestionResult], done: dict[int, Label], after: int) -> int:
    """The position of the first question after `after` without a label (wrapping around), else the next one."""
    size = len(answered)
    for step in range(1, size + 1):
        position = (after + step) % size
        if answered[position].question.qid not in done:
            return position
    return min(after + 1, size - 1)


def show_for_labelling(result: QuestionResult, given: Label | None) -> None:
    """What a person needs to judge: the question, the passages the answer was built from, the answer, the
    references."""
    st.text(f"Question {result.question.qid}: {result.question.text}")
    for number, hit in enumerate(result.outcome.context, 1):
        st.text(f"[{number}] {hit.title or ''}\n{hit.text}")
    st.text(f"Answer: {result.outcome.answer}")
    for reference in [*result.question.references, *filter(None, [result.question.expected_answer])]:
        st.text(f"Reference: {reference}")
    if given is not None:
        st.caption(ui.escape_md(f"Labelled {given.label} by {given.author} on {ui.fmt_when(given.labelled_at)}"
                                + (f": {given.note}" if given.note else "")))


def labels_files(campaign: Campaign) -> None:
    """The labels as CSV, and labels from a CSV (qid, judge, label; note and author optional)."""
    left, right = st.columns(2)
    left.download_button("Labels (CSV)", data=lambda: labels_csv(store, campaign.id, principal=principal)
                         .encode("utf-8-sig"), file_name=f"{campaign.id}-labels.csv", mime="text/csv",
                         key="labels-export")
    if principal.can(Action.LABEL):
        upload = right.file_uploader("Import labels (CSV)", type=["csv"], key=f"labels-import-{campaign.id}")
        if upload is not None and right.button("Import", key="labels-import-go"):
            with ui.guard():
                count = import_labels_csv(store, campaign.id, upload.getvalue().decode("utf-8-sig"), source=upload.name,
                                          principal=principal)
                ui.flash(f"{count} label(s) imported")
                st.rerun()


campaign = by_id[chosen]
st.subheader(ui.escape_md(campaign.name), anchor=False)
if campaign.answers_from is not None:
    judged = by_id.get(campaign.answers_from)
    st.caption(ui.escape_md(f"Judges again the answers of {judged.name if judged else campaign.answers_from}: its "
                            "target was not asked."))
if principal.can(Action.CHANGE):
    actions(campaign)
    judge_again(campaign)
if campaign.active:
    ui.poll(panel)
else:
    panel()
# One section at a time below the panel, computed only when open: a first visit draws the questions, not the
# failure-stage chart and the configuration too.
talks = campaign_conversations(store, campaign.id, principal=principal)
shown_sections = [QUESTIONS, CONVERSATIONS, *SECTIONS[1:]] if talks else SECTIONS
sections = dict(zip(shown_sections, st.tabs(shown_sections, key="campaign-section", on_change="rerun"), strict=True))
if CONVERSATIONS in sections and sections[CONVERSATIONS].open:
    with sections[CONVERSATIONS]:
        conversations_section(campaign, talks)
if sections[QUESTIONS].open:
    with sections[QUESTIONS]:
        questions_section(campaign)
if sections[STAGES].open:
    with sections[STAGES]:
        if campaign.active:  # refreshed while it runs, as the panel is
            ui.poll(lambda: diagnosis_section(get_campaign(store, chosen, principal=principal)))
        else:
            diagnosis_section(campaign)
if sections[LABELS].open:
    with sections[LABELS]:
        agreement_section(campaign)
if sections[CONFIGURATION].open:
    with sections[CONFIGURATION]:
        configuration_section(campaign)


def export(fmt: str, names: str) -> bytes:
    """The campaign as a file, built when its button is clicked (the CSV is formula-safe, with a BOM)."""
    return export_campaign(store, chosen, fmt, principal=principal,
                           names=names).encode("utf-8-sig" if fmt == "csv" else "utf-8")


st.caption("Export")
cols = st.columns([1, 1, 1, 4])
names = "evaluator" if cols[3].checkbox(
    "Judge fields under the evaluators' names", key="export-names",
    help="gpt_retrieval, retrieval_reason, response_completeness_result, groundedness_pro_label… instead of "
    "score, completeness, groundedness_pro (CSV and JSONL)") else "project"
FORMATS = (("csv", "text/csv", "CSV", "csv"), ("jsonl", "application/jsonl", "JSONL", "jsonl"),
           ("trec", "text/plain", "TREC run", "run.txt"))
for col, (fmt, mime, label, suffix) in zip(cols, FORMATS, strict=False):
    col.download_button(label, data=partial(export, fmt, names), file_name=f"{chosen}.{suffix}", mime=mime,
                        key=f"export-{fmt}", on_click="ignore")
