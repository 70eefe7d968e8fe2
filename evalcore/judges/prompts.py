"""Judge prompts: one versioned file per judge (`templates/<name>.txt`), its hash, and the messages it makes."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from evalcore.errors import EvalError
from evalcore.judges.claim_faithfulness import reply_schema as claims_schema
from evalcore.judges.parsing import PARSER_VERSION
from evalcore.judges.scale import PASS_MARK
from evalcore.runtime.lazy import once

JUDGES = ("score", "retrieval", "groundedness", "groundedness_pro", "relevance", "completeness", "refusal", "claims")
ALIASES = {"response_completeness": "completeness", "ai_score": "score"}
PROMPT_DIR = Path(__file__).with_name("templates")
DEFAULT_THRESHOLD = PASS_MARK
REASON_CHARS = 200  # a one-sentence reason; with judge_max_tokens >= 230 a grammar-bound reply always closes
CUT_REASON = "the judge model's context window is too small"
PLACEHOLDERS = ("question", "answer", "context", "expected")
SYSTEM_MARK, USER_MARK = "[system]\n", "[user]\n"
SHAPE = "the shape of the files in evalcore/judges/templates"
CUSTOM = "custom"  # the prompt version of a prompt given in a campaign's configuration


@dataclass(frozen=True)
class JudgePrompt:
    """One judge's prompt file: metadata, system and user templates, and its content hash."""

    name: str
    version: str
    output: str  # "likert" (1-5), "label" (pass/fail), "labels" (a rubric's own scale) or "claims" (a list of claims)
    requires: tuple[str, ...]
    system: str
    user: str
    hash: str
    labels: tuple[str, ...] = ()  # "labels": the scale from worst to best (a verdict's score is its position)


def canonical(name: str) -> str:
    """The judge's canonical name (accepts `judge.` prefixes and the aliases of other evaluator suites)."""
    short = name.removeprefix("judge.")
    short = ALIASES.get(short, short)
    if short not in JUDGES:
        raise EvalError(f"unknown judge {name!r}", expected=", ".join(JUDGES), found=name)
    return short


@once
def load_prompt(name: str) -> JudgePrompt:
    """Read evalcore/judges/templates/<name>.txt (`# key: value` lines, then [system] and [user])."""
    name = canonical(name)
    text = (PROMPT_DIR / f"{name}.txt").read_text(encoding="utf-8").replace("\r\n", "\n")
    meta = meta_lines(text)
    system, user = sections(text)
    return JudgePrompt(name=name, version=meta["version"], output=meta["output"],
                       requires=tuple(k.strip() for k in meta["requires"].split(",")),
                       system=system, user=user, hash=text_hash(text))


def meta_lines(text: str) -> dict[str, str]:
    """The `# key: value` lines of a prompt or rubric text (keys in lower case, values trimmed)."""
    return {key.lower(): value.strip() for key, value in re.findall(r"^# (\w+): (.*)$", text, re.MULTILINE)}


def sections(text: str) -> tuple[str, str]:
    """The [system] and [user] parts of a prompt text (empty when a marker is missing)."""
    if SYSTEM_MARK not in text or USER_MARK not in text:
        return "", ""
    system = text.split(SYSTEM_MARK, 1)[1].split(USER_MARK, 1)[0].strip()
    return system, text.split(USER_MARK, 1)[1].strip()


def text_hash(text: str) -> str:
    """The first 16 hex digits of the sha256 of a prompt's whole text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def placeholders(text: str) -> set[str]:
    """The `{name}` placeholders a prompt text uses (JSON examples such as `{"score": 3}` are not)."""
    return set(re.findall(r"\{(\w+)\}", text))


def prompt_problems(name: str, text: str) -> list[str]:
    """Why a text cannot replace a judge's prompt: its sections, its placeholders, its scale; empty when it can."""
    builtin = load_prompt(name)
    text = text.replace("\r\n", "\n")
    user = sections(text)[1]
    if not user:
        return [f"expected a [system] line, the instructions, a [user] line and the message ({SHAPE})"]
    used = placeholders(user)
    problems = [f"unknown placeholder {{{p}}} (allowed: {', '.join('{' + a + '}' for a in PLACEHOLDERS)})"
                for p in sorted(used - set(PLACEHOLDERS))]
    problems += [f"missing placeholder {{{p}}}: the {builtin.name} judge reads it"
                 for p in PLACEHOLDERS if p in placeholders(builtin.user) and p not in used]
    output = meta_lines(text).get("output", builtin.output)
    if output != builtin.output:
        problems.append(f"# output: {output} differs from the {builtin.name} judge's scale ({builtin.output})")
    return problems


