"""OpenTelemetry traces in OTLP JSON, read with OpenInference's attribute conventions.

A request (or a file: one request, or one per line as the OpenTelemetry Collector's file exporter writes them) holds
`resourceSpans[].scopeSpans[].spans[]`. Each span is checked on its own: one that cannot be read (no ids, ids that are
neither hex nor base64, times that are not numbers, attributes of an unknown type, documents whose fields have the
wrong type) is reported with its position, and its whole trace is skipped with it, so that no trace is stored without
one of its spans. Spans are then grouped by trace: the root span (no parent) holds the question (`input.value`) and the
answer (`output.value`); RETRIEVER spans the documents (`retrieval.documents.N.document.id|content|score`); LLM spans
the model (`llm.model_name`) and the tokens (`llm.token_count.prompt|completion`); the root's `metadata` (a JSON
object), `session.id`, `user.id`, `tag.tags` and the resource's attributes are the trace's metadata.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evalcore.telemetry.trace_records import MetadataValue, Rejected, Trace, TraceDocument

SPAN_KIND = "openinference.span.kind"
DOCUMENT_KEY = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|content|score|metadata)$")
MESSAGE_KEY = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(role|content)$")
# Fields of a JSON input or output value that hold the text itself, tried in order.
TEXT_FIELDS = ("question", "query", "input", "answer", "output", "text", "content")
# Resource attributes that describe the SDK, not the deployment: not metadata.
SDK_PREFIX = "telemetry."
MAX_METADATA = 64  # keys kept per trace (a larger object is cut, its keys in order)


class SpanProblem(ValueError):
    """Why one span cannot be read."""


@dataclass(frozen=True)
class Span:
    """One span as read: ids in hex, times in Unix seconds, attributes as plain values."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: float
    end: float | None
    attributes: dict[str, Any]
    resource: dict[str, Any]
    position: str

    @property
    def kind(self) -> str:
        """Its OpenInference span kind (CHAIN, RETRIEVER, LLM, ...), upper case; '' when it has none."""
        value = self.attributes.get(SPAN_KIND)
        return value.upper() if isinstance(value, str) else ""

    def to_dict(self) -> dict[str, Any]:
        """Kept while it waits for its trace's root span."""
        return {"trace_id": self.trace_id, "span_id": self.span_id, "parent_id": self.parent_id, "name": self.name,
                "start": self.start, "end": self.end, "attributes": self.attributes, "resource": self.resource,
                "position": self.position}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Span:
        """Read back what to_dict wrote."""
        return cls(data["trace_id"], data["span_id"], data["parent_id"], data["name"], data["start"], data["end"],
                   dict(data["attributes"]), dict(data["resource"]), data["position"])


def parse_requests(text: str, source: str) -> tuple[list[Span], list[Rejected]]:
    """The spans of a file or a request body: one OTLP JSON object, or one per line; what cannot be read, reported."""
    stripped = text.strip()
    if not stripped:
        return [], [Rejected(source, "", "empty: expected an OTLP JSON object with resourceSpans")]
    try:
        documents: list[tuple[str, Any]] = [("", json.loads(stripped))]
    except json.JSONDecodeError:
        documents = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                documents.append((f"line {number}: ", json.loads(line)))
            except json.JSONDecodeError as error:
                documents.append((f"line {number}: ", SpanProblem(f"not valid JSON ({error.msg}, column "
                                                                 f"{error.colno})")))
    spans: list[Span] = []
    rejected: list[Rejected] = []
    for prefix, data in documents:
        if isinstance(data, SpanProblem):
            rejected.append(Rejected(prefix.rstrip(": "), "", str(data)))
            continue
        found, problems = parse_request(data, prefix)
        spans += found
        rejected += problems
    return spans, rejected


