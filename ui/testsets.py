"""Test sets on the Datasets page: the form that generates one from the corpus shown (a job, followed with its
progress), the quality report of a generated one, and the review queue (keys: a accept, e edit, x reject, arrows to
move), like the labels queue."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from evalcore.access.principals import Action, Principal
from evalcore.datasets import Dataset, resolve_dataset
from evalcore.datasets.loader import DATASET_ID
from evalcore.datasets.uploads import upload_root
from evalcore.errors import EvalError
from evalcore.jobs.job_queue import Job, cancel_job, get_job, list_jobs
from evalcore.testsets import (
    LANGUAGES,
    PROVENANCE_FILE,
    TESTSET_JOB,
    Candidate,
    GenerationRequest,
    Kind,
    Provenance,
    QualityReport,
    measure_testset,
    read_provenance,
    review_question,
    start_testset,
)
from ui.engine import store, wake_jobs
from ui.messages import flash, guard
from ui.text import cells, escape_md

NEXT, PREVIOUS = "right", "left"


def testset_form(ref: str, principal: Principal) -> None:
    """The form that generates a test set from the dataset shown (a job); its progress once queued."""
    job = _newest_job(ref, principal)
    if job is not None and job.active:
        st.fragment(run_every=1.0)(partial(_follow, job.id, principal))()
    elif job is not None and job.error:
        st.error(escape_md(f"The last test set from {ref} failed: {job.error}"))
    with st.form("testset", clear_on_submit=False):
        left, right = st.columns(2)
        out = left.text_input("New dataset id", value=f"{ref}-testset", key="testset-out",
                              help="a folder under dataset/ (must not exist unless replaced)")
        questions = right.number_input("Questions", min_value=1, max_value=5000, value=40, key="testset-questions")
        kinds = st.multiselect("Kinds, in turn", [k.value for k in Kind], default=[k.value for k in Kind],
                               key="testset-kinds")
        language = left.selectbox("Language", ["each passage's own", *LANGUAGES], key="testset-language")
        seed = right.number_input("Seed", min_value=0, value=0, key="testset-seed")
        model = left.text_input("Model (judge_model)", key="testset-model", placeholder="gpt-4o-mini")
        base_url = right.text_input("Server (judge_base_url)", key="testset-url", placeholder="http://127.0.0.1:8080/v1")
        key_env = left.text_input("Key variable (judge_api_key_env)", value="OPENAI_API_KEY", key="testset-key",
                                  help="the NAME of the environment variable holding the key; empty: none")
        local = right.checkbox("The offline SmolLM2 instead (judge_kind = local: weak, see the docs)",
                               key="testset-local")
        replace = st.checkbox("Replace the dataset if it exists", key="testset-replace")
        submitted = st.form_submit_button("Generate")
    if submitted:
        keys = {"judge_kind": "local"} if local else {"judge_model": model.strip(), "judge_base_url": base_url.strip(),
                                                      "judge_api_key_env": key_env.strip()}
        with guard():
            if not DATASET_ID.fullmatch(out.strip()):
                raise EvalError("not a dataset id", where="New dataset id", found=out,
                                expected="letters, digits, '.', '_' or '-' (at most 64)")
            request = GenerationRequest(str(resolve_dataset(ref)), str(upload_root() / out.strip()), int(questions),
                                     Kind.parse(kinds), None if language not in LANGUAGES else language, int(seed),
                                     keys, replace=replace)
            start_testset(store(), request, principal=principal)
            wake_jobs()
            st.rerun()


def _newest_job(ref: str, principal: Principal) -> Job | None:
    return next((job for job in list_jobs(store(), kind=TESTSET_JOB, principal=principal)
                 if job.params.get("dataset") == str(resolve_dataset(ref))), None)


def _follow(job_id: str, principal: Principal) -> None:
    """A running generation's progress, with a button to cancel it; the page again once it ended."""
    job = get_job(store(), job_id, principal=principal)
    if not job.active:
        if job.result:
            flash(f"Test set {job.result['dataset']} written: pick it above to measure and review it.")
        st.rerun()
    done = f"{job.done} of {job.total} questions" if job.total else "starting"
    st.progress(job.done / job.total if job.total else 0.0, text=f"Generating a test set ({job.status.value}): {done}")
    if st.button("Cancel the generation", key="cancel-testset"):
        with guard():
            cancel_job(store(), job_id, principal=principal)
            st.rerun()


def is_testset(dataset: Dataset) -> bool:
    """Whether the dataset was generated (it has its provenance)."""
    return (dataset.path / PROVENANCE_FILE).is_file()


@st.cache_data(max_entries=8, show_spinner="Measuring the test set…")
def _report(path: str, stamp: int) -> QualityReport:
    return measure_testset(Path(path))


