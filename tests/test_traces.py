"""Production traces: OTLP JSON written by the OpenTelemetry SDK with OpenInference attributes and plain JSONL
imported with every field, malformed spans reported and skipped whole, redaction before storage, retention per
tenant, the receiver over HTTP, a judged campaign over 1,000 traces, and the unpaired comparison against scipy."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from scipy import stats

from evalcore.access.api_keys import create_key
from evalcore.access.principals import Forbidden, Principal
from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.queries import campaign_aggregates, campaign_results
from evalcore.cli import main
from evalcore.compare.production import compare_groups, judged_traces, parse_group, timeline, worst_traces
from evalcore.compare.unpaired import compare_means, compare_proportions
from evalcore.errors import EvalError
from evalcore.store import NotFound, Store
from evalcore.targets import TargetConfig
from evalcore.telemetry import (
    TraceSample,
    apply_retention,
    get_trace,
    import_file,
    import_text,
    list_traces,
    sample_traces,
    set_trace_settings,
)
from evalcore.telemetry.redaction import Redactor
from evalcore.testing import FakeOpenAIServer
from evalcore.testing.otel_traces import Answered, jsonl_lines, otlp_json, production
from tests.test_api import serve

DAY_NS = 86_400 * 10**9
START_NS = 1_796_000_000 * 10**9  # 2026-11-30


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "traces.db") as opened:
        yield opened


def sdk_file(tmp_path: Path, answers: list[Answered], name: str = "traces.json", **resource: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(otlp_json(answers, **resource)), encoding="utf-8")
    return path


def test_a_file_the_opentelemetry_sdk_wrote_imports_with_every_field(store: Store, tmp_path: Path) -> None:
    answers = [Answered("How long is the refund window?", "Within 30 days of delivery.",
                        [("doc-7", "Refunds are accepted within 30 days.", 0.91), ("doc-2", "Shipping: 5 days.", 0.42)],
                        {"release": "v2", "segment": "pro", "beta": True}, model="gpt-4o-mini", prompt_tokens=321,
                        completion_tokens=17, start_ns=START_NS, duration_ns=1_500_000_000)]
    data = otlp_json(answers, service="helpdesk", version="2.1.0")
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root = next(span for span in spans if not span.get("parentSpanId"))
    path = tmp_path / "sdk.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    report = import_file(store, path, tenant="acme")
    assert (report.stored, report.spans, report.rejected, report.waiting) == (1, 3, (), 0)
    (trace,) = list_traces(store, tenant="acme")
    import base64
    assert trace.trace_id == base64.b64decode(root["traceId"]).hex()
    assert len(trace.trace_id) == 32
    assert trace.span_id == base64.b64decode(root["spanId"]).hex()
    assert trace.question == "How long is the refund window?"
    assert trace.answer == "Within 30 days of delivery."
    assert [(d.id, d.text, d.score) for d in trace.documents] == [
        ("doc-7", "Refunds are accepted within 30 days.", 0.91), ("doc-2", "Shipping: 5 days.", 0.42)]
    assert (trace.model, trace.prompt_tokens, trace.completion_tokens) == ("gpt-4o-mini", 321, 17)
    assert trace.started_at == START_NS / 1e9
    assert trace.latency_s == pytest.approx(1.5)
    assert {k: v for k, v in trace.metadata.items() if k != "service.instance.id"} == {
        "service.name": "helpdesk", "service.version": "2.1.0", "release": "v2", "segment": "pro", "beta": True}
    assert trace.source == "sdk.json"
    assert get_trace(store, trace.number, tenant="acme") == trace
    with pytest.raises(NotFound):  # another tenant's trace looks missing
        get_trace(store, trace.number, principal=Principal("other", "admin", "full-access"))
    again = import_file(store, path, tenant="acme")
    assert (again.stored, again.duplicates) == (0, 1)


def test_hex_ids_as_the_otlp_json_specification_writes_them_read_the_same(store: Store) -> None:
    data = otlp_json(production(2, start_ns=START_NS))
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        import base64
        for key in ("traceId", "spanId", "parentSpanId"):
            if span.get(key):
                span[key] = base64.b64decode(span[key]).hex()
    assert import_text(store, json.dumps(data), source="hex").stored == 2
    assert import_text(store, json.dumps(otlp_json(production(2, start_ns=START_NS))), source="b64").stored == 2


def test_a_malformed_span_is_reported_with_its_position_and_its_whole_trace_is_skipped(store: Store) -> None:
    data = otlp_json(production(3, start_ns=START_NS))
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    second_trace = spans[3]["traceId"]
    bad = next(i for i, span in enumerate(spans) if span["traceId"] == second_trace and span.get("parentSpanId"))
    spans[bad]["startTimeUnixNano"] = "yesterday"
    spans.append({"spanId": "AAECAwQFBgc="})  # no trace id
    report = import_text(store, json.dumps(data), source="broken.json")
    assert report.stored == 2
    positions = [r.position for r in report.rejected]
    assert f"resourceSpans[0].scopeSpans[0].spans[{bad}]" in positions
    assert f"resourceSpans[0].scopeSpans[0].spans[{len(spans) - 1}]" in positions
    assert any("startTimeUnixNano" in r.reason for r in report.rejected)
    assert any("skipped whole" in r.reason for r in report.rejected)
    import base64
    stored_ids = {t.trace_id for t in list_traces(store)}
    assert base64.b64decode(second_trace).hex() not in stored_ids
    assert len(stored_ids) == 2
    # a document's score of the wrong type fails its span's trace the same way
    retriever = next(s for s in spans if s["name"] == "retrieve" and s["traceId"] != second_trace)
    retriever["attributes"] = [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
                               {"key": "retrieval.documents.0.document.score", "value": {"stringValue": "high"}}]
    with Store(store.path.with_name("other.db")) as fresh:
        second = import_text(fresh, json.dumps({"resourceSpans": data["resourceSpans"]}), source="b.json")
        assert any("retrieval.documents.0.document.score must be a number" in r.reason for r in second.rejected)
        assert second.stored == 1


def test_spans_sent_before_their_root_wait_for_it(store: Store) -> None:
    data = otlp_json(production(1, start_ns=START_NS))
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    children = [s for s in spans if s.get("parentSpanId")]
    roots = [s for s in spans if not s.get("parentSpanId")]
    first = {"resourceSpans": [{**data["resourceSpans"][0], "scopeSpans": [{"spans": children}]}]}
    later = {"resourceSpans": [{**data["resourceSpans"][0], "scopeSpans": [{"spans": roots}]}]}
    report = import_text(store, json.dumps(first), source="otlp")
    assert (report.stored, report.waiting) == (0, 2)
    assert list_traces(store) == []
    report = import_text(store, json.dumps(later), source="otlp")
    (trace,) = list_traces(store)
    assert report.stored == 1
    assert len(trace.documents) == 2
    assert trace.model == "gpt-4o-mini"
    assert store.read("SELECT COUNT(*) FROM trace_spans")[0][0] == 0


def test_jsonl_traces_import_and_bad_lines_are_named(store: Store, tmp_path: Path) -> None:
    lines = list(jsonl_lines(production(3, start_ns=START_NS)))
    lines += ['{"time": "2026-12-01T10:00:00", "question": "Hi?", "answer": null, "contexts": ["a text"]}',
              '{"time": "not a date", "question": "Q"}', '{"question": "no time"}', '[1, 2]',
              '{"time": 1, "question": "Q", "contexts": [{"text": "t", "score": "high"}]}',
              '{"time": 1, "question": "Q", "extra": 1}']
    path = tmp_path / "prod.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    report = import_file(store, path)
    assert report.stored == 4
    assert [r.position for r in report.rejected] == ["line 5", "line 6", "line 7", "line 8", "line 9"]
    assert "ISO 8601" in report.rejected[0].reason
    assert "time is required" in report.rejected[1].reason
    assert "score must be a number" in report.rejected[3].reason
    assert "unknown field 'extra'" in report.rejected[4].reason
    hi = next(t for t in list_traces(store) if t.question == "Hi?")
    assert hi.answer is None
    assert [d.text for d in hi.documents] == ["a text"]
    assert hi.started_at == 1796119200.0  # UTC when no zone is named
    assert import_file(store, path).duplicates == 4  # ids made from the line's content


def test_redaction_replaces_emails_phones_cards_and_operator_patterns_before_storage(store: Store) -> None:
    set_trace_settings(store, "acme", patterns=[("ticket", r"TCK-\d+")])
    answer = Answered("My mail is jane.doe@example.com and my phone +33 6 12 34 56 78, ticket TCK-4411",
                      "Card 4111 1111 1111 1111 was charged; call (555) 123-4567.",
                      [("d1", "Contact: support@shop.example", 0.5)], {"user": "bob@example.org", "release": "v1"},
                      start_ns=START_NS)
    report = import_text(store, json.dumps(otlp_json([answer])), source="pii.json", tenant="acme")
    assert report.redacted == 4
    (trace,) = list_traces(store, tenant="acme")
    assert trace.question == "My mail is [email] and my phone [phone], ticket [ticket]"
    assert trace.answer == "Card [card] was charged; call [phone]."
    assert trace.documents[0].text == "Contact: [email]"
    assert trace.metadata["user"] == "[email]"
    raw = json.dumps([list(row) for row in store.read("SELECT * FROM traces")])
    assert "example.com" not in raw
    assert "4111" not in raw
    assert "TCK-4411" not in raw
    kept = Redactor().redact("On 2026-12-06, 12345 users, 3.14 and card-like 4111 1111 1111 1112 (bad checksum)")
    assert kept == ("On 2026-12-06, 12345 users, 3.14 and card-like 4111 1111 1111 1112 (bad checksum)", False)
    set_trace_settings(store, "acme", default_patterns=False)
    import_text(store, json.dumps(otlp_json([Answered("x@y.org?", "a", [], start_ns=START_NS + 1)])), source="s",
                tenant="acme")
    assert any(t.question == "x@y.org?" for t in list_traces(store, tenant="acme"))
    with pytest.raises(EvalError, match="empty text"):
        set_trace_settings(store, "acme", patterns=[("all", "x*")])
    with pytest.raises(EvalError, match="not a regular expression"):
        set_trace_settings(store, "acme", patterns=[("bad", "(")])


def test_retention_deletes_a_tenants_older_traces_and_refuses_expired_ones(store: Store) -> None:
    now = START_NS / 1e9 + 10 * 86_400
    old = production(10, start_ns=START_NS, spacing_s=86_400)  # one a day for ten days
    import_text(store, json.dumps(otlp_json(old)), source="a", tenant="acme", now=now)
    import_text(store, json.dumps(otlp_json(old)), source="b", tenant="other", now=now)
    set_trace_settings(store, "acme", retention_days=3)
    assert apply_retention(store, now=now) == {"acme": 7}
    assert len(list_traces(store, tenant="acme")) == 3
    assert len(list_traces(store, tenant="other")) == 10
    again = import_text(store, json.dumps(otlp_json(production(10, seed=1, start_ns=START_NS, spacing_s=86_400))),
                        source="c", tenant="acme", now=now)
    assert again.expired == 7
    assert again.stored == 3
    assert min(t.started_at for t in list_traces(store, tenant="acme")) >= now - 3 * 86_400
    with pytest.raises(EvalError, match="positive"):
        set_trace_settings(store, "acme", retention_days=0)


def test_a_stratified_sample_is_seeded_reproducible_and_per_stratum(store: Store) -> None:
    import_text(store, json.dumps(otlp_json(production(96, start_ns=START_NS))), source="s")  # hourly: 4 days
    by_day = sample_traces(store, TraceSample(per_stratum=5, by="day", seed=3))
    days = [t.started_at // 86_400 for t in by_day]
    assert len(by_day) == 5 * len(set(days))
    assert all(days.count(d) == 5 for d in set(days))
    assert by_day == sample_traces(store, TraceSample(per_stratum=5, by="day", seed=3))
    assert by_day != sample_traces(store, TraceSample(per_stratum=5, by="day", seed=4))
    by_release = sample_traces(store, TraceSample(per_stratum=7, by="release"))
    assert sorted(str(t.metadata["release"]) for t in by_release) == ["v1"] * 7 + ["v2"] * 7
    only_v2 = sample_traces(store, TraceSample(per_stratum=1000, where=(("release", "v2"),)))
    assert len(only_v2) == 48
    assert {t.metadata["release"] for t in only_v2} == {"v2"}
    with pytest.raises(EvalError, match="no trace matches"):
        sample_traces(store, TraceSample(where=(("release", "v9"),)))


def judge(path: str, body: Any) -> str:
    """A loopback judge: 2 on the two weak answers of the five topics (two in five traces), else 5."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if '"label"' in system:
        return json.dumps({"label": "fail" if "not sure" in user else "pass", "reason": "scripted"})
    weak = "not sure" in user or "Yes, until" in user
    return json.dumps({"score": 2 if weak else 5, "reason": "scripted"})


