"""Campaigns run by workers: a launch queues a campaign in the store, and any process claims it there.

A claim is one atomic UPDATE of the oldest queued campaign whose tenant is under its cap (on PostgreSQL the
candidate row is taken FOR UPDATE SKIP LOCKED, so claimers never wait on one another); it gives the campaign this
runner session's owner token. The owner's heartbeat is its lease: when it stops (a killed process, a lost host),
`store.mark_orphans` puts the campaign back in the queue and the next claim resumes it, asking only the questions
that have no result yet.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Protocol

from evalcore.jobs.job_queue import cap
from evalcore.store import Store, campaign_rows, mark_orphans, new_owner_token

log = logging.getLogger("evalcore.campaigns")

DEFAULT_PER_SERVER = 2
DEFAULT_PER_TENANT = 4
POLL_S = 1.0


def per_server() -> int:
    """How many campaigns one process runs at once (EVALCORE_MAX_CAMPAIGNS)."""
    return cap("EVALCORE_MAX_CAMPAIGNS", os.environ.get("EVALCORE_MAX_CAMPAIGNS"), DEFAULT_PER_SERVER)


def per_tenant() -> int:
    """How many campaigns of one tenant run at once, over every process (EVALCORE_MAX_CAMPAIGNS_PER_TENANT)."""
    return cap("EVALCORE_MAX_CAMPAIGNS_PER_TENANT", os.environ.get("EVALCORE_MAX_CAMPAIGNS_PER_TENANT"),
               DEFAULT_PER_TENANT)


def claim(store: Store, token: str, tenant_cap: int) -> str | None:
    """Claim the oldest queued campaign whose tenant runs fewer than tenant_cap (its id), or None."""
    return campaign_rows.claim_queued(store, token, tenant_cap)


def queued_ahead(store: Store, campaign_id: str) -> int:
    """How many queued campaigns were launched before this one (its place in the queue, 0 first)."""
    return campaign_rows.queued_before(store, campaign_id)


class Runs(Protocol):
    """What workers run claimed campaigns on (a `CampaignManager`): its store, how many campaigns it runs, and how
    it runs one more. Named here so the queue does not depend on the manager that depends on it."""

    @property
    def store(self) -> Store: ...

    def running(self) -> int: ...

    def run_claimed(self, campaign_id: str, token: str) -> None: ...


class Workers:
    """Threads of one process that claim queued campaigns and run them, at most `slots` at a time."""

    def __init__(self, manager: Runs, slots: int | None = None, tenant_cap: int | None = None,
                 poll_s: float = POLL_S) -> None:
        self.manager = manager
        self.slots = slots or per_server()
        self.tenant_cap = tenant_cap or per_tenant()
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="evalcore-workers", daemon=True)

    def start(self) -> None:
        """Start claiming."""
        self._thread.start()

    def wake(self) -> None:
        """Look at the queue now (a launch just queued a campaign, or one ended here)."""
        self._wake.set()

    def stop(self) -> None:
        """Claim no more (the campaigns running here go on until the manager closes)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._round()
            except Exception:
                log.exception("claiming campaigns")
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def _round(self) -> None:
        """Requeue campaigns whose owner was lost, then claim while this process has room."""
        store = self.manager.store
        store.write(mark_orphans)
        while not self._stop.is_set() and self.manager.running() < self.slots:
            token = new_owner_token()
            campaign_id = claim(store, token, self.tenant_cap)
            if campaign_id is None:
                return
            self.manager.run_claimed(campaign_id, token)
