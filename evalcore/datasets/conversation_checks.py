"""Conversations in a question set: which questions are turns of one conversation, checked whole.

A question may belong to a conversation (any id, kept as text) at a turn number from 1. Every
conversation's turns must be 1, 2, ... n: no turn number twice, no gap. The dataset loader, the
suites' CSV and JSONL readers and the suites themselves share these checks, so that each names the
row and the problem in its own words (`where` of each entry).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple


class TurnOf(NamedTuple):
    """One question's place: where it is read (a file's row, a case), its conversation and its turn."""

    where: str
    conversation: str | None
    turn: int | None


def conversation_id(value: object) -> str | None:
    """A conversation id as text (a whole number stays whole: 7, not 7.0), None when empty."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = " ".join(str(value).split())
    return text or None


def turn_problems(entries: Sequence[TurnOf]) -> list[str]:
    """Every problem with the conversations of a question set: a turn without a conversation (or the other way
    round), a turn number below 1, twice in a conversation, or a gap in a conversation's turns."""
    problems: list[str] = []
    seen: dict[str, dict[int, str]] = {}
    for entry in entries:
        if entry.conversation is None and entry.turn is None:
            continue
        if entry.conversation is None:
            problems.append(f"{entry.where}: turn {entry.turn} without a conversation (give both, or neither)")
        elif entry.turn is None:
            problems.append(f"{entry.where}: conversation {entry.conversation!r} without a turn number")
        elif entry.turn < 1:
            problems.append(f"{entry.where}: turn {entry.turn} of conversation {entry.conversation!r}: turns count "
                            "from 1")
        elif (first := seen.setdefault(entry.conversation, {}).get(entry.turn)) is not None:
            problems.append(f"{entry.where}: turn {entry.turn} of conversation {entry.conversation!r} twice (first "
                            f"at {first})")
        else:
            seen[entry.conversation][entry.turn] = entry.where
    for conversation, turns in seen.items():
        missing = sorted(set(range(1, max(turns) + 1)) - turns.keys())
        if missing:
            after = turns[min(turn for turn in turns if turn > missing[0])]
            problems.append(f"{after}: conversation {conversation!r} has no turn {missing[0]} (its turns are "
                            f"{', '.join(map(str, sorted(turns)))}; they must be 1, 2, ... without a gap)")
    return problems


def turns_in_order(conversations: Iterable[str | None]) -> list[int | None]:
    """Turn numbers given by the order of the rows: each conversation's rows are its turns 1, 2, ... (None: a row
    asked alone)."""
    counts: dict[str, int] = {}
    out: list[int | None] = []
    for conversation in conversations:
        if conversation is None:
            out.append(None)
        else:
            counts[conversation] = counts.get(conversation, 0) + 1
            out.append(counts[conversation])
    return out
