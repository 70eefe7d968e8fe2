"""A judge's verdict on one answer: score, reason, pass/fail/unknown, what it cost, and who judged."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evalcore.formats.shapes import Key, doc
from evalcore.judges.claim import Claim
from evalcore.judges.claim_faithfulness import claims_text
from evalcore.store import dumps


class JudgeResult(StrEnum):
    """What a judge (or a measure with a pass mark) made of an answer."""

    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"  # unreadable, failed, or nothing to measure
    SKIPPED = "skipped"  # needs a reference answer the question has not
    NO_CLAIM = "no_claim"  # the claims judge found no claim in the answer (a refusal): marked, not scored

    @property
    def passed(self) -> bool | None:
        """True for a pass, False for a fail, None when the judge decided neither."""
        return {JudgeResult.PASS: True, JudgeResult.FAIL: False}.get(self)


@dataclass(frozen=True)
class Spread:
    """How the readable samples of an n-times judgement spread."""

    n: int = field(metadata=doc("readable samples"))
    min: float | None = field(metadata=doc())
    max: float | None = field(metadata=doc())
    stdev: float | None = field(metadata=doc())

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"n": self.n, "min": self.min, "max": self.max, "stdev": self.stdev}


@dataclass(frozen=True)
class Verdict:
    """One judge on one answer; `score` is None (and `result` unknown) when no reading was possible."""

    judge: str = field(metadata=doc())
    model: str = field(metadata=doc())
    prompt_hash: str = field(metadata=doc())
    prompt_version: str = field(metadata=doc())
    signature: str = field(metadata=doc())
    threshold: float | None = field(metadata=doc("the pass mark on 1-5 (claims: a share of supported claims); null "
                                                 "for pass/fail judges"))
    score: float | None = field(metadata=doc())
    reason: str = field(metadata=doc())
    result: JudgeResult = field(metadata=doc("pass, fail, unknown (unreadable or failed), skipped (no reference "
                                             "answer), or no_claim (claims: the answer makes no claim, a refusal; "
                                             "not scored)"))
    prompt_tokens: int = field(default=0, metadata=doc())
    completion_tokens: int = field(default=0, metadata=doc())
    error: str | None = field(default=None, metadata=doc())
    samples: tuple[float | None, ...] | None = field(default=None, metadata=doc(
        "every sample's score when asked several times", optional=True))
    spread: Spread | None = field(default=None, metadata=doc("how the readable samples spread", optional=True))
    context_cut: str | None = field(default=None, metadata=doc(
        "how the context was cut to fit the judge model's context window; null when the judge saw it whole"))
    label: str | None = field(default=None, metadata=doc("a rubric's label on its own scale (its position is the "
                                                         "score)"))
    claims: tuple[Claim, ...] | None = field(default=None, metadata=doc(
        "the claims judge: each claim of the answer with its verdict and passage (score = supported / claims); "
        "null for other judges"))
    cached_prompt_tokens: int = field(default=0, metadata=doc(
        "of the prompt tokens, those the provider read from its prompt cache (priced at the cached-input price)"))

    JSON_EXTRA = (Key("tokens", int, "prompt and completion tokens of every call this verdict took"),)

    def __post_init__(self) -> None:
        if not isinstance(self.result, JudgeResult):  # a verdict built in code with the result's word
            object.__setattr__(self, "result", JudgeResult(self.result))

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens of every call this verdict took."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (samples and spread only for n-times judgements)."""
        data: dict[str, Any] = {
            "judge": self.judge, "model": self.model, "prompt_hash": self.prompt_hash,
            "prompt_version": self.prompt_version, "signature": self.signature, "threshold": self.threshold,
            "score": self.score, "reason": self.reason, "result": str(self.result), "tokens": self.tokens,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "error": self.error,
            "context_cut": self.context_cut, "label": self.label,
            "claims": None if self.claims is None else [claim.to_dict() for claim in self.claims],
            "cached_prompt_tokens": self.cached_prompt_tokens,
        }
        if self.samples is not None:
            data["samples"] = list(self.samples)
            data["spread"] = self.spread.to_dict() if self.spread else None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """From the stored JSON."""
        spread, samples, claims = data.get("spread"), data.get("samples"), data.get("claims")
        return cls(
            judge=data.get("judge", ""), model=data.get("model", ""), prompt_hash=data.get("prompt_hash", ""),
            prompt_version=data.get("prompt_version", ""), signature=data.get("signature", ""),
            threshold=data.get("threshold"), score=data.get("score"), reason=data.get("reason", ""),
            result=JudgeResult(data.get("result", "unknown")), prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0), error=data.get("error"),
            samples=tuple(samples) if samples is not None else None,
            spread=Spread(**spread) if isinstance(spread, Mapping) else None, context_cut=data.get("context_cut"),
            label=data.get("label"), claims=None if claims is None else tuple(Claim.from_dict(c) for c in claims),
            cached_prompt_tokens=int(data.get("cached_prompt_tokens") or 0),
        )


