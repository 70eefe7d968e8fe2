"""People's labels of a campaign's questions for its judges, and how far each judge agrees with them.

A label is given per campaign, question and judge, on the judge's own scale (1-5, pass/fail, a
rubric's labels) or as pass/fail on any judge, with a note, who gave it and when. Agreement compares
each judge's verdicts with the labels (evalcore.metrics.agreement): on the judge's scale when every
label is on it, else as pass/fail (a label on the scale passes at the judge's pass mark).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcore.access.principals import Action, Principal
from evalcore.campaigns.queries import campaign_results, check_visible, get_campaign
from evalcore.campaigns.records import Campaign, QuestionResult
from evalcore.campaigns.result_rows import answers_holder
from evalcore.errors import EvalError
from evalcore.formats.csvcells import csv_text, restore_cell
from evalcore.formats.shapes import doc
from evalcore.judges import Verdict, load_prompt, parse_rubric
from evalcore.metrics.agreement import Agreement, agreement
from evalcore.store import Store, label_rows
from evalcore.store.question_rows import has_question, question_ids, question_texts

PASS_FAIL = ("fail", "pass")
NOTE_CHARS = 2000
CSV_COLUMNS = ("qid", "judge", "label", "note", "author", "labelled_at", "question")


@dataclass(frozen=True)
class Scale:
    """A judge's labels from worst to best, and whether their order means something (weighted kappa)."""

    labels: tuple[str, ...]
    ordinal: bool


@dataclass(frozen=True)
class Label:
    """One person's label of one question for one judge."""

    qid: int = field(metadata=doc())
    judge: str = field(metadata=doc())
    label: str = field(metadata=doc("on the judge's scale (1-5, a rubric's label) or pass / fail"))
    note: str = field(metadata=doc())
    author: str = field(metadata=doc("who labelled: the API key's id, a user name, or the CSV's author column"))
    labelled_at: float = field(metadata=doc())

    @classmethod
    def from_row(cls, row: Any) -> Label:
        """From a `labels` row."""
        return cls(row["qid"], row["judge"], row["label"], row["note"], row["author"], row["labelled_at"])

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"qid": self.qid, "judge": self.judge, "label": self.label, "note": self.note, "author": self.author,
                "labelled_at": self.labelled_at}


def judge_scale(campaign: Campaign, judge: str) -> Scale:
    """The scale a campaign's judge gives verdicts on: a rubric's labels, 1-5, or pass/fail."""
    rubrics = campaign.config.get("rubrics") or {}
    if judge in rubrics:
        return Scale(parse_rubric(judge, rubrics[judge]).labels, True)
    prompt = load_prompt(judge)
    return Scale(tuple("12345"), True) if prompt.output == "likert" else Scale(PASS_FAIL, False)


def judged_by(campaign: Campaign, judge: str) -> None:
    """EvalError unless the campaign ran this judge."""
    if judge not in campaign.judges:
        raise EvalError(f"campaign {campaign.id} was not judged by {shown_name(judge)}", where="judge",
                        expected=", ".join(campaign.judges) or "a judged campaign")


def shown_name(text: str) -> str:
    """A name from the request, quoted and cut short."""
    return repr(text) if len(text) <= 80 else repr(text[:80]) + f"... ({len(text)} characters)"


def checked_label(campaign: Campaign, judge: str, label: str) -> str:
    """The label as stored (trimmed, lower case); EvalError unless the judge ran and the label is on its scale."""
    judged_by(campaign, judge)
    text = " ".join(str(label).split()).lower()
    text = text.removesuffix(".0")  # 4.0 from a spreadsheet is 4
    allowed = dict.fromkeys(judge_scale(campaign, judge).labels + PASS_FAIL)
    if text not in allowed:
        raise EvalError(f"{label!r} is not a label of the {judge} judge", where="label", expected=", ".join(allowed))
    return text


def label_author(principal: Principal | None, given: str = "") -> str:
    """Who a label is recorded as labelled by: the acting key (a principal names no one else), or, for the local
    operator of the database (the CLI), the name given (its user name by default)."""
    if principal is not None:
        return f"key {principal.key_id}" if principal.key_id else "local"
    return given.strip() or "local"


def checked_note(note: str) -> str:
    """A note as stored (trimmed); EvalError over NOTE_CHARS characters (never cut)."""
    if len(note) > NOTE_CHARS:
        raise EvalError(f"a note has at most {NOTE_CHARS} characters", where="note", found=str(len(note)))
    return note.strip()


