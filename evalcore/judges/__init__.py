"""LLM judges: versioned prompt files, tolerant reply parsing, verdicts with pass/fail/unknown, claims."""

from typing import TYPE_CHECKING

from evalcore.runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.judges.claim import VERDICTS, Claim
    from evalcore.judges.claim_faithfulness import faithfulness
    from evalcore.judges.local_judges import LOCAL_CLAIMS_NOTE, LOCAL_JUDGE_NOTE, LOCAL_PAIRWISE_NOTE, local_notes
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
    from evalcore.judges.verdict import FIELD_NAMES, JudgeResult, Spread, Verdict, flat_fields

__all__ = [
    "ALIASES",
    "DEFAULT_THRESHOLD",
    "FIELD_NAMES",
    "JUDGES",
    "LOCAL_CLAIMS_NOTE",
    "LOCAL_JUDGE_NOTE",
    "LOCAL_PAIRWISE_NOTE",
    "MAX_TOKENS",
    "PARSER_VERSION",
    "RUBRIC",
    "VERDICTS",
    "Claim",
    "JudgePrompt",
    "JudgeResult",
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
    "local_notes",
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
# Imported on first use: a light module of this package does not load its heavy siblings (evalcore.runtime.lazy).
__getattr__ = lazy_exports(__name__, {
    "claim": ("VERDICTS", "Claim"),
    "claim_faithfulness": ("faithfulness",),
    "local_judges": ("LOCAL_CLAIMS_NOTE", "LOCAL_JUDGE_NOTE", "LOCAL_PAIRWISE_NOTE", "local_notes"),
    "parsing": ("PARSER_VERSION", "Reading", "parse_reply"),
    "prompts": (
        "ALIASES", "DEFAULT_THRESHOLD", "JUDGES", "JudgePrompt", "Passage", "build_messages", "builtin_text",
        "canonical", "context_chars", "custom_prompt", "format_context", "load_prompt", "preview_messages",
        "prompt_problems", "signature", "signature_of", "text_hash",
    ),
    "rubrics": ("RUBRIC", "Rubric", "parse_rubric", "rubric_problems", "rubric_prompt", "rubric_text"),
    "running": ("MAX_TOKENS", "JudgeSettings", "Trial", "run_judge"),
    "verdict": ("FIELD_NAMES", "JudgeResult", "Spread", "Verdict", "flat_fields"),
})
