"""Which campaigns to compare: those that asked the same questions, and the pair to propose.

The Compare page proposes `default_pair`; when a campaign ends, the comparison with its `previous`
one is computed and kept (`compare_with_previous`), by the same rule, so that the proposed pair is
usually stored already.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from evalcore.campaigns import Campaign

Group = tuple[str, str]  # (kind, source): campaigns that asked the same questions


def group_of(campaign: Campaign) -> Group:
    """The questions a campaign asked: its kind and source (a dataset, or a suite)."""
    return (campaign.kind, campaign.source)


def by_questions(campaigns: Iterable[Campaign]) -> dict[Group, list[Campaign]]:
    """Campaigns grouped by the questions they asked, newest first within a group, the newest group first."""
    return grouped(campaigns, group_of)


def grouped(campaigns: Iterable[Campaign], key: Callable[[Campaign], Hashable]) -> dict[Any, list[Campaign]]:
    """Campaigns grouped by a key, newest first within a group, the group of the newest campaign first."""
    groups: dict[Any, list[Campaign]] = {}
    for campaign in sorted(campaigns, key=lambda c: c.created_at, reverse=True):
        groups.setdefault(key(campaign), []).append(campaign)
    return groups


def default_pair(campaigns: Iterable[Campaign]) -> tuple[Campaign, Campaign] | None:
    """(A, B) to propose: the two newest campaigns that asked the same questions over the same dataset content (of
    all such pairs, the one with the newest B), else over any content; None when no two asked the same questions."""
    campaigns = list(campaigns)
    for groups in (grouped(campaigns, lambda c: (*group_of(c), c.dataset_hash)), by_questions(campaigns)):
        pairs = [(members[1], members[0]) for members in groups.values() if len(members) > 1]
        if pairs:
            return max(pairs, key=lambda pair: pair[1].created_at)
    return None


def previous(campaign: Campaign, earlier: Sequence[Campaign]) -> Campaign | None:
    """What a campaign that ended is compared with: of the `earlier` campaigns (newest first), the newest on the same
    questions and dataset content, else the newest on the same questions; None when none asked them."""
    same = [c for c in earlier if group_of(c) == group_of(campaign)]
    return next((c for c in same if c.dataset_hash == campaign.dataset_hash), same[0] if same else None)
