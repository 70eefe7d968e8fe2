"""What every target returns, and the protocol campaigns drive."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, NamedTuple, Protocol

from evalcore.formats.shapes import doc

if TYPE_CHECKING:  # only named in annotations: the records that hold a Retrieved need not load the HTTP stack or numpy
    from evalcore.models import ChatModel, ChatReply
    from evalcore.targets.knowledge import PassageLike, Progress
    from evalcore.targets.target_config import TargetConfig

RERANK_EMPTY_NOTE = "rerank returned nothing: using retrieval list"


class Retrieved(NamedTuple):
    """One retrieved chunk; `pid` is its passage by provenance (None when it maps to none).

    `stages` holds every stage's score (bm25, bm25_norm, vector, rrf/weighted, rerank);
    `source` is an external target's own id for the document ("" for our passages); `file_name`
    the file an agent says the document is ("" when it says none).
    """

    pid: Annotated[int | None, "its passage (null: an external target's document, named by source)"]
    title: str
    text: str
    score: float
    stages: Annotated[dict[str, float], "every stage's score: bm25, bm25_norm, vector, rrf or weighted, rerank"]
    source: Annotated[str, "an external target's own id for the document ('' for our passages)"] = ""
    # Not in the chunk's stored JSON: the answer's sources carry it.
    file_name: Annotated[str, doc("the file an agent says the document is ('' when it says none)", hidden=True)] = ""

    @property
    def shown_id(self) -> str:
        """How lists name it: its passage id, else an external target's id for it, else "—" (never "None")."""
        return str(self.pid) if self.pid is not None else self.source or "—"


class Round(NamedTuple):
    """One earlier round of a conversation as the target is given it: what the user asked, and the answer."""

    question: str
    answer: str


@dataclass(frozen=True)
class Chat:
    """Where a question stands in its conversation: the conversation's id, its turn (from 1) and the earlier rounds
    the target is given (at most max_rounds, oldest first; empty with max_rounds 0 or on the first turn)."""

    conversation: str
    turn: int
    history: tuple[Round, ...] = ()


def history_text(history: Sequence[Round]) -> str:
    """The earlier rounds as a prompt's {history} reads them: "" without any, else the conversation so far, one line
    per message, and a blank line after it."""
    if not history:
        return ""
    lines = [line for past in history for line in (f"User: {one_line(past.question)}",
                                                   f"Assistant: {one_line(past.answer)}")]
    return "Conversation so far:\n" + "\n".join(lines) + "\n\n"


def history_messages(history: Sequence[Round]) -> list[dict[str, str]]:
    """The earlier rounds as chat messages, oldest first: the user's question, then the answer it got."""
    return [message for past in history for message in ({"role": "user", "content": past.question},
                                                         {"role": "assistant", "content": past.answer})]


def one_line(text: str) -> str:
    """A text on one line (its white space folded)."""
    return " ".join(text.split())


@dataclass
class TargetAnswer:
    """The answer to one question with what was retrieved, what it was built from, and what it cost.

    `answer` is None when the target gave none (a results file row without an answer). `queries` are
    the texts a query transformation retrieved with besides the question (a rewrite, the multi-query
    rewrites, a HyDE passage); empty without one, or when it failed and the question was used.
    """

    answer: str | None
    retrieved: list[Retrieved]
    # What the answer was built from (the passages placed in the prompt, a file's contexts); None
    # when that is the whole retrieved list (an agent's returned sources).
    context: list[Retrieved] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    llm_calls: int = 0
    cache_hits: int = 0

    def record(self, reply: ChatReply) -> None:
        """Count one model call (token counts are kept for cached replies too)."""
        self.llm_calls += 1
        self.cache_hits += int(reply.cached)
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens


class Hit(NamedTuple):
    """A retrieved chunk with its row in the knowledge base (for rerankers needing vectors)."""

    row: int
    item: Retrieved


class Target(Protocol):
    """The system under test, as campaigns see it."""

    config: TargetConfig

    def check(self) -> None: ...

    def prepare(self, passages: Sequence[PassageLike], progress: Progress | None = None) -> None: ...

    def answer(self, question: str, qid: int | None = None, chat: Chat | None = None) -> TargetAnswer: ...

    def chat_model(self) -> ChatModel | None: ...
