"""LLM judges (seeds 003, 004): versioned prompts, tolerant reply parsing, pass/fail/unknown."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from evalcore.errors import EvalError

JUDGES = ("score", "retrieval", "groundedness", "groundedness_pro", "relevance", "completeness")
ALIASES = {"response_completeness": "completeness", "ai_score": "score"}
PROMPT_DIR = Path(__file__).with_name("judge_prompts")
DEFAULT_THRESHOLD = 3.0
MAX_TOKENS = 300
PASSAGE_CHARS = 1500
CONTEXT_CHARS = 12000
RETRY_MESSAGE = ('Your reply could not be read. Reply again with only the JSON object, '
                 'for example {"score": 3, "reason": "One sentence."}')
LABEL_RETRY_MESSAGE = ('Your reply could not be read. Reply again with only the JSON object, '
                       'for example {"label": "fail", "reason": "One sentence."}')

# Reasoning models may think aloud first: only what follows the thinking is the verdict.
THINKING = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|$)", re.DOTALL | re.IGNORECASE)
FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
SCORE_TAG = re.compile(r"<score>\s*(-?\d+(?:[.,]\d+)?)\s*</score>", re.IGNORECASE)
LABEL_TAG = re.compile(r"<label>\s*([A-Za-z ]+?)\s*</label>", re.IGNORECASE)
REASON_TAG = re.compile(r"<(?:reason|explanation)>(.*?)</(?:reason|explanation)>", re.IGNORECASE | re.DOTALL)
# Prose, in order of evidence: a number after a rating word ("Score: 4", "note : 4,5/5"), a number
# on the 5-point scale ("4.5/5", "4 out of 5"), a 1-5 right after a verb of rating ("I'd give it a
# 4"), a reply that opens with a 1-5 ("4 - accurate"). Any other digit may be the judged answer
# echoed back ("accepts up to 5 clients"): reading it as a score would be a silent pass. The
# scale's own bounds ("on a scale of 1 to 5") are not a score; a number on another scale ("7/10") is none.
NUMBER = r"(-?\d+(?:[.,]\d+)?)"
SCALE_BOUNDS = re.compile(r"\b(?:from|of|between)?\s*\(?1\s*(?:-|–|to|and|à)\s*5\b\)?", re.IGNORECASE)
NAMED_NUMBER = re.compile(rf"\b(?:score|rating|grade|note)\b\W{{0,3}}?(?:is\W{{0,2}}?|of\W{{0,2}}?)?{NUMBER}"
                          r"(?:\s*(?:/|out\s+of|sur)\s*(\d+))?", re.IGNORECASE)
OUT_OF_FIVE = re.compile(rf"(?<![\w.,/]){NUMBER}\s*(?:/|out\s+of|sur)\s*5(?!\d|[.,]\d)", re.IGNORECASE)
FRACTION = re.compile(rf"{NUMBER}\s*(?:/|out\s+of|sur)\s*\d+", re.IGNORECASE)
GIVEN_DIGIT = re.compile(r"\b(?:give|gave|giving|rate|rated|assign|assigned|award|awarded|overall|verdict)\b"
                         r"[^.\d\n]{0,20}?(?<![\w.,/-])([1-5])(?!\w|[.,]\d)", re.IGNORECASE)
LEADING_DIGIT = re.compile(r"^[\W_]*([1-5])(?!\w|[.,]\d)(?![ \t]+[^\W\d_])")
# A label in prose: the reply opens with it, or it follows a verdict word ("Label: fail", "the answer
# passes"); a "pass" or "fail" elsewhere may be the judged text echoed back ("failed login attempts").
LABEL_WORD = re.compile(r"(?:^[\W_]*|\b(?:label|verdict|result|answer|response)\b\W{0,3}(?:is\W{0,2})?)"
                        r"(pass|fail)(?:ed|es|s)?\b", re.IGNORECASE)
SCORE_KEYS = ("score", "rating", "grade")
LABEL_KEYS = ("label", "result", "verdict", "grounded")
REASON_KEYS = ("reason", "explanation", "rationale", "justification")
TRUE_WORDS = {"pass", "passed", "true", "yes", "grounded"}
FALSE_WORDS = {"fail", "failed", "false", "no", "ungrounded", "not grounded"}


@dataclass(frozen=True)
class JudgePrompt:
    """One judge's prompt file: metadata, system and user templates, and its content hash."""

    name: str
    version: str
    output: str           # "likert" (1-5) or "label" (pass/fail)
    requires: tuple[str, ...]
    system: str
    user: str
    hash: str