def test_a_judged_campaign_over_a_thousand_traces_runs_with_a_loopback_judge(tmp_path: Path) -> None:
    manager = CampaignManager(tmp_path / "campaign.db")
    try:
        report = import_text(manager.store, json.dumps(otlp_json(production(1000, start_ns=START_NS))), source="p")
        assert report.stored == 1000
        with FakeOpenAIServer(judge) as server:
            config = TargetConfig.from_dict({"judge_kind": "openai", "judge_model": "judge", "judge_api_key_env": "",
                                             "judge_base_url": server.base_url})
            with pytest.raises(EvalError, match="reference answer"):
                manager.launch(LaunchRequest(traces=TraceSample(per_stratum=10), config=config, judges=("score",)))
            campaign_id = manager.launch(LaunchRequest(traces=TraceSample(per_stratum=500, by="release"),
                                                       config=config, judges=("groundedness", "relevance"),
                                                       concurrency=8))
            campaign = manager.wait(campaign_id, timeout=600)
        assert (campaign.status, campaign.kind, campaign.finished, campaign.failed) == ("succeeded", "traces", 1000, 0)
        assert campaign.source == "traces · 500 per release · seed 0"
        aggregates = campaign_aggregates(manager.store, campaign_id)
        assert aggregates["judge.groundedness"].count == 1000
        assert aggregates["judge.groundedness"].mean == pytest.approx((600 * 5 + 400 * 2) / 1000)
        assert aggregates["judge.relevance"].mean == pytest.approx(3.8)
        first = campaign_results(manager.store, campaign_id, limit=1)[0]
        assert [r.source for r in first.outcome.retrieved] == ["doc-0", "doc-3"]
        assert first.outcome.prompt_tokens == 120  # production's tokens, not the judge's
        rows = judged_traces(manager.store, [campaign_id])
        assert len(rows) == 1000
        assert rows[0].passed["judge.groundedness"] is True
        days = timeline(rows, list_traces(manager.store), "week")
        week = next(f for f in days if f.measure == "judge.groundedness")
        assert week.volume == week.n == 168
        assert week.pass_low < week.pass_rate < week.pass_high
        worst = worst_traces(rows, "judge.groundedness", 5)
        assert all(row.measures["judge.groundedness"] == 2 for row in worst)
        compared = compare_groups(rows, parse_group("release=v1"), parse_group("release=v2"))
        assert {d.measure for d in compared.deltas} >= {"judge.groundedness", "judge.groundedness pass"}
        # the CLI reads the same campaign
        assert main(["traces", "compare", campaign_id, "--a", "release=v1", "--b", "release=v2",
                     "--db", str(tmp_path / "campaign.db")]) == 0
    finally:
        manager.close()


