"""Reading a judge's reply: JSON (fenced or not), a Python dict, tags, then a narrow prose rule."""

from __future__ import annotations

import ast
import json
import re
from typing import Any, NamedTuple

from evalcore.judges.claim import Claim

# The reply parser is part of a verdict: a change to what it accepts is a new version.
PARSER_VERSION = 3

# Reasoning models may think aloud first: only what follows the thinking is the verdict.
THINKING = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|$)", re.DOTALL | re.IGNORECASE)
FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
SCORE_TAG = re.compile(r"<score>\s*(-?\d+(?:[.,]\d+)?)\s*</score>", re.IGNORECASE)
LABEL_TAG = re.compile(r"<label>\s*([A-Za-z ]+?)\s*</label>", re.IGNORECASE)
REASON_TAG = re.compile(r"<(?:reason|explanation)>(.*?)</(?:reason|explanation)>", re.IGNORECASE | re.DOTALL)
# Prose, in order of evidence: a number after a rating word ("Score: 4"), a number on the 5-point
# scale ("4.5/5", "4 out of 5", "note : 4,5/5"), a 1-5 right after a verb of rating ("I'd give it a
# 4"), a reply that is a 1-5 or opens with one ("4 - accurate"). A reply states its score; any other
# number may be the judged answer echoed back, and reading it would be a silent verdict: a numbered
# list ("1. 128 devices"), a version ("v2", "3.11"), a date ("3 May 2024", "2024-05-03", "3/5/2024"),
# a quantity (a number before a word or a unit: "5 clients", "30 days", "4%") is no score. The
# scale's own bounds ("on a scale of 1 to 5") are not a score; a number on another scale ("7/10") is none.
NUMBER = r"(-?\d+(?:[.,]\d+)?)"
SCALE_BOUNDS = re.compile(r"\b(?:from|of|between)?\s*\(?1\s*(?:-|–|to|and|à)\s*5\b\)?", re.IGNORECASE)
MONTH = (r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|janv|févr|fév|avr|mai|juin|juil|août|déc)"
         r"[a-zéû]*\.?")
# Numbers that are no score wherever they stand: dates, versions, the markers of a numbered list (blanked first).
NOT_SCORES = re.compile(
    rf"\b\d{{1,4}}(?P<sep>[-/.])\d{{1,2}}(?P=sep)\d{{1,4}}\b"                # 2024-05-03, 3/5/2024, 03.05.24
    rf"|\b\d{{1,2}}(?:st|nd|rd|th|er)?[ \t]+{MONTH}(?:[ \t]+\d{{2,4}})?"      # 3 May 2024, 1er mai
    rf"|\b{MONTH}[ \t]+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?[ \t]+\d{{4}})?"     # May 3, 2024
    r"|\b(?:v|version[ \t]*)\d+(?:\.\d+)*\b|\b\d+(?:\.\d+){2,}\b"          # v2, version 3, 1.2.3
    r"|^[ \t]*\(?\d{1,2}[.)](?=[ \t]+\S)",                                 # 1. item, 2) item
    re.IGNORECASE | re.MULTILINE)
# After a number: a word that says it counts something ("5 clients") rather than scores ("4 because ...").
QUANTITY = (r"(?![ \t]*%|[ \t]+(?!(?:out|of|on|sur|because|since|as|for|and|but|so|with|overall|points?|stars?)\b)"
            r"[^\W\d_])")
NAMED_NUMBER = re.compile(rf"\b(?:score|rating|grade)\b\W{{0,3}}?(?:is\W{{0,2}}?|of\W{{0,2}}?)?{NUMBER}"
                          rf"(?:\s*(?:/|out\s+of|sur)\s*(\d+))?{QUANTITY}", re.IGNORECASE)
OUT_OF_FIVE = re.compile(rf"(?<![\w.,/]){NUMBER}\s*(?:/|out\s+of|sur)\s*5(?!\d|[.,]\d)", re.IGNORECASE)
FRACTION = re.compile(rf"{NUMBER}\s*(?:/|out\s+of|sur)\s*\d+", re.IGNORECASE)
GIVEN_DIGIT = re.compile(r"\b(?:give|gave|giving|rate|rated|assign|assigned|award|awarded|overall|verdict)\b"
                         rf"[^.\d\n]{{0,20}}?(?<![\w.,/-])([1-5])(?!\w|[.,]\d){QUANTITY}", re.IGNORECASE)
