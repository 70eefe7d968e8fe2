"""A campaign over production traces: its questions are a sample of a tenant's traces, and its target asks nothing,
giving back each trace's answer and retrieved documents for the measures that need no reference (the judges that read
only the question, the answer and the documents; claims; rubrics; refusals)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalcore.campaigns.records import Question
from evalcore.errors import EvalError
from evalcore.store import Store
from evalcore.store.trace_rows import campaign_trace_rows
from evalcore.targets import TargetAnswer, TargetConfig
from evalcore.targets.base import Chat, Retrieved
from evalcore.telemetry.trace_records import Trace

if TYPE_CHECKING:
    from evalcore.models import ChatModel
    from evalcore.targets.knowledge import PassageLike

# The built-in judges that compare with a reference answer: a trace has none.
NEEDS_REFERENCE = ("score", "completeness")
DEFAULT_JUDGES = ("groundedness", "relevance")


def trace_questions(traces: Sequence[Trace]) -> list[Question]:
    """The question snapshot: one question per trace, its id the trace's number in the store."""
    return [Question(position, trace.number, trace.question, None, (), None, (), None)
            for position, trace in enumerate(traces)]


def check_reference_free(judges: Sequence[str]) -> None:
    """EvalError for a judge that needs a reference answer."""
    needing = [name for name in judges if name in NEEDS_REFERENCE]
    if needing:
        raise EvalError(f"the judge {needing[0]!r} compares with a reference answer, and traces have none",
                        where="judges", expected="groundedness, groundedness_pro, relevance, retrieval, claims, "
                                                 "refusal or a rubric")


def documents_of(trace: Trace) -> list[Retrieved]:
    """A trace's documents as a ranked list (their ids as an external target's sources)."""
    return [Retrieved(None, "", document.text, 0.0 if document.score is None else document.score, {}, document.id)
            for document in trace.documents]


class TraceAnswers:
    """The target of a traces campaign: each question's trace, given back; nothing is asked."""

    def __init__(self, store: Store, campaign_id: str, config: TargetConfig) -> None:
        self.config = config
        self._store = store
        self._campaign_id = campaign_id
        self._traces: dict[int, Trace] = {}

    def check(self) -> None:
        """Nothing to reach: the traces are stored."""

    def prepare(self, passages: Sequence[PassageLike], progress: Any = None) -> None:
        """Read the campaign's traces at once."""
        rows = campaign_trace_rows(self._store, self._campaign_id)
        self._traces = {row["number"]: Trace.from_row(row) for row in rows}

    def answer(self, question: str, qid: int | None = None, chat: Chat | None = None) -> TargetAnswer:
        """The trace's answer and documents, with the tokens it cost in production (a trace was answered with its own
        history: `chat` is not used)."""
        trace = self._traces.get(qid) if qid is not None else None
        if trace is None:
            raise EvalError("the trace is no longer stored (deleted by the tenant's retention?)",
                            where=f"trace {qid}")
        return TargetAnswer(trace.answer, documents_of(trace), None, trace.prompt_tokens, trace.completion_tokens)

    def chat_model(self) -> ChatModel | None:
        """A trace has no chat model of ours: the judges use the configured judge model."""
        return None
