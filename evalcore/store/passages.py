"""Retrieved passages kept once per store, by content: every campaign that retrieved a passage shares its one row.

`passage_texts` holds each distinct passage (its corpus id, source, title and text) under a small number, the id
a campaign's ranked lists name, and a digest of its content, by which a writer finds a passage already stored (the
same passage of the same corpus version, retrieved by another campaign or by an earlier session of this one). The
text is kept zlib-compressed (about half its UTF-8 size on a three-language corpus); the title stays plain, for
lists and comparisons that show titles without reading texts.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from evalcore.store import Connection, Store, storable

AT_ONCE = 500  # ids or digests a query names at a time (below either backend's limit on parameters)


@dataclass(frozen=True)
class StoredPassage:
    """A passage as the store keeps it: its content digest, corpus id, source, title and compressed text."""

    digest: bytes
    pid: int | None
    source: str
    title: str
    packed: bytes

    @classmethod
    def of(cls, pid: int | None, source: str, title: str, text: str) -> StoredPassage:
        """A passage ready to store (texts storable first: the digest is of what is written)."""
        source, title, text = storable(source), storable(title), storable(text)
        return cls(digest(pid, source, title, text), pid, source, title, zlib.compress(text.encode("utf-8")))


def digest(pid: int | None, source: str, title: str, text: str) -> bytes:
    """What names a passage's content: 16 bytes of the SHA-256 of its id, source, title and text (the lengths of
    source and title first, so no two passages give the same bytes)."""
    head = f"{pid}|{len(source)}|{len(title)}|{source}{title}"
    return hashlib.sha256(head.encode("utf-8") + text.encode("utf-8")).digest()[:16]


def unpack(packed: bytes | memoryview) -> str:
    """A stored text back."""
    return zlib.decompress(packed).decode("utf-8")


def _chunks(values: Sequence[object]) -> Iterator[Sequence[object]]:
    for start in range(0, len(values), AT_ONCE):
        yield values[start:start + AT_ONCE]


def put_passages(conn: Connection, passages: Iterable[StoredPassage]) -> dict[bytes, int]:
    """Each passage's id by digest, those not stored yet added under the next numbers (in the caller's
    transaction)."""
    wanted = {p.digest: p for p in passages}
    ids: dict[bytes, int] = {}
    digests = list(wanted)
    for chunk in _chunks(digests):
        rows = conn.execute(f"SELECT id, digest FROM passage_texts WHERE digest IN ({', '.join('?' * len(chunk))})",
                            tuple(chunk)).fetchall()
        ids.update((bytes(row[1]), int(row[0])) for row in rows)
    missing = [wanted[d] for d in digests if d not in ids]
    if missing:
        start = int(conn.execute("SELECT coalesce(max(id), -1) + 1 FROM passage_texts").fetchone()[0])
        ids.update((p.digest, start + n) for n, p in enumerate(missing))
        conn.executemany("INSERT INTO passage_texts (id, digest, pid, source, title, text) VALUES (?, ?, ?, ?, ?, ?)",
                         [(ids[p.digest], p.digest, p.pid, p.source, p.title, p.packed) for p in missing])
    return ids


def read_passages(store: Store, ids: Iterable[int]) -> Iterator[tuple[int, int | None, str, str, str]]:
    """(id, corpus id, source, title, text) of the stored passages with these ids."""
    wanted = sorted(set(ids))
    for chunk in _chunks(wanted):
        rows = store.read(f"SELECT id, pid, source, title, text FROM passage_texts WHERE id IN "
                          f"({', '.join('?' * len(chunk))})", tuple(chunk))
        for row in rows:
            yield row[0], row[1], row[2], row[3], unpack(row[4])


def read_titles(store: Store, ids: Iterable[int]) -> dict[int, tuple[int | None, str]]:
    """id -> (corpus id, title) of the stored passages with these ids (their texts are not read)."""
    wanted = sorted(set(ids))
    titles: dict[int, tuple[int | None, str]] = {}
    for chunk in _chunks(wanted):
        rows = store.read(f"SELECT id, pid, title FROM passage_texts WHERE id IN ({', '.join('?' * len(chunk))})",
                          tuple(chunk))
        titles.update((row[0], (row[1], row[2])) for row in rows)
    return titles


KEYS_HEAD = '{"k":['  # how a ranked list's stored text starts: the passage ids come first


def ranked_ids(text: str) -> list[int] | None:
    """The passage ids a ranked list's stored text names, None for a text that names none (older rows keep their
    passages whole; a re-judge's rows keep no ranked list)."""
    if not text.startswith(KEYS_HEAD):
        return None
    ids: list[int] = json.loads("[" + text[len(KEYS_HEAD):text.index("]")] + "]")
    return ids


def with_ids(text: str, ids: Mapping[int, int]) -> str:
    """A ranked list's stored text with its passage keys replaced by these ids (keys not among them stay)."""
    keys = ranked_ids(text)
    if keys is None:
        return text
    end = text.index("]")
    return KEYS_HEAD + ",".join(str(ids.get(key, key)) for key in keys) + text[end:]


def share_passages(conn: Connection) -> None:
    """The migration to shared passages: every campaign's passages (`campaign_passages`, one row per campaign and
    passage) moved into `passage_texts`, each distinct passage once, and every ranked list's campaign keys rewritten
    as the shared ids; then the per-campaign table dropped."""
    campaigns = [row[0] for row in conn.execute(
        "SELECT DISTINCT campaign_id FROM campaign_passages ORDER BY campaign_id").fetchall()]
    for campaign_id in campaigns:
        rows = conn.execute("SELECT key, pid, source, title, text FROM campaign_passages WHERE campaign_id = ? "
                            "ORDER BY key", (campaign_id,)).fetchall()
        stored = [(int(row[0]), StoredPassage.of(row[1], row[2], row[3], row[4])) for row in rows]
        ids = put_passages(conn, [passage for _, passage in stored])
        by_key = {key: ids[passage.digest] for key, passage in stored}
        results = conn.execute("SELECT position, retrieved FROM results WHERE campaign_id = ? ORDER BY position",
                               (campaign_id,)).fetchall()
        conn.executemany("UPDATE results SET retrieved = ? WHERE campaign_id = ? AND position = ?",
                         [(with_ids(row[1], by_key), campaign_id, row[0]) for row in results
                          if row[1].startswith(KEYS_HEAD)])
    conn.execute("DROP TABLE campaign_passages")
