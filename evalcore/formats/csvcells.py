"""CSV a spreadsheet opens safely: the one writer of every export, formula cells neutralised, restored on import.

A spreadsheet runs a cell that starts with `=`, `+`, `-`, `@`, tab or carriage return as a
formula. So does a line-based reader for a line that starts that way inside a quoted, multi-line
cell, so every line of a cell is treated like the start of one: a `'` goes in front. A cell that
already starts with quotes before such a character gets one more, so that `restore_cell` can
always take back exactly the quote that was added.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# The start of the cell and of every line in it (after \r\n, \n or a lone \r), then any quotes,
# then a formula character.
_LINE_START = r"(?:^|(?<=\n)|(?<=\r)(?!\n))"
_FORMULA_AHEAD = "(?='*[" + re.escape("".join(FORMULA_STARTS)) + "])"
_UNSAFE = re.compile(_LINE_START + _FORMULA_AHEAD)
_ADDED = re.compile(_LINE_START + "'" + _FORMULA_AHEAD)


def safe_cell(value: Any) -> Any:
    """Text whose start, or any line's start, a spreadsheet would run as a formula gets a `'` there; numbers stay
    numbers."""
    if isinstance(value, str):
        return _UNSAFE.sub("'", value)
    return value


def restore_cell(text: str) -> str:
    """The exact inverse of safe_cell: take back each quote it added."""
    return _ADDED.sub("", text)


def csv_text(rows: Iterable[Sequence[Any]], *, delimiter: str = ",") -> str:
    """CSV records (RFC 4180: CRLF after each) of neutralised cells; None and NaN are empty cells."""
    out = io.StringIO()
    # The csv module quotes a cell holding any character of the line terminator: with CRLF that
    # is every \r and \n. With "\n" alone a lone \r went out bare, and readers took it for the
    # end of a record (so the rest of the cell became a record of its own, unprotected).
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\r\n")
    writer.writerows([safe_cell(_plain(value)) for value in row] for row in rows)
    return out.getvalue()


def _plain(value: Any) -> Any:
    """A value as csv writes it best: missing is empty, a float subclass (numpy) is a plain float."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return float(value) if isinstance(value, float) else value
