"""A campaign's question snapshot: built from a dataset or a suite at launch (each question marked answerable or
not), written with the campaign, and read back for resume and retry."""

from __future__ import annotations

from dataclasses import replace

from evalcore.campaigns.records import Question
from evalcore.datasets import Dataset
from evalcore.metrics.abstention import is_unanswerable_marker
from evalcore.metrics.answer_checks import parse_checks
from evalcore.store import Connection, Store, dumps, question_rows
from evalcore.suites import Suite


def dataset_questions(dataset: Dataset, limit: int | None = None) -> list[Question]:
    """The question snapshot of a dataset campaign (labels, every reference answer, the dataset's answerability): its
    first `limit` questions, or every one."""
    # Built marked (no copy of each question to mark it): a launch of thousands of questions waits for this. Only the
    # questions run are built (a run of 2,000 of 100,000 questions does not wait for the rest).
    asked = dataset.questions[:limit] if limit else dataset.questions
    return [Question(position, q.qid, q.text, None, references, dict(q.labels) or None, (),
                     marked_answerable(None, references, q.answerable), checks=_checks(q.checks, q.qid),
                     conversation=q.conversation, turn=q.turn)
            for position, q in enumerate(asked) for references in (tuple(q.references),)]


def _checks(cell: str, qid: int) -> tuple[str, ...]:
    """A dataset question's exact checks, each as written; EvalError naming the question and the check."""
    if not cell:
        return ()
    return tuple(check.text for check in parse_checks(cell, f"queries.parquet, question {qid}: checks"))


def suite_questions(suite: Suite) -> list[Question]:
    """The question snapshot of a suite campaign: the cases as they are at launch."""
    return with_answerability([Question(position, position + 1, case.question, case.expected_answer, (), None,
                                        tuple(case.expected_sources), checks=case.checks,
                                        conversation=case.conversation, turn=case.turn)
                               for position, case in enumerate(suite.cases)])


def with_answerability(questions: list[Question]) -> list[Question]:
    """The questions marked answerable, unanswerable, or neither (see answerability)."""
    return [replace(q, answerable=answerability(q)) for q in questions]


def answerability(question: Question) -> bool | None:
    """False only when the question set marks the question; True when it has a reference; else None (no reference).

    The marks: an expected or reference answer that is an unanswerable marker (`(unanswerable)`,
    `[no answer]`), or a dataset's `answerable` column set to false. An empty expected answer is
    no reference, not a question to decline: it gets no abstention measure.
    """
    return marked_answerable(question.expected_answer, question.references, question.answerable)


def marked_answerable(expected_answer: str | None, references: tuple[str, ...], answerable: bool | None) -> bool | None:
    """answerability of a question with this expected answer, these references and this dataset mark."""
    answers = (expected_answer, *references)
    if any(is_unanswerable_marker(text) for text in answers):
        return False
    if answerable is not None:
        return answerable
    return True if any((text or "").strip() for text in answers) else None


def insert_questions(conn: Connection, campaign_id: str, questions: list[Question]) -> None:
    """Write the question snapshot."""
    question_rows.insert_questions(
        conn,
        (  # one row at a time: 100,000 questions' rows are never all in memory at once
            (campaign_id, q.position, q.qid, q.text, q.expected_answer, dumps(list(q.references)),
             dumps({str(k): v for k, v in q.relevant.items()}) if q.relevant is not None else None,
             dumps(list(q.expected_sources)), None if q.answerable is None else int(q.answerable),
             dumps(list(q.checks)) if q.checks else None, q.conversation, q.turn)
            for q in questions
        ),
    )


def stored_questions(store: Store, campaign_id: str, only: str) -> list[Question]:
    """Snapshot questions still to run: `missing` (no result) or `failed` (result with an error); or `all` of them."""
    return [Question.from_row(row) for row in question_rows.question_rows(store, campaign_id, only)]
