"""Running a judge: ask, parse, ask once more on an unreadable reply, combine samples into a verdict."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from evalcore.errors import EvalError
from evalcore.judges.parsing import parse_reply
from evalcore.judges.prompts import (
    DEFAULT_THRESHOLD,
    JudgePrompt,
    build_messages,
    load_prompt,
    reply_schema,
    signature,
)
from evalcore.judges.verdict import JudgeResult, Spread, Verdict
from evalcore.models import ChatModel, Message

MAX_TOKENS = 300
RETRY_MESSAGE = ('Your reply could not be read. Reply again with only the JSON object, '
                 'for example {"score": 3, "reason": "One sentence."}')
LABEL_RETRY_MESSAGE = ('Your reply could not be read. Reply again with only the JSON object, '
                       'for example {"label": "fail", "reason": "One sentence."}')


class Trial(NamedTuple):
    """One judgement (up to two calls): score or None, reason, tokens, and a call error if any."""

    score: float | None
    reason: str
    prompt_tokens: int
    completion_tokens: int
    error: str | None = None


@dataclass(frozen=True)
class JudgeSettings:
    """How judges are asked: which model, at what temperature and length, with which pass marks, how often."""

    model: ChatModel
    temperature: float = 0.0
    max_tokens: int = MAX_TOKENS
    thresholds: Mapping[str, float] = field(default_factory=dict)  # judge name -> pass mark (default 3)
    samples: int = 1  # above 1, each judge is asked this many times and the spread is recorded

    def threshold(self, name: str) -> float:
        """The pass mark of a judge."""
        return float(self.thresholds.get(name, DEFAULT_THRESHOLD))


def missing_input(prompt: JudgePrompt, *, question: str, answer: str | None,
                  references: Sequence[str]) -> str | None:
    """Why this judge cannot run on this item (a required input is empty), or None."""
    given = {"question": question, "answer": answer, "expected": "\n".join(references)}
    absent = [key for key in prompt.requires if not (given.get(key) or "").strip()]
    names = {"expected": "reference answer"}
    return ", ".join(names.get(key, key) for key in absent) or None


def judge_once(settings: JudgeSettings, prompt: JudgePrompt, messages: list[Message], temperature: float) -> Trial:
    """Ask, parse, and on an unreadable reply ask once more; model failures become a Trial with error."""
    tokens = [0, 0]
    retry = RETRY_MESSAGE if prompt.output == "likert" else LABEL_RETRY_MESSAGE
    reply_text = ""
    for attempt in range(2):
        try:
            reply = settings.model.chat(messages, temperature=temperature, max_tokens=settings.max_tokens,
                                        schema=reply_schema(prompt))
        # ValueError/RuntimeError: llama.cpp's own failures (a prompt over the context window).
        except (EvalError, OSError, ValueError, RuntimeError) as error:
            return Trial(None, f"judge call failed: {error}", tokens[0], tokens[1], error=str(error))
        tokens = [tokens[0] + reply.prompt_tokens, tokens[1] + reply.completion_tokens]
        reading = parse_reply(reply.text, prompt.output)
        if reading is not None:
            return Trial(reading.score, reading.reason, tokens[0], tokens[1])
        reply_text = reply.text
        messages = [*messages, {"role": "assistant", "content": reply.text}, {"role": "user", "content": retry}]
    shown = " ".join(reply_text.split())[:200]
    return Trial(None, f"unreadable judge reply after one retry: {shown!r}", tokens[0], tokens[1])


def run_judge(settings: JudgeSettings, name: str, *, question: str, answer: str, context: list[str],
              expected: str | Sequence[str] | None) -> Verdict:
    """Judge one answer; `expected` is the reference answer (or every one of them).

    A judge that needs a reference answer and has none is `skipped`; one missing another input
    (an empty answer) is `unknown`. Neither calls the model.
    """
    prompt = load_prompt(name)
    if settings.samples < 1:
        raise EvalError("samples must be at least 1", found=str(settings.samples), expected=">= 1")
    references = [expected] if isinstance(expected, str) else [r for r in expected or () if r]
    missing = missing_input(prompt, question=question, answer=answer, references=references)
    if missing:
        skipped = missing == "reference answer"
        trial = Trial(None, f"skipped: no {missing}" if skipped else f"not judged: no {missing}", 0, 0)
        return verdict([trial], prompt, settings, JudgeResult.SKIPPED if skipped else None)
    messages = build_messages(prompt, question=question, answer=answer, context=context, expected=references)
    # Several samples only make sense if they can differ: some temperature, and a message that
    # keeps each sample out of the other samples' cache entry.
    temperature = settings.temperature if settings.samples == 1 else max(settings.temperature, 0.7)
    trials = [judge_once(settings, prompt, sample_messages(messages, k, settings.samples), temperature)
              for k in range(settings.samples)]
    return verdict(trials, prompt, settings)


def sample_messages(messages: list[Message], index: int, samples: int) -> list[Message]:
    """The messages of sample `index` (unchanged for a single sample)."""
    if samples == 1:
        return messages
    return [*messages[:-1], {**messages[-1], "content": messages[-1]["content"]
                             + f"\n\n(Independent judgement {index + 1} of {samples}.)"}]


def verdict(trials: list[Trial], prompt: JudgePrompt, settings: JudgeSettings,
            outcome: JudgeResult | None = None) -> Verdict:
    """Combine trials into score, result, reason, tokens, and the spread when there are several."""
    scores = [t.score for t in trials if t.score is not None]
    score = statistics.fmean(scores) if scores else None
    threshold = settings.threshold(prompt.name)
    if outcome is not None:
        result = outcome
    elif score is None:
        result = JudgeResult.UNKNOWN
    elif prompt.output == "label":
        result = JudgeResult.PASS if score > 0.5 else JudgeResult.FAIL   # a tie between samples is not a pass
    else:
        result = JudgeResult.PASS if score >= threshold else JudgeResult.FAIL
    several = len(trials) > 1
    return Verdict(
        judge=prompt.name, model=settings.model.name, prompt_hash=prompt.hash, prompt_version=prompt.version,
        signature=signature(prompt.name), threshold=threshold if prompt.output == "likert" else None,
        score=score, reason=next((t.reason for t in trials if t.score is not None), trials[0].reason), result=result,
        prompt_tokens=sum(t.prompt_tokens for t in trials), completion_tokens=sum(t.completion_tokens for t in trials),
        error=next((t.error for t in trials if t.error), None),
        samples=tuple(t.score for t in trials) if several else None, spread=spread(scores) if several else None,
    )


def spread(scores: list[float]) -> Spread:
    """min, max and standard deviation of the readable samples."""
    if not scores:
        return Spread(0, None, None, None)
    return Spread(len(scores), min(scores), max(scores), statistics.stdev(scores) if len(scores) > 1 else 0.0)
