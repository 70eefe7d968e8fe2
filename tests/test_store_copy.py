"""Moving a store: `evalcore store copy` from SQLite to PostgreSQL and back, every table verified."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.access.api_keys import create_key, principal_of, start_session
from evalcore.campaigns import CampaignManager, campaign_results, campaign_summary, list_campaigns
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.listing import campaign_rows
from evalcore.cli import main
from evalcore.compare import compare_campaigns
from evalcore.jobs.job_queue import submit
from evalcore.store import StoreCallCache, StoredPassage, TextDictionary, open_store, put_passages
from evalcore.store.copy import TABLES, fingerprint
from evalcore.suites import create_suite
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import save_target
from evalcore.telemetry import import_text, set_trace_settings
from evalcore.testing.otel_traces import otlp_json, production


def filled_store(path: Path, tiny_dataset: Path) -> str:
    """A SQLite store with something in every table: two campaigns and their comparison, a suite, a key and its
    session, a saved target, a cached call, a person's label, a pairwise judgement."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run = path.parent / "run.jsonl"
    run.write_text('{"qid": 1, "ranked_ids": [10, 14], "answer": "30 days."}\n'
                   '{"qid": 2, "ranked_ids": [12], "answer": "14 jours, 路由器."}\n', encoding="utf-8")
    manager = CampaignManager(str(path))
    try:
        config = TargetConfig.of(kind="results_file", results_path=str(run))
        ids = [manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config)) for _ in range(2)]
        for campaign_id in ids:
            manager.wait(campaign_id, timeout=30)
        compare_campaigns(manager.store, *ids)
        campaign_summary(manager.store, ids[0])  # its figures kept, as a list and a panel keep them
        campaign_rows(manager.store)
        target_id = save_target(manager.store, config, name="results")
        create_suite(manager.store, name="refunds", target_id=target_id,
                     cases=[{"question": "What is the refund window?", "expected_answer": "30 days"}])
        key_id, _ = create_key(manager.store, tenant="acme", role="admin")
        start_session(manager.store, principal_of(manager.store, key_id))
        StoreCallCache(manager.store).put("k", {"text": "Paris", "prompt_tokens": 3})
        manager.store.write(lambda conn: conn.execute(  # a person's label (the campaigns ran no judge to label)
            "INSERT INTO labels (campaign_id, qid, judge, label, note, author, labelled_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (ids[0], 1, "score", "4", "one detail missing", "key_1", 1.5)))
        manager.store.write(lambda conn: conn.execute(  # a pairwise judgement (no model asked: its row as kept)
            "INSERT INTO pairwise (a_id, b_id, signature, a_version, b_version, data, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", (ids[0], ids[1], "pairwise|model:m", "v1", "v1", '{"verdicts": []}', 2.5)))
        job_id = submit(manager.store, "pairwise", {"a": ids[0], "b": ids[1]}, tenant="default", total=1)
        manager.store.write(lambda conn: conn.execute(  # a job's piece done, as a pairwise job keeps a verdict
            "INSERT INTO job_items (job_id, position, value) VALUES (?, 0, '{}')", (job_id,)))
        # production traces: one stored, the spans of another waiting for their root, a tenant's settings
        traces = otlp_json(production(2, start_ns=1_796_000_000 * 10**9))
        spans = traces["resourceSpans"][0]["scopeSpans"][0]["spans"]
        second = spans[-1]["traceId"]
        traces["resourceSpans"][0]["scopeSpans"][0]["spans"] = [
            s for s in spans if s["traceId"] != second or s.get("parentSpanId")]
        import_text(manager.store, json.dumps(traces), source="traces.json")
        set_trace_settings(manager.store, "default", retention_days=365 * 10, patterns=[("ticket", r"TCK-\d+")])
        manager.store.write(lambda conn: conn.execute(  # a conversation judge's verdict, as kept
            "INSERT INTO conversation_verdicts (campaign_id, conversation, judge, verdict, judged_at) "
            "VALUES (?, ?, ?, ?, ?)", (ids[0], "refunds", "conversation_goal", '{"judge": "conversation_goal"}', 3.5)))
        # a passage compressed with the store's dictionary, as a writer that met many new passages stores it
        words = TextDictionary.learnt(["refund the order within thirty days", "the order ships within two days"])
        manager.store.write(lambda conn: put_passages(conn, [StoredPassage.of(
            7, "", "Returns", "the order is refunded within thirty days", words)]))
        for table, order in TABLES:
            assert fingerprint(manager.store, table, order)[0] > 0, table
    finally:
        manager.close()
    return str(path)


def test_a_store_copied_to_postgresql_and_back_has_every_row_and_reads_the_same(
        tmp_path: Path, tiny_dataset: Path, postgres_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    from evalcore.testing.postgres_server import new_database

    source = filled_store(tmp_path / "source.db", tiny_dataset)
    url = new_database(postgres_server)
    assert main(["store", "copy", "--from", f"sqlite:{source}", "--to", url]) == 0
    printed = capsys.readouterr().out
    assert "results" in printed
    assert "DIFFERS" not in printed
    assert "copied" in printed
    back = str(tmp_path / "back.db")
    assert main(["store", "copy", "--from", url, "--to", back]) == 0
    with open_store(source) as first, open_store(url) as second, open_store(back) as third:
        for table, order in TABLES:
            assert fingerprint(first, table, order) == fingerprint(second, table, order) == fingerprint(
                third, table, order), table
        for store in (second, third):
            assert [c.to_dict() for c in list_campaigns(store)] == [c.to_dict() for c in list_campaigns(first)]
            for campaign in list_campaigns(first):
                assert campaign_summary(store, campaign.id) == campaign_summary(first, campaign.id)
                assert campaign_results(store, campaign.id) == campaign_results(first, campaign.id)


def test_copying_into_a_store_that_has_rows_is_refused(
        tmp_path: Path, tiny_dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = filled_store(tmp_path / "source.db", tiny_dataset)
    other = filled_store(tmp_path / "other" / "other.db", tiny_dataset)
    assert main(["store", "copy", "--from", source, "--to", other]) == 2
    assert "the destination store is not empty" in capsys.readouterr().err
