"""LLM judges: versioned prompt files, tolerant reply parsing, verdicts with pass/fail/unknown, claims."""

from evalcore.judges.claims import NO_CLAIM, VERDICTS, Claim, faithfulness
from evalcore.judges.local import LOCAL_JUDGE_NOTE
from evalcore.judges.parsing import PARSER_VERSION, Reading, parse_reply
from evalcore.judges.prompts import (
    ALIASES,
    DEFAULT_THRESHOLD,
    JUDGES,
    JudgePrompt,
    Passage,
    build_messages,
    builtin_text,
    canonical,
    context_chars,
    custom_prompt,
    format_context,
    load_prompt,
    preview_messages,
    prompt_problems,
    signature,
    signature_of,
    text_hash,
)
from evalcore.judges.rubrics import RUBRIC, Rubric, parse_rubric, rubric_problems, rubric_prompt, rubric_text
from evalcore.judges.running import MAX_TOKENS, JudgeSettings, Trial, run_judge
from evalcore.judges.verdict import FIELD_NAMES, Spread, Verdict, flat_fields

__all__ = [
    "ALIASES",
    "DEFAULT_THRESHOLD",
    "FIELD_NAMES",
    "JUDGES",
    "LOCAL_JUDGE_NOTE",
    "MAX_TOKENS",
    "NO_CLAIM",
    "PARSER_VERSION",
    "RUBRIC",
    "VERDICTS",
    "Claim",
    "JudgePrompt",
    "JudgeSettings",
    "Passage",
    "Reading",
    "Rubric",
    "Spread",
    "Trial",
    "Verdict",
    "build_messages",
    "builtin_text",
    "canonical",
    "context_chars",
    "custom_prompt",
    "faithfulness",
    "flat_fields",
    "format_context",
    "load_prompt",
    "parse_reply",
    "parse_rubric",
    "preview_messages",
    "prompt_problems",
    "rubric_problems",
    "rubric_prompt",
    "rubric_text",
    "run_judge",
    "signature",
    "signature_of",
    "text_hash",
]
