"""The text of a file's bytes: UTF-8 (with or without a byte-order mark), another byte-order mark, the encoding
an HTML page declares, or one detected by charset-normalizer.

Detection prefers Windows-1252 among the guesses that decode with as little disorder as the best: short French
or German text in Latin-1 decodes without disorder as Central European (cp1250) too, where `é à è` become
`é ŕ č`, and charset-normalizer ranks the two by chance.
"""

from __future__ import annotations

import codecs
import re

from evalcore.documents.import_report import Unreadable

BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
WESTERN = "cp1252"  # a superset of Latin-1's printable characters: what "Latin-1" files hold in practice
_DECLARED = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
DECLARED_WITHIN = 4096  # an HTML page declares its encoding in its first bytes


def decode(data: bytes, *, forced: str | None = None, html: bool = False) -> tuple[str, str | None]:
    """The text and the encoding it was read in when that is not UTF-8 (None for UTF-8).

    `forced` (the user's choice) wins over everything; Unreadable for bytes that are no text (NUL bytes
    in a file that holds no UTF-16) or that no encoding reads.
    """
    if forced:
        return _decoded(data, forced), forced
    for bom, name in BOMS:
        if data.startswith(bom):
            return _decoded(data, name), (None if name == "utf-8-sig" else name)
    declared = _declared(data) if html else None
    if declared:
        return _decoded(data, declared), (None if codecs.lookup(declared).name == "utf-8" else declared)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    if b"\x00" in data:
        raise Unreadable("binary content, not text (it holds NUL bytes)")
    guessed = _detected(data)
    return _decoded(data, guessed), guessed


def _decoded(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding)
    except LookupError:
        raise Unreadable(f"unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as error:
        raise Unreadable(f"not valid {encoding} (byte {error.start}): save it as UTF-8, or name its encoding "
                         "(corpus import --encoding)") from None


def _declared(data: bytes) -> str | None:
    """The encoding an HTML page's <meta charset> or http-equiv names, when Python knows it."""
    match = _DECLARED.search(data[:DECLARED_WITHIN])
    if match is None:
        return None
    name = match.group(1).decode("ascii")
    try:
        codecs.lookup(name)
    except LookupError:
        return None
    return name


def _detected(data: bytes) -> str:
    """charset-normalizer's guess, Windows-1252 when it decodes with as little disorder as the best guess."""
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        raise Unreadable("no encoding reads it as text: save it as UTF-8, or name its encoding (corpus import "
                         "--encoding)")
    least = min(match.chaos for match in matches)
    calm = [match for match in matches if match.chaos <= least]
    if any(WESTERN in match.could_be_from_charset for match in calm):
        return WESTERN
    return str(calm[0].encoding)
