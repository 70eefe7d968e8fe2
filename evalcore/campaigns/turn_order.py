"""The order a campaign's questions are asked in when some are turns of conversations, and the history each gets.

A question asked alone may be asked at any time. A conversation's turns are asked one at a time, in turn order (an
HTTP agent that keeps its own session by the conversation's id sees them as a person would send them); different
conversations run at once. Each turn is given at most `max_rounds` earlier rounds, the latest: each with the earlier
turn's question and, with `history = "answers"`, the answer the system gave it (from this session, or stored by an
earlier one: a resume or a retry continues a conversation from its first unfinished turn), or with
`history = "references"` the turn's expected answer (else its first reference answer).

With the system's own answers as history, a turn whose question failed leaves its followers without a history to give
them: they are recorded as not asked, with the reason, and a retry asks them again in order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from evalcore.campaigns.records import Outcome, Question
from evalcore.store import Store
from evalcore.store.conversation_rows import answered_turns
from evalcore.targets.base import Round
from evalcore.targets.target_config import TargetConfig

NOT_ASKED = "not asked"


def reference_of(question: Question) -> str:
    """The answer a reference history gives a turn: its expected answer, else its first reference ("" without)."""
    return question.expected_answer or next(iter(question.references), "")


def earlier_rounds(question: Question, texts: Mapping[int, str], answers: Mapping[int, str | None],
                   max_rounds: int) -> tuple[Round, ...]:
    """The at most max_rounds rounds before the question's turn, oldest first: each earlier turn's question (`texts`,
    by turn) with its answer (`answers`; "" when it has none)."""
    turn = question.turn or 1
    first = max(1, turn - max_rounds)
    return tuple(Round(texts.get(number, ""), answers.get(number) or "") for number in range(first, turn))


class Conversations:
    """The questions still to ask, handed out as they may be asked (`ready`), each with its history."""

    def __init__(self, questions: Sequence[Question], config: TargetConfig,
                 snapshot: Sequence[Question] = (), stored: Mapping[tuple[str, int], str | None] | None = None) -> None:
        self.max_rounds = config.conversation.max_rounds
        self.own_answers = config.conversation.history == "answers"
        self._alone: deque[Question] = deque(q for q in questions if q.conversation is None)
        self._turns: dict[str, deque[Question]] = {}
        for question in sorted((q for q in questions if q.conversation is not None), key=lambda q: q.turn or 0):
            self._turns.setdefault(question.conversation or "", deque()).append(question)
        self._order = list(dict.fromkeys(q.conversation for q in questions if q.conversation is not None))
        self._asking: set[str] = set()
        everything = [*snapshot, *questions]
        self._texts = {(q.conversation, q.turn or 0): q.text for q in everything if q.conversation is not None}
        self._references = {(q.conversation, q.turn or 0): reference_of(q) for q in everything
                            if q.conversation is not None}
        self._answers: dict[tuple[str, int], str | None] = dict(stored or {})

    def __len__(self) -> int:
        """Questions not handed out yet."""
        return len(self._alone) + sum(len(turns) for turns in self._turns.values())

    def ready(self, room: int) -> list[Question]:
        """Up to `room` questions that may be asked now, in the campaign's order: questions asked alone, and the next
        turn of each conversation with no turn in flight, given its history."""
        out: list[Question] = []
        for conversation in self._order:
            turns = self._turns.get(conversation)
            if len(out) >= room:
                break
            if turns and conversation not in self._asking:
                self._asking.add(conversation)
                out.append(self._with_history(turns.popleft()))
        while len(out) < room and self._alone:
            out.append(self._alone.popleft())
        return out

    def finished(self, question: Question, outcome: Outcome) -> list[tuple[Question, Outcome]]:
        """Note a question's outcome; the followers of a failed turn, recorded as not asked when the history is the
        system's own answers (else nothing)."""
        if question.conversation is None:
            return []
        self._asking.discard(question.conversation)
        self._answers[(question.conversation, question.turn or 0)] = outcome.answer
        if outcome.error is None or not self.own_answers:
            return []
        followers = self._turns.pop(question.conversation, deque())
        reason = (f"{NOT_ASKED}: turn {question.turn} of conversation {question.conversation!r} failed, and each "
                  f"later turn's history holds its answer ({outcome.error})")
        return [(follower, Outcome.failed(reason, 0.0)) for follower in followers]

    def _with_history(self, question: Question) -> Question:
        if self.max_rounds == 0 or (question.turn or 1) == 1:
            return question
        conversation = question.conversation or ""
        texts = {turn: text for (name, turn), text in self._texts.items() if name == conversation}
        source = self._answers if self.own_answers else self._references
        answers = {turn: answer for (name, turn), answer in source.items() if name == conversation}
        return replace(question, history=earlier_rounds(question, texts, answers, self.max_rounds))


def stored_answers(store: Store, campaign_id: str) -> dict[tuple[str, int], str | None]:
    """The answers a campaign's conversation turns already have (from an earlier session), by (conversation, turn)."""
    rows = answered_turns(store, campaign_id)
    return {(row["conversation"], int(row["turn"] or 0)): row["answer"] for row in rows}


def talking(questions: Iterable[Question]) -> bool:
    """Whether any question is a turn of a conversation."""
    return any(question.conversation is not None for question in questions)
