"""What is taken out of users' texts before a trace is stored: e-mail addresses, phone numbers and card numbers by
default, and the patterns the operator sets for a tenant. Each match is replaced by its pattern's name in brackets
(`[email]`), so a judge still reads that something was there."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evalcore.errors import EvalError

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# 13 to 19 digits, optionally in groups split by spaces or dashes; kept only when the Luhn checksum holds.
CARD = re.compile(r"(?<![\w.])\d(?:[ -]?\d){12,18}(?![\w.])")
# An international number (+ and 8 to 15 digits), or 9 to 15 digits in groups split by spaces, dots or dashes
# (a date such as 2026-12-06 has 8 digits: not a phone number).
PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{2,4}){1,5}(?![\w])"
                   r"|(?<![\w+])\+\d{8,15}(?!\w)")
# A run of 8 characters or more of digits and the separators above: every card or phone number holds one. Texts
# without one (most passages) skip both patterns, which cost ten times this search.
NUMBER_RUN = re.compile(r"\d[\d .()/+-]{6,}\d")
IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
DEFAULT_NAMES = ("card", "email", "phone")


def luhn(digits: str) -> bool:
    """Whether a card number's check digit is right (the Luhn algorithm)."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        value = int(char) * (2 if i % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return "[card]" if luhn(digits) else match.group(0)


def _phone(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = sum(char.isdigit() for char in text)
    if IPV4.fullmatch(text):
        return text
    return "[phone]" if 8 <= digits <= 15 and (text.startswith("+") or digits >= 9) else text


@dataclass(frozen=True)
class Redactor:
    """The patterns a tenant's traces go through before they are stored, in order: the defaults, then the
    operator's."""

    defaults: bool = True
    patterns: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple((name, re.compile(text)) for name, text in self.patterns))

    def redact(self, text: str) -> tuple[str, bool]:
        """The text with every match replaced, and whether anything was."""
        before = text
        if self.defaults:
            if NUMBER_RUN.search(text):
                text = CARD.sub(_card, text)
            if "@" in text:
                text = EMAIL.sub("[email]", text)
            if NUMBER_RUN.search(text):
                text = PHONE.sub(_phone, text)
        for name, pattern in self._compiled:  # type: ignore[attr-defined]
            text = pattern.sub(f"[{name}]", text)
        return text, text != before


def check_patterns(pairs: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Operator patterns, each a name and a regular expression; EvalError naming the first that cannot be used."""
    checked: list[tuple[str, str]] = []
    for name, text in pairs:
        where = f"redaction pattern {name!r}"
        if not NAME.match(name) or name in DEFAULT_NAMES:
            raise EvalError("a pattern's name is 1-32 lower-case letters, digits, '_' or '-' (not card, email or "
                            "phone, which are built in)", where=where)
        try:
            compiled = re.compile(text)
        except re.error as error:
            raise EvalError(f"not a regular expression ({error})", where=where, found=text[:80]) from None
        if compiled.search(""):
            raise EvalError("the pattern matches empty text, so it would match everywhere", where=where,
                            found=text[:80], fix="make it match at least one character")
        checked.append((name, text))
    return tuple(checked)


def parse_pattern(spec: str) -> tuple[str, str]:
    """NAME=REGEX (a command line's --redact)."""
    name, sep, text = spec.partition("=")
    if not sep or not text:
        raise EvalError("expected NAME=REGEX", where="--redact", found=spec[:80])
    return name.strip(), text


def redactor(defaults: bool, patterns: Sequence[tuple[str, str]]) -> Redactor:
    """A redactor with the patterns checked."""
    return Redactor(defaults, check_patterns(patterns))
