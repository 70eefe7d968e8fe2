"""The table of every measure in docs/measures.md, written from the declarations (a test keeps the two equal).

`python -m evalcore.metrics.reference docs/measures.md` rewrites the table between its markers.
"""

from __future__ import annotations

import sys
from pathlib import Path

from evalcore.errors import EvalError
from evalcore.metrics.measure import PANELS, SCALES
from evalcore.metrics.registry import BUILT_IN

START, END = "<!-- measures:start -->\n", "<!-- measures:end -->"
HEADER = ("| measure | panel | better | values | needs | signature | formula and reference | checked against |\n"
          "|---|---|---|---|---|---|---|---|\n")


def _cell(text: str) -> str:
    """Text a table cell shows as written: one line, a bar would end the cell, a star start emphasis."""
    return " ".join(text.split()).replace("|", "\\|").replace("*", "\\*")


def measure_table() -> str:
    """One row per built-in measure, in display order (an operator's measures in Python are theirs to document)."""
    panels, scales = dict(PANELS), dict(SCALES)
    rows = [
        f"| `{m.name}` | {panels[m.family]} | {'higher' if m.higher_is_better else 'lower'} | "
        f"{'pass/fail (1/0)' if m.binary else scales[m.scale]} | {', '.join(m.needs) or '-'} | "
        f"`{_cell(m.signature.rsplit('|version:', 1)[0])}` | {_cell(m.doc)} | {_cell(m.checked) or '-'} |\n"
        for m in BUILT_IN.values()
    ]
    return HEADER + "".join(rows)


def filled(text: str, where: str = "docs/measures.md") -> str:
    """`text` with the table between its markers written anew; EvalError when the markers are missing."""
    if START not in text or END not in text:
        raise EvalError("the measures table has no markers", where=where, expected=f"{START.strip()} ... {END}")
    head, rest = text.split(START, 1)
    return head + START + measure_table() + END + rest.split(END, 1)[1]


def main(argv: list[str]) -> int:
    """Rewrite the table of each markdown file named."""
    for name in argv:
        path = Path(name)
        path.write_text(filled(path.read_text(encoding="utf-8"), name), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