def parse_request(data: Any, prefix: str = "") -> tuple[list[Span], list[Rejected]]:
    """The spans of one ExportTraceServiceRequest as JSON, and the spans that could not be read."""
    if not isinstance(data, dict) or not isinstance(data.get("resourceSpans", []), list):
        return [], [Rejected(prefix + "body", "", "expected an object with a resourceSpans list (OTLP JSON)")]
    spans: list[Span] = []
    rejected: list[Rejected] = []
    for r, resource_spans in enumerate(data.get("resourceSpans") or []):
        where = f"{prefix}resourceSpans[{r}]"
        try:
            resource = attributes((resource_spans.get("resource") or {}).get("attributes"), f"{where}.resource")
            scopes = resource_spans.get("scopeSpans", resource_spans.get("instrumentationLibrarySpans")) or []
            if not isinstance(scopes, list):
                raise SpanProblem("scopeSpans is not a list")
        except (SpanProblem, AttributeError) as error:
            rejected.append(Rejected(where, "", reason(error)))
            continue
        for s, scope in enumerate(scopes):
            raw_spans = scope.get("spans") if isinstance(scope, dict) else None
            if not isinstance(raw_spans, list):
                rejected.append(Rejected(f"{where}.scopeSpans[{s}]", "", "spans is not a list"))
                continue
            for n, raw in enumerate(raw_spans):
                position = f"{where}.scopeSpans[{s}].spans[{n}]"
                try:
                    spans.append(read_span(raw, resource, position))
                except SpanProblem as error:
                    trace_id = raw.get("traceId") if isinstance(raw, dict) else None
                    rejected.append(Rejected(position, safe_id(trace_id, 16), str(error)))
    return spans, rejected


def decode_protobuf(raw: bytes) -> Any:
    """An ExportTraceServiceRequest in protobuf (what the SDK's OTLP/HTTP exporter sends by default) as its JSON form;
    ImportError when opentelemetry-proto is not installed, SpanProblem when the bytes are not such a message."""
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        return MessageToDict(ExportTraceServiceRequest.FromString(raw))
    except DecodeError as error:
        raise SpanProblem(f"not an OTLP protobuf ExportTraceServiceRequest ({error})") from None


