"""One question in full (texts, passages marked hit or miss, measures, exact checks, verdicts, claims), and as a
labeller sees it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import ui
from evalcore.campaigns import QuestionResult
from evalcore.campaigns.question_labels import Label
from evalcore.costs import cost_line
from evalcore.judges import Verdict
from evalcore.targets import Retrieved
from ui.campaign.tables import retrieved_table, stage_line


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
        st.dataframe(ui.cells(retrieved), hide_index=True)
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
        st.dataframe(ui.cells(pd.DataFrame(measures)), hide_index=True)
    if outcome.check_results:
        st.dataframe(pd.DataFrame([{"exact check": check, "result": "pass" if passed else "fail"}
                                   for check, passed in outcome.check_results.items()]), hide_index=True)
    judges = [{"judge": name, "score": v.score, "label": v.label, "result": v.result, "threshold": v.threshold,
               "reason": v.reason,
               "model": v.model, "samples": ", ".join(ui.fmt_value(x, 1) for x in v.samples or ()) or None,
               "context": v.context_cut or "seen whole"}
              for name, v in outcome.judges.items()]
    if judges:
        st.dataframe(ui.cells(pd.DataFrame(judges)), hide_index=True)
    for name, verdict in outcome.judges.items():
        if verdict.claims is not None:
            show_claims(name, verdict, outcome.context)
    for note in outcome.notes:
        st.text(f"note: {note}")
    st.caption(f"latency {ui.fmt_value(outcome.latency_s, 3)} s · tokens {outcome.prompt_tokens}"
               f"+{outcome.completion_tokens} · {ui.escape_md(cost_line(outcome.usage))} · attempts {result.attempts}")


def show_claims(judge: str, verdict: Verdict, context: tuple[Retrieved, ...]) -> None:
    """A claims verdict's claims, each with its verdict and the passage it rests on (rank, id, title, text)."""
    if not verdict.claims:
        st.caption(ui.escape_md(f"Judge {judge}: the answer makes no claim (a refusal): marked, not scored."))
        return
    st.caption(ui.escape_md(f"Judge {judge}: {verdict.reason}"))

    def passage(rank: int | None) -> Retrieved | None:
        return context[rank - 1] if rank is not None and rank <= len(context) else None

    st.dataframe(ui.cells(pd.DataFrame([{"claim": c.claim, "verdict": c.verdict, "passage": c.passage,
                                "passage id": c.passage_id or None, "title": hit.title if hit else None,
                                "passage text": ui.short(hit.text, 300) if hit else None}
                               for c in verdict.claims for hit in [passage(c.passage)]])), hide_index=True)


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