def test_two_releases_compare_with_unpaired_intervals_equal_to_scipy() -> None:
    rng = random.Random(7)
    a = [float(rng.choice((2, 3, 4, 4, 5))) for _ in range(140)]
    b = [float(rng.choice((3, 4, 4, 5, 5))) for _ in range(95)]
    delta = compare_means("judge.groundedness", a, b, effect=0.25)
    expected = stats.ttest_ind(b, a, equal_var=False)
    interval = expected.confidence_interval(0.95)
    assert delta.statistic == pytest.approx(expected.statistic, rel=1e-12)
    assert delta.df == pytest.approx(expected.df, rel=1e-12)
    assert delta.p_value == pytest.approx(expected.pvalue, rel=1e-10)
    assert (delta.low, delta.high) == (pytest.approx(interval.low, rel=1e-12), pytest.approx(interval.high, rel=1e-12))
    # power of Welch's test: the noncentral t at the observed effect, and the MDE has 80% of it
    critical = stats.t.ppf(0.975, expected.df)
    se = delta.difference / delta.statistic
    power = stats.nct.sf(critical, expected.df, delta.difference / se) + stats.nct.cdf(-critical, expected.df,
                                                                                       delta.difference / se)
    assert delta.power == pytest.approx(power, rel=1e-9)
    assert stats.nct.sf(critical, expected.df, delta.mde / se) == pytest.approx(0.8, abs=1e-4)
    n = delta.needed_per_group
    var_a, var_b = np.var(a, ddof=1), np.var(b, ddof=1)

    def welch_power(size: int) -> float:
        se_n = np.sqrt((var_a + var_b) / size)
        df_n = (var_a + var_b) ** 2 / ((var_a ** 2 + var_b ** 2) / (size - 1))
        return float(stats.nct.sf(stats.t.ppf(0.975, df_n), df_n, 0.25 / se_n))

    assert n is not None
    assert welch_power(n) >= 0.8 > welch_power(n - 1)

    passed_a = [rng.random() < 0.62 for _ in range(300)]
    passed_b = [rng.random() < 0.71 for _ in range(260)]
    rates = compare_proportions("judge.groundedness pass", passed_a, passed_b, effect=0.05)
    table = np.array([[sum(passed_a), len(passed_a) - sum(passed_a)], [sum(passed_b), len(passed_b) - sum(passed_b)]])
    assert rates.p_value == pytest.approx(stats.chi2_contingency(table, correction=False).pvalue, rel=1e-9)
    wilson_a = stats.binomtest(sum(passed_a), len(passed_a)).proportion_ci(0.95, method="wilson")
    wilson_b = stats.binomtest(sum(passed_b), len(passed_b)).proportion_ci(0.95, method="wilson")
    pa, pb = sum(passed_a) / 300, sum(passed_b) / 260
    low = pb - pa - np.sqrt((pb - wilson_b.low) ** 2 + (wilson_a.high - pa) ** 2)
    high = pb - pa + np.sqrt((wilson_b.high - pb) ** 2 + (pa - wilson_a.low) ** 2)
    assert (rates.low, rates.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    pooled = (sum(passed_a) + sum(passed_b)) / 560
    assert rates.mde == pytest.approx(z * np.sqrt(pooled * (1 - pooled) * (1 / 300 + 1 / 260)), rel=1e-9)
    assert rates.needed_per_group is not None
    assert rates.needed_per_group > 1000  # 5 points of a pass rate near 62%
    small = compare_means("x", a[:5], b[:5], effect=0.25)
    assert not small.significant
    assert "under-powered" in small.note


def test_a_send_traces_key_sends_over_loopback_http_and_reads_nothing(tmp_path: Path) -> None:
    from evalcore.api.app import create_app

    root = tmp_path / "datasets"
    from tests.conftest import write_dataset
    write_dataset(root / "samples")
    app: Any = create_app(tmp_path / "api.db", dataset_root=root)
    store = app.state.store
    sender = create_key(store, tenant="acme", role="viewer", capability="send_traces")[1]
    viewer = create_key(store, tenant="acme", role="viewer")[1]
    other = create_key(store, tenant="other", role="admin")[1]
    data = otlp_json(production(20, start_ns=START_NS))
    with serve(app) as url:
        def call(method: str, path: str, key: str, **kwargs: Any) -> httpx.Response:
            return httpx.request(method, url + path, headers={"Authorization": f"Bearer {key}", **kwargs.pop(
                "headers", {})}, timeout=30, **kwargs)

        sent = call("POST", "/v1/traces", sender, json=data)
        assert sent.status_code == 200
        assert sent.json() == {}
        import gzip
        twice = call("POST", "/v1/traces", sender, content=gzip.compress(json.dumps(data).encode()),
                     headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
        assert twice.status_code == 200
        assert call("POST", "/v1/traces", sender, content=b"<spans/>",
                    headers={"Content-Type": "application/xml"}).status_code == 415
        assert call("POST", "/v1/traces", viewer, json=data).status_code == 403
        assert call("GET", "/api/v1/traces", sender).status_code == 403
        listed = call("GET", "/api/v1/traces?where=release=v1&limit=5", viewer).json()["data"]
        assert listed["total"] == 10
        assert len(listed["traces"]) == 5
        assert call("GET", "/api/v1/traces", other).json()["data"]["total"] == 0
        number = listed["traces"][0]["number"]
        assert call("GET", f"/api/v1/traces/{number}", other).status_code == 404
        broken = json.loads(json.dumps(data))
        broken["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "zz"
        partial = call("POST", "/v1/traces", sender, json=broken).json()
        assert partial["partialSuccess"]["rejectedSpans"] == 1
        assert "resourceSpans[0].scopeSpans[0].spans[0]" in partial["partialSuccess"]["errorMessage"]
    assert len(list_traces(store, tenant="acme")) == 20


def test_the_sdk_s_own_otlp_http_exporter_sends_to_the_receiver(tmp_path: Path) -> None:
    """The OpenTelemetry SDK's OTLP/HTTP exporter (protobuf, gzip) sends a BatchSpanProcessor's spans, children
    before their root, to the receiver on loopback: each trace is stored whole."""
    from openinference.semconv.trace import SpanAttributes
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from evalcore.api.app import create_app

    app: Any = create_app(tmp_path / "api.db")
    sender = create_key(app.state.store, tenant="acme", role="admin", capability="send_traces")[1]
    with serve(app) as url:
        exporter = OTLPSpanExporter(endpoint=url + "/v1/traces", headers={"Authorization": f"Bearer {sender}"},
                                    compression=Compression.Gzip)
        provider = TracerProvider(resource=Resource.create({"service.version": "3.0"}))
        provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=4))
        tracer = provider.get_tracer("app")
        for i in range(5):
            with tracer.start_as_current_span("rag") as root:
                root.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, "CHAIN")
                root.set_attribute(SpanAttributes.INPUT_VALUE, f"question {i}")
                with tracer.start_as_current_span("retrieve") as retriever:
                    retriever.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, "RETRIEVER")
                    retriever.set_attribute("retrieval.documents.0.document.id", f"d{i}")
                    retriever.set_attribute("retrieval.documents.0.document.content", "a passage")
                root.set_attribute(SpanAttributes.OUTPUT_VALUE, f"answer {i}")
        assert provider.force_flush(30_000)
        provider.shutdown()
        assert httpx.post(url + "/v1/traces", content=b"\xff\xff", timeout=30, headers={
            "Authorization": f"Bearer {sender}", "Content-Type": "application/x-protobuf"}).status_code == 400
    stored = sorted(list_traces(app.state.store, tenant="acme"), key=lambda t: t.question)
    assert [(t.question, t.answer, t.documents[0].id, t.metadata["service.version"]) for t in stored] == [
        (f"question {i}", f"answer {i}", f"d{i}", "3.0") for i in range(5)]


