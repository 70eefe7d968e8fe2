"""Word documents (.docx) read with python-docx, after their zip container is checked.

A .docx is a zip archive. Before python-docx opens it (which inflates every part into memory), the archive's
own directory is read: too many entries, or parts that unpack to more than the size limit in all (a zip bomb
given a .docx name), skip the file. Python's zipfile never inflates a part past the size it declares, so a
part that lies about its size fails its checksum instead of filling memory.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import Any

from evalcore.documents.markup import clean
from evalcore.documents.records import Unreadable

TITLE_WITHIN = 20  # paragraphs in which a Title or Heading paragraph is the document's title
MAX_ENTRIES = 10_000  # a Word document has tens of parts, a few hundred with many images
_END = b"PK\x05\x06"  # the end-of-central-directory record
_END_SEARCH = 22 + 65_535  # the record, and a comment of at most 65,535 bytes after it
_MAX_DIRECTORY = 8 * 1024 * 1024  # bytes of central directory (about 100,000 entries), read before anything else


def read_docx(path: Path, unpacked_limit: int) -> tuple[str, str]:
    """(title or "", text): the first Title or Heading paragraph (else the document's title property) and the
    paragraphs and tables in their order."""
    _check_directory(path)
    _check_archive(path, unpacked_limit)
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as error:
        raise Unreadable(f"not a readable Word document ({error or type(error).__name__})") from None
    blocks: list[str] = []
    title = ""
    for block in document.iter_inner_content():
        if hasattr(block, "rows"):
            blocks.append(_table(block))
            continue
        text = clean(block.text)
        # A paragraph's style costs a search of every style: a title is looked for among the first ones only.
        if text and not title and len(blocks) < TITLE_WITHIN and _heading(block):
            title = text
        blocks.append(text)
    return title or clean(document.core_properties.title or ""), clean("\n\n".join(b for b in blocks if b))


def _heading(paragraph: Any) -> bool:
    style = paragraph.style
    return style is not None and (style.name or "").startswith(("Title", "Heading"))


def _table(table: Any) -> str:
    """A table's rows, one line each, cells separated by ' | ' (a merged cell once)."""
    lines = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(clean(cell.text).split())
            if text and (not cells or cells[-1] != text):
                cells.append(text)
        if cells:
            lines.append(" | ".join(cells))
    return "\n".join(lines)


def _check_directory(path: Path) -> None:
    """Refuse an archive whose directory lists too many entries, before zipfile reads every one of them."""
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - _END_SEARCH))
        tail = handle.read()
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < 22:
        raise Unreadable("not a Word document (.docx is a zip archive, and this file is none)")
    entries, directory = struct.unpack("<HI", tail[at + 10:at + 16])
    if entries != 0xFFFF and entries > MAX_ENTRIES or directory != 0xFFFFFFFF and directory > _MAX_DIRECTORY:
        raise Unreadable(f"its zip archive lists {entries} entries (a Word document has at most a few hundred): "
                         "not read")


def _check_archive(path: Path, limit: int) -> None:
    """Refuse an archive whose parts would unpack to more than `limit` bytes, or that is no Word document."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise Unreadable(f"not a readable Word document ({error})") from None
    if len(members) > MAX_ENTRIES:
        raise Unreadable(f"its zip archive holds {len(members)} entries (a Word document has at most a few "
                         "hundred): not read")
    unpacked = sum(member.file_size for member in members)
    if unpacked > limit:
        raise Unreadable(f"unpacks to {unpacked / 1e6:,.1f} MB, more than the limit of {limit / 1e6:,.0f} MB "
                         "(EVALCORE_IMPORT_FILE_MB): not read (a zip bomb?)")
    if "word/document.xml" not in {member.filename for member in members}:
        raise Unreadable("not a Word document (its archive has no word/document.xml)")
