"""Where a campaign is in its life: its statuses, which of them are active, and what each means to a caller.

Every face, query and SQL statement names a status through `CampaignStatus`; SQL lists of statuses are built from it
(`sql_list`), never spelled out.
"""

from collections.abc import Iterable
from enum import StrEnum


class CampaignStatus(StrEnum):
    """Where a campaign is in its life; queued (waiting for a worker), pending and running are active."""

    QUEUED = "queued"
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    SUCCEEDED_WITH_FAILURES = "succeeded_with_failures"  # every question ran, some of them failed
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"
    OVER_BUDGET = "over_budget"  # stopped between questions at its budget (max_cost, or its tenant's daily one)

    @property
    def label(self) -> str:
        """The status as people read it: `succeeded with failures`, `over budget` (the value is for machines)."""
        return self.value.replace("_", " ")

    @property
    def active(self) -> bool:
        """Still queued, pending or running (waiting for a runner, or owned by one)."""
        return self in ACTIVE

    @property
    def code(self) -> int:
        """The evaluation task's numeric status: queued or pending 0, running 1, succeeded (even with failures) 2,
        else 3."""
        codes = {CampaignStatus.QUEUED: 0, CampaignStatus.PENDING: 0, CampaignStatus.RUNNING: 1,
                 CampaignStatus.SUCCEEDED: 2, CampaignStatus.SUCCEEDED_WITH_FAILURES: 2}
        return codes.get(self, 3)

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for a campaign that ended this way: 0 succeeded, 3 with failed questions, else 1."""
        return {CampaignStatus.SUCCEEDED: 0, CampaignStatus.SUCCEEDED_WITH_FAILURES: 3}.get(self, 1)


# Owned by a runner: a process holds the campaign's token and heartbeat.
OWNED = (CampaignStatus.PENDING, CampaignStatus.RUNNING)
# Not ended: owned, or waiting in the queue for a worker to claim it.
ACTIVE = (CampaignStatus.QUEUED, *OWNED)
ENDED = tuple(status for status in CampaignStatus if status not in ACTIVE)


def sql_list(statuses: Iterable[CampaignStatus]) -> str:
    """Statuses as an SQL list literal, `('pending', 'running')` (their values are fixed words, never user text)."""
    return "(" + ", ".join(f"'{status.value}'" for status in statuses) + ")"
