"""What every request body shares: unknown fields refused, values nested at most MAX_DEPTH levels, and text
that is valid Unicode.

JSON may escape half of a UTF-16 surrogate pair (`"\\ud800"`); Python decodes it to a string that
UTF-8 cannot encode. Such text is refused here, naming the field, before any engine code sees it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic_core import PydanticCustomError

from evalcore.store import LONE_SURROGATE

MAX_DEPTH = 32  # lists and objects inside a field; a configuration needs three
TOO_DEEP = "too_deep"
TOO_DEEP_MESSAGE = f"nested deeper than {MAX_DEPTH} levels of lists and objects"
NOT_UNICODE = "lone_surrogate"
NOT_UNICODE_MESSAGE = ("not valid Unicode text: it holds a lone surrogate (an unpaired \\ud800-\\udfff escape), "
                       "which UTF-8 cannot encode")


def escaped(text: str) -> str:
    """Text safe to send back: a lone surrogate written as its escape (`\\ud800`)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def lone_surrogate_path(value: Any, path: str = "") -> str | None:
    """Where the first text (a value or a key) holding a lone surrogate is (`.key`, `[3]`), None if nowhere."""
    if isinstance(value, str):
        return path if LONE_SURROGATE.search(value) else None
    items: Any = ()
    if isinstance(value, dict):
        for key in value:
            if isinstance(key, str) and LONE_SURROGATE.search(key):
                return f"{path}.{escaped(key)}"
        items = ((f"{path}.{key}", item) for key, item in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    return next((found for where, item in items if (found := lone_surrogate_path(item, where)) is not None), None)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and objects nest more than `limit` levels inside `value` (level by level, no recursion)."""
    level = [value]
    for _ in range(limit + 1):
        level = [child for item in level
                 for child in (item.values() if isinstance(item, dict) else item if isinstance(item, (list, tuple))
                               else ())]
        if not level:
            return False
    return True


class RequestBody(BaseModel):
    """A request body: extra fields are refused and every text, however nested, must be valid Unicode."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:
        # After each field's own validation: nested request models have checked their own fields.
        if too_deep(value):  # before walking it: a deep value would exhaust the stack
            raise PydanticCustomError(TOO_DEEP, TOO_DEEP_MESSAGE)
        path = lone_surrogate_path(value)
        if path is not None:
            raise PydanticCustomError(NOT_UNICODE, NOT_UNICODE_MESSAGE, {"path": path})
        return value