def set_label(store: Store, campaign_id: str, qid: int, judge: str, label: str, *, note: str = "", author: str = "",
              principal: Principal | None = None) -> Label:
    """Label one question for one judge (a new label replaces the previous one); EvalError on a bad one. The author
    is the principal's (`label_author`); `author` names the local operator."""
    campaign = labelling(store, campaign_id, principal)
    text = checked_label(campaign, judge, label)
    if not has_question(store, campaign_id, qid):
        raise EvalError(f"campaign {campaign_id} has no question {qid}", where="qid")
    saved = Label(qid, judge, text, checked_note(note), label_author(principal, author), time.time())
    store.write(lambda conn: label_rows.put_labels(
        conn, [(campaign_id, qid, judge, saved.label, saved.note, saved.author, saved.labelled_at)]))
    return saved


def delete_label(store: Store, campaign_id: str, qid: int, judge: str, *, principal: Principal | None = None) -> None:
    """Take a label back (nothing happens when there is none); EvalError for a judge the campaign did not run."""
    judged_by(labelling(store, campaign_id, principal), judge)
    store.write(lambda conn: label_rows.delete_label(conn, campaign_id, qid, judge))


def labelling(store: Store, campaign_id: str, principal: Principal | None) -> Campaign:
    """The campaign, when the principal sees it and may label (Forbidden, NotFound otherwise)."""
    campaign = get_campaign(store, campaign_id, principal=principal)
    if principal is not None:
        principal.require(Action.LABEL)
    return campaign


def campaign_labels(store: Store, campaign_id: str, *, principal: Principal | None = None) -> list[Label]:
    """Every label of a campaign, by question then judge."""
    check_visible(store, campaign_id, principal)
    return [Label.from_row(row) for row in label_rows.label_rows(store, campaign_id)]


def labels_csv(store: Store, campaign_id: str, *, principal: Principal | None = None) -> str:
    """The labels as CSV (qid, judge, label, note, author, labelled_at, question), spreadsheet-safe; `labelled_at` in
    ISO 8601 with its zone (UTC)."""
    questions = question_texts(store, campaign_id)
    rows = [[x.qid, x.judge, x.label, x.note, x.author, iso_time(x.labelled_at), questions.get(x.qid, "")]
            for x in campaign_labels(store, campaign_id, principal=principal)]
    return csv_text([list(CSV_COLUMNS), *rows])


def iso_time(timestamp: float) -> str:
    """A stored time as ISO 8601 in UTC, to the second (`2026-12-06T17:36:27+00:00`)."""
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat(timespec="seconds")


def import_labels_csv(store: Store, campaign_id: str, text: str, *, author: str = "", source: str = "labels.csv",
                      principal: Principal | None = None) -> int:
    """Labels from CSV (qid, judge, label; note and author optional); every bad row named, nothing kept then.

    The author is `label_author`'s: a principal's labels are its own, so an author column naming anyone else is
    refused (left empty, or naming the importing key, it is taken); the local operator's rows keep theirs."""
    campaign = labelling(store, campaign_id, principal)
    author = label_author(principal, author)
    rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline="")))
    missing = [c for c in ("qid", "judge", "label") if rows and c not in rows[0]] or ([] if rows else ["qid"])
    if missing:
        raise EvalError(f"missing column {missing[0]!r}", where=f"{source} line 1", expected="qid, judge, label")
    questions = question_ids(store, campaign_id)
    parsed, problems = [], []
    for line, row in enumerate(rows, start=2):
        try:
            parsed.append(import_row(campaign, row, questions, author, principal is not None))
        except EvalError as error:
            problems.append(f"{source} line {line}: {error.line()}")
    if problems:
        raise EvalError("invalid labels", problems=problems)
    now = time.time()
    store.write(lambda conn: label_rows.put_labels(conn, [(campaign_id, *row, now) for row in parsed]))
    return len(parsed)


def import_row(campaign: Campaign, row: dict[str, Any], questions: set[int], author: str,
               own: bool) -> tuple[Any, ...]:
    """(qid, judge, label, note, author) of one CSV row; EvalError naming the column. `own`: the labels are the
    importer's (`author`), whatever the author column says, which may then only be empty or `author`."""
    cell = {key: restore_cell(value or "").strip() for key, value in row.items() if key}
    if not cell["qid"].isdigit() or int(cell["qid"]) not in questions:
        raise EvalError("not a question of this campaign", where="qid", found=repr(cell["qid"]))
    label = checked_label(campaign, cell["judge"], cell["label"])
    given = cell.get("author") or ""
    if own and given not in ("", author):
        raise EvalError(f"labels imported with a key are that key's ({author})", where="author",
                        found=shown_name(given), fix="leave the author column empty")
    return int(cell["qid"]), cell["judge"], label, checked_note(cell.get("note", "")), (given if not own else "") \
        or author


