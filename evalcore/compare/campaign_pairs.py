"""Comparisons of two stored campaigns: the kept one read back (evalcore.compare.saved_comparisons), else computed
(evalcore.compare.comparison, which loads numpy, the statistics and the measure registry only then) and kept."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from evalcore.access.principals import Principal, scope
from evalcore.campaigns import get_campaign, list_campaigns
from evalcore.compare import power, saved_comparisons
from evalcore.compare.deltas import Comparison
from evalcore.compare.exact import RESAMPLES, check_draws
from evalcore.compare.pairing import previous
from evalcore.store import Store


def compare_campaigns(store: Store, a_id: str, b_id: str, *, seed: int = 0, resamples: int = RESAMPLES,
                      effect: float = power.EFFECT, tenant: str | None = None,
                      principal: Principal | None = None, basis: str | None = None,
                      tolerances: Mapping[str, float] | None = None, read_later: bool = False) -> Comparison:
    """Compare two stored campaigns (A is the baseline, B the candidate), computed once per pair of versions.

    The comparison is kept in the store under both campaigns' ids and results versions, the seed
    and the resamples; while none of them changes it is read back, not recomputed.
    Another tenant's campaign is NotFound, as a missing one. `tolerances` re-decide the verdicts of the kept
    comparison (`Comparison.with_tolerances`). With `read_later`, a kept comparison's question lines and per-measure
    values are read from the store when first used, so the store must stay open until then (the command line's text
    report reads the lines of moved questions only, and never the values).
    """
    check_draws(seed, resamples)
    effect = power.check_effect(effect)
    tenant = scope(principal, tenant)
    a, b = get_campaign(store, a_id, tenant=tenant), get_campaign(store, b_id, tenant=tenant)
    pairwise = saved_comparisons.find_preference(store, a, b)
    if basis:  # an asked basis is not the stored default: computed, not kept
        from evalcore.compare.comparison import computed

        return replace(computed(store, a, b, seed=seed, resamples=resamples, effect=effect, basis=basis,
                                tolerances=tolerances), pairwise=pairwise)
    comparison = saved_comparisons.find(store, a, b, seed=seed, resamples=resamples, read_later=read_later)
    if comparison is None:
        from evalcore.compare.comparison import computed  # the statistics (numpy), the measure registry: only now

        comparison = computed(store, a, b, seed=seed, resamples=resamples)
        saved_comparisons.keep(store, comparison, a, b)
    return replace(comparison.with_effect(effect).with_tolerances(tolerances or {}), pairwise=pairwise)


def compare_with_previous(store: Store, campaign_id: str) -> Comparison | None:
    """Compare a campaign that just ended with the newest earlier one on the same questions (same dataset content
    first: `pairing.previous`), and keep it.

    Registered with the campaign manager by the dashboard and the API (`after_each`), so that the
    Compare page's default pair (`pairing.default_pair`, the same rule) opens at once instead of
    computing thousands of resamples then.
    """
    campaign = get_campaign(store, campaign_id)
    earlier = [c for c in list_campaigns(store, campaign.tenant)
               if c.id != campaign.id and not c.active and c.finished and c.created_at < campaign.created_at]
    baseline = previous(campaign, earlier)
    if baseline is None or campaign.active:
        return None
    return compare_campaigns(store, baseline.id, campaign.id, tenant=campaign.tenant)