def custom_prompt(name: str, text: str, *, where: str) -> JudgePrompt:
    """A text replacing a built-in judge's prompt: checked, the judge's scale and inputs kept, its own hash."""
    builtin = load_prompt(name)
    problems = prompt_problems(builtin.name, text)
    if problems:
        raise EvalError(f"invalid prompt for the {builtin.name} judge", where=where,
                        problems=[f"{where}: {problem}" for problem in problems])
    system, user = sections(text.replace("\r\n", "\n"))
    return JudgePrompt(name=builtin.name, version=CUSTOM, output=builtin.output, requires=builtin.requires,
                       system=system, user=user, hash=text_hash(text.replace("\r\n", "\n")))


def signature_of(prompt: JudgePrompt) -> str:
    """A judge measure's signature: name, prompt version and hash, output kind, parser version."""
    version = f"v{prompt.version}" if prompt.version.isdigit() else prompt.version  # custom, rubric
    return (f"judge.{prompt.name}|prompt:{version}"
            f"|hash:{prompt.hash}|output:{prompt.output}|parser:v{PARSER_VERSION}")


def signature(name: str) -> str:
    """The signature of a built-in judge with its own prompt."""
    return signature_of(load_prompt(name))


class Passage(NamedTuple):
    """A passage as the answer's prompt had it: its whole text, its title if any, and its id ("" if none)."""

    text: str
    title: str | None = None
    id: str = ""


def context_chars(context: Sequence[Passage | str]) -> int:
    """Characters of passage text a judge is given when nothing is cut."""
    return sum(len(as_passage(p).text.strip()) for p in context)


def as_passage(item: Passage | str) -> Passage:
    """A bare text is a passage without a title."""
    return item if isinstance(item, Passage) else Passage(item)


def format_context(context: Sequence[Passage | str], keep: int | None = None, answer: str = "") -> str:
    """Numbered passages with their titles, whole; with `keep`, that many characters of text in all (see `shares`),
    each cut said where it is, every passage still numbered under its title."""
    if not context:
        return "(no passage was retrieved)"
    passages = [as_passage(item) for item in context]
    texts = [passage.text.strip() for passage in passages]
    anchors = cited(texts, answer)
    budgets = shares([len(text) for text in texts], keep, set(anchors)) if keep is not None else None
    parts = []
    for number, (passage, text) in enumerate(zip(passages, texts, strict=True), start=1):
        if budgets is not None:
            text = excerpt(text, budgets[number - 1], anchors.get(number - 1))
        parts.append(f"[{number}] {passage.title}\n{text}" if passage.title else f"[{number}] {text}")
    return "\n\n".join(parts)


CITATION = re.compile(r"\[(\d{1,3})\]|\b(?:passage|source|document)\s+(\d{1,3})\b", re.IGNORECASE)
QUOTED = 24  # characters of an answer's sentence that, found word for word in a passage, say it was drawn from it


def cited(texts: Sequence[str], answer: str) -> dict[int, int]:
    """The passages (by position) the answer cites, each with where in its text the cited part starts: a number it
    names (`[4]`, "passage 4"; the part: its start), or a sentence of the answer found word for word in it."""
    found: dict[int, int] = {}
    for match in CITATION.finditer(answer or ""):
        position = int(match.group(1) or match.group(2)) - 1
        if 0 <= position < len(texts):
            found.setdefault(position, 0)
    folded = [" ".join(text.split()).casefold() for text in texts]
    for sentence in re.split(r"(?<=[.!?。！？])\s+|\n+", answer or ""):
        quoted = " ".join(CITATION.sub(" ", sentence).split()).casefold().strip(" .!?。！？")
        for position, text in enumerate(folded):
            at = text.find(quoted) if len(quoted) >= QUOTED else -1
            if at >= 0 and found.get(position, 0) == 0:
                found[position] = at
    return found


