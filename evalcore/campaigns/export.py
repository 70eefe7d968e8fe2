"""Campaign results as files: CSV (safe to open in a spreadsheet), JSON Lines, TREC run."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from evalcore.access.principals import Principal
from evalcore.campaigns.queries import campaign_results, get_campaign
from evalcore.campaigns.records import Outcome, QuestionResult
from evalcore.errors import EvalError
from evalcore.formats.csvcells import csv_text
from evalcore.judges import FIELD_NAMES, flat_fields
from evalcore.store import Store

FIXED_COLUMNS = ("qid", "question", "expected_answer", "answer", "sources", "error", "diagnosis", "latency_s",
                 "prompt_tokens", "completion_tokens", "cost", "currency", "attempts", "queries")
# After qid, when a question is a turn of a conversation.
CONVERSATION_COLUMNS = ("conversation", "turn")


def judge_fields(outcome: Outcome, names: str = "project",
                 marks: Mapping[str, float] | None = None) -> dict[str, object]:
    """Per judge, its flat fields (`judges.flat_fields`: ours, or names="evaluator" for the evaluators'
    documented names); then `<measure>_result` of the measures with a pass mark (graded retrieval), each with
    the `<measure>_threshold` it used (`marks`: the campaign's, by graded measure; None when not recorded)."""
    fields: dict[str, object] = {}
    for name, verdict in outcome.judges.items():
        fields |= flat_fields(name, verdict, names)
    for name, result in outcome.results.items():
        fields[f"{name}_result"] = str(result)
        fields[f"{name}_threshold"] = (marks or {}).get(name.removeprefix("graded."))
    return fields


def graded_marks(store: Store, campaign_id: str) -> dict[str, float]:
    """The pass marks a campaign's graded results used (empty for campaigns stored before they were recorded)."""
    return dict(get_campaign(store, campaign_id).options.graded_thresholds)


def result_table(results: list[QuestionResult], names: str = "project",
                 marks: Mapping[str, float] | None = None) -> tuple[list[str], list[list[object]]]:
    """The header and rows of the CSV export (and of the notebook's results table): fixed columns (a query
    transformation's texts one per line; the conversation and turn when a question is a turn of one), one column per
    measure, the exact checks' results when a question has checks, then the judges' and pass marks' fields."""
    fixed_columns: tuple[str, ...] = FIXED_COLUMNS
    if any(r.question.conversation is not None for r in results):
        fixed_columns = (FIXED_COLUMNS[0], *CONVERSATION_COLUMNS, *FIXED_COLUMNS[1:])
    measures = sorted({name for r in results for name in r.outcome.measures})
    checked = ["check_results"] if any(r.outcome.check_results for r in results) else []
    extra = list(dict.fromkeys(name for r in results for name in judge_fields(r.outcome, names, marks)))
    rows: list[list[object]] = []
    for r in results:
        cost = r.outcome.cost
        fixed = {**r.to_dict(), "sources": " | ".join(str(s.title or s.id) for s in r.outcome.sources),
                 "queries": "\n".join(r.outcome.queries), "currency": cost.currency,
                 # "no price" rather than 0: a model without a price is never counted as free.
                 "cost": cost.amount if cost.amount is not None else cost.text()}
        judged = judge_fields(r.outcome, names, marks)
        rows.append([fixed[name] for name in fixed_columns] + [r.outcome.measures.get(name) for name in measures]
                    + [checks_text(r.outcome.check_results) for _ in checked] + [judged.get(name) for name in extra])
    return [*fixed_columns, *measures, *checked, *extra], rows


def checks_text(results: Mapping[str, bool]) -> str:
    """Each exact check with its result, one per line (`pass contains:30 days`), as a cell or a terminal shows them."""
    return "\n".join(f"{'pass' if passed else 'fail'} {check}" for check, passed in results.items())


def export_csv(store: Store, campaign_id: str, names: str = "project") -> str:
    """One row per question, as `result_table` lays them out."""
    header, rows = result_table(campaign_results(store, campaign_id), names, graded_marks(store, campaign_id))
    return csv_text([header, *rows])


def export_jsonl(store: Store, campaign_id: str, names: str = "project") -> str:
    """Every stored result, one JSON object per line (judges nested), with the judges' flat fields."""
    marks = graded_marks(store, campaign_id)
    return "".join(json.dumps({**r.to_dict(), **judge_fields(r.outcome, names, marks)}, ensure_ascii=False) + "\n"
                   for r in campaign_results(store, campaign_id))


def export_trec(store: Store, campaign_id: str, names: str = "project") -> str:
    """A TREC run file `qid Q0 docid rank score tag`, in the order the target ranked the documents.

    trec_eval re-sorts by score and breaks ties by docid, so the score written is derived from
    the rank (n, n-1, ...) to keep the target's order; the raw scores are in the JSONL export.
    A document is named by its passage id, else by an external target's own id for it (an agent's, a
    results file's; spaces become underscores); one with neither is left out. `names` does not apply.
    EvalError when no question ranked a document that has either: an empty run says nothing.
    """
    tag = campaign_id.replace(" ", "_")
    lines = []
    results = campaign_results(store, campaign_id)
    for r in results:
        docids = [str(hit.pid) if hit.pid is not None else "_".join(hit.source.split()) for hit in r.outcome.retrieved]
        ranked = list(dict.fromkeys(docid for docid in docids if docid))
        lines += [f"{r.question.qid} Q0 {docid} {rank} {len(ranked) - rank + 1} {tag}\n"
                  for rank, docid in enumerate(ranked, 1)]
    if results and not lines:
        raise EvalError("no TREC run to write: no question ranked a document with an id (a passage id, or the "
                        "target's own id for its sources)", where=campaign_id,
                        fix="export CSV or JSONL, which list each answer's sources by title; an HTTP agent's "
                        "sources get ids when agent_source_id names their id field")
    return "".join(lines)


FORMATS: dict[str, Callable[[Store, str, str], str]] = {"csv": export_csv, "jsonl": export_jsonl, "trec": export_trec}


def export_campaign(store: Store, campaign_id: str, fmt: str, tenant: str | None = None, *,
                    principal: Principal | None = None, names: str = "project") -> str:
    """The campaign's results in one of FORMATS, the judges' flat fields named as `names` says (FIELD_NAMES)."""
    if fmt not in FORMATS:
        raise EvalError(f"unknown export format {fmt!r}", where="format", expected=", ".join(FORMATS))
    check_field_names(names)
    get_campaign(store, campaign_id, tenant, principal=principal)
    return FORMATS[fmt](store, campaign_id, names)


def check_field_names(names: str) -> None:
    """EvalError unless `names` is one of FIELD_NAMES."""
    if names not in FIELD_NAMES:
        raise EvalError(f"unknown judge field names {names!r}", where="names", expected=", ".join(FIELD_NAMES),
                        fix="evaluator: the evaluators' documented names (gpt_retrieval, response_completeness...)")
