"""Production traces for tests, benchmarks and the example file, written by the OpenTelemetry SDK itself.

Each trace is a CHAIN root span (the question, the answer, metadata), a RETRIEVER span with its documents and an LLM
span with the model and tokens, with OpenInference's attributes; the SDK's spans are encoded by its own OTLP encoder
and written as OTLP JSON (protobuf's JSON mapping, ids in base64).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcore.store import dumps


@dataclass(frozen=True)
class Answered:
    """One answer to write as a trace."""

    question: str
    answer: str
    documents: Sequence[tuple[str, str, float]]  # id, text, score
    metadata: dict[str, Any] = field(default_factory=dict)
    model: str = "gpt-4o-mini"
    prompt_tokens: int = 120
    completion_tokens: int = 20
    start_ns: int = 0  # 0: now
    duration_ns: int = 800_000_000


class _Clock:
    """Span times the SDK takes as given (start and end in nanoseconds)."""

    def __init__(self, start: int, duration: int) -> None:
        self.start, self.duration = start, duration

    def at(self, share: float) -> int:
        return self.start + int(self.duration * share)


def otlp_json(answers: Sequence[Answered], *, service: str = "helpdesk", version: str = "1.0.0") -> dict[str, Any]:
    """The answers as one OTLP JSON export request, from spans made by the OpenTelemetry SDK."""
    import time

    from google.protobuf.json_format import MessageToDict
    from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import set_span_in_context

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service, "service.version": version}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("evalcore.testing.otel_traces")
    kind, docs = SpanAttributes.OPENINFERENCE_SPAN_KIND, SpanAttributes.RETRIEVAL_DOCUMENTS
    for item in answers:
        clock = _Clock(item.start_ns or time.time_ns(), item.duration_ns)
        root = tracer.start_span("rag", start_time=clock.at(0))
        root.set_attribute(kind, OpenInferenceSpanKindValues.CHAIN.value)
        root.set_attribute(SpanAttributes.INPUT_VALUE, item.question)
        root.set_attribute(SpanAttributes.OUTPUT_VALUE, item.answer)
        root.set_attribute(SpanAttributes.METADATA, json.dumps(item.metadata))
        inside = set_span_in_context(root)
        retriever = tracer.start_span("retrieve", context=inside, start_time=clock.at(0.05))
        retriever.set_attribute(kind, OpenInferenceSpanKindValues.RETRIEVER.value)
        retriever.set_attribute(SpanAttributes.INPUT_VALUE, item.question)
        for i, (document_id, text, score) in enumerate(item.documents):
            retriever.set_attribute(f"{docs}.{i}.{DocumentAttributes.DOCUMENT_ID}", document_id)
            retriever.set_attribute(f"{docs}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}", text)
            retriever.set_attribute(f"{docs}.{i}.{DocumentAttributes.DOCUMENT_SCORE}", score)
        retriever.end(end_time=clock.at(0.2))
        llm = tracer.start_span("generate", context=inside, start_time=clock.at(0.25))
        llm.set_attribute(kind, OpenInferenceSpanKindValues.LLM.value)
        llm.set_attribute(SpanAttributes.LLM_MODEL_NAME, item.model)
        llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_PROMPT, item.prompt_tokens)
        llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, item.completion_tokens)
        llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_TOTAL, item.prompt_tokens + item.completion_tokens)
        llm.set_attribute(SpanAttributes.OUTPUT_VALUE, item.answer)
        llm.end(end_time=clock.at(0.95))
        root.end(end_time=clock.at(1))
    request: dict[str, Any] = MessageToDict(encode_spans(exporter.get_finished_spans()))
    provider.shutdown()
    return request


TOPICS = [
    ("How long is the refund window?", "Refunds are accepted within 30 days of delivery.",
     "You can ask for a refund within 30 days of delivery."),
    ("Can I change my delivery address?", "The delivery address can be changed until the parcel ships.",
     "Yes, until the parcel ships."),
    ("Do you ship to Canada?", "We ship to the EU, the UK and Canada.", "Yes, we ship to Canada."),
    ("How do I reset my password?", "Reset your password from the sign-in page with 'Forgot password'.",
     "Use 'Forgot password' on the sign-in page."),
    ("What is the warranty on headphones?", "Headphones carry a two-year warranty.",
     "I am not sure; please contact support."),
]


def production(count: int, *, seed: int = 0, start_ns: int = 1_796_000_000 * 10**9,
               releases: Sequence[str] = ("v1", "v2"), spacing_s: float = 3600.0) -> list[Answered]:
    """`count` answers spread over time, one per `spacing_s`, across releases and user segments."""
    rng = random.Random(seed)
    found = []
    for i in range(count):
        question, passage, answer = TOPICS[i % len(TOPICS)]
        found.append(Answered(
            f"{question} (#{i})", answer,
            [(f"doc-{i % 7}", passage, round(0.5 + rng.random() / 2, 3)),
             (f"doc-{(i + 3) % 7}", "Shipping takes 5 days.", round(rng.random() / 2, 3))],
            {"release": releases[i % len(releases)], "segment": rng.choice(("free", "pro"))},
            start_ns=start_ns + int(i * spacing_s * 1e9)))
    return found


def jsonl_lines(answers: Sequence[Answered]) -> Iterator[str]:
    """The answers as plain JSONL lines."""
    for item in answers:
        yield dumps({"time": (item.start_ns or 0) / 1e9, "question": item.question, "answer": item.answer,
                     "contexts": [{"id": d, "text": t, "score": s} for d, t, s in item.documents],
                     "metadata": item.metadata, "model": item.model})
