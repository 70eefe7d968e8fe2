"""Campaign results as files: CSV (safe to open in a spreadsheet), JSON Lines, TREC run."""

from __future__ import annotations

import json
from collections.abc import Callable

from evalcore.access import Principal
from evalcore.campaigns.queries import campaign_results, get_campaign
from evalcore.campaigns.records import Outcome, QuestionResult
from evalcore.csvcells import csv_text
from evalcore.errors import EvalError
from evalcore.store import Store

FIXED_COLUMNS = ("qid", "question", "expected_answer", "answer", "sources", "error", "diagnosis", "latency_s",
                 "prompt_tokens", "completion_tokens", "attempts", "queries")


def judge_fields(outcome: Outcome) -> dict[str, object]:
    """Per judge, the fields evaluators in the Azure AI style use: `<name>`, `<name>_reason`, `<name>_result`,
    `<name>_threshold` (a pass/fail judge's `<name>` is true/false, without threshold); then `<measure>_result`
    of the measures with a pass mark (graded retrieval)."""
    fields: dict[str, object] = {}
    for name, verdict in outcome.judges.items():
        label = verdict.threshold is None
        fields[name] = (verdict.result == "pass" if verdict.result in ("pass", "fail") else None) if label \
            else verdict.score
        fields[f"{name}_reason"] = verdict.reason
        fields[f"{name}_result"] = verdict.result
        fields[f"{name}_threshold"] = verdict.threshold
    fields |= {f"{name}_result": result for name, result in outcome.results.items()}
    return fields


def result_table(results: list[QuestionResult]) -> tuple[list[str], list[list[object]]]:
    """The header and rows of the CSV export (and of the notebook's results table): fixed columns (a query
    transformation's texts one per line), one column per measure, then the judges' and pass marks' fields."""
    measures = sorted({name for r in results for name in r.outcome.measures})
    extra = list(dict.fromkeys(name for r in results for name in judge_fields(r.outcome)))
    rows: list[list[object]] = []
    for r in results:
        fixed = {**r.to_dict(), "sources": " | ".join(str(s.title or s.id) for s in r.outcome.sources),
                 "queries": "\n".join(r.outcome.queries)}
        judged = judge_fields(r.outcome)
        rows.append([fixed[name] for name in FIXED_COLUMNS] + [r.outcome.measures.get(name) for name in measures]
                    + [judged.get(name) for name in extra])
    return [*FIXED_COLUMNS, *measures, *extra], rows


def export_csv(store: Store, campaign_id: str) -> str:
    """One row per question, as `result_table` lays them out."""
    header, rows = result_table(campaign_results(store, campaign_id))
    return csv_text([header, *rows])


def export_jsonl(store: Store, campaign_id: str) -> str:
    """Every stored result, one JSON object per line, with the judges' flat fields."""
    return "".join(json.dumps({**r.to_dict(), **judge_fields(r.outcome)}, ensure_ascii=False) + "\n"
                   for r in campaign_results(store, campaign_id))


def export_trec(store: Store, campaign_id: str) -> str:
    """A TREC run file `qid Q0 pid rank score tag`, in the order the target ranked the passages.

    trec_eval re-sorts by score and breaks ties by docid, so the score written is derived from
    the rank (n, n-1, ...) to keep the target's order; the raw scores are in the JSONL export.
    Entries without a passage id (nothing to match in qrels) are left out.
    """
    tag = campaign_id.replace(" ", "_")
    lines = []
    for r in campaign_results(store, campaign_id):
        pids = list(dict.fromkeys(hit.pid for hit in r.outcome.retrieved if hit.pid is not None))
        lines += [f"{r.question.qid} Q0 {pid} {rank} {len(pids) - rank + 1} {tag}\n" for rank, pid in enumerate(pids, 1)]
    return "".join(lines)


FORMATS: dict[str, Callable[[Store, str], str]] = {"csv": export_csv, "jsonl": export_jsonl, "trec": export_trec}


def export_campaign(store: Store, campaign_id: str, fmt: str, tenant: str | None = None, *,
                    principal: Principal | None = None) -> str:
    """The campaign's results in one of FORMATS."""
    if fmt not in FORMATS:
        raise EvalError(f"unknown export format {fmt!r}", where="format", expected=", ".join(FORMATS))
    get_campaign(store, campaign_id, tenant, principal=principal)
    return FORMATS[fmt](store, campaign_id)
