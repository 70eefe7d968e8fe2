"""Reading campaigns back from the store: one campaign, lists, per-question results, aggregates."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from evalcore.store import ACTIVE, NotFound, Store

STATUSES = ("pending", "running", "succeeded", "failed", "interrupted", "cancelled")
# Seed 000's task status enum; interrupted and cancelled are failures there, err_msg says which.
STATUS_CODES = {"pending": 0, "running": 1, "succeeded": 2}

_CAMPAIGN_COLUMNS = (
    "id, tenant, kind, source, suite_id, target_id, status, error, total, finished, failed, created_at, "
    "started_at, ended_at, heartbeat, session_finished, cancel_requested, config, dataset_hash, use_judge, "
    "judges, cache, cache_hits, options, stage"
)


def status_code(status: str) -> int:
    """Seed 000's numeric status: pending 0, running 1, succeeded 2, anything else 3."""
    return STATUS_CODES.get(status, 3)


def progress(row: sqlite3.Row | dict, now: float | None = None) -> dict[str, Any]:
    """finished/total, the rate of the current session and the time left at that rate."""
    now = time.time() if now is None else now
    active = row["status"] in ACTIVE
    done_now = row["finished"] - row["session_finished"]
    started = row["started_at"]
    end = now if active or row["ended_at"] is None else row["ended_at"]
    elapsed = (end - started) if started else 0.0
    rate = done_now / elapsed if elapsed > 0 and done_now > 0 else None
    left = row["total"] - row["finished"]
    eta = left / rate if active and rate else (0.0 if left == 0 else None)
    stage = row["stage"] if active else None
    return {"finished": row["finished"], "total": row["total"], "rate_per_s": rate, "eta_s": eta, "stage": stage}


def _campaign_dict(row: sqlite3.Row) -> dict[str, Any]:
    data = dict(row)
    data["config"] = json.loads(row["config"])
    data["judges"] = json.loads(row["judges"])
    data["options"] = json.loads(row["options"])
    data["use_judge"] = bool(row["use_judge"])
    data["cache"] = bool(row["cache"])
    data["cancel_requested"] = bool(row["cancel_requested"])
    data["status_code"] = status_code(row["status"])
    data["progress"] = progress(row)
    return data


def get_campaign(store: Store, campaign_id: str, tenant: str | None = None) -> dict[str, Any]:
    """One campaign with its configuration snapshot and progress; NotFound for other tenants too."""
    rows = store.read(f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?", (campaign_id,))
    if not rows or (tenant is not None and rows[0]["tenant"] != tenant):
        raise NotFound(f"no campaign {campaign_id!r}", where="campaign", fix="list them with `python -m evalcore campaigns list`")
    return _campaign_dict(rows[0])


def list_campaigns(store: Store, tenant: str | None = None, suite_id: str | None = None) -> list[dict[str, Any]]:
    """Campaigns, newest first, optionally of one tenant and/or one suite."""
    clauses, params = [], []
    if tenant is not None:
        clauses.append("tenant = ?")
        params.append(tenant)
    if suite_id is not None:
        clauses.append("suite_id = ?")
        params.append(suite_id)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = store.read(f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns {where} ORDER BY created_at DESC, id", params)
    return [_campaign_dict(row) for row in rows]


def _result_dict(row: sqlite3.Row) -> dict[str, Any]:
    relevant = json.loads(row["relevant"]) if row["relevant"] is not None else None
    return {
        "qid": row["qid"],
        "position": row["position"],
        "question": row["question"],
        "expected_answer": row["expected_answer"],
        "references": json.loads(row["refs"]),
        "relevant": {int(pid): label for pid, label in relevant.items()} if relevant is not None else None,
        "expected_sources": json.loads(row["expected_sources"]),
        "answer": row["answer"],
        "retrieved": json.loads(row["retrieved"]),
        "sources": json.loads(row["sources"]),
        "measures": json.loads(row["measures"]),
        "signatures": json.loads(row["signatures"]),
        "judges": json.loads(row["judges"]),
        "latency_s": row["latency_s"],
        "prompt_tokens": row["prompt_tokens"],
        "completion_tokens": row["completion_tokens"],
        "error": row["error"],
        "attempts": row["attempts"],
        "notes": json.loads(row["notes"]),
    }


def campaign_results(store: Store, campaign_id: str, offset: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
    """The stored result of every finished question, in question order (pending ones are absent)."""
    rows = store.read(
        "SELECT q.question, q.expected_answer, q.refs, q.relevant, q.expected_sources, r.* "
        "FROM results r JOIN campaign_questions q ON q.campaign_id = r.campaign_id AND q.position = r.position "
        "WHERE r.campaign_id = ? ORDER BY r.position LIMIT ? OFFSET ?",
        (campaign_id, -1 if limit is None else limit, offset),
    )
    return [_result_dict(row) for row in rows]


def campaign_aggregates(store: Store, campaign_id: str) -> dict[str, dict[str, Any]]:
    """Per measure: the mean over stored results where it is present, and that count."""
    rows = store.read(
        "SELECT m.key AS name, avg(m.value) AS mean, count(m.value) AS n "
        "FROM results r, json_each(r.measures) m WHERE r.campaign_id = ? GROUP BY m.key ORDER BY m.key",
        (campaign_id,),
    )
    return {row["name"]: {"mean": row["mean"], "count": row["n"]} for row in rows}


def campaign_summary(store: Store, campaign_id: str) -> dict[str, Any]:
    """Seed 003's campaign summary, computed from the stored rows."""
    row = store.read(
        "SELECT count(*) AS n, count(*) - count(error) AS answered, count(error) AS failed, "
        "avg(CASE WHEN error IS NULL THEN latency_s END) AS latency, "
        "coalesce(sum(prompt_tokens), 0) AS prompt, coalesce(sum(completion_tokens), 0) AS completion "
        "FROM results WHERE campaign_id = ?",
        (campaign_id,),
    )[0]
    aggregates = campaign_aggregates(store, campaign_id)

    def mean(name: str) -> float | None:
        return aggregates.get(name, {}).get("mean")

    return {
        "answered": row["answered"],
        "failed": row["failed"],
        "sources_found_rate": mean("sources_found"),
        "mean_coverage": mean("coverage"),
        "mean_judge_score": mean("judge.score"),
        "mean_latency_s": row["latency"],
        "tokens": {"prompt": row["prompt"], "completion": row["completion"], "total": row["prompt"] + row["completion"]},
    }