def judged_category(verdict: Verdict, scale: Scale) -> str | None:
    """A verdict on its judge's scale (a mean of samples rounded to the nearest); None when there is none."""
    if verdict.score is None:
        return None
    if scale.labels == PASS_FAIL:
        return verdict.result if verdict.result in PASS_FAIL else None
    position = min(max(round(verdict.score), 1), len(scale.labels))
    return scale.labels[position - 1]


def as_pass_fail(label: str, scale: Scale, verdict: Verdict) -> str:
    """A label as pass/fail: itself, or on the judge's scale, pass at the verdict's pass mark."""
    if label in PASS_FAIL:
        return label
    threshold = verdict.threshold if verdict.threshold is not None else (len(scale.labels) + 1) / 2
    return "pass" if scale.labels.index(label) + 1 >= threshold else "fail"


def judge_agreement(judge: str, scale: Scale, pairs: Sequence[tuple[str, Verdict]], *, seed: int = 0) -> Agreement:
    """One judge against the labels: on its scale when every label is on it, else as pass/fail."""
    on_scale = all(label in scale.labels for label, _ in pairs)
    if on_scale:
        judged = [judged_category(verdict, scale) for _, verdict in pairs]
        return agreement(judge, [label for label, _ in pairs], [j or "" for j in judged], scale.labels,
                         ordinal=scale.ordinal, seed=seed)
    return agreement(judge, [as_pass_fail(label, scale, verdict) for label, verdict in pairs],
                     [verdict.result for _, verdict in pairs], PASS_FAIL, ordinal=False, seed=seed)


def campaign_agreement(store: Store, campaign_id: str, *, principal: Principal | None = None,
                       seed: int = 0) -> dict[str, Agreement]:
    """Per judge with labels: its agreement with them over the questions it gave a readable verdict on.

    A re-judge without labels of its own is checked against those of the campaign whose answers it judges (a label
    is about an answer, whoever judged it)."""
    labels = campaign_labels(store, campaign_id, principal=principal)
    if not labels and (holder := answers_holder(store, campaign_id)) != campaign_id:
        labels = campaign_labels(store, holder, principal=principal)
    if not labels:  # nothing to read further
        return {}
    campaign = get_campaign(store, campaign_id, principal=principal)
    return agreement_of(campaign, campaign_results(store, campaign_id, principal=principal), labels, seed=seed)


def agreement_of(campaign: Campaign, results: Sequence[QuestionResult], labels: Sequence[Label], *,
                 seed: int = 0) -> dict[str, Agreement]:
    """Agreement of each labelled judge of a campaign (pure: its results and labels given)."""
    verdicts = {(r.question.qid, name): v for r in results for name, v in r.outcome.judges.items()}
    out: dict[str, Agreement] = {}
    for judge in dict.fromkeys(label.judge for label in labels if label.judge in campaign.judges):
        scale = judge_scale(campaign, judge)
        pairs = [(label.label, verdict) for label in labels if label.judge == judge
                 and label.label in (*scale.labels, *PASS_FAIL)  # another campaign's rubric may have other labels
                 and (verdict := verdicts.get((label.qid, judge))) is not None
                 and judged_category(verdict, scale) is not None]
        out[judge] = judge_agreement(judge, scale, pairs, seed=seed)
    return out


def trust_lines(sides: dict[str, dict[str, Agreement]]) -> list[str]:
    """For each judge of a comparison, how far it agrees with people on each campaign (A, B) that has labels."""
    judges = dict.fromkeys(name for found in sides.values() for name in found)
    lines = []
    for judge in judges:
        parts = [f"{side} {trust_text(found[judge])}" if judge in found else f"{side} no label"
                 for side, found in sides.items()]
        lines.append(f"judge.{judge} against people's labels: " + "; ".join(parts))
    return lines


def trust_text(agreement: Agreement, counted: str = "labelled") -> str:
    """n (`counted`: labelled questions, or questions), kappa (weighted where the scale is ordinal) and its
    interval, in a few words."""
    value = agreement.weighted_kappa if agreement.weighted_kappa is not None else agreement.kappa
    name = "weighted kappa" if agreement.weighted_kappa is not None else "kappa"
    interval = f" ({agreement.interval[0]:.2f} to {agreement.interval[1]:.2f})" if agreement.interval else ""
    shown = "undefined" if value is None else f"{value:.2f}{interval}"
    return f"{agreement.n} {counted}, {name} {shown}"


def comparison_agreement(store: Store, a_id: str, b_id: str, *,
                         principal: Principal | None = None) -> dict[str, dict[str, Agreement]]:
    """The agreement of each judge with the labels in campaign A and in campaign B."""
    return {"A": campaign_agreement(store, a_id, principal=principal),
            "B": campaign_agreement(store, b_id, principal=principal)}
