"""CSV cells a spreadsheet would run as formulas: neutralised on export, restored on import."""

from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _formula(text: str) -> bool:
    """Would run as a formula once any quotes in front are taken away."""
    return text.lstrip("'").startswith(FORMULA_STARTS)


def safe_cell(value: Any) -> Any:
    """Text a spreadsheet would run as a formula gets one more quote in front; numbers stay numbers."""
    if isinstance(value, str) and _formula(value):
        return "'" + value
    return value


def restore_cell(text: str) -> str:
    """The exact inverse of safe_cell: take back the one quote it added."""
    if text.startswith("'") and _formula(text):
        return text[1:]
    return text
