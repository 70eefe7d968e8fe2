"""Opening the store a --db value names: the SQLite store, or its PostgreSQL subclass for a postgresql:// URL."""

from __future__ import annotations

from pathlib import Path

from evalcore.store import Store, db_location, is_url, require_store


def open_store(db: str | Path | None = None, *, create: bool = True) -> Store:
    """The store a --db value names: PostgreSQL for a postgresql:// URL, else the SQLite file (made when missing
    only with `create`: commands that read or work on a store must not answer from a new, empty one)."""
    if db is not None and not isinstance(db, (str, Path)):  # e.g. an open Store: its repr would name a new file
        raise TypeError(f"expected the store's path or a postgresql:// URL, found {type(db).__name__}"
                        + (f" (pass its location: {type(db).__name__}.location)" if hasattr(db, "location") else ""))
    location = db_location(db)
    if not create:
        require_store(location)
    if is_url(location):
        from evalcore.store.postgres import PgStore  # psycopg is loaded only by those who use PostgreSQL

        return PgStore(location)
    return Store(location)
