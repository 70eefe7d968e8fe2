"""What model calls cost: tokens by role and model, priced; a total in one currency, or why there is none."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, NamedTuple

from evalcore.costs.prices import PriceTable
from evalcore.formats.shapes import doc

# The roles a target's calls count under (a judge's: "judge:" and its name).
GENERATOR, QUERY, RERANK = "generator", "query", "rerank"
ROLE_NAMES = {GENERATOR: "generator", QUERY: "query transformation", RERANK: "reranker"}


def role_name(role: str) -> str:
    """How faces name a role: `reranker`, `judge faithfulness`."""
    return ROLE_NAMES.get(role) or role.replace("judge:", "judge ", 1)


class Usage(NamedTuple):
    """One role's model calls (for a question, or summed over a campaign), with what they cost."""

    role: Annotated[str, "generator, query (transformation), rerank, or judge:NAME"]
    model: Annotated[str, "the model, as its calls name it"]
    prompt: Annotated[int, "prompt tokens"]
    completion: Annotated[int, "completion tokens"]
    cost: Annotated[float | None, "prompt and completion tokens times the model's price; null: no price"]
    currency: Annotated[str, "the price's currency ('' without a price)"]
    cached: Annotated[int, "of the prompt tokens, those the provider read from its prompt cache (priced at the "
                           "cached-input price)"] = 0

    def to_json(self) -> list[Any]:
        """The compact stored form (without cached prompt tokens when there were none, as stored before them)."""
        return list(self) if self.cached else list(self)[:-1]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Usage:
        """Back from the stored form."""
        role, model, prompt, completion, cost, currency, *cached = data
        return cls(str(role), str(model), int(prompt), int(completion), None if cost is None else float(cost),
                   str(currency), int(cached[0]) if cached else 0)


def priced(role: str, model: str, prompt: int, completion: int, table: PriceTable, cached: int = 0) -> Usage:
    """A role's tokens with their cost (None when the model has no price and some tokens were spent); `cached` of
    the prompt tokens at the cached-input price."""
    price = table.find(model)
    if price is None:
        return Usage(role, model, prompt, completion, 0.0 if prompt + completion == 0 else None, "", cached)
    return Usage(role, model, prompt, completion, price.of(prompt, completion, cached), price.currency, cached)


def summed(uses: Iterable[Usage]) -> tuple[Usage, ...]:
    """Usage added up per role and model (their costs too: None when any of them had no price)."""
    sums: dict[tuple[str, str, str], list[Any]] = {}
    for use in uses:
        key = (use.role, use.model, use.currency)
        if key not in sums:
            sums[key] = [0, 0, 0.0, 0]
        entry = sums[key]
        entry[0] += use.prompt
        entry[1] += use.completion
        entry[2] = None if entry[2] is None or use.cost is None else entry[2] + use.cost
        entry[3] += use.cached
    return tuple(Usage(role, model, p, c, cost, currency, cached)
                 for (role, model, currency), (p, c, cost, cached) in sorted(sums.items()))


@dataclass(frozen=True)
class Cost:
    """What some model calls cost in one currency, or why no total is given (a model without a price, prices in
    several currencies)."""

    amount: float | None = field(metadata=doc("null: no price for some model used, or prices in several currencies"))
    currency: str = field(default="", metadata=doc("'' when nothing was spent"))
    unpriced: tuple[str, ...] = field(default=(), metadata=doc("the models used that have no price"))
    currencies: tuple[str, ...] = field(default=(), metadata=doc("the currencies of the prices, when several"))

    @classmethod
    def of(cls, uses: Iterable[Usage]) -> Cost:
        """The total of these calls."""
        uses = [use for use in uses if use.prompt + use.completion > 0]
        unpriced = tuple(sorted({use.model for use in uses if use.cost is None}))
        currencies = tuple(sorted({use.currency for use in uses if use.cost is not None}))
        if unpriced or len(currencies) > 1:
            return cls(None, "", unpriced, currencies if len(currencies) > 1 else ())
        return cls(math.fsum(use.cost or 0.0 for use in uses), currencies[0] if currencies else "")

    @property
    def priced(self) -> bool:
        """Whether there is a total."""
        return self.amount is not None

    def text(self) -> str:
        """`0.0072 USD`, `0`, or `no price (model-x)`."""
        if self.amount is not None:
            return money(self.amount, self.currency)
        if self.currencies:
            return f"no total (prices in {' and '.join(self.currencies)})"
        return f"no price ({', '.join(self.unpriced)})" if self.unpriced else "no price"

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"amount": self.amount, "currency": self.currency, "unpriced": list(self.unpriced),
                "currencies": list(self.currencies)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cost:
        """Back from the JSON shape."""
        return cls(data.get("amount"), data.get("currency") or "", tuple(data.get("unpriced") or ()),
                   tuple(data.get("currencies") or ()))


def money(amount: float, currency: str = "") -> str:
    """An amount with three significant digits below 1 (`0.0072`), cents above (`12.35`), and its currency."""
    if amount == 0:
        text = "0"
    elif abs(amount) >= 1:
        text = f"{amount:,.2f}"
    else:
        decimals = max(2, 2 - math.floor(math.log10(abs(amount))))
        text = f"{amount:.{decimals}f}".rstrip("0").rstrip(".")
    return f"{text} {currency}".strip()


def by_role(uses: Iterable[Usage]) -> dict[str, Cost]:
    """What each role's calls cost, in the order the roles first appear."""
    roles: dict[str, list[Usage]] = {}
    for use in uses:
        roles.setdefault(use.role, []).append(use)
    return {role: Cost.of(group) for role, group in roles.items()}


def cost_line(uses: Sequence[Usage], questions: int = 0) -> str:
    """`cost: 0.027 USD (0.0089 USD per question; generator 0.026 USD, judge score 0.00032 USD)`."""
    total = Cost.of(uses)
    details = [", ".join(f"{role_name(role)} {cost.text()}" for role, cost in by_role(uses).items())]
    if total.amount is not None and questions:
        details.insert(0, f"{money(total.amount / questions, total.currency)} per question")
    shown = "; ".join(detail for detail in details if detail)
    return f"cost: {total.text()}" + (f" ({shown})" if shown else "")
