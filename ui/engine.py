"""The engine's handles for this session: its database, the campaign manager and the store."""

from __future__ import annotations

from evalcore.campaigns import CampaignManager, get_manager
from evalcore.compare import compare_with_previous
from evalcore.store import Store, default_db_path


def db_path() -> str:
    """The database this session uses (EVALCORE_DB or .evalcore/evalcore.db)."""
    return str(default_db_path().resolve())


def manager() -> CampaignManager:
    """The process-wide campaign manager for this database; each ended campaign is compared with the previous one."""
    found = get_manager(db_path())
    found.after_each(compare_with_previous)
    return found


def store() -> Store:
    """The store of this session's database, as the engine functions take it."""
    return manager().store
