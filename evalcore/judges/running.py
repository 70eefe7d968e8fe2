"""Running a judge: ask, parse, ask once more on an unreadable reply, combine samples into a verdict."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from evalcore.errors import EvalError
from evalcore.judges.claim import Claim
from evalcore.judges.claim_faithfulness import ALL_SUPPORTED, parse_claims
from evalcore.judges.claim_faithfulness import MAX_TOKENS as CLAIMS_MAX_TOKENS
from evalcore.judges.claim_faithfulness import RETRY_MESSAGE as CLAIMS_RETRY_MESSAGE
from evalcore.judges.parsing import Reading, parse_reply
from evalcore.judges.prompts import (
    DEFAULT_THRESHOLD,
    JudgePrompt,
    Passage,
    as_passage,
    build_messages,
    context_chars,
    load_prompt,
    reply_schema,
    signature_of,
)
from evalcore.judges.verdict import JudgeResult, Spread, Verdict
from evalcore.models import ChatModel, ContextOverflow, Message

MAX_TOKENS = 300
Reader = Callable[[str], Reading | None]
MIN_KEEP = 200  # characters of context below which cutting further is pointless
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
    overflow: bool = False  # the messages did not fit the model's context window
    claims: tuple[Claim, ...] | None = None  # the claims judge's reading (empty: the answer makes no claim)
    cached_prompt_tokens: int = 0  # of the prompt tokens, those the provider read from its prompt cache


@dataclass(frozen=True)
class JudgeSettings:
    """How judges are asked: which model, at what temperature and length, with which pass marks, how often."""

    model: ChatModel
    temperature: float = 0.0
    max_tokens: int = MAX_TOKENS
    thresholds: Mapping[str, float] = field(default_factory=dict)  # judge name -> pass mark (default 3)
    samples: int = 1  # above 1, each judge is asked this many times and the spread is recorded
    prompts: Mapping[str, JudgePrompt] = field(default_factory=dict)  # judge name -> the campaign's own prompt

    def threshold(self, name: str) -> float:
        """The pass mark of a judge."""
        return float(self.thresholds.get(name, DEFAULT_THRESHOLD))

    def prompt(self, name: str) -> JudgePrompt:
        """The prompt a judge asks with: the campaign's own (a rubric's, a replaced one), else the built-in one."""
        if name in self.prompts:
            return self.prompts[name]
        builtin = load_prompt(name)
        return self.prompts.get(builtin.name, builtin)


def missing_input(prompt: JudgePrompt, *, question: str, answer: str | None,
                  references: Sequence[str]) -> str | None:
    """Why this judge cannot run on this item (a required input is empty), or None."""
    given = {"question": question, "answer": answer, "expected": "\n".join(references)}
    absent = [key for key in prompt.requires if not (given.get(key) or "").strip()]
    names = {"expected": "reference answer"}
    return ", ".join(names.get(key, key) for key in absent) or None


def judge_once(settings: JudgeSettings, prompt: JudgePrompt, messages: list[Message], temperature: float,
               read: Reader) -> Trial:
    """Ask, read the reply with `read`, and on an unreadable reply ask once more; model failures become a Trial."""
    tokens = [0, 0, 0]
    reply_text = ""
    for _attempt in range(2):
        try:
            reply = settings.model.chat(messages, temperature=temperature, max_tokens=max_tokens(settings, prompt),
                                        schema=reply_schema(prompt))
        # ValueError/RuntimeError: llama.cpp's own failures.
        except (EvalError, OSError, ValueError, RuntimeError) as error:
            return Trial(None, f"judge call failed: {error}", tokens[0], tokens[1], error=str(error),
                         overflow=isinstance(error, ContextOverflow), cached_prompt_tokens=tokens[2])
        tokens = [tokens[0] + reply.prompt_tokens, tokens[1] + reply.completion_tokens,
                  tokens[2] + reply.cached_prompt_tokens]
        reading = read(reply.text)
        if reading is not None:
            return Trial(reading.score, reading.reason, tokens[0], tokens[1], claims=reading.claims,
                         cached_prompt_tokens=tokens[2])
        reply_text = reply.text
        messages = [*messages, {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": retry_message(prompt)}]
    shown = " ".join(reply_text.split())[:200]
    return Trial(None, f"unreadable judge reply after one retry: {shown!r}", tokens[0], tokens[1],
                 cached_prompt_tokens=tokens[2])


def retry_message(prompt: JudgePrompt) -> str:
    """What a judge is told after an unreadable reply: the shape of its own verdict, with an example."""
    if prompt.output == "claims":
        return CLAIMS_RETRY_MESSAGE
    if prompt.output == "likert":
        return RETRY_MESSAGE
    return LABEL_RETRY_MESSAGE.replace('"fail"', f'"{prompt.labels[0] if prompt.labels else "fail"}"')


def max_tokens(settings: JudgeSettings, prompt: JudgePrompt) -> int:
    """The reply's length bound: the settings', raised for a list of claims (longer than a one-sentence verdict)."""
    return max(settings.max_tokens, CLAIMS_MAX_TOKENS) if prompt.output == "claims" else settings.max_tokens


def reader(prompt: JudgePrompt, context: Sequence[Passage | str]) -> Reader:
    """How a judge's replies are read: claims against the passages it was given, else a score or a label."""
    if prompt.output == "claims":
        ids = [as_passage(item).id for item in context]
        return lambda text: parse_claims(text, ids)
    return lambda text: parse_reply(text, prompt.output, prompt.labels)