LEADING_DIGIT = re.compile(r"^[\W_]*([1-5])(?!\w|[.,]\d|[ \t]*%)(?![ \t]+[^\W\d_])")
# A label in prose: the reply opens with it, or it follows a verdict word ("Label: fail", "the answer
# passes"); a "pass" or "fail" elsewhere may be the judged text echoed back ("failed login attempts").
LABEL_WORD = re.compile(r"(?:^[\W_]*|\b(?:label|verdict|result|answer|response)\b\W{0,3}(?:is\W{0,2})?)"
                        r"(pass|fail)(?:ed|es|s)?\b", re.IGNORECASE)
# A reply whose reason is an object copies the verdict's JSON schema back ("reason": {"type": "string", ...}), and
# the score beside it is the schema's, not a verdict: small models do so when the schema is in their prompt.
SCHEMA_ECHO = re.compile(r"[\"']reason[\"']\s*:\s*\{")
SCORE_KEYS = ("score", "rating", "grade")
LABEL_KEYS = ("label", "result", "verdict", "grounded")
REASON_KEYS = ("reason", "explanation", "rationale", "justification")
TRUE_WORDS = {"pass", "passed", "true", "yes", "grounded"}
FALSE_WORDS = {"fail", "failed", "false", "no", "ungrounded", "not grounded"}


class Reading(NamedTuple):
    """A parsed reply: the score (1-5, 1.0/0.0 for a label, a share of supported claims) and the judge's reason.

    `claims` only for the claims judge; its score is None when the answer makes no claim.
    """

    score: float | None
    reason: str
    claims: tuple[Claim, ...] | None = None


def json_objects(text: str) -> list[dict[str, Any]]:
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


def python_dicts(text: str) -> list[dict[str, Any]]:
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


def first_key(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
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


def reason_from(text: str, obj: dict[str, Any] | None = None) -> str:
    """The judge's explanation: the JSON reason, a <reason> tag, else the reply itself (shortened)."""
    given = first_key(obj, REASON_KEYS) if obj is not None else None
    if isinstance(given, str):
        return given.strip()
    tag = REASON_TAG.search(text)
    flat = " ".join((tag.group(1) if tag else FENCE.sub("", text)).split()) or "(the judge gave no reason)"
    return flat if len(flat) <= 400 else flat[:399] + "…"


def as_position(value: Any, labels: tuple[str, ...]) -> float | None:
    """The position (1 = worst) of a label of a rubric's scale, case and spacing ignored; None when not one."""
    word = " ".join(str(value).strip().lower().split())
    return float(labels.index(word) + 1) if word in labels else None


def parse_reply(text: str, output: str = "likert", labels: tuple[str, ...] = ()) -> Reading | None:
    """Read a judge reply: JSON (fenced or not), then tags, then prose; None when unreadable.

    `labels` (output "labels") is a rubric's scale from worst to best: the reading is the label's position.
    """
    text = THINKING.sub("", text)
    if SCHEMA_ECHO.search(text):
        return None
    if output == "labels":
        return parse_labels(text, labels)
    keys, convert = (SCORE_KEYS, as_score) if output == "likert" else (LABEL_KEYS + SCORE_KEYS, as_label)
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
    text = SCALE_BOUNDS.sub(" ", NOT_SCORES.sub(" ", text))
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


def parse_labels(text: str, labels: tuple[str, ...]) -> Reading | None:
    """A rubric's label: from JSON, a <label> tag, else exactly one label opening the reply or after a verdict word."""
    for obj in json_objects(text):
        if first_key(obj, LABEL_KEYS) is not None:
            value = as_position(first_key(obj, LABEL_KEYS), labels)
            return Reading(value, reason_from(text, obj)) if value is not None else None
    tag = LABEL_TAG.search(text)
    if tag:
        value = as_position(tag.group(1), labels)
        return Reading(value, reason_from(text)) if value is not None else None
    words = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    said = re.compile(rf"(?:^[\W_]*|\b(?:label|verdict|result)\b\W{{0,3}}(?:is\W{{0,2}})?)({words})\b", re.IGNORECASE)
    found = {" ".join(m.group(1).lower().split()) for m in said.finditer(text)}
    return Reading(float(labels.index(found.pop()) + 1), reason_from(text)) if len(found) == 1 else None
