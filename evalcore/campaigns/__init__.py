"""Campaigns: one run of a target over a dataset or a suite, in the background, stored as it goes."""

from evalcore.campaigns.manager import CampaignManager, get_manager, new_campaign_id
from evalcore.campaigns.queries import (
    STATUSES,
    campaign_aggregates,
    campaign_results,
    campaign_summary,
    get_campaign,
    list_campaigns,
    progress,
    status_code,
)
from evalcore.store import Conflict, NotFound

__all__ = [
    "STATUSES", "CampaignManager", "Conflict", "NotFound", "campaign_aggregates", "campaign_results",
    "campaign_summary", "get_campaign", "get_manager", "list_campaigns", "new_campaign_id", "progress", "status_code",
]