def shares(lengths: Sequence[int], keep: int, first: set[int]) -> list[int]:
    """How many characters of each passage a context of `keep` characters holds: the passages in `first` (those the
    answer cites) before the others, and within each group every passage shortened alike (the longest first, as water
    levels: a short passage stays whole) rather than the later ones dropped."""
    budgets = [0] * len(lengths)
    left = keep
    for group in ([i for i in range(len(lengths)) if i in first], [i for i in range(len(lengths)) if i not in first]):
        for i, size in level([lengths[i] for i in group], left).items():
            budgets[group[i]] = size
        left -= sum(budgets[i] for i in group)
    return budgets


def level(lengths: Sequence[int], budget: int) -> dict[int, int]:
    """Each length cut to one common level so that they add up to at most `budget` (shorter ones whole)."""
    given: dict[int, int] = {}
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for rank, i in enumerate(order):
        share = max(budget, 0) // (len(order) - rank)
        given[i] = min(lengths[i], share)
        budget -= given[i]
    return given


def excerpt(text: str, budget: int, anchor: int | None) -> str:
    """`budget` characters of a passage, from the part the answer cites (`anchor`) when it has one, else from its
    start; each cut marked where it is."""
    if budget >= len(text):
        return text
    start = max(0, min((anchor or 0) - budget // 4, len(text) - budget))
    marker = f"[cut: {CUT_REASON}]"
    return ((f"{marker} " if start else "") + text[start:start + budget].strip()
            + (f" {marker}" if start + budget < len(text) else "")).strip()


def format_references(references: Sequence[str]) -> str:
    """One reference answer as it is; several numbered, any of them being a correct answer."""
    if len(references) == 1:
        return references[0]
    listed = "\n".join(f"{number}. {text}" for number, text in enumerate(references, 1))
    return f"(each of these {len(references)} reference answers is correct)\n{listed}"


def reply_schema(prompt: JudgePrompt) -> dict[str, Any]:
    """The JSON schema of a verdict: a 1-5 score or a label (pass/fail, a rubric's own) and a reason; or claims."""
    if prompt.output == "claims":
        return claims_schema()
    if prompt.output == "likert":
        key, verdict = "score", {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    else:
        key, verdict = "label", {"type": "string", "enum": list(prompt.labels or ("pass", "fail"))}
    return {"type": "object", "additionalProperties": False, "required": [key, "reason"],
            "properties": {key: verdict, "reason": {"type": "string", "maxLength": REASON_CHARS}}}


def build_messages(prompt: JudgePrompt, *, question: str, answer: str, context: Sequence[Passage | str],
                   expected: str | Sequence[str] | None, keep: int | None = None) -> list[dict[str, Any]]:
    """System + user messages, filling {question} {answer} {context} {expected} in one pass.

    The context is given whole unless `keep` (characters of passage text) says the judge model cannot take it.
    """
    references = [expected] if isinstance(expected, str) else list(expected or ())
    values = {"question": question or "", "answer": answer or "",
              "expected": format_references([r for r in references if r.strip()]) if references else "",
              "context": format_context(context, keep, answer or "")}
    user = re.sub(r"\{(question|answer|context|expected)\}", lambda m: values[m.group(1)], prompt.user)
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": user}]


def builtin_text(name: str) -> str:
    """The whole text of a built-in judge's prompt file: where an own prompt starts from."""
    return (PROMPT_DIR / f"{load_prompt(name).name}.txt").read_text(encoding="utf-8").replace("\r\n", "\n")


def preview_messages(prompt: JudgePrompt, *, question: str, references: Sequence[str]) -> list[dict[str, Any]]:
    """The messages a judge would get on one question before any answer: the answer and passages named, not given."""
    return build_messages(prompt, question=question, answer="(the answer, once the target has given it)",
                          context=[Passage("(its text)", "(each passage the answer is built from, with its title)")],
                          expected=references)