class Reading(NamedTuple):
    """A parsed reply: the score (1-5, or 1.0/0.0 for a label) and the judge's reason."""

    score: float
    reason: str


class Trial(NamedTuple):
    """One judgement (up to two calls): score or None, reason, tokens, and a call error if any."""

    score: float | None
    reason: str
    prompt_tokens: int
    completion_tokens: int
    error: str | None = None


def canonical(name: str) -> str:
    """The judge's canonical name (accepts `judge.` prefixes and seed 004 aliases)."""
    short = name.removeprefix("judge.")
    short = ALIASES.get(short, short)
    if short not in JUDGES:
        raise EvalError(f"unknown judge {name!r}", expected=", ".join(JUDGES), found=name)
    return short


@cache
def load_prompt(name: str) -> JudgePrompt:
    """Read evalcore/judge_prompts/<name>.txt (`# key: value` lines, then [system] and [user])."""
    name = canonical(name)
    text = (PROMPT_DIR / f"{name}.txt").read_text(encoding="utf-8").replace("\r\n", "\n")
    meta = dict(re.findall(r"^# (\w+): (.*)$", text, re.MULTILINE))
    system = text.split("[system]\n", 1)[1].split("[user]\n", 1)[0].strip()
    user = text.split("[user]\n", 1)[1].strip()
    return JudgePrompt(name=name, version=meta["version"], output=meta["output"],
                       requires=tuple(k.strip() for k in meta["requires"].split(",")),
                       system=system, user=user, hash=hashlib.sha256(text.encode()).hexdigest()[:16])


# The reply parser is part of a verdict: a change to what it accepts is a new version.
PARSER_VERSION = 2


def signature(name: str) -> str:
    """The judge measure's signature: name, prompt version and hash, output kind, parser version."""
    prompt = load_prompt(name)
    return (f"judge.{prompt.name}|prompt:v{prompt.version}|hash:{prompt.hash}|output:{prompt.output}"
            f"|parser:v{PARSER_VERSION}")


def format_context(context: list[str]) -> str:
    """Numbered passages, each and all cut to a size any chat model accepts."""
    if not context:
        return "(no passage was retrieved)"
    parts, used = [], 0
    for number, passage in enumerate(context, start=1):
        piece = " ".join(passage.split())[:PASSAGE_CHARS]
        if used + len(piece) > CONTEXT_CHARS:
            parts.append(f"({len(context) - number + 1} more passage(s) left out for length)")
            break
        parts.append(f"[{number}] {piece}")
        used += len(piece)
    return "\n\n".join(parts)


def build_messages(prompt: JudgePrompt, *, question: str, answer: str, context: list[str],
                   expected: str | None) -> list[dict]:
    """System + user messages, filling {question} {answer} {context} {expected} in one pass."""
    values = {"question": question or "", "answer": answer or "", "expected": expected or "",
              "context": format_context(context)}
    user = re.sub(r"\{(question|answer|context|expected)\}", lambda m: values[m.group(1)], prompt.user)
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": user}]


def json_objects(text: str) -> list[dict]:
    """Every JSON object in the reply, fenced blocks first."""
    decoder = json.JSONDecoder()
    found = []
    for chunk in [*FENCE.findall(text), text]:
        for match in re.finditer(r"\{", chunk):
            try:
                value, _ = decoder.raw_decode(chunk, match.start())
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append({str(k).strip().lower(): v for k, v in value.items()})
        found += python_dicts(chunk)
    return found


