"""Campaigns: one run of a target over a dataset or a suite, in the background, stored as it goes."""

from typing import TYPE_CHECKING

from evalcore.runtime.lazy import lazy_exports
from evalcore.store import Conflict, NotFound
from evalcore.store.campaign_statuses import ACTIVE, CampaignStatus

if TYPE_CHECKING:
    from evalcore.campaigns.conversation_measures import ConversationResult, ConversationSummary, campaign_conversations
    from evalcore.campaigns.manager import CampaignManager, get_manager, new_campaign_id
    from evalcore.campaigns.queries import (
        campaign_aggregates,
        campaign_diagnosis,
        campaign_lines,
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

__all__ = [
    "ACTIVE", "Aggregate", "Campaign", "CampaignKind", "CampaignManager", "CampaignStatus", "Conflict",
    "ConversationResult", "ConversationSummary", "NotFound", "Outcome",
    "Progress", "Question", "QuestionResult", "RunOptions", "Source", "Summary", "Tokens", "campaign_aggregates",
    "campaign_conversations", "campaign_diagnosis", "campaign_lines", "campaign_results", "campaign_summary",
    "find_campaign", "get_campaign", "get_manager",
    "list_campaigns",
    "new_campaign_id",
]
# Imported on first use: the records and queries need not load the manager and what it runs.
__getattr__ = lazy_exports(__name__, {
    "manager": ("CampaignManager", "get_manager", "new_campaign_id"),
    "queries": (
        "campaign_aggregates", "campaign_diagnosis", "campaign_lines", "campaign_results", "campaign_summary",
        "find_campaign",
        "get_campaign", "list_campaigns",
    ),
    "records": (
        "Aggregate", "Campaign", "CampaignKind", "Outcome", "Progress", "Question", "QuestionResult", "RunOptions",
        "Source", "Summary", "Tokens",
    ),
    "conversation_measures": ("ConversationResult", "ConversationSummary", "campaign_conversations"),
})
