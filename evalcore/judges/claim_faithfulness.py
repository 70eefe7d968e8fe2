"""Claim-level faithfulness: the answer split into claims, each checked against the passages the answer used.

Faithfulness = supported claims / claims (Es et al. 2023, RAGAS: "faithfulness"; the claims and their
verdicts are asked in one structured reply here). An answer that makes no claim (a refusal) has no
faithfulness: it is marked, never scored 0 or 1. A reply naming a verdict off the list, a passage the
judge was not given, or a supported or contradicted claim without its passage is unreadable, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalcore.judges.claim import CONTRADICTED, NOT_FOUND, SUPPORTED, VERDICTS, Claim
from evalcore.judges.parsing import THINKING, Reading, json_objects

ALL_SUPPORTED = 1.0  # the claims judge's default pass mark: every claim supported
MAX_CLAIMS = 10  # a grammar-bound model writes at most this many (a small one could list forever)
CLAIM_CHARS = 200
MAX_TOKENS = 1200  # a list of claims is longer than a one-sentence verdict
RETRY_MESSAGE = ('Your reply could not be read. Reply again with only the JSON object, for example {"claims": '
                 '[{"claim": "Refunds are accepted within 30 days.", "verdict": "supported", "passage": 1}]}')


def reply_schema() -> dict[str, Any]:
    """The JSON schema of a claims reply: a bounded list of claims, each with its verdict and passage (0: none)."""
    claim = {"type": "object", "additionalProperties": False, "required": ["claim", "verdict", "passage"],
             "properties": {"claim": {"type": "string", "maxLength": CLAIM_CHARS},
                            "verdict": {"type": "string", "enum": list(VERDICTS)},
                            "passage": {"type": "integer", "minimum": 0}}}
    return {"type": "object", "additionalProperties": False, "required": ["claims"],
            "properties": {"claims": {"type": "array", "items": claim, "maxItems": MAX_CLAIMS}}}


def faithfulness(claims: Sequence[Claim]) -> float | None:
    """Supported claims / claims; None when there is no claim."""
    return sum(c.verdict == SUPPORTED for c in claims) / len(claims) if claims else None


def summary(claims: Sequence[Claim]) -> str:
    """A verdict's reason: how many claims were supported, contradicted and not found."""
    if not claims:
        return "the answer makes no claim"
    counts = {word: sum(c.verdict == word for c in claims) for word in VERDICTS}
    others = "".join(f", {counts[word]} {word}" for word in (CONTRADICTED, NOT_FOUND) if counts[word])
    return f"{counts[SUPPORTED]} of {len(claims)} claims supported{others}"


def claims_text(claims: Sequence[Claim]) -> str:
    """Claims on one line, each with its verdict and passage: `supported [1: 10] Refunds... | not found: Free...`."""
    return " | ".join(f"{c.verdict}{evidence(c)}{c.claim}" for c in claims) or "(no claim)"


def evidence(claim: Claim) -> str:
    """A claim's passage as shown after its verdict: ` [rank: id] `, ` [rank] ` without an id, `: ` for none."""
    if claim.passage is None:
        return ": "
    return f" [{claim.passage}: {claim.passage_id}] " if claim.passage_id else f" [{claim.passage}] "


def parse_claims(text: str, passage_ids: Sequence[str]) -> Reading | None:
    """Read a claims reply given the ids of the passages the judge saw, in order; None when it is malformed."""
    for obj in json_objects(THINKING.sub("", text)):
        if "claims" in obj:
            items = obj["claims"]
            claims = [read_claim(item, passage_ids) for item in items] if isinstance(items, list) else [None]
            if any(claim is None for claim in claims):
                return None
            read = tuple(claim for claim in claims if claim is not None)
            return Reading(faithfulness(read), summary(read), read)
    return None


def read_claim(item: Any, passage_ids: Sequence[str]) -> Claim | None:
    """One claim of a reply; None when its text, verdict or passage cannot be read."""
    if not isinstance(item, dict):
        return None
    fields = {str(key).strip().lower(): value for key, value in item.items()}
    text, word = fields.get("claim"), " ".join(str(fields.get("verdict", "")).lower().replace("_", " ").split())
    rank = passage_rank(fields.get("passage"))
    if not isinstance(text, str) or not text.strip() or word not in VERDICTS or rank is None:
        return None
    if word == NOT_FOUND:
        return Claim(" ".join(text.split()), word)
    if not 1 <= rank <= len(passage_ids):  # the evidence of a verdict must be a passage the judge was given
        return None
    return Claim(" ".join(text.split()), word, rank, passage_ids[rank - 1])


def passage_rank(value: Any) -> int | None:
    """A passage number as given (an integer, or digits in a string; null is 0); None when it is not one."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().strip("[]").isdigit():
        return int(value.strip().strip("[]"))
    return None
