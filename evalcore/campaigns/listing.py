"""Campaign lists as every face shows them: name, dataset or suite name, status, date, key settings, headline measures.

One row per campaign (`CampaignRow`), searchable and sortable by any of its columns, so that the
dashboard's list and pickers, `campaigns list` and the API's list agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcore.access.principals import Principal, owned, scope
from evalcore.campaigns.queries import (
    HEADLINE_FIGURES,
    get_campaign,
    keep_figures,
    list_campaigns,
    panel_figures,
    read_figures,
)
from evalcore.campaigns.records import Campaign, CampaignKind, results_version
from evalcore.costs import Cost
from evalcore.datasets.names import dataset_label
from evalcore.errors import EvalError
from evalcore.formats.shapes import doc
from evalcore.metrics.registry import display_order, higher_is_better, verdict_basis
from evalcore.store import Store
from evalcore.store.result_sums import cost_sums, measure_means
from evalcore.store.suite_rows import suite_names_rows
from evalcore.suites import Suite, list_suites
from evalcore.targets.presets import DEFAULTS
from evalcore.targets.saved_targets import list_targets
from evalcore.targets.target_config import TargetConfig

COST_FIGURES = "cost/1"  # a campaign's total as lists show it, kept beside its headline means
# The measures that decide a question's verdict in a comparison are the ones a list shows.
HEADLINE = tuple(sorted(verdict_basis(), key=display_order))
SETTINGS = ("retriever", "reranker", "generator", "top_k")
SORT_KEYS = ("created", "name", "source", "status", *SETTINGS, *HEADLINE, "cost")


@dataclass(frozen=True)
class Settings:
    """The settings that tell configurations apart at a glance; `top_k` counts the chunks a question retrieves."""

    retriever: str = field(metadata=doc())
    reranker: str = field(metadata=doc())
    generator: str = field(metadata=doc("the model of an OpenAI-compatible generator, else the generator"))
    top_k: int | None = field(metadata=doc("chunks each question retrieves (after the reranker when there is one)"))

    @classmethod
    def of(cls, config: TargetConfig) -> Settings:
        """From a configuration (a stored snapshot's `target`)."""
        if config.kind != "rag":
            label = {"http_agent": "HTTP agent", "results_file": "results file"}.get(config.kind, config.kind)
            return cls(label, "—", label, None)
        top_k = config.rerank.rerank_top_k if config.rerank.reranker != "none" else config.retrieval.embedding_top_k
        return cls(config.retriever_label.strip(), config.rerank.reranker, config.generator_label, top_k)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"retriever": self.retriever, "reranker": self.reranker, "generator": self.generator,
                "top_k": self.top_k}


@dataclass(frozen=True)
class CampaignRow:
    """A campaign as a list shows it: the record, its dataset or suite name, key settings and headline means."""

    campaign: Campaign = field(metadata=doc(flatten=True))
    source_name: str = field(metadata=doc("the dataset id, or the suite's name"))
    settings: Settings = field(metadata=doc())
    headline: dict[str, float] = field(metadata=doc("mean of each headline measure the campaign has (those that "
                                                    "decide a question's verdict in a comparison)"))
    cost: Cost = field(default=Cost(0.0), metadata=doc("what the campaign's model calls cost so far"))

    def cell(self, key: str) -> Any:
        """The value a list sorts on (None when absent)."""
        c = self.campaign
        cells = {"created": c.created_at, "name": c.name.casefold(), "source": self.source_name.casefold(),
                 "status": c.status_text, "cost": self.cost.amount, **self.settings.to_dict()}
        return cells[key] if key in cells else self.headline.get(key)

    def matches(self, text: str) -> bool:
        """Whether every word of text is in the name, id, source, status or settings (case ignored)."""
        c = self.campaign
        haystack = " ".join(map(str, (c.name, c.id, c.kind, self.source_name, c.status_text,
                                      *self.settings.to_dict().values()))).casefold()
        return all(word in haystack for word in text.casefold().split())

    def to_dict(self) -> dict[str, Any]:
        """The list's own fields (the API adds them to the campaign's)."""
        return {"source_name": self.source_name, "settings": self.settings.to_dict(), "headline": self.headline,
                "cost": self.cost.to_dict()}


def campaign_rows(store: Store, tenant: str | None = None, *, principal: Principal | None = None,
                  campaigns: Sequence[Campaign] | None = None,
                  means: Mapping[str, dict[str, float]] | None = None) -> list[CampaignRow]:
    """Every campaign of the principal (or tenant) as a list row, newest first (or the campaigns given, with
    their headline means when the caller has them already)."""
    campaigns = list(campaigns) if campaigns is not None else list_campaigns(store, tenant, principal=principal)
    means = means if means is not None else headline_means(store, campaigns)
    costs = campaign_costs(store, campaigns)
    suites = suite_names(store, scope(principal, tenant))
    return [CampaignRow(c, source_name(c.kind, c.source, suites), Settings.of(c.config.target), means.get(c.id, {}),
                        costs.get(c.id, Cost(0.0))) for c in campaigns]


