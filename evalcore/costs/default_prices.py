"""The default price table: list prices of widely used chat models, per million tokens, as their providers published
them on the date given (docs/costs.md names the pages). An operator's table replaces or extends it."""

from __future__ import annotations

# When these prices were read from the providers' pricing pages.
READ = "2025-06-01"

# model, input, output, cached input (None: the provider has no such price), currency
ROWS: tuple[tuple[str, float, float, float | None, str], ...] = (
    # OpenAI, https://openai.com/api/pricing
    ("gpt-4o", 2.50, 10.00, 1.25, "USD"),
    ("gpt-4o-mini", 0.15, 0.60, 0.075, "USD"),
    ("gpt-4.1", 2.00, 8.00, 0.50, "USD"),
    ("gpt-4.1-mini", 0.40, 1.60, 0.10, "USD"),
    ("gpt-4.1-nano", 0.10, 0.40, 0.025, "USD"),
    ("o3", 2.00, 8.00, 0.50, "USD"),
    ("o3-mini", 1.10, 4.40, 0.55, "USD"),
    ("o4-mini", 1.10, 4.40, 0.275, "USD"),
    ("gpt-3.5-turbo", 0.50, 1.50, None, "USD"),
    # Anthropic, https://www.anthropic.com/pricing (cached input: a cache read)
    ("claude-3-5-haiku-latest", 0.80, 4.00, 0.08, "USD"),
    ("claude-3-5-sonnet-latest", 3.00, 15.00, 0.30, "USD"),
    ("claude-3-7-sonnet-latest", 3.00, 15.00, 0.30, "USD"),
    ("claude-sonnet-4-0", 3.00, 15.00, 0.30, "USD"),
    ("claude-opus-4-0", 15.00, 75.00, 1.50, "USD"),
    # Google, https://ai.google.dev/gemini-api/docs/pricing (prompts up to 200k tokens)
    ("gemini-2.0-flash", 0.10, 0.40, 0.025, "USD"),
    ("gemini-2.5-flash", 0.30, 2.50, 0.075, "USD"),
    ("gemini-2.5-pro", 1.25, 10.00, 0.31, "USD"),
    # Mistral, https://mistral.ai/pricing
    ("mistral-large-latest", 2.00, 6.00, None, "USD"),
    ("mistral-small-latest", 0.10, 0.30, None, "USD"),
)
