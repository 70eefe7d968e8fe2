"""Budgets: a campaign's (`max_cost`) and a tenant's per day (the operator's `EVALCORE_DAILY_BUDGET`).

A campaign stops between questions once what its stored questions cost reaches its budget: the questions in flight
finish and are stored (they were paid for), nothing more is asked, and its status is `over_budget`; resumed with a
larger budget it goes on from there. Amounts are in the currency of the prices (evalcore.costs).
"""

from __future__ import annotations

import calendar
import math
import os
import time
from collections.abc import Iterable

from evalcore.campaigns.records import Outcome
from evalcore.costs import money
from evalcore.errors import EvalError
from evalcore.store import Store
from evalcore.store.campaign_statuses import CampaignStatus
from evalcore.store.result_sums import spent_by_campaign, spent_by_tenant_since, tenant_and_spent

DAILY = "EVALCORE_DAILY_BUDGET"
REFRESH_S = 30.0  # how often a running campaign reads again what its tenant's other campaigns spent today


def daily_budgets() -> dict[str, float]:
    """The operator's daily budgets by tenant (`*` for every tenant not named): `EVALCORE_DAILY_BUDGET` is `5` or
    `default=5,team-a=20`; EvalError naming the variable and the entry otherwise."""
    text = os.environ.get(DAILY, "").strip()
    budgets: dict[str, float] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        tenant, sep, amount = entry.rpartition("=") if "=" in entry else ("*", "", entry)
        try:
            value = float(amount)
        except ValueError:
            value = -1.0
        if not math.isfinite(value) or value < 0 or (sep and not tenant.strip()):
            raise EvalError("a daily budget is not an amount", where=DAILY, found=repr(entry),
                            expected="an amount of at least 0 (`5`), or TENANT=AMOUNT entries separated by commas")
        budgets[tenant.strip() or "*"] = value
    return budgets


def daily_budget(tenant: str) -> float | None:
    """A tenant's daily budget, None when the operator set none."""
    budgets = daily_budgets()
    return budgets.get(tenant, budgets.get("*"))


def day_start(now: float) -> float:
    """Midnight UTC of the day `now` is in: a daily budget counts from there."""
    return float(calendar.timegm(time.gmtime(now)[:3] + (0, 0, 0)))


def spent_today(store: Store, tenant: str, now: float | None = None, *, besides: str | None = None) -> float:
    """What a tenant's questions answered since midnight UTC cost (those of campaign `besides` left out)."""
    return spent_by_tenant_since(store, tenant, day_start(time.time() if now is None else now), besides or "")


def refuse_over_daily_budget(store: Store, tenant: str) -> None:
    """EvalError when the tenant's daily budget is spent already (a launch is refused before anything runs)."""
    budget = daily_budget(tenant)
    if budget is not None and (spent := spent_today(store, tenant)) >= budget:
        raise EvalError(f"tenant {tenant}'s daily budget is spent: {money(spent)} of {money(budget)} since midnight "
                        "UTC", where=DAILY, fix="launch it tomorrow, or ask the operator for a larger daily budget")


def spent_by(store: Store, campaign_id: str) -> float:
    """What a campaign's stored questions cost."""
    return spent_by_campaign(store, campaign_id)


def refuse_budget_spent(store: Store, campaign_id: str, max_cost: float | None) -> None:
    """EvalError when a campaign is resumed with a budget it has spent already (it would stop at once)."""
    if max_cost is not None and (spent := spent_by(store, campaign_id)) >= max_cost:
        raise EvalError(f"campaign {campaign_id} has spent {money(spent)} already: a budget of {money(max_cost)} "
                        "would stop it at once", where="max_cost", found=f"{max_cost:g}",
                        expected=f"more than {money(spent)}", fix="resume it with a larger max_cost")


class Budget:
    """What a running campaign has spent (its stored questions, then those it stores), against its `max_cost` and its
    tenant's daily budget."""

    def __init__(self, store: Store, campaign_id: str, max_cost: float) -> None:
        self.store, self.campaign_id, self.max_cost = store, campaign_id, max_cost
        row = tenant_and_spent(store, campaign_id)
        self.tenant = row["tenant"] if row is not None else "default"
        self.spent = float(row["spent"]) if row is not None else 0.0
        self.today = 0.0  # this campaign's spending since midnight UTC
        self.daily = daily_budget(self.tenant)
        self.others = 0.0  # the tenant's other campaigns' spending today, read every REFRESH_S
        self.read_at = -REFRESH_S
        self.unpriced: str | None = None
        self.before_today = 0.0  # what its questions stored today before this session cost
        if self.daily is not None:
            self.before_today = spent_by_campaign(store, campaign_id, day_start(time.time()))

    def add(self, outcomes: Iterable[Outcome]) -> None:
        """Count what these questions cost."""
        for outcome in outcomes:
            cost = outcome.cost
            if cost.amount is None:
                self.unpriced = self.unpriced or cost.text()
            else:
                self.spent += cost.amount
                self.today += cost.amount

    def reason(self) -> tuple[CampaignStatus, str] | None:
        """Why the campaign stops asking questions, with the status it ends with; None while it may go on."""
        if (self.max_cost or self.daily is not None) and self.unpriced:
            return CampaignStatus.FAILED, (f"a budget needs a price for every model, and a question's cost is "
                                           f"{self.unpriced}: add the model to the price table (docs/costs.md)")
        if self.max_cost and self.spent >= self.max_cost:
            return CampaignStatus.OVER_BUDGET, (f"stopped at its budget: {money(self.spent)} spent of max_cost "
                                                f"{money(self.max_cost)}; resume with a larger max_cost to go on")
        if self.daily is not None:
            if time.monotonic() - self.read_at >= REFRESH_S:
                self.others = spent_today(self.store, self.tenant, besides=self.campaign_id)
                self.read_at = time.monotonic()
            today = self.others + self.before_today + self.today
            if today >= self.daily:
                return CampaignStatus.OVER_BUDGET, (f"stopped at tenant {self.tenant}'s daily budget: {money(today)} "
                                                    f"spent of {money(self.daily)} since midnight UTC; resume it "
                                                    "tomorrow")
        return None
