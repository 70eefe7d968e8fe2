"""Campaigns: one run of a target over a dataset or a suite, in the background, stored as it goes."""

from evalcore.campaigns.manager import CampaignManager, get_manager, new_campaign_id
from evalcore.campaigns.queries import (
    campaign_aggregates,
    campaign_diagnosis,
    campaign_results,
    campaign_summary,
    find_campaign,
    get_campaign,
    list_campaigns,
)
from evalcore.campaigns.records import (
    Aggregate,
    Campaign,
    CampaignKind,
    Outcome,
    Progress,
    Question,
    QuestionResult,
    RunOptions,
    Source,
    Summary,
    Tokens,
)
from evalcore.lifecycle import ACTIVE, CampaignStatus
from evalcore.store import Conflict, NotFound

__all__ = [
    "ACTIVE", "Aggregate", "Campaign", "CampaignKind", "CampaignManager", "CampaignStatus", "Conflict", "NotFound",
    "Outcome",
    "Progress", "Question", "QuestionResult", "RunOptions", "Source", "Summary", "Tokens", "campaign_aggregates",
    "campaign_diagnosis", "campaign_results", "campaign_summary", "find_campaign", "get_campaign", "get_manager",
    "list_campaigns",
    "new_campaign_id",
]
