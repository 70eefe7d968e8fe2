"""A document cut into passages with the pipeline's chunking (windows of `chunk_size` words overlapping by
`chunk_overlap`), each with its page and position; identical passages kept once, under an id made from
their text.

A long document is cut a block of text at a time (the chunking lists every word's offset, so a 100 MB text
cut whole would hold a list of 15 million offsets): each block's last window, which the block's end may have
shortened, is cut again at the start of the next block, so the windows are those of the whole text.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from evalcore.errors import EvalError
from evalcore.targets.knowledge import chunk_spans
from evalcore.targets.target_config import Chunks, TargetConfig

BLOCK_CHARS = 200_000
ID_BITS = 52  # ids stay exact in JavaScript numbers (2^53) and in int64
_SPACE = re.compile(r"\s")
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Chunking:
    """Words per passage and words shared by consecutive passages: the configuration keys chunk_size and
    chunk_overlap, with their defaults and bounds."""

    size: int = Chunks.chunk_size
    overlap: int = Chunks.chunk_overlap

    @classmethod
    def of(cls, size: int | None = None, overlap: int | None = None,
           config: TargetConfig | None = None) -> Chunking:
        """The values given, else the configuration's, else the defaults; EvalError naming a key out of bounds."""
        base = config or TargetConfig()
        chosen = {"chunking": "tokens", "chunk_size": base.chunks.chunk_size if size is None else size,
                  "chunk_overlap": base.chunks.chunk_overlap if overlap is None else overlap}
        try:
            checked = TargetConfig.from_dict(chosen)
        except EvalError as error:
            raise EvalError("invalid chunking", problems=error.problems) from None
        return cls(checked.chunks.chunk_size, checked.chunks.chunk_overlap)


class Piece(NamedTuple):
    """One passage of a document: its text, its PDF page (None elsewhere) and its number in the document."""

    text: str
    page: int | None
    position: int


def pieces(pages: tuple[tuple[int | None, str], ...], chunking: Chunking) -> Iterator[Piece]:
    """The passages of a document's pages (joined by a blank line; a passage's page is the one it starts on)."""
    starts, numbers, parts, offset = [], [], [], 0
    for number, text in pages:
        starts.append(offset)
        numbers.append(number)
        parts.append(text)
        offset += len(text) + 2
    text = "\n\n".join(parts)
    for position, (start, end) in enumerate(windows(text, chunking)):
        passage = text[start:end].strip()
        if _WORD.search(passage):
            yield Piece(passage, numbers[bisect.bisect_right(starts, start) - 1], position)


def windows(text: str, chunking: Chunking) -> Iterator[tuple[int, int]]:
    """The chunking's (start, end) spans of text, a block at a time."""
    start = 0
    while start < len(text):
        end = len(text)
        if end - start > BLOCK_CHARS:
            space = _SPACE.search(text, start + BLOCK_CHARS)
            end = space.start() if space else len(text)
        spans = chunk_spans(text[start:end], chunking.size, chunking.overlap)
        if end == len(text) or len(spans) < 2:
            yield from ((start + a, start + b) for a, b in spans)
            start = end
            continue
        yield from ((start + a, start + b) for a, b in spans[:-1])
        start += spans[-1][0]


class Kept:
    """Passages seen so far by their text's digest: each new text gets an id made from it, a repeated text none."""

    def __init__(self) -> None:
        self._ids: dict[bytes, int] = {}
        self._taken: set[int] = set()

    def __len__(self) -> int:
        return len(self._ids)

    def new_id(self, text: str) -> int | None:
        """The id of a text not seen before (its digest's first 52 bits, the next free one on a collision), or None
        for a text already kept."""
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if digest in self._ids:
            return None
        pid = int.from_bytes(digest[:8], "big") >> (64 - ID_BITS)
        while pid in self._taken or pid == 0:
            pid = (pid + 1) % (1 << ID_BITS)
        self._ids[digest] = pid
        self._taken.add(pid)
        return pid