def test_import_needs_an_admin_or_a_sender(store: Store) -> None:
    viewer = Principal("acme", "viewer", "run_evaluations")
    with pytest.raises(Forbidden):
        import_text(store, "", source="x", principal=viewer)
    report = import_text(store, json.dumps(otlp_json(production(1, start_ns=START_NS))), source="x",
                         principal=Principal("acme", "viewer", "send_traces"))
    assert report.stored == 1
    assert list_traces(store, tenant="acme")


def test_the_traces_page_shows_volume_pass_rates_worst_traces_and_a_release_comparison(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_dashboard import assert_clean, page_test

    db = tmp_path / "page.db"
    manager = CampaignManager(db)
    try:
        import_text(manager.store, json.dumps(otlp_json(production(60, start_ns=START_NS))), source="p")
        with FakeOpenAIServer(judge) as server:
            config = TargetConfig.from_dict({"judge_kind": "openai", "judge_model": "judge", "judge_api_key_env": "",
                                             "judge_base_url": server.base_url})
            campaign_id = manager.launch(LaunchRequest(traces=TraceSample(per_stratum=100), config=config,
                                                       judges=("groundedness",), concurrency=4))
            assert manager.wait(campaign_id, timeout=120).status == "succeeded"
    finally:
        manager.close()
    monkeypatch.setenv("EVALCORE_DASHBOARD_WORKER", "threads")
    at = page_test(str(db), monkeypatch, "pages/traces.py")
    assert_clean(at)
    assert at.title[0].value == "Traces"
    assert "60 of 60 traces" in " ".join(c.value for c in at.caption)
    worst = at.dataframe[0].value
    assert len(worst) == 20
    assert set(worst["judge.groundedness"]) == {2.0}
    comparison = at.dataframe[1].value
    assert list(comparison["measure"]) == ["judge.groundedness", "judge.groundedness pass"]
    assert list(comparison["n_a"]) == [30, 30]
    assert list(comparison["test"]) == ["Welch t", "two-proportion z"]
    at.sidebar.selectbox(key="traces-filter-key").select("release").run()
    assert_clean(at)
    assert "30 of 60 traces" in " ".join(c.value for c in at.caption)


def test_the_tour_imports_the_example_trace_file_and_the_notebook_reads_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import evalcore as ec

    example = Path(__file__).resolve().parent.parent / "examples" / "production-traces.json"
    db = tmp_path / "tour.db"
    assert main(["traces", "import", str(example), "--db", str(db)]) == 0
    assert "36 traces stored from production-traces.json" in capsys.readouterr().out
    assert main(["traces", "list", "--where", "release=v2", "--db", str(db)]) == 0
    assert capsys.readouterr().out.startswith("18 traces")
    frame = ec.traces(db=db, where={"release": "v2"})
    assert len(frame) == 18
    assert set(frame["metadata.release"]) == {"v2"}
    assert {"number", "question", "answer", "documents", "model", "started_at", "latency_s"} <= set(frame.columns)
    assert str(frame["started_at"].dt.tz) == "UTC"
    assert (frame["documents"] == 2).all()
    assert set(frame["metadata.service.version"]) == {"2.3.0"}
    assert (frame["prompt_tokens"] == 120).all()
    assert ec.import_traces(example, db=db).duplicates == 36


def test_the_api_imports_jsonl_launches_a_traces_campaign_and_shows_its_timeline_and_comparison(
        tmp_path: Path) -> None:
    from evalcore.api.app import create_app
    from tests.conftest import write_dataset

    root = tmp_path / "datasets"
    write_dataset(root / "samples")
    app: Any = create_app(tmp_path / "api.db", dataset_root=root)
    store = app.state.store
    admin = create_key(store, tenant="acme", role="admin", capability="full-access")[1]
    viewer = create_key(store, tenant="acme", role="viewer")[1]
    lines = "\n".join(jsonl_lines(production(40, start_ns=START_NS, spacing_s=6 * 3600))) + "\n{\"question\": 1}\n"
    with FakeOpenAIServer(judge) as judge_server, serve(app) as url:
        def call(method: str, path: str, key: str = admin, **kwargs: Any) -> httpx.Response:
            return httpx.request(method, url + path, headers={"Authorization": f"Bearer {key}"}, timeout=60,
                                 **kwargs)

        assert call("POST", "/api/v1/traces/import", viewer, content=lines.encode()).status_code == 403
        imported = call("POST", "/api/v1/traces/import?format=jsonl", content=lines.encode()).json()["data"]["report"]
        assert imported["stored"] == 40
        assert imported["rejected"][0]["position"] == "line 41"
        target = call("POST", "/api/v1/targets", json={"name": "judge", "config": {
            "judge_kind": "openai", "judge_model": "judge", "judge_base_url": judge_server.base_url,
            "judge_api_key_env": ""}})
        assert target.status_code in (200, 201), target.text
        target_id = target.json()["data"]["target"]["id"]
        launched = call("POST", "/api/v1/traces/campaigns", json={
            "per_stratum": 20, "by": "release", "judges": ["groundedness"], "target_id": target_id})
        assert launched.status_code == 201, launched.text
        campaign_id = launched.json()["data"]["campaign_id"]
        assert app.state.manager.wait(campaign_id, timeout=120).status == "succeeded"
        refused = call("POST", "/api/v1/traces/campaigns", json={"judges": ["score"], "target_id": target_id})
        assert refused.status_code in (400, 422)
        assert "reference answer" in refused.text
        days = call("GET", f"/api/v1/traces-timeline?campaign_id={campaign_id}&period=day&worst=judge.groundedness",
                    viewer).json()["data"]
        assert sum(p["volume"] for p in days["periods"]) == 40
        assert len(days["worst"]) == 20
        assert days["worst"][0]["answer"] in ("Yes, until the parcel ships.", "I am not sure; please contact support.")
        compared = call("GET", f"/api/v1/traces-comparison?campaign_id={campaign_id}&a=release=v1&b=release=v2",
                        viewer).json()["data"]["comparison"]
        first = compared["deltas"][0]
        assert (first["measure"], first["n_a"], first["n_b"], first["test"]) == ("judge.groundedness", 20, 20,
                                                                                "Welch t")
        assert call("GET", f"/api/v1/traces-comparison?campaign_id={campaign_id}&a=release=v9&b=release=v2",
                    viewer).status_code in (400, 422)


def test_traces_on_postgresql(postgres_server: str) -> None:
    from evalcore.store import open_store
    from evalcore.testing.postgres_server import new_database

    with open_store(new_database(postgres_server)) as pg:
        set_trace_settings(pg, "acme", retention_days=3, patterns=[("ticket", r"TCK-\d+")])
        now = START_NS / 1e9 + 10 * 86_400
        report = import_text(pg, json.dumps(otlp_json(production(10, start_ns=START_NS, spacing_s=86_400))),
                             source="p", tenant="acme", now=now)
        assert (report.stored, report.expired) == (3, 7)
        assert len(list_traces(pg, tenant="acme")) == 3
        assert len(sample_traces(pg, TraceSample(per_stratum=1, by="release"), tenant="acme")) == 2
        assert apply_retention(pg, now=now + 2 * 86_400) == {"acme": 2}


def test_a_cancelled_traces_campaign_resumes_its_missing_traces(tmp_path: Path) -> None:
    manager = CampaignManager(tmp_path / "resume.db")
    try:
        import_text(manager.store, json.dumps(otlp_json(production(30, start_ns=START_NS))), source="p")
        with FakeOpenAIServer(judge, delay=0.05) as server:
            config = TargetConfig.from_dict({"judge_kind": "openai", "judge_model": "judge", "judge_api_key_env": "",
                                             "judge_base_url": server.base_url})
            campaign_id = manager.launch(LaunchRequest(traces=TraceSample(per_stratum=30), config=config,
                                                       judges=("groundedness",), concurrency=1))
            import time

            from evalcore.campaigns.queries import get_campaign
            deadline = time.monotonic() + 60
            while get_campaign(manager.store, campaign_id).finished < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            manager.cancel(campaign_id)
            stopped = manager.wait(campaign_id, timeout=60)
            assert stopped.status == "cancelled"
            assert 3 <= stopped.finished < 30
            manager.resume(campaign_id)
            done = manager.wait(campaign_id, timeout=120)
        assert (done.status, done.finished, done.failed) == ("succeeded", 30, 0)
        numbers = [r.question.qid for r in campaign_results(manager.store, campaign_id)]
        assert sorted(numbers) == sorted(t.number for t in list_traces(manager.store))
    finally:
        manager.close()


def test_the_command_line_judges_a_sample_and_keeps_the_operators_settings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "cli.db")
    path = sdk_file(tmp_path, production(24, start_ns=START_NS, spacing_s=6 * 3600))
    assert main(["traces", "settings", "--tenant", "acme", "--retention-days", "none", "--redact", r"ticket=TCK-\d+",
                 "--db", db]) == 0
    assert "pattern ticket" in capsys.readouterr().out
    assert main(["traces", "settings", "--tenant", "acme", "--redact", "bad=(", "--db", db]) == 2
    assert "not a regular expression" in capsys.readouterr().err
    assert main(["traces", "import", str(path), "--tenant", "acme", "--db", db]) == 0
    with FakeOpenAIServer(judge) as server:
        code = main(["traces", "run", "--tenant", "acme", "--per", "3", "--by", "day", "--seed", "1", "--judge",
                     "groundedness", "--judge-kind", "openai", "--judge-model", "judge", "--judge-base-url",
                     server.base_url, "--judge-api-key-env", "", "--name", "days", "--db", db])
    out = capsys.readouterr().out
    assert code == 0
    assert "judge.groundedness" in out
    assert main(["traces", "timeline", "days", "--tenant", "acme", "--worst", "judge.groundedness", "--json",
                 "--db", db]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["volume"] for p in data["periods"]] == [4, 4, 4, 4, 4, 4]
    assert {p["n"] for p in data["periods"]} == {3}
    assert main(["traces", "settings", "--tenant", "acme", "--retention-days", "0.001", "--db", db]) == 0  # 86 s
    assert main(["traces", "prune", "--db", db]) == 0
    assert "tenant acme: 24 traces deleted" in capsys.readouterr().out
