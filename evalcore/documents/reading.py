"""One document read into its title and text, whatever its format; Unreadable says why one cannot be."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalcore.documents.encodings import decode
from evalcore.documents.import_report import Kind, Unreadable, reason_of
from evalcore.documents.markup import clean, html, markdown


@dataclass(frozen=True)
class Document:
    """A document's title ("" when it names none) and its text, page by page for a PDF."""

    title: str
    pages: tuple[tuple[int | None, str], ...]  # (PDF page from 1, or None; its text)
    page_count: int | None  # a PDF's pages, those without text included
    encoding: str | None  # the encoding a text file was read in when not UTF-8


def read_document(path: Path, kind: Kind, *, unpacked_limit: int, encoding: str | None = None,
                  blank: Callable[[int, str], None] = lambda page, reason: None) -> Document:
    """Read one file of a known kind; Unreadable with the reason when it cannot be, or holds no text.

    Parsers of files from elsewhere fail in their own ways (pypdf and python-docx on a damaged file raise
    KeyError, RecursionError, ...): any failure of one file becomes its reason, and the import goes on.
    """
    try:
        document = _read(path, kind, unpacked_limit, encoding, blank)
    except Unreadable:
        raise
    except MemoryError:
        raise Unreadable("not enough memory to read it") from None
    except OSError as error:
        raise Unreadable(f"cannot be read ({error.strerror or error})") from None
    except Exception as error:  # noqa: BLE001 (see the docstring)
        raise Unreadable(f"cannot be read as {kind} ({type(error).__name__}: {reason_of(error)})") from None
    if not any(text for _, text in document.pages):
        raise Unreadable("no text (the file holds only spaces or markup)")
    return document


def _read(path: Path, kind: Kind, unpacked_limit: int, encoding: str | None,
          blank: Callable[[int, str], None]) -> Document:
    if kind is Kind.PDF:
        from evalcore.documents.pdf import read_pdf

        title, pages, count = read_pdf(path, blank)
        return Document(title, tuple(pages), count, None)
    if kind is Kind.DOCX:
        from evalcore.documents.word import read_docx

        title, text = read_docx(path, unpacked_limit)
        return Document(title, ((None, text),), None, None)
    text, used = decode(path.read_bytes(), forced=encoding, html=kind is Kind.HTML)
    if kind is Kind.MARKDOWN:
        title, text = markdown(text)
    elif kind is Kind.HTML:
        title, text = html(text)
    else:
        title, text = "", clean(text)
    return Document(title, ((None, text),), None, used)

