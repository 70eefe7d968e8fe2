"""What every CSV export must satisfy: one record per row for any reader, no line that starts like a formula."""

from __future__ import annotations

import csv
import io
import re

import pandas as pd

from evalcore.formats.csvcells import FORMULA_STARTS


def unprotected_lines(text: str) -> list[str]:
    """Lines of a text (split at \\r\\n, \\r or \\n) that a spreadsheet or a line reader would run as formulas."""
    return [line for line in re.split(r"\r\n|\r|\n", text) if line.lstrip('"').startswith(FORMULA_STARTS)]


def assert_safe_csv(text: str, records: int, delimiter: str = ",") -> list[list[str]]:
    """`records` data records for Python's csv module and for pandas; no cell or line starts like a formula."""
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    assert len(rows) == records + 1
    frame = pd.read_csv(io.StringIO(text, newline=""), sep=delimiter, dtype=str, keep_default_na=False)
    assert len(frame) == records
    assert [cell for row in rows for cell in row if unprotected_lines(cell)] == []
    assert unprotected_lines(text) == []
    return rows
