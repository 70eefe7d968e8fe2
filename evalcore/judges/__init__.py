"""LLM judges: versioned prompt files, tolerant reply parsing, verdicts with pass/fail/unknown."""

from evalcore.judges.parsing import PARSER_VERSION, Reading, parse_reply
from evalcore.judges.prompts import (
    ALIASES,
    CONTEXT_CHARS,
    DEFAULT_THRESHOLD,
    JUDGES,
    JudgePrompt,
    build_messages,
    canonical,
    format_context,
    load_prompt,
    signature,
)
from evalcore.judges.running import MAX_TOKENS, JudgeSettings, Trial, run_judge
from evalcore.judges.verdict import FIELD_NAMES, JudgeResult, Spread, Verdict, flat_fields

__all__ = [
    "ALIASES",
    "CONTEXT_CHARS",
    "DEFAULT_THRESHOLD",
    "FIELD_NAMES",
    "JUDGES",
    "MAX_TOKENS",
    "PARSER_VERSION",
    "JudgePrompt",
    "JudgeResult",
    "JudgeSettings",
    "Reading",
    "Spread",
    "Trial",
    "Verdict",
    "build_messages",
    "canonical",
    "flat_fields",
    "format_context",
    "load_prompt",
    "parse_reply",
    "run_judge",
    "signature",
]
