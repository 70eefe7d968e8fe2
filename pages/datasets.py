"""Datasets: pick one, upload one or import documents as one, read its statistics, browse its questions."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import ui
from evalcore.access.principals import Action, Principal
from evalcore.datasets import Dataset, Question
from evalcore.documents import Chunking
from evalcore.language.text import counted
from evalcore.targets.target_config import KEYS, Chunks

MAX_PICKED = 500
IMPORTED = "documents-report"  # the last import's report, shown once after the rerun


def show_question(dataset: Dataset, question: Question) -> None:
    """A question, its relevant passages with their labels, its reference answers."""
    st.text(question.text)
    if question.labels:
        passages = [dataset.passage(pid) for pid in sorted(question.labels, key=lambda p: -question.labels[p])]
        table = {"pid": [p.pid for p in passages], "title": [p.title for p in passages],
                 "label": [question.labels[p.pid] for p in passages], "text": [p.text for p in passages]}
        if not dataset.has_titles:
            del table["title"]
        ui.text_table(pd.DataFrame(table))
    else:
        st.caption("No qrels: this question is unlabeled for retrieval.")
    if question.references:
        ui.text_table(pd.DataFrame({"reference answers": list(question.references)}))
    else:
        st.caption("No reference answer: no generation measures for this question.")


def import_documents(principal: Principal) -> None:
    """The form that imports uploaded documents as a new dataset's corpus; its report shows after the rerun."""
    with st.form("documents", clear_on_submit=False):
        files = st.file_uploader("Documents: .md, .txt, .html, .pdf, .docx, or one .zip of a folder of them",
                                 type=["md", "markdown", "txt", "text", "html", "htm", "pdf", "docx", "zip"],
                                 accept_multiple_files=True, key="document_files")
        name = st.text_input("Name", placeholder="my-documents", key="document_name",
                             help="Saved as dataset id uploads-<name>: a corpus with no questions yet.")
        left, right = st.columns(2)
        size = left.number_input("Words per passage", min_value=8, max_value=8192, value=Chunks.chunk_size,
                                 help=KEYS["chunk_size"].help + " (the chunk_size key)")
        overlap = right.number_input("Words shared by consecutive passages", min_value=0, max_value=8191,
                                     value=Chunks.chunk_overlap, help="the chunk_overlap key")
        submitted = st.form_submit_button("Import")
    if submitted:
        with ui.guard():
            bar = st.progress(0.0, text="Reading the documents…")

            def progress(done: int, total: int, file: str) -> None:
                bar.progress(done / max(total, 1), text=ui.escape_md(f"Reading {file}…" if file else "Writing…"))

            report = ui.import_uploads([(f.name, f.getvalue()) for f in files or []], name.strip(),
                                       principal=principal, chunking=Chunking.of(int(size), int(overlap)),
                                       progress=progress)
            ui.select_next_run("dataset_ref", report.dataset)
            st.session_state[IMPORTED] = report
            st.rerun()


def show_conversations(dataset: Dataset, count: int) -> None:
    """The conversations the questions are turns of: one line each, then the turns of the one picked, in order."""
    st.subheader("Conversations", anchor=False)
    turns: dict[str, list[Question]] = {}
    for question in dataset.questions:
        if question.conversation is not None:
            turns.setdefault(question.conversation, []).append(question)
    st.caption(f"{counted(count, 'conversation')}: their turns are asked in order, each with the earlier rounds as "
               "history (max_rounds, history in the configuration).")
    st.dataframe(pd.DataFrame([{"conversation": name, "turns": len(found),
                                "first turn": min(found, key=lambda q: q.turn or 0).text}
                               for name, found in turns.items()]), hide_index=True)
    name = st.selectbox("Conversation", list(turns), key="dataset-conversation")
    if name is not None:
        st.dataframe(pd.DataFrame([{"turn": q.turn, "qid": q.qid, "question": q.text,
                                    "reference": q.references[0] if q.references else None}
                                   for q in sorted(turns[name], key=lambda q: q.turn or 0)]), hide_index=True)


def show_documents(dataset: Dataset) -> None:
    """The documents of a corpus whose passages name their file: passages per file, with its title."""
    files = pd.DataFrame({"file": [p.file_name for p in dataset.passages],
                          "title": [p.title for p in dataset.passages]})
    table = files.groupby("file", sort=True).agg(title=("title", "first"), passages=("title", "size")).reset_index()
    st.subheader("Documents", anchor=False)
    st.dataframe(table, hide_index=True)


principal = ui.page("Datasets")
choices = ui.list_datasets()
# The Run page starts from the dataset picked here.
ui.open_on("dataset_ref", "dataset", choices)
ref = ui.remembered_select("Dataset", choices, "dataset_ref",
                           help="`default` is the built-in sample (dataset/samples); other ids are folders under "
                                "dataset/.")

ui.keep(dataset=ref)

