"""Turning a launch request into a validated plan: configuration, questions, corpus, target."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.campaigns.records import Campaign, Question
from evalcore.datasets import Dataset, load_dataset
from evalcore.errors import EvalError
from evalcore.metrics.abstention import is_unanswerable_marker
from evalcore.metrics.graded import GradedScale
from evalcore.store import Connection, Store, dumps
from evalcore.suites import Suite
from evalcore.targets.saved import get_target

if TYPE_CHECKING:
    from evalcore.targets import TargetConfig

DEFAULT_REMOTE_CONCURRENCY = 8


def local_concurrency() -> int:
    """Questions in flight for work done on this machine: one core is left to the rest."""
    return max((os.cpu_count() or 1) - 1, 1)


def remote_concurrency() -> int:
    """Questions in flight when the work is remote calls (EVALCORE_REMOTE_CONCURRENCY, default 8)."""
    text = os.environ.get("EVALCORE_REMOTE_CONCURRENCY", "")
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_REMOTE_CONCURRENCY


def is_remote(config: TargetConfig) -> bool:
    """Whether answering a question mostly waits on a remote service."""
    return (
        config.kind == "http_agent"
        or (config.kind == "rag" and config.generator == "openai")
        or config.reranker == "http"
        or (config.reranker == "llm" and bool(config.rerank_url))
    )


def uses_local_model(config: TargetConfig) -> bool:
    """Whether answering runs the in-process model, which answers one call at a time."""
    return config.kind == "rag" and (config.generator == "local"
                                     or (config.reranker == "llm" and not config.rerank_url))


def default_concurrency(config: TargetConfig) -> int:
    """Questions in flight when none is asked for.

    The local model serialises its calls: more questions in flight would only queue for it and
    count the wait in their response time.
    """
    if uses_local_model(config):
        return 1
    return remote_concurrency() if is_remote(config) else local_concurrency()


def resolve_config(store: Store, config: TargetConfig | None, target_id: str | None, suite: Suite | None,
                   tenant: str | None) -> tuple[TargetConfig, str | None]:
    """The configuration to run and the saved target it came from, if any."""
    from evalcore.targets import TargetConfig

    if config is not None:
        return config, target_id
    target_id = target_id or (suite.target_id if suite is not None else None)
    if target_id in (None, "", "default"):
        return TargetConfig(), None
    return get_target(store, target_id, tenant), target_id


def dataset_questions(dataset: Dataset) -> list[Question]:
    """The question snapshot of a dataset campaign (labels, every reference answer, the dataset's answerability)."""
    return with_answerability([Question(position, q.qid, q.text, None, tuple(q.references), dict(q.labels) or None,
                                        (), q.answerable)
                               for position, q in enumerate(dataset.questions)])


def suite_questions(suite: Suite) -> list[Question]:
    """The question snapshot of a suite campaign: the cases as they are at launch."""
    return with_answerability([Question(position, position + 1, case.question, case.expected_answer, (), None,
                                        tuple(case.expected_sources))
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
    answers = (question.expected_answer, *question.references)
    if any(is_unanswerable_marker(text) for text in answers):
        return False
    if question.answerable is not None:
        return question.answerable
    return True if any((text or "").strip() for text in answers) else None


def graded_scale(dataset: Dataset, config: TargetConfig) -> GradedScale | None:
    """The label scale of graded retrieval when the dataset's qrels are graded (a label above 1), else None.

    The top of the scale is graded_label_max, or the dataset's highest label; EvalError when a
    label falls outside the configured scale.
    """
    labels = [label for q in dataset.questions for label in q.labels.values()]
    if not labels or max(labels) <= 1:
        return None
    low, high = config.graded_label_min, config.graded_label_max or max(labels)
    outside = sorted({label for label in labels if not low <= label <= high})
    if outside or high <= low:
        raise EvalError("the dataset's qrels labels fall outside the graded scale", where="graded_label_max",
                        found=f"labels {min(labels)}..{max(labels)}", expected=f"labels within {low}..{high}",
                        fix="set graded_label_min/graded_label_max to the scale the labels use")
    return GradedScale(low, high, dict(config.graded_thresholds))


def dataset_tag(ref: str) -> str:
    """The dataset id as it appears in an evaluation task's id (the folder name for a path)."""
    name = str(ref).rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or "dataset"
    return re.sub(r"[^A-Za-z0-9.-]+", "-", name)


def load_corpus(ref: str, expected_hash: str | None, root: Path | None = None) -> Dataset:
    """Load a dataset (an id under `root`, default dataset/, or a path); when resuming, refuse one whose content
    changed."""
    dataset = load_dataset(ref, root)
    if expected_hash and dataset.content_hash != expected_hash:
        raise EvalError(
            "the dataset changed since this campaign started", where=ref,
            found=dataset.content_hash[:12], expected=expected_hash[:12],
            fix="launch a new campaign: results on two versions of a dataset cannot be mixed",
        )
    return dataset


def stored_dataset_path(campaign: Campaign) -> str:
    """Where the campaign's dataset was last loaded from; EvalError saying how to point at a moved one."""
    path = campaign.options.dataset_path
    if path is None or not Path(path).is_dir():
        raise EvalError("the campaign's dataset folder is gone", where=path,
                        fix="give its new location (same content) with --dataset PATH")
    return path


def insert_questions(conn: Connection, campaign_id: str, questions: list[Question]) -> None:
    """Write the question snapshot."""
    conn.executemany(
        "INSERT INTO campaign_questions (campaign_id, position, qid, question, expected_answer, refs, relevant, "
        "expected_sources, answerable) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (campaign_id, q.position, q.qid, q.text, q.expected_answer, dumps(list(q.references)),
             dumps({str(k): v for k, v in q.relevant.items()}) if q.relevant is not None else None,
             dumps(list(q.expected_sources)), None if q.answerable is None else int(q.answerable))
            for q in questions
        ],
    )


def stored_questions(store: Store, campaign_id: str, only: str) -> list[Question]:
    """Snapshot questions still to run: `missing` (no result) or `failed` (result with an error)."""
    condition = {
        "missing": "NOT EXISTS (SELECT 1 FROM results r WHERE r.campaign_id = q.campaign_id AND r.position = "
                   "q.position)",
        "failed": "EXISTS (SELECT 1 FROM results r WHERE r.campaign_id = q.campaign_id AND r.position = q.position "
                  "AND r.error IS NOT NULL)",
    }[only]
    rows = store.read(f"SELECT * FROM campaign_questions q WHERE q.campaign_id = ? AND {condition} ORDER BY q.position",
                      (campaign_id,))
    return [Question.from_row(row) for row in rows]


def check_judges(judges: tuple[str, ...], rubrics: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Known judge names (aliases resolved; the configuration's rubrics), without duplicates, in the given order."""
    from evalcore.judges import ALIASES, JUDGES

    names = [ALIASES.get(name, name) for name in judges]
    unknown = [name for name in names if name not in JUDGES and name not in rubrics]
    if unknown:
        raise EvalError(f"unknown judge {unknown[0]!r}", where="judges", expected=", ".join(JUDGES + rubrics),
                        fix="define it as a rubric in the configuration ([rubrics])")
    return tuple(dict.fromkeys(names))