def campaign_costs(store: Store, campaigns: Sequence[Campaign]) -> dict[str, Cost]:
    """campaign id -> what its stored questions cost: kept figures for the campaigns whose results have not changed
    since, the others summed (one query for all) and kept once they have ended."""
    versions = {c.id: results_version(c) for c in campaigns}
    kept = read_figures(store, COST_FIGURES, versions)
    costs = {campaign_id: Cost.from_dict(data) for campaign_id, data in kept.items()}
    missing = [c for c in campaigns if c.id not in costs]
    if not missing:
        return costs
    computed = {row["campaign_id"]: summed_cost(row) for row in cost_sums(store, [c.id for c in missing])}
    ended = {c.id: versions[c.id] for c in missing if not c.active}
    if ended:
        keep_figures(store, COST_FIGURES, ended, {key: computed.get(key, Cost(0.0)).to_dict() for key in ended})
    return costs | computed


def summed_cost(row: Any) -> Cost:
    """A campaign's cost from its results' sums: no total with a question unpriced or currencies mixed."""
    if row["unpriced"]:
        return Cost(None)
    if row["currencies"] > 1:
        return Cost(None, currencies=("several currencies",))
    return Cost(row["amount"] or 0.0, row["currency"] or "")


def headline_means(store: Store, campaigns: Sequence[Campaign]) -> dict[str, dict[str, float]]:
    """campaign id -> mean of each headline measure over its stored results: kept ones for the campaigns whose results
    have not changed since, the others computed (one query for all) and kept once they have ended."""
    versions = {c.id: results_version(c) for c in campaigns}
    means: dict[str, dict[str, float]] = read_figures(store, HEADLINE_FIGURES, versions)
    missing = [c for c in campaigns if c.id not in means]
    if not missing:
        return means
    rows = measure_means(store, HEADLINE, [c.id for c in missing])
    computed = {row["campaign_id"]: {name: row[f"m{i}"] for i, name in enumerate(HEADLINE) if row[f"m{i}"] is not None}
                for row in rows}
    ended = {c.id: versions[c.id] for c in missing if not c.active}
    if ended:
        keep_figures(store, HEADLINE_FIGURES, ended, {key: computed.get(key, {}) for key in ended})
    return means | computed


def keep_ended_figures(store: Store, campaign_id: str) -> None:
    """Compute and keep an ended campaign's figures (headline means, aggregates, summary), so that the first list or
    panel that shows it reads them; the dashboard, the API and `evalcore worker` have their campaign manager do it
    after each campaign ends (`CampaignManager.after_each`)."""
    campaign = get_campaign(store, campaign_id)
    headline_means(store, [campaign])
    campaign_costs(store, [campaign])
    panel_figures(store, campaign, campaign_id)


def suite_names(store: Store, tenant: str | None) -> dict[str, str]:
    """Suite id -> name, of a tenant's suites (every suite for None)."""
    return {row["id"]: row["name"] for row in suite_names_rows(store) if owned(row["tenant"], tenant)}


def source_name(kind: str, source: str, suites: Mapping[str, str]) -> str:
    """The questions of a campaign as people name them: its suite's name (a suite campaign's source is the suite's
    id), or its dataset's folder name."""
    return suites.get(source, source) if kind == CampaignKind.SUITE else dataset_label(source)


def search_rows(rows: Sequence[CampaignRow], text: str | None) -> list[CampaignRow]:
    """The rows whose name, id, source, status or settings hold every word of text."""
    return [row for row in rows if not text or row.matches(text)]


def sort_rows(rows: Sequence[CampaignRow], key: str = "created", reverse: bool = False) -> list[CampaignRow]:
    """Rows sorted by a column: newest, best or A-Z first (`reverse`: the other way); rows without a value last."""
    if key not in SORT_KEYS:
        raise EvalError("unknown column to sort by", where="sort", found=repr(key), expected=", ".join(SORT_KEYS))
    best_first = key in HEADLINE and higher_is_better(key)
    descending = (key == "created" or best_first) != reverse
    present = [row for row in rows if row.cell(key) is not None]
    absent = [row for row in rows if row.cell(key) is None]
    return sorted(present, key=lambda row: row.cell(key), reverse=descending) + absent


@dataclass(frozen=True)
class SuiteRow:
    """A suite as a list shows it: the dataset its configuration's knowledge base is, the configuration's name and
    key settings, and its last campaign."""

    suite: Suite
    dataset: str
    configuration: str
    settings: Settings
    last: CampaignRow | None  # the newest campaign of the suite, None when never run


def suite_rows(store: Store, tenant: str | None = None, *, principal: Principal | None = None,
               rows: Sequence[CampaignRow] | None = None) -> list[SuiteRow]:
    """Every suite of the principal (or tenant), newest first, as its list row (`rows`: the campaigns' list rows,
    when the caller has them already)."""
    targets = {t.id: t for t in list_targets(store, tenant, principal=principal)}
    last: dict[str, CampaignRow] = {}
    for row in rows if rows is not None else campaign_rows(store, tenant, principal=principal):
        if row.campaign.suite_id:
            last.setdefault(row.campaign.suite_id, row)  # newest first
    out = []
    for suite in list_suites(store, tenant, principal=principal):
        target = targets.get(suite.target_id)
        config = target.config.target if target else DEFAULTS.config
        name = (target.name or target.id) if target else DEFAULTS.label.split(" (")[0]
        out.append(SuiteRow(suite, dataset_label(config.knowledge_base), name, Settings.of(config),
                            last.get(suite.id)))
    return out