def python_dicts(text: str) -> list[dict]:
    """Flat Python dict literals (`{'score': 3}`): small models often answer with one instead of JSON."""
    found = []
    for match in re.finditer(r"\{[^{}]*\}", text):
        try:
            value = ast.literal_eval(match.group(0))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            found.append({str(k).strip().lower(): v for k, v in value.items()})
    return found


def first_key(obj: dict, keys: tuple[str, ...]) -> Any:
    """The value of the first of `keys` present in obj, else None."""
    return next((obj[k] for k in keys if k in obj), None)


def as_score(value: Any) -> float | None:
    """A 1-5 score from a number or a string like "4" or "4/5"; None when out of range or not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(-?\d+(?:[.,]\d+)?)\s*(?:/\s*5)?\s*", value)
        value = float(match.group(1).replace(",", ".")) if match else None
    if isinstance(value, (int, float)) and 1 <= value <= 5:
        return float(value)
    return None


def as_label(value: Any) -> float | None:
    """1.0 for pass/true/grounded, 0.0 for fail/false/ungrounded, None otherwise."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    word = " ".join(str(value).strip().lower().split())
    return 1.0 if word in TRUE_WORDS else 0.0 if word in FALSE_WORDS else None


def reason_from(text: str, obj: dict | None = None) -> str:
    """The judge's explanation: the JSON reason, a <reason> tag, else the reply itself (shortened)."""
    if obj is not None and isinstance(first_key(obj, REASON_KEYS), str):
        return first_key(obj, REASON_KEYS).strip()
    tag = REASON_TAG.search(text)
    flat = " ".join((tag.group(1) if tag else FENCE.sub("", text)).split()) or "(the judge gave no reason)"
    return flat if len(flat) <= 400 else flat[:399] + "…"


def parse_reply(text: str, output: str = "likert") -> Reading | None:
    """Read a judge reply: JSON (fenced or not), then tags, then prose; None when unreadable."""
    keys, convert = (SCORE_KEYS, as_score) if output == "likert" else (LABEL_KEYS + SCORE_KEYS, as_label)
    text = THINKING.sub("", text)
    for obj in json_objects(text):
        if first_key(obj, keys) is not None:
            value = convert(first_key(obj, keys))
            # A JSON verdict out of range is a broken reply: guessing from its prose would be a lie.
            return Reading(value, reason_from(text, obj)) if value is not None else None
    tag = (SCORE_TAG if output == "likert" else LABEL_TAG).search(text)
    if tag:
        value = convert(tag.group(1))
        return Reading(value, reason_from(text)) if value is not None else None
    return parse_prose(text, output)


def prose_score(text: str) -> float | None:
    """A 1-5 score read from prose (see NAMED_NUMBER); None when there is none or it is off the scale."""
    text = SCALE_BOUNDS.sub(" ", text)
    named = NAMED_NUMBER.search(text)
    if named:
        on_five = named.group(2) in (None, "5")
        return as_score(named.group(1)) if on_five else None
    text_without_fractions = FRACTION.sub(" ", text)
    match = (OUT_OF_FIVE.search(text) or GIVEN_DIGIT.search(text_without_fractions)
             or LEADING_DIGIT.search(text_without_fractions.strip()))
    return as_score(match.group(1)) if match else None


def parse_prose(text: str, output: str) -> Reading | None:
    """Last resort: a number given as the score (see GIVEN_DIGIT); for labels, exactly one of pass/fail."""
    if output == "likert":
        score = prose_score(text)
        return Reading(score, reason_from(text)) if score is not None else None
    words = {m.group(1).lower() for m in LABEL_WORD.finditer(text)}
    if len(words) != 1:
        return None
    return Reading(1.0 if words == {"pass"} else 0.0, reason_from(text))


