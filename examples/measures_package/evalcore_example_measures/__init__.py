"""Two measures in Python: whether an answer quotes a price, and how many retrieved passages it cites by title."""

from __future__ import annotations

import re

from evalcore.metrics.python_measures import Given, measure

_AMOUNT = r"\d+(?:[.,]\d+)?"
_PRICE = re.compile(rf"[€$£¥]\s*{_AMOUNT}|{_AMOUNT}\s*(?:€|\$|£|¥|euros?|dollars?|元)", re.IGNORECASE)


@measure("quotes_a_price", scale="pass-fail", version="1")
def quotes_a_price(given: Given) -> bool | None:
    """1 when the answer states an amount with its currency (`30 €`, `$12`, `12 euros`, `99元`), else 0."""
    if given.answer is None:
        return None
    return _PRICE.search(given.answer) is not None


@measure("titles_cited", scale="number", higher_is_better=True, version="1")
def titles_cited(given: Given) -> int | None:
    """How many of the retrieved passages' titles the answer names, case ignored; absent without passages."""
    if given.answer is None or not given.passages:
        return None
    answer = given.answer.casefold()
    return sum(1 for title in {p.title.casefold() for p in given.passages if p.title} if title in answer)