def testset_quality(dataset: Dataset) -> None:
    """The quality report of a generated test set, with its provenance."""
    provenance = read_provenance(dataset.path)
    report = _report(str(dataset.path), (dataset.path / PROVENANCE_FILE).stat().st_mtime_ns)
    st.subheader("Test set quality", anchor=False)
    cols = st.columns(4)
    cols[0].metric("Accepted", f"{report.accepted}/{report.candidates}", help=f"{report.kept} in the dataset "
                   "after review; " + f"{report.failed} could not be written")
    cols[1].metric("Near-duplicates", f"{report.duplicate_rate:.1%}")
    cols[2].metric("Documents with a question", f"{report.documents_covered:.0%}", help=f"of {report.documents}")
    cols[3].metric("Baseline recall@10", "—" if report.recall is None else f"{report.recall:.2f}",
                   help="BM25's recall of the labelled passages: lower is harder")
    st.dataframe(cells(pd.DataFrame([k.to_dict() for k in report.by_kind])), hide_index=True)
    for line in report.lines()[len(report.by_kind) + 3:]:
        st.text(line)
    st.caption(escape_md(f"Model {provenance.model} · prompts {provenance.prompts_hash} · seed {provenance.seed} · "
                         f"corpus {provenance.corpus.get('dataset')} ({provenance.corpus.get('content_hash', '')[:12]})"
                         f" · {len(provenance.reviews)} review decisions"))


def testset_review(dataset: Dataset, principal: Principal) -> None:
    """One generated question at a time, the first not reviewed first: its passages, its answer, the critic's
    verdict; accept (a), edit (e), reject (x: r reloads the page), previous (←), next (→)."""
    provenance = read_provenance(dataset.path)
    written = [c for c in provenance.candidates if c.question]
    if not written:
        st.caption("No question was written.")
        return
    reviews = provenance.review_of()
    cursor = f"testset-at-{dataset.name}"
    at = min(max(st.session_state.get(cursor, _next(written, reviews, -1)), 0), len(written) - 1)
    candidate = written[at]
    st.subheader("Review queue", anchor=False)
    st.caption(f"{len(reviews)} of {len(written)} reviewed · question {at + 1} of {len(written)} · keys: a accept, "
               "e edit, x reject, ← previous, → next")
    _show(dataset, candidate, provenance)
    if not principal.can(Action.CHANGE):
        return
    editing = st.session_state.get("testset-editing") == candidate.qid
    cols = st.columns(5)
    if cols[0].button("Accept", key="testset-accept", shortcut="a"):
        _decide(dataset, candidate, "accept", at, written, principal)
    if cols[1].button("Edit", key="testset-edit", shortcut="e"):
        st.session_state["testset-editing"] = candidate.qid
        st.rerun()
    if cols[2].button("Reject", key="testset-reject", shortcut="x"):
        _decide(dataset, candidate, "reject", at, written, principal)
    if cols[3].button("Previous", key="testset-previous", shortcut=PREVIOUS):
        st.session_state[cursor] = max(at - 1, 0)
        st.rerun()
    if cols[4].button("Next", key="testset-next", shortcut=NEXT):
        st.session_state[cursor] = _next(written, reviews, at)
        st.rerun()
    if editing:
        with st.form("testset-edit-form"):
            question = st.text_area("Question", value=candidate.question)
            answer = st.text_area("Reference answer", value=candidate.answer, disabled=not candidate.answerable)
            if st.form_submit_button("Save the edit"):
                _decide(dataset, candidate, "edit", at, written, principal, question, answer)


def _show(dataset: Dataset, candidate: Candidate, provenance: Provenance) -> None:
    review = provenance.review_of().get(candidate.qid)
    st.text(f"{candidate.kind.value} · {candidate.language} · question {candidate.qid}\n{candidate.question}")
    st.text(f"Answer: {candidate.answer}" if candidate.answerable else "Unanswerable: declining is the right answer")
    for pid in candidate.sources:
        passage = dataset.passage(pid)
        st.text(f"[source {pid}] {passage.title}\n{passage.text}")
    verdict = "accepted" if candidate.accepted else "rejected: " + "; ".join(
        [*candidate.rejections, *filter(None, [candidate.error])])
    st.caption(escape_md(f"The checks: {verdict}. Critic: {candidate.critic_reason or '—'}"))
    if review is not None:
        st.caption(escape_md(f"Reviewed: {review.decision.value} by {review.author}"))


def _decide(dataset: Dataset, candidate: Candidate, decision: str, at: int, written: list[Candidate],
            principal: Principal, question: str | None = None, answer: str | None = None) -> None:
    with guard():
        review_question(dataset.path, candidate.qid, decision, question=question,
                        answer=answer if candidate.answerable else None, principal=principal)
        st.session_state.pop("testset-editing", None)
        st.session_state[f"testset-at-{dataset.name}"] = min(at + 1, len(written) - 1)
        st.rerun()


def _next(written: list[Candidate], reviews: Mapping[int, object], after: int) -> int:
    """The position of the first question after `after` not reviewed (wrapping around), else the next one."""
    for step in range(1, len(written) + 1):
        position = (after + step) % len(written)
        if written[position].qid not in reviews:
            return position
    return min(after + 1, len(written) - 1)
