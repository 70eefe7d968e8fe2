"""Production traces: OpenTelemetry (OTLP JSON, OpenInference attributes) and JSONL files imported, OTLP/HTTP requests
received, stored per tenant after redaction, kept for the tenant's retention, listed, filtered and sampled."""

from evalcore.telemetry.sampling import TraceSample, sample_traces
from evalcore.telemetry.stored import (
    TraceFilter,
    TraceSettings,
    apply_retention,
    get_trace,
    import_file,
    import_text,
    list_traces,
    receive,
    set_trace_settings,
    trace_settings,
)
from evalcore.telemetry.trace_records import Rejected, Trace, TraceDocument, TraceImport

__all__ = ["Rejected", "Trace", "TraceDocument", "TraceFilter", "TraceImport", "TraceSample", "TraceSettings",
           "apply_retention", "get_trace", "import_file", "import_text", "list_traces", "receive", "sample_traces",
           "set_trace_settings", "trace_settings"]
