"""Model prices: the default table, extended or replaced row by row by the operator's CSV file.

A file's rows (`model,input,output,cached_input,currency,read,same_as`, prices per million tokens) come from
`EVALCORE_PRICES` (a path) or `prices.csv` beside a SQLite store, read in that order after the default table: a row
replaces the row of the same model. `same_as` prices a name as another model (an Azure deployment as its model).
"""

from __future__ import annotations

import csv
import math
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from evalcore.costs import default_prices
from evalcore.errors import EvalError
from evalcore.formats.shapes import doc

PRICES_FILE = "prices.csv"  # beside a SQLite store
COLUMNS = ("model", "input", "output", "cached_input", "currency", "read", "same_as")
CURRENCY = re.compile(r"^[A-Z]{3}$")
# A provider's dated snapshot (gpt-4o-2024-08-06, claude-3-5-haiku-20241022) is priced as its model when unlisted.
SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


@dataclass(frozen=True)
class Price:
    """What one model costs per million tokens, in one currency, as read on a date."""

    model: str = field(metadata=doc())
    input: float = field(metadata=doc("per million prompt tokens"))
    output: float = field(metadata=doc("per million completion tokens"))
    cached_input: float | None = field(metadata=doc("per million cached prompt tokens (null: the provider has no "
                                                    "such price)"))
    currency: str = field(metadata=doc("ISO 4217 code, e.g. USD"))
    read: str = field(metadata=doc("the date the price was read (ISO), '' when its table gives none"))
    source: str = field(metadata=doc("the default table, or the operator's file it came from"))

    def of(self, prompt: int, completion: int, cached: int = 0) -> float:
        """The price of these tokens, `cached` of the prompt tokens at the cached-input price (the input price when
        the provider has none)."""
        cached = min(cached, prompt)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((prompt - cached) * self.input + cached * cached_price + completion * self.output) / 1_000_000

    def to_dict(self) -> dict[str, object]:
        """JSON shape."""
        return {"model": self.model, "input": self.input, "output": self.output, "cached_input": self.cached_input,
                "currency": self.currency, "read": self.read, "source": self.source}


class PriceTable:
    """Prices by model name (case-insensitive); `find` also reads a chat model's full name."""

    def __init__(self, prices: dict[str, Price], files: tuple[str, ...] = ()) -> None:
        self.prices = prices
        self.files = files  # the operator's files read, in order

    def find(self, name: str) -> Price | None:
        """The price of a model named as a verdict or a target names it (`openai:gpt-4o@https://...`), of its Azure
        deployment, of a dated snapshot of a listed model; None when none is listed."""
        for candidate in candidates(name):
            price = self.prices.get(candidate.casefold()) or self.prices.get(SNAPSHOT.sub("", candidate).casefold())
            if price is not None:
                return price
        return None

    def rows(self) -> list[Price]:
        """Every price, by model."""
        return sorted(self.prices.values(), key=lambda price: price.model.casefold())


def candidates(name: str) -> list[str]:
    """The names a model may be priced under: `openai:MODEL@URL|deployment:NAME` gives MODEL then NAME."""
    found = [name]
    rest, _, deployment = name.partition("|deployment:")
    if rest.startswith("openai:"):
        found.insert(0, rest.removeprefix("openai:").rpartition("@")[0] or rest.removeprefix("openai:"))
    if deployment:
        found.append(deployment)
    return found


def default_table() -> dict[str, Price]:
    """The default table (evalcore.costs.default_prices), by folded model name."""
    return {model.casefold(): Price(model, sent_in, sent_out, cached, currency, default_prices.READ, "default table")
            for model, sent_in, sent_out, cached, currency in default_prices.ROWS}