def protobuf_response(rejected: int, message: str) -> bytes:
    """An ExportTraceServiceResponse in protobuf (empty when every span was accepted)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTracePartialSuccess,
        ExportTraceServiceResponse,
    )

    response = ExportTraceServiceResponse()
    if rejected or message:
        response = ExportTraceServiceResponse(
            partial_success=ExportTracePartialSuccess(rejected_spans=rejected, error_message=message))
    encoded: bytes = response.SerializeToString()
    return encoded


def reason(error: Exception) -> str:
    """An exception as a reason (AttributeError: a JSON value that is not an object)."""
    return str(error) if isinstance(error, SpanProblem) else "expected a JSON object"


def read_span(raw: Any, resource: dict[str, Any], position: str) -> Span:
    """One span; SpanProblem saying what is wrong with it."""
    if not isinstance(raw, dict):
        raise SpanProblem("a span must be a JSON object")
    trace_id = span_id_of(raw.get("traceId"), 16, "traceId")
    span_id = span_id_of(raw.get("spanId"), 8, "spanId")
    parent = raw.get("parentSpanId") or ""
    parent_id = span_id_of(parent, 8, "parentSpanId") if parent else ""
    start = nanos(raw.get("startTimeUnixNano"), "startTimeUnixNano")
    end_raw = raw.get("endTimeUnixNano")
    end = nanos(end_raw, "endTimeUnixNano") if end_raw not in (None, "", "0", 0) else None
    if start is None:
        raise SpanProblem("startTimeUnixNano is missing or 0")
    name = raw.get("name", "")
    if not isinstance(name, str):
        raise SpanProblem(f"name must be text, found {name!r}")
    return Span(trace_id, span_id, parent_id, name, start, end, attributes(raw.get("attributes"), "attributes"),
                resource, position)


def span_id_of(value: Any, size: int, name: str) -> str:
    """An id in lower-case hex: given in hex (as OTLP JSON writes it) or base64 (as protobuf's JSON mapping does)."""
    if not isinstance(value, str) or not value:
        raise SpanProblem(f"{name} is missing")
    if len(value) == 2 * size and re.fullmatch(r"[0-9a-fA-F]+", value):
        hexed = value.lower()
    else:
        try:
            decoded = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            decoded = b""
        if len(decoded) != size:
            raise SpanProblem(f"{name} must be {2 * size} hex digits (or {size} bytes in base64), found "
                              f"{value[:40]!r}")
        hexed = decoded.hex()
    if set(hexed) == {"0"}:
        raise SpanProblem(f"{name} is all zeros (an invalid id)")
    return hexed


def safe_id(value: Any, size: int) -> str:
    """The id in hex when it can be read, else ''."""
    try:
        return span_id_of(value, size, "id")
    except SpanProblem:
        return ""


def nanos(value: Any, name: str) -> float | None:
    """Unix nanoseconds (a number or a string of digits) as seconds; None for 0."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or (isinstance(value, str) and not value.isdigit()):
        raise SpanProblem(f"{name} must be a whole number of nanoseconds, found {str(value)[:40]!r}")
    number = int(value)
    return number / 1e9 if number else None


def attributes(raw: Any, where: str) -> dict[str, Any]:
    """A KeyValue list as a dict of plain values."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise SpanProblem(f"{where} must be a list of {{key, value}}")
    found: dict[str, Any] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise SpanProblem(f"{where}[{i}] must be an object with a key")
        found[item["key"]] = any_value(item.get("value"), f"{where}[{i}] ({item['key']})")
    return found


def any_value(value: Any, where: str) -> Any:
    """An OTLP AnyValue as a plain value (int64 values arrive as strings in JSON)."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict) or len(value) != 1:
        raise SpanProblem(f"{where}: expected one of stringValue, intValue, doubleValue, boolValue, arrayValue, "
                          f"kvlistValue, bytesValue")
    (kind, inner), = value.items()
    if kind == "stringValue" and isinstance(inner, str):
        return inner
    if kind == "boolValue" and isinstance(inner, bool):
        return inner
    if kind == "intValue" and (isinstance(inner, int) and not isinstance(inner, bool)
                               or isinstance(inner, str) and re.fullmatch(r"-?\d+", inner)):
        return int(inner)
    if kind == "doubleValue" and (isinstance(inner, (int, float)) and not isinstance(inner, bool)
                                  or isinstance(inner, str) and inner in ("NaN", "Infinity", "-Infinity")):
        return float(inner)
    if kind == "arrayValue" and isinstance(inner, dict):
        return [any_value(item, where) for item in inner.get("values") or []]
    if kind == "kvlistValue" and isinstance(inner, dict):
        return attributes(inner.get("values") or [], where)
    if kind == "bytesValue" and isinstance(inner, str):
        return inner
    raise SpanProblem(f"{where}: {kind} holds {str(inner)[:40]!r}, which is not of its type")


def group(spans: Iterable[Span]) -> dict[str, list[Span]]:
    """Spans by trace id, in the order read (a span sent twice counted once)."""
    traces: dict[str, dict[str, Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, {}).setdefault(span.span_id, span)
    return {trace_id: list(by_id.values()) for trace_id, by_id in traces.items()}


def root_of(spans: list[Span]) -> Span | None:
    """The trace's root span (no parent), or None while it has not arrived."""
    return next((span for span in spans if not span.parent_id), None)


def assemble(spans: list[Span], source: str) -> Trace:
    """The trace its spans describe (the root among them); SpanProblem naming a span whose attributes do not fit."""
    root = root_of(spans)
    if root is None:
        raise SpanProblem("the trace has no root span")
    ordered = sorted(spans, key=lambda span: (span.start, span.position))
    llms = [span for span in ordered if span.kind == "LLM"]
    question = (io_text(root, "input") or next((text for span in ordered if (text := io_text(span, "input"))), None)
                or next((text for span in llms if (text := message(span, "input", "user"))), None))
    if not question:
        raise SpanProblem("no question: no span has an input.value (nor an LLM span a user message)")
    answer = io_text(root, "output") or next(
        (text for span in reversed(llms) if (text := io_text(span, "output") or message(span, "output"))), None)
    documents = tuple(document for span in ordered if span.kind == "RETRIEVER" for document in span_documents(span))
    model = next((value for span in llms if isinstance(value := span.attributes.get("llm.model_name"), str)), "")
    return Trace(root.trace_id, root.span_id, root.start, root.end, question, answer, documents, model,
                 sum(token_count(span, "prompt") for span in llms),
                 sum(token_count(span, "completion") for span in llms), trace_metadata(root), source)


def io_text(span: Span, side: str) -> str | None:
    """A span's input.value or output.value as text (from a JSON value: its question, query, answer... field)."""
    value = span.attributes.get(f"{side}.value")
    if value is None:
        return None
    if not isinstance(value, str):
        raise SpanProblem(f"{span.position}: {side}.value must be text, found {str(value)[:40]!r}")
    if span.attributes.get(f"{side}.mime_type") == "application/json":
        try:
            data = json.loads(value)
        except json.JSONDecodeError:
            return value
        if isinstance(data, str):
            return data
        if isinstance(data, dict):
            return next((data[name] for name in TEXT_FIELDS if isinstance(data.get(name), str)), value)
    return value


def message(span: Span, side: str, role: str | None = None) -> str | None:
    """The last message on a side of an LLM span (of a role, when given)."""
    messages: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if (match := MESSAGE_KEY.match(key)) and match.group(1) == side:
            messages.setdefault(int(match.group(2)), {})[match.group(3)] = value
    texts = [m["content"] for _, m in sorted(messages.items())
             if isinstance(m.get("content"), str) and (role is None or m.get("role") == role)]
    return texts[-1] if texts else None


def span_documents(span: Span) -> list[TraceDocument]:
    """A RETRIEVER span's documents in their index order; SpanProblem for a field of the wrong type."""
    fields: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if match := DOCUMENT_KEY.match(key):
            fields.setdefault(int(match.group(1)), {})[match.group(2)] = value
    documents = []
    for index, found in sorted(fields.items()):
        where = f"{span.position}: retrieval.documents.{index}.document"
        text, score, document_id = found.get("content", ""), found.get("score"), found.get("id", "")
        if not isinstance(text, str):
            raise SpanProblem(f"{where}.content must be text, found {str(text)[:40]!r}")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise SpanProblem(f"{where}.score must be a number, found {str(score)[:40]!r}")
        if isinstance(document_id, bool) or not isinstance(document_id, (str, int)):
            raise SpanProblem(f"{where}.id must be text or a number, found {str(document_id)[:40]!r}")
        documents.append(TraceDocument(str(document_id), text, None if score is None else float(score)))
    return documents


def token_count(span: Span, kind: str) -> int:
    """An LLM span's token count of a kind (0 when absent); SpanProblem when it is not a whole number."""
    value = span.attributes.get(f"llm.token_count.{kind}")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpanProblem(f"{span.position}: llm.token_count.{kind} must be a whole number, found {value!r}")
    return value


def trace_metadata(root: Span) -> dict[str, MetadataValue]:
    """The resource's attributes (not the SDK's), then the root's metadata object, session, user and tags."""
    found: dict[str, MetadataValue] = {key: plain(value) for key, value in root.resource.items()
                                       if not key.startswith(SDK_PREFIX) and value is not None}
    raw = root.attributes.get("metadata")
    if raw is not None:
        try:
            data = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError as error:
            raise SpanProblem(f"{root.position}: metadata must be a JSON object ({error.msg})") from None
        if not isinstance(data, dict):
            raise SpanProblem(f"{root.position}: metadata must be a JSON object, found {str(raw)[:40]!r}")
        found |= {str(key): plain(value) for key, value in data.items() if value is not None}
    for key in ("session.id", "user.id", "tag.tags"):
        if (value := root.attributes.get(key)) is not None:
            found[key] = plain(value)
    return dict(list(found.items())[:MAX_METADATA])


def plain(value: Any) -> MetadataValue:
    """A metadata value as text, a number or a boolean (a list joined with commas, an object as JSON)."""
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