def run_judge(settings: JudgeSettings, name: str, *, question: str, answer: str, context: Sequence[Passage | str],
              expected: str | Sequence[str] | None) -> Verdict:
    """Judge one answer on its whole context; `expected` is the reference answer (or every one of them).

    A judge that needs a reference answer and has none is `skipped`; one missing another input
    (an empty answer) is `unknown`. Neither calls the model. A context over the judge model's
    window is cut, and the verdict says so.
    """
    prompt = settings.prompt(name)
    if settings.samples < 1:
        raise EvalError("samples must be at least 1", found=str(settings.samples), expected=">= 1")
    references = [expected] if isinstance(expected, str) else [r for r in expected or () if r]
    missing = missing_input(prompt, question=question, answer=answer, references=references)
    if missing:
        skipped = missing == "reference answer"
        trial = Trial(None, f"skipped: no {missing}" if skipped else f"not judged: no {missing}", 0, 0)
        return verdict([trial], prompt, settings, JudgeResult.SKIPPED if skipped else None)

    def build(keep: int | None) -> list[Message]:
        return build_messages(prompt, question=question, answer=answer, context=context, expected=references,
                              keep=keep)

    # Several samples only make sense if they can differ: some temperature, and a message that
    # keeps each sample out of the other samples' cache entry.
    temperature = settings.temperature if settings.samples == 1 else max(settings.temperature, 0.7)
    total, read = context_chars(context), reader(prompt, context)
    first, keep = first_fit(settings, prompt, build, total, temperature, read)
    trials = [first, *(judge_once(settings, prompt, sample_messages(build(keep), k, settings.samples), temperature,
                                  read) for k in range(1, settings.samples))]
    return replace(verdict(trials, prompt, settings), context_cut=cut_note(keep, total))


def first_fit(settings: JudgeSettings, prompt: JudgePrompt, build: Callable[[int | None], list[Message]],
              total: int, temperature: float, read: Reader) -> tuple[Trial, int | None]:
    """The first sample on the whole context, halved each time the model says it is over its window."""
    keep: int | None = None
    while True:
        trial = judge_once(settings, prompt, sample_messages(build(keep), 0, settings.samples), temperature, read)
        if not trial.overflow or (keep is not None and keep < MIN_KEEP):
            return trial, keep
        keep = (total if keep is None else keep) // 2


def cut_note(keep: int | None, total: int) -> str | None:
    """What a verdict says when its judge saw less than the whole context."""
    if keep is None or keep >= total:
        return None
    return f"context cut to {keep:,} of {total:,} characters: the judge model's context window is too small"


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
    threshold = pass_mark(settings, prompt)
    claims = next((t.claims for t in trials if t.claims is not None), None)
    several = len(trials) > 1
    return Verdict(
        judge=prompt.name, model=settings.model.name, prompt_hash=prompt.hash, prompt_version=prompt.version,
        signature=signature_of(prompt), threshold=threshold, score=score, label=label_of(prompt, score),
        result=outcome or result_of(prompt, score, threshold, claims),
        reason=next((t.reason for t in trials if t.score is not None or t.claims is not None), trials[0].reason),
        prompt_tokens=sum(t.prompt_tokens for t in trials), completion_tokens=sum(t.completion_tokens for t in trials),
        cached_prompt_tokens=sum(t.cached_prompt_tokens for t in trials),
        error=next((t.error for t in trials if t.error), None),
        samples=tuple(t.score for t in trials) if several else None, spread=spread(scores) if several else None,
        claims=claims,
    )


def pass_mark(settings: JudgeSettings, prompt: JudgePrompt) -> float | None:
    """A judge's pass mark: None for pass/fail judges, a share of supported claims for claims (default: all)."""
    if prompt.output == "label":
        return None
    if prompt.output == "claims":
        return float(settings.thresholds.get(prompt.name, ALL_SUPPORTED))
    return settings.threshold(prompt.name)


def result_of(prompt: JudgePrompt, score: float | None, threshold: float | None,
              claims: tuple[Claim, ...] | None) -> JudgeResult:
    """pass, fail, unknown (no reading), or no_claim (a claims reply listing none: a refusal, not scored)."""
    if score is None:
        return JudgeResult.NO_CLAIM if claims == () else JudgeResult.UNKNOWN
    if threshold is None:
        return JudgeResult.PASS if score > 0.5 else JudgeResult.FAIL   # a tie between samples is not a pass
    return JudgeResult.PASS if score >= threshold else JudgeResult.FAIL


def label_of(prompt: JudgePrompt, score: float | None) -> str | None:
    """The label of a rubric's scale a score stands for (the nearest, for a mean of samples)."""
    if not prompt.labels or score is None:
        return None
    return prompt.labels[min(max(round(score), 1), len(prompt.labels)) - 1]


def spread(scores: list[float]) -> Spread:
    """min, max and standard deviation of the readable samples."""
    if not scores:
        return Spread(0, None, None, None)
    return Spread(len(scores), min(scores), max(scores), statistics.stdev(scores) if len(scores) > 1 else 0.0)