def missing_input(prompt: JudgePrompt, *, question: str, answer: str | None, expected: str | None) -> str | None:
    """Why this judge cannot run on this item, or None."""
    given = {"question": question, "answer": answer, "expected": expected}
    absent = [key for key in prompt.requires if not (given.get(key) or "").strip()]
    names = {"expected": "expected answer"}
    return ", ".join(names.get(key, key) for key in absent) or None


def judge_once(model: Any, prompt: JudgePrompt, messages: list[dict], temperature: float) -> Trial:
    """Ask, parse, and on an unreadable reply ask once more; model failures become a Trial with error."""
    tokens = [0, 0]
    retry = RETRY_MESSAGE if prompt.output == "likert" else LABEL_RETRY_MESSAGE
    reply_text = ""
    for attempt in range(2):
        try:
            reply = model.chat(messages, temperature=temperature, max_tokens=MAX_TOKENS)
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


def run_judge(model: Any, name: str, *, question: str, answer: str, context: list[str],
              expected: str | None, threshold: float = DEFAULT_THRESHOLD, samples: int = 1) -> dict:
    """Judge one item: {score, reason, result, threshold, model, prompt_hash, prompt_version, tokens, ...}."""
    prompt = load_prompt(name)
    if samples < 1:
        raise EvalError("samples must be at least 1", found=str(samples), expected=">= 1")
    base = {"judge": prompt.name, "model": getattr(model, "name", str(model)), "prompt_hash": prompt.hash,
            "prompt_version": prompt.version, "signature": signature(prompt.name),
            "threshold": threshold if prompt.output == "likert" else None}
    missing = missing_input(prompt, question=question, answer=answer, expected=expected)
    if missing:
        return {**base, **outcome([Trial(None, f"not judged: no {missing}", 0, 0)], prompt, threshold)}
    messages = build_messages(prompt, question=question, answer=answer, context=context, expected=expected)
    # Several samples only make sense if they can differ: some temperature, and a message that
    # keeps each sample out of the other samples' cache entry.
    temperature = 0.0 if samples == 1 else 0.7
    trials = [judge_once(model, prompt, sample_messages(messages, k, samples), temperature) for k in range(samples)]
    return {**base, **outcome(trials, prompt, threshold)}


def sample_messages(messages: list[dict], index: int, samples: int) -> list[dict]:
    """The messages of sample `index` (unchanged for a single sample)."""
    if samples == 1:
        return messages
    return [*messages[:-1], {**messages[-1], "content": messages[-1]["content"]
                             + f"\n\n(Independent judgement {index + 1} of {samples}.)"}]


def outcome(trials: list[Trial], prompt: JudgePrompt, threshold: float) -> dict:
    """Combine trials into score, result, reason, tokens, and the spread when there are several."""
    scores = [t.score for t in trials if t.score is not None]
    score = statistics.fmean(scores) if scores else None
    if score is None:
        result = "unknown"
    elif prompt.output == "label":
        result = "pass" if score > 0.5 else "fail"   # a tie between samples is not a pass
    else:
        result = "pass" if score >= threshold else "fail"
    reason = next((t.reason for t in trials if t.score is not None), trials[0].reason)
    prompt_tokens = sum(t.prompt_tokens for t in trials)
    completion_tokens = sum(t.completion_tokens for t in trials)
    out: dict[str, Any] = {"score": score, "reason": reason, "result": result,
                           "tokens": prompt_tokens + completion_tokens, "prompt_tokens": prompt_tokens,
                           "completion_tokens": completion_tokens,
                           "error": next((t.error for t in trials if t.error), None)}
    if len(trials) > 1:
        out["samples"] = [t.score for t in trials]
        out["spread"] = spread(scores)
    return out


def spread(scores: list[float]) -> dict:
    """min, max and standard deviation of the readable samples."""
    if not scores:
        return {"n": 0, "min": None, "max": None, "stdev": None}
    return {"n": len(scores), "min": min(scores), "max": max(scores),
            "stdev": statistics.stdev(scores) if len(scores) > 1 else 0.0}
