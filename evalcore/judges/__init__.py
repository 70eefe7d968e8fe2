"""LLM judges: versioned prompt files, tolerant reply parsing, verdicts with pass/fail/unknown."""

from typing import TYPE_CHECKING

from evalcore.lazy import lazy_exports

if TYPE_CHECKING:
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
    from evalcore.judges.verdict import Spread, Verdict

__all__ = [
    "ALIASES",
    "CONTEXT_CHARS",
    "DEFAULT_THRESHOLD",
    "JUDGES",
    "MAX_TOKENS",
    "PARSER_VERSION",
    "JudgePrompt",
    "JudgeSettings",
    "Reading",
    "Spread",
    "Trial",
    "Verdict",
    "build_messages",
    "canonical",
    "format_context",
    "load_prompt",
    "parse_reply",
    "run_judge",
    "signature",
]
# Imported on first use: a light module of this package does not load its heavy siblings (evalcore.lazy).
__getattr__ = lazy_exports(__name__, {
    "parsing": ("PARSER_VERSION", "Reading", "parse_reply",),
    "prompts": ("ALIASES", "CONTEXT_CHARS", "DEFAULT_THRESHOLD", "JUDGES", "JudgePrompt", "build_messages", "canonical", "format_context", "load_prompt", "signature",),
    "running": ("MAX_TOKENS", "JudgeSettings", "Trial", "run_judge",),
    "verdict": ("Spread", "Verdict",),
})