class StoredVerdicts(Mapping[str, Verdict]):
    """Verdicts by judge kept as the JSON text they were stored as, read on first use.

    A kept comparison of 10,000 questions holds tens of thousands of verdicts, and reading them all
    back cost more than the rest of the comparison; a face reads those of the questions it shows.
    The text is `{judge: Verdict.to_dict()}`, so `to_dict` gives it back without building a verdict.
    """

    __slots__ = ("_read", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._read: dict[str, Verdict] | None = None

    def read(self) -> dict[str, Verdict]:
        """The verdicts by judge (decoded once)."""
        if self._read is None:
            self._read = {name: Verdict.from_dict(v) for name, v in json.loads(self.text).items()}
        return self._read

    def __getitem__(self, judge: str) -> Verdict:
        return self.read()[judge]

    def __iter__(self) -> Iterator[str]:
        return iter(self.read())

    def __len__(self) -> int:
        return len(self.read())

    def __bool__(self) -> bool:   # asked of every question by to_dict: answered without decoding
        return self.text != "{}"

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON shape, as each verdict's to_dict gives it."""
        return dict(json.loads(self.text))


def verdicts_json(verdicts: Mapping[str, Verdict]) -> dict[str, Any]:
    """Verdicts by judge in their JSON shape (stored ones as stored, without decoding them)."""
    if isinstance(verdicts, StoredVerdicts):
        return verdicts.to_dict()
    return {name: verdict.to_dict() for name, verdict in verdicts.items()}


def verdicts_text(verdicts: Mapping[str, Verdict]) -> str:
    """Verdicts by judge as one JSON text (stored ones as their own text, without decoding them)."""
    if isinstance(verdicts, StoredVerdicts):
        return verdicts.text
    return dumps(verdicts_json(verdicts))


# The judges azure-ai-evaluation's evaluators document, by the name their output fields start with.
EVALUATOR_NAMES = {"retrieval": "retrieval", "groundedness": "groundedness", "relevance": "relevance",
                   "completeness": "response_completeness", "groundedness_pro": "groundedness_pro"}
GPT_PREFIXED = frozenset({"retrieval", "groundedness", "relevance"})  # also given as `gpt_<name>`
FIELD_NAMES = ("project", "evaluator")  # how flat judge fields are named: ours, or the evaluators' documented names


def flat_fields(judge: str, verdict: Verdict, names: str = "project") -> dict[str, object]:
    """One verdict as flat fields: `<name>`, `<name>_reason`, `<name>_result`, `<name>_threshold`, and for the
    claims judge `<name>_claims` (each claim with its verdict and passage, on one line).

    names="evaluator" gives a judge the evaluators document under their documented fields: a 1-5
    judge also as `gpt_<name>` (`gpt_retrieval`), completeness as `response_completeness*`, and
    the pass/fail groundedness_pro as `groundedness_pro_label` (true/false) and `groundedness_pro_reason`.
    """
    passed = verdict.result == JudgeResult.PASS if verdict.result in (JudgeResult.PASS, JudgeResult.FAIL) else None
    name = EVALUATOR_NAMES.get(judge, judge) if names == "evaluator" else judge
    if names == "evaluator" and judge == "groundedness_pro":
        return {f"{name}_label": passed, f"{name}_reason": verdict.reason}
    fields: dict[str, object] = {name: passed if verdict.threshold is None else verdict.score}
    if names == "evaluator" and judge in GPT_PREFIXED:
        fields[f"gpt_{name}"] = verdict.score
    fields |= {f"{name}_reason": verdict.reason, f"{name}_result": str(verdict.result),
               f"{name}_threshold": verdict.threshold}
    return fields if verdict.claims is None else fields | {f"{name}_claims": claims_text(verdict.claims)}
