"""The engine's handles for this session: its database, the campaign manager and the store."""

from __future__ import annotations

from evalcore.campaigns import CampaignManager, get_manager
from evalcore.campaigns.listing import keep_ended_figures
from evalcore.campaigns.supervisor import dashboard_mode
from evalcore.compare import compare_with_previous, pairwise_job
from evalcore.store import Store, db_location
from evalcore.testsets.generation_job import TESTSET


def db_path() -> str:
    """The database this session uses (EVALCORE_DB or .evalcore/evalcore.db)."""
    return db_location()


def manager() -> CampaignManager:
    """The process-wide campaign manager for this database; each ended campaign is compared with the previous one.

    Its campaigns run in a worker process it supervises (unless EVALCORE_DASHBOARD_WORKER=threads), so pages stay
    quick while one embeds a corpus."""
    found = get_manager(db_path())
    found.after_each(keep_ended_figures)  # the list and panel then read its figures
    found.after_each(compare_with_previous)
    if dashboard_mode() == "process":
        found.supervise_worker()
    found.serve_jobs(pairwise_job.PAIRWISE, TESTSET)  # jobs run on job threads, never in a page's script
    return found


def wake_jobs() -> None:
    """Have this process's job threads look at the queue now (a page just queued a job)."""
    workers = manager().job_workers
    if workers is not None:
        workers.wake()


def store() -> Store:
    """The store of this session's database, as the engine functions take it."""
    return manager().store
