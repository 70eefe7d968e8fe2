"""Judges that read a whole conversation: does an answer contradict an earlier one (`conversation_contradiction`),
did the conversation reach what the user asked (`conversation_goal`).

Each is a prompt file (`templates/conversation_<name>.txt`) asked through `run_judge`, so that its verdict has the
same shape, pass/fail label, reason, tokens, signature and retry on an unreadable reply as every other judge's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from evalcore.errors import EvalError
from evalcore.judges.prompts import PROMPT_DIR, JudgePrompt, meta_lines, sections, text_hash
from evalcore.judges.running import JudgeSettings, run_judge
from evalcore.judges.verdict import Verdict
from evalcore.runtime.lazy import once

CONVERSATION_JUDGES = ("conversation_contradiction", "conversation_goal")
NO_ANSWER = "(no answer)"


class Exchange(NamedTuple):
    """One turn as a conversation judge reads it: the user's question, the answer given, what a good one says."""

    question: str
    answer: str | None
    expected: str | None = None


@once
def conversation_prompt(name: str) -> JudgePrompt:
    """A conversation judge's prompt file."""
    if name not in CONVERSATION_JUDGES:
        raise EvalError(f"unknown conversation judge {name!r}", expected=", ".join(CONVERSATION_JUDGES), found=name)
    text = (PROMPT_DIR / f"{name}.txt").read_text(encoding="utf-8").replace("\r\n", "\n")
    meta = meta_lines(text)
    system, user = sections(text)
    return JudgePrompt(name=name, version=meta["version"], output=meta["output"],
                       requires=tuple(k.strip() for k in meta["requires"].split(",")), system=system, user=user,
                       hash=text_hash(text))


def transcript(turns: Sequence[Exchange]) -> str:
    """The conversation as the judges read it: `Turn N` then the user's and the assistant's lines."""
    return "\n\n".join(f"Turn {number}\nUser: {turn.question}\nAssistant: {turn.answer or NO_ANSWER}"
                       for number, turn in enumerate(turns, 1))


def expected_lines(turns: Sequence[Exchange]) -> list[str]:
    """What a good answer says at each turn that has a reference, named by its turn."""
    return [f"Turn {number}: {turn.expected}" for number, turn in enumerate(turns, 1) if turn.expected]


@dataclass(frozen=True)
class ConversationJudging:
    """How conversation judges ask: the campaign's judge settings (model, temperature, samples)."""

    settings: JudgeSettings

    def judge(self, turns: Sequence[Exchange], names: Sequence[str] = CONVERSATION_JUDGES) -> dict[str, Verdict]:
        """Each judge's verdict on the whole conversation (a turn that failed reads `(no answer)`)."""
        prompts = {name: conversation_prompt(name) for name in names}
        settings = replace(self.settings, prompts={**self.settings.prompts, **prompts})
        text = transcript(turns)
        return {name: run_judge(settings, name, question=text, answer=text, context=(),
                                expected=expected_lines(turns)) for name in names}
