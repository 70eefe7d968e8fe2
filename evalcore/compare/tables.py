"""The tables of a comparison and of a sweep, as the dashboard shows them and the CSV files and the report hold them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from evalcore.campaigns import Campaign
from evalcore.compare.charts import detects_text, needs_text, ordered
from evalcore.compare.deltas import ONE_SIDED, Comparison, Passage, QuestionDiff
from evalcore.compare.preference import Preference
from evalcore.compare.sweep import Sweep
from evalcore.diagnosis import NOT_ATTRIBUTED, STAGES, Transition
from evalcore.judges import Verdict, flat_fields
from evalcore.metrics import MEASURES

MEASURE_COLUMNS = ["measure", "n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "significant", "mde",
                   "n_required", "power_note", "test", "signature"]
QUESTION_COLUMNS = ["qid", "question", "verdict", "basis", "A", "B", "stage A", "stage B", "answer changed",
                    "relevant entered", "relevant left", "answer A", "answer B", "queries A", "queries B"]
PAIRWISE_COLUMNS = ["qid", "question", "verdict", "flipped", "A first", "B first", "reason", "context cut"]
MOVED_COLUMNS = ["qid", "question", "verdict", "stage A", "stage B", "answer A", "answer B"]


def measure_frame(comparison: Comparison) -> pd.DataFrame:
    """One row per measure in display order; `detects` and `needs` say what it could detect, as text (hover)."""
    rows = [{**m.to_dict(), "signature": getattr(MEASURES.get(m.measure), "signature", ""),
             "detects": detects_text(m), "needs": needs_text(m)} for m in ordered(comparison)]
    return pd.DataFrame(rows, columns=[*MEASURE_COLUMNS, "detects", "needs"])


def passages_text(entries: tuple[Passage, ...]) -> str:
    """Passages as `pid title | pid title`."""
    return " | ".join(f"{e.pid} {e.title}".strip() for e in entries)


def question_frame(questions: Sequence[QuestionDiff]) -> pd.DataFrame:
    """The per-question verdicts with the relevant passages that entered or left the retrieved list, and the
    queries each side retrieved with when a query transformation made them."""
    return pd.DataFrame([{"qid": q.qid, "question": q.question, "verdict": q.verdict,
                          "basis": q.basis or "not scored",
                          "A": q.a, "B": q.b, "stage A": q.diagnosis_a, "stage B": q.diagnosis_b,
                          "answer changed": q.answer_changed,
                          "relevant entered": passages_text(q.entered), "relevant left": passages_text(q.left),
                          "answer A": q.answer_a, "answer B": q.answer_b, "queries A": " | ".join(q.queries_a),
                          "queries B": " | ".join(q.queries_b)} for q in questions],
                        columns=QUESTION_COLUMNS)


def judge_frame(questions: list[QuestionDiff], names: str = "project") -> pd.DataFrame:
    """Each judged question's judge results in A then in B (`A: <field>`, `B: <field>`) as `judges.flat_fields`
    gives them: under our names, or names="evaluator" under the evaluators' documented names. Only the questions
    a judge saw are rows; no judge in either campaign: no rows."""
    rows = [{"qid": q.qid, "question": q.question, "verdict": q.verdict, **side_fields("A", q.judges_a, names),
             **side_fields("B", q.judges_b, names)} for q in questions if q.judges_a or q.judges_b]
    fields = list(dict.fromkeys(name for row in rows for name in row))
    return pd.DataFrame(rows, columns=sorted(fields, key=lambda f: (f[:3] == "B: ", f[:3] == "A: ")))


def side_fields(side: str, verdicts: Mapping[str, Verdict], names: str) -> dict[str, object]:
    """One campaign's verdicts on a question as flat fields, each prefixed with the side (`A: retrieval_reason`)."""
    fields: dict[str, object] = {}
    for judge, verdict in verdicts.items():
        fields |= flat_fields(judge, verdict, names)
    return {f"{side}: {name}": value for name, value in fields.items()}


def transition_frame(cells: list[Transition]) -> pd.DataFrame:
    """The transition table: A's failure stage per row, B's per column (`B: ok`), questions in each cell."""
    present = [stage for stage in STAGES if any(stage in (cell.a, cell.b) for cell in cells)]
    count = {(cell.a, cell.b): cell.count for cell in cells}
    return pd.DataFrame([{"stage in A": a, **{f"B: {b}": count.get((a, b), 0) for b in present}} for a in present],
                        columns=["stage in A", *(f"B: {b}" for b in present)])


def moved_frame(comparison: Comparison, cell: Transition) -> pd.DataFrame:
    """The common questions of one cell of the transition table, with both answers."""
    rows = [q for q in comparison.questions if q.verdict not in ONE_SIDED
            and (q.diagnosis_a or NOT_ATTRIBUTED, q.diagnosis_b or NOT_ATTRIBUTED) == (cell.a, cell.b)]
    return pd.DataFrame([{"qid": q.qid, "question": q.question, "verdict": q.verdict, "stage A": cell.a,
                          "stage B": cell.b, "answer A": q.answer_a, "answer B": q.answer_b} for q in rows],
                        columns=MOVED_COLUMNS)


def sweep_frame(sweep: Sweep, campaigns: dict[str, Campaign]) -> pd.DataFrame:
    """One row per campaign of the sweep: its name, the varied value, each measure's mean, the verdict counts."""
    return pd.DataFrame([{"campaign": campaigns[row.id].name if row.id in campaigns else row.id, "id": row.id,
                          sweep.key or "value": str(row.value),
                          **{name: m.mean for name, m in row.measures.items()},
                          **{f"vs baseline: {k}": v for k, v in (row.verdicts or {}).items()}}
                         for row in sweep.table])


def pairwise_frame(preference: Preference) -> pd.DataFrame:
    """The pairwise judge's verdict on each question: the winner, what each order said, and the reason."""
    return pd.DataFrame([{"qid": v.qid, "question": v.question, "verdict": v.winner, "flipped": v.flipped,
                          "A first": v.a_first.winner or "unreadable", "B first": v.b_first.winner or "unreadable",
                          "reason": v.reason, "context cut": v.context_cut or ""} for v in preference.verdicts],
                        columns=PAIRWISE_COLUMNS)