def operator_files(store_location: str | None) -> list[Path]:
    """The operator's price files that exist: beside a SQLite store, then EVALCORE_PRICES (which must exist)."""
    files = []
    if store_location and "://" not in store_location:
        beside = Path(store_location).parent / PRICES_FILE
        if beside.is_file():
            files.append(beside)
    named = os.environ.get("EVALCORE_PRICES", "").strip()
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise EvalError("the price table named by EVALCORE_PRICES does not exist", where=str(path),
                            fix="name a CSV file with columns model,input,output,currency (docs/costs.md), or unset "
                                "EVALCORE_PRICES")
        files.append(path)
    return files


_CACHE: dict[tuple[tuple[str, float], ...], PriceTable] = {}
_LOCK = threading.Lock()


def price_table(store_location: str | None = None) -> PriceTable:
    """The prices in force for a store: the default table, then the operator's files (kept until a file changes)."""
    files = operator_files(store_location)
    key = tuple((str(path), path.stat().st_mtime) for path in files)
    with _LOCK:
        if key not in _CACHE:
            prices = default_table()
            for path in files:
                prices = read_prices(path, prices)
            _CACHE.clear()
            _CACHE[key] = PriceTable(prices, tuple(str(path) for path in files))
        return _CACHE[key]


def read_prices(path: Path, base: dict[str, Price]) -> dict[str, Price]:
    """`base` with a CSV file's rows laid over it; EvalError naming the file, its row and column otherwise."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            header = [name.strip() for name in reader.fieldnames or ()]
            missing = [name for name in ("model", "input", "output", "currency") if name not in header]
            unknown = [name for name in header if name not in COLUMNS]
            if missing or unknown:
                raise EvalError("a price table's header is not what was expected", where=f"{path} row 1",
                                found=", ".join(header) or "nothing", expected=", ".join(COLUMNS) +
                                " (model, input, output and currency required)")
            rows = [({key.strip(): (value or "").strip() for key, value in row.items() if key}, number)
                    for number, row in enumerate(reader, start=2)]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise EvalError(f"cannot read the price table: {error}", where=str(path)) from None
    prices = dict(base)
    aliases = []
    for row, number in rows:
        where = f"{path} row {number}"
        model = row.get("model", "")
        if not model:
            raise EvalError("a price row names no model", where=f"{where}, column model")
        if row.get("same_as"):
            aliases.append((model, row["same_as"], where))
            continue
        prices[model.casefold()] = parsed_price(row, model, where, str(path))
    for model, other, where in aliases:
        if other.casefold() not in prices:
            raise EvalError(f"same_as names a model the table does not price: {other!r}", where=f"{where}, column "
                            "same_as", fix="name a model of the default table or of a row above")
        prices[model.casefold()] = prices[other.casefold()]
    return prices


def parsed_price(row: dict[str, str], model: str, where: str, source: str) -> Price:
    """One row's price, each value checked."""
    def amount(column: str) -> float:
        text = row.get(column, "")
        try:
            value = float(text)
        except ValueError:
            raise EvalError(f"the price of {model!r} is not a number", where=f"{where}, column {column}",
                            found=repr(text), expected="a price per million tokens, e.g. 0.15") from None
        if not math.isfinite(value) or value < 0:
            raise EvalError(f"the price of {model!r} is negative or not finite", where=f"{where}, column {column}",
                            found=text, expected="a price of at least 0 per million tokens")
        return value

    currency = row.get("currency", "").upper()
    if not CURRENCY.match(currency):
        raise EvalError(f"the currency of {model!r} is not a currency code", where=f"{where}, column currency",
                        found=repr(row.get("currency", "")), expected="an ISO 4217 code such as USD or EUR")
    read = row.get("read", "")
    if read:
        try:
            date.fromisoformat(read)
        except ValueError:
            raise EvalError(f"the date {model!r}'s price was read is not a date", where=f"{where}, column read",
                            found=repr(read), expected="YYYY-MM-DD") from None
    cached = amount("cached_input") if row.get("cached_input") else None
    return Price(model, amount("input"), amount("output"), cached, currency, read, source)
