"""Word documents (.docx) read with python-docx, after their zip container is checked.

A .docx is a zip archive, and python-docx inflates every part of it into memory. Before it opens one, the
archive's directory is read: too many entries, or parts that declare more than the size limit in all (a zip
bomb given a .docx name), skip the file. Then each part is inflated here, a piece at a time and thrown away,
to check that it unpacks to no more than it declares: zipfile's own `read()` inflates a part whole before
cutting it to its declared size, so a part that understates its size would fill memory there.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO

from evalcore.documents.folders import FILE_MB_SETTING, megabytes
from evalcore.documents.import_report import Unreadable
from evalcore.documents.markup import clean

TITLE_WITHIN = 20  # paragraphs in which a Title or Heading paragraph is the document's title
MAX_ENTRIES = 10_000  # a Word document has tens of parts, a few hundred with many images
_END = b"PK\x05\x06"  # the end-of-central-directory record
_END_SEARCH = 22 + 65_535  # the record, and a comment of at most 65,535 bytes after it
_PIECE = 2**16  # bytes inflated at a time while a part is checked
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
        raise Unreadable(f"unpacks to {megabytes(unpacked)}, more than the limit of {megabytes(limit)} "
                         f"({FILE_MB_SETTING}): not read (a zip bomb?)")
    if "word/document.xml" not in {member.filename for member in members}:
        raise Unreadable("not a Word document (its archive has no word/document.xml)")
    with open(path, "rb") as handle:
        for member in members:
            _check_part(handle, member)


def _check_part(handle: BinaryIO, member: zipfile.ZipInfo) -> None:
    """Inflate one part a piece at a time: Unreadable when it unpacks to more than it declares."""
    if member.compress_type == zipfile.ZIP_STORED:
        return  # read as stored: never more than its compressed size
    if member.compress_type != zipfile.ZIP_DEFLATED:
        raise Unreadable(f"its part {member.filename} is compressed in a way Word documents are not: not read")
    handle.seek(member.header_offset)
    header = handle.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise Unreadable("not a readable Word document (a damaged zip archive)")
    name, extra = struct.unpack("<HH", header[26:30])
    handle.seek(member.header_offset + 30 + name + extra)
    inflater, left, inflated = zlib.decompressobj(-15), member.compress_size, 0
    while left > 0 and not inflater.eof:
        pending = handle.read(min(left, _PIECE))
        if not pending:
            break
        left -= len(pending)
        while pending and not inflater.eof:
            try:
                inflated += len(inflater.decompress(pending, _PIECE))
            except zlib.error:
                raise Unreadable(f"not a readable Word document (its part {member.filename} is damaged)") from None
            pending = inflater.unconsumed_tail
            if inflated > member.file_size:
                raise Unreadable(f"its part {member.filename} unpacks to more than the {member.file_size:,} bytes "
                                 "it declares: not read (a zip bomb?)")
