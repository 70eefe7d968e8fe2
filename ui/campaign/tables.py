"""What the Campaigns page shows, computed: per-question tables, stage lines, measure values, agreement lines, the
labelling keys and queue order (no drawing: tested without a page)."""

from __future__ import annotations

import pandas as pd

from evalcore.campaigns import Aggregate, QuestionResult
from evalcore.campaigns.question_labels import Label, judge_scale
from evalcore.campaigns.records import Campaign
from evalcore.diagnosis import NOT_ATTRIBUTED, relevance
from evalcore.metrics import MEASURES, in_words
from evalcore.metrics.agreement import Agreement
from evalcore.targets import Retrieved
from ui.text import fmt_value, short


def results_table(results: list[QuestionResult], measures: list[str]) -> pd.DataFrame:
    """The per-question overview of a page of questions: question, answer, error, measures, latency (the measures'
    and the latency's columns are numbers, empty where a question has none)."""
    frame = pd.DataFrame([{"qid": r.question.qid, "question": short(r.question.text),
                           "answer": short(r.outcome.answer),
                           "error": short(r.outcome.error) if r.outcome.error else "",
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
    return pd.DataFrame([{"rank": rank, "pid": hit.shown_id, "title": hit.title, "score": hit.score,
                          "context": rank <= in_context,
                          "hit": hit_mark(result, hit), "label": label_text(relevant, hit.pid),
                          "text": short(hit.text, 200)} for rank, hit in enumerate(result.outcome.retrieved, 1)])


def stage_line(result: QuestionResult) -> str:
    """Where the question failed, and whether declining was the right answer."""
    answerable = " · unanswerable: declining is the right answer" if result.question.answerable is False else ""
    return f"Failure stage: {result.outcome.diagnosis or NOT_ATTRIBUTED}{answerable}"


def abstention_text(aggregates: dict[str, Aggregate]) -> str | None:
    """Whether the target declines what it cannot answer, and only that, in words; None without the measures."""
    return in_words({name: (value.mean, value.count) for name, value in aggregates.items()}, "abstention")


def measure_value(name: str, value: Aggregate) -> str:
    """A measure's mean as shown in large type; a rate (pass/fail measure) with the questions it is over."""
    measure = MEASURES.get(name.split(":")[0])
    rate = name.endswith(":pass") or bool(measure and measure.binary)
    return f"{value.mean:.0%} of {value.count}" if rate and value.mean is not None else fmt_value(value.mean)


def agreement_lines(found: dict[str, Agreement]) -> list[str]:
    """One line per labelled judge: questions labelled, accuracy, kappa, weighted kappa, its interval."""
    def number(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    return [f"{name}: {a.n} labelled · accuracy {number(a.accuracy)} · kappa {number(a.kappa)}"
            + (f" · weighted kappa {number(a.weighted_kappa)} (linear {number(a.linear_kappa)})"
               if a.weighted_kappa is not None else "")
            + (f" · 95% interval {a.interval[0]:.2f} to {a.interval[1]:.2f}" if a.interval else "")
            for name, a in found.items()]


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