if principal.can(Action.CHANGE):
    with st.expander("Upload a dataset (five Parquet files or a zip of them)"):
        with st.form("upload", clear_on_submit=False):
            files = st.file_uploader("queries, corpus, answers, qrels and qas .parquet, or one .zip",
                                     type=["parquet", "zip"], accept_multiple_files=True, key="upload_files")
            name = st.text_input("Name", placeholder="my-dataset",
                                 help="Saved as dataset id uploads-<name> once it is valid.")
            submitted = st.form_submit_button("Validate and save")
        if submitted:
            with ui.guard():
                saved, problems = ui.validate_upload([(f.name, f.getvalue()) for f in files or []], name.strip(),
                                                     principal=principal)
                if problems:
                    ui.upload_report(problems)
                else:
                    ui.select_next_run("dataset_ref", saved)
                    ui.flash(f"Saved as dataset {saved}.")
                    st.rerun()
    with st.expander("Import documents (Markdown, text, HTML, PDF, Word, or a zip of them)"):
        import_documents(principal)
if principal.can(Action.CONFIGURE):
    with st.expander("Generate a test set from this dataset's passages (a model writes and checks the questions)"):
        ui.testset_form(ref, principal)
if report := st.session_state.pop(IMPORTED, None):
    ui.import_report(report)

with ui.guard():
    dataset, stats, passage_tokens = ui.open_dataset(ref)
    # The server's folders are shown to the local operator only: a signed-in key sees the dataset's name.
    where = str(dataset.path) if principal.is_local else ref
    st.caption(f"{ui.escape_md(where)} · content hash {dataset.content_hash[:12]}")
    cols = st.columns(5)
    cols[0].metric("Questions", stats.total_queries,
                   help=f"{stats.labeled_queries} labeled, {stats.unlabeled_queries} unlabeled")
    cols[1].metric("Passages", stats.total_passages,
                   help=f"{stats.distractor_passages} distractors (no question points at them)")
    cols[2].metric("Answers", stats.total_answers, help=f"{stats.queries_without_answer} questions have no answer")
    cols[3].metric("Relevant / labeled question", f"{stats.avg_relevant_per_labeled_query:.2f}")
    cols[4].metric("Answer coverage", f"{stats.answer_share:.2%}",
                   help=f"questions with a reference answer: {stats.answered_queries} of {stats.total_queries}")

    passages, questions = stats.passage_tokens, stats.question_tokens
    st.caption(f"{stats.documents} documents · {stats.labeled_queries} labeled and {stats.unlabeled_queries} "
               f"unlabeled questions · {stats.queries_without_answer} without answer · {stats.distractor_passages} "
               f"distractor passages · passage tokens min/median/max {passages.min}/{passages.median:g}/{passages.max} "
               f"· question tokens {questions.min}/{questions.median:g}/{questions.max}")
    left, right = st.columns(2)
    relevant = pd.Series(stats.relevant_per_labeled_query, dtype=int).value_counts().sort_index()
    if relevant.empty:
        left.caption("Relevant passages per labeled question: no question has a relevant passage (qrels label >= 1).")
    else:
        with left:
            ui.bars(pd.DataFrame({"relevant passages": relevant.index, "questions": relevant.values}),
                    "Relevant passages per labeled question")
    with right:
        ui.histogram(passage_tokens, "tokens", "Passage length (tokens)")
    labels = pd.DataFrame({"label": list(stats.label_distribution), "rows": list(stats.label_distribution.values())})
    if labels.empty:
        left.caption("qrels label distribution: qrels.parquet has no rows.")
    else:
        with left:
            ui.bars(labels, "qrels label distribution")
    with right:
        ui.bars(pd.DataFrame({"passages with": ["Han characters", "accented Latin letters"],
                              "share": [stats.han_share, stats.accented_latin_share]}), "Language mix", share=True)

    if any(p.file_name for p in dataset.passages):
        show_documents(dataset)
    if ui.is_testset(dataset):
        ui.testset_quality(dataset)
        ui.testset_review(dataset, principal)
    if stats.conversations:
        show_conversations(dataset, stats.conversations)
    st.subheader("Questions", anchor=False)
    if not dataset.questions:
        st.caption("No questions yet: this dataset is a corpus (imported from documents). Campaigns need questions: "
                   "generate a test set from it (above), use it as the knowledge base of a suite's target (Suites, "
                   "then Run), or add questions to its queries.parquet.")
    else:
        needle = st.text_input("Find questions", placeholder="words of the question, or its id",
                               key="dataset-find").casefold()
        # The picker holds the first matches only: a dataset of 100,000 questions is not sent to the browser.
        found = [q for q in dataset.questions if not needle or needle in f"{q.qid} {q.text}".casefold()]
        by_qid = {q.qid: q for q in found[:MAX_PICKED]}
        if len(found) > MAX_PICKED:
            st.caption(f"{len(found)} questions match: the first {MAX_PICKED} are listed, find the others by their "
                       "words.")
        ui.open_on("dataset-question", "question", list(by_qid))
        qid = st.selectbox("Question", list(by_qid), format_func=lambda q: f"{q} · {ui.short(by_qid[q].text)}",
                           key="dataset-question")
        ui.keep(question=None if qid is None else str(qid))
        if qid is None:
            st.caption("No question matches.")
        else:
            show_question(dataset, by_qid[qid])
    ui.run_link(principal, "Run a campaign on this dataset")
