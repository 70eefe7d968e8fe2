"""The `comparisons` table (a comparison of two campaigns kept per pair, seed and resamples, for the results
versions it was computed from: its JSON head and question lines as one text, its per-measure values as an archive)
and `pairwise` (the pairwise judge's verdict over two campaigns, per judge signature and versions, as JSON text).

A comparison is found by its key: (a_id, b_id, seed, resamples, a_version, b_version, format), in that order."""

from __future__ import annotations

from typing import Any

from evalcore.store import Connection, Row, Store

KEY = "a_id = ? AND b_id = ? AND seed = ? AND resamples = ? AND a_version = ? AND b_version = ? AND format = ?"


def comparison_row(store: Store, key: tuple[Any, ...]) -> Row | None:
    """A kept comparison's data and paired, or None."""
    rows = store.read(f"SELECT data, paired FROM comparisons WHERE {KEY}", key)
    return rows[0] if rows else None


def comparison_start(store: Store, key: tuple[Any, ...], chars: int) -> str | None:
    """The first `chars` characters of a kept comparison's data, the whole of it when its head (its first line) is
    longer; None without the comparison."""
    rows = store.read(f"SELECT substr(data, 1, {int(chars)}) AS start FROM comparisons WHERE {KEY}", key)
    if rows and "\n" not in rows[0]["start"]:   # a longer head: read the whole text
        rows = store.read(f"SELECT data AS start FROM comparisons WHERE {KEY}", key)
    return str(rows[0]["start"]) if rows else None


def comparison_data_from(store: Store, key: tuple[Any, ...], start: int) -> str | None:
    """A kept comparison's data from character `start` (counted from 1, on SQLite as on PostgreSQL), or None."""
    rows = store.read(f"SELECT substr(data, {int(start)}) AS part FROM comparisons WHERE {KEY}", key)
    return str(rows[0]["part"]) if rows else None


def comparison_paired(store: Store, key: tuple[Any, ...]) -> bytes | None:
    """A kept comparison's per-measure values archive, or None."""
    rows = store.read(f"SELECT paired AS part FROM comparisons WHERE {KEY}", key)
    return bytes(rows[0]["part"]) if rows else None


def put_comparison(conn: Connection, row: tuple[Any, ...]) -> None:
    """Keep a comparison: its key's values, then data, paired, created_at (replacing the pair's, seed's and
    resamples' older one)."""
    conn.execute(
        "INSERT INTO comparisons (a_id, b_id, seed, resamples, a_version, b_version, format, data, paired, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (a_id, b_id, seed, resamples) DO "
        "UPDATE SET a_version = excluded.a_version, b_version = excluded.b_version, format = excluded.format, "
        "data = excluded.data, paired = excluded.paired, created_at = excluded.created_at", row)


def delete_comparisons_of(conn: Connection, campaign_id: str) -> None:
    """Forget every kept comparison a campaign is a side of."""
    conn.execute("DELETE FROM comparisons WHERE a_id = ? OR b_id = ?", (campaign_id, campaign_id))


def preference_data(store: Store, a_id: str, b_id: str, a_version: str, b_version: str) -> str | None:
    """The newest pairwise verdict's JSON text for these campaigns' versions, or None."""
    rows = store.read("SELECT data FROM pairwise WHERE a_id = ? AND b_id = ? AND a_version = ? AND b_version = ? "
                      "ORDER BY created_at DESC LIMIT 1", (a_id, b_id, a_version, b_version))
    return str(rows[0]["data"]) if rows else None


def put_preference(conn: Connection, row: tuple[Any, ...]) -> None:
    """Keep a pairwise verdict: (a_id, b_id, signature, a_version, b_version, data, created_at), replacing the
    pair's older one of that signature."""
    conn.execute(
        "INSERT INTO pairwise (a_id, b_id, signature, a_version, b_version, data, created_at) VALUES (?, ?, ?, ?, ?, "
        "?, ?) ON CONFLICT (a_id, b_id, signature) DO UPDATE SET a_version = excluded.a_version, "
        "b_version = excluded.b_version, data = excluded.data, created_at = excluded.created_at", row)
