"""PDF files read with pypdf, page by page, from the open file: neither the file nor the objects of the pages
already read are held in memory.

An encrypted PDF is read when its user password is empty (pypdf tries it), and skipped otherwise. A page that
gives no text is reported: image-only (a scan: run OCR first) or blank. The title is the document's metadata
title. pypdf bounds what a compressed stream may inflate to (its own limits against decompression bombs).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalcore.documents.import_report import Unreadable, reason_of
from evalcore.documents.markup import clean, unwrap

# pypdf logs every oddity of a file it reads past (a repaired cross-reference table, a duplicate key): the
# import reports what it could not read, and these lines would bury that report.
logging.getLogger("pypdf").setLevel(logging.ERROR)

Pages = list[tuple[int, str]]  # (page number from 1, its text)


def read_pdf(path: Path, blank: Callable[[int, str], None]) -> tuple[str, Pages, int]:
    """(metadata title or "", the pages that have text, the number of pages); `blank(page, reason)` hears of
    each page without text."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, PdfReadError, PyPdfError

    with open(path, "rb") as handle, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            reader = PdfReader(handle)
            _unlock(reader)
            title = _title(reader)
            pages: Pages = []
            count, images = len(reader.pages), 0
            for number, page in enumerate(reader.pages, 1):
                text = clean(unwrap(clean(page.extract_text() or "")))
                # pypdf keeps every object it parsed, a page's images included (a 2 GB PDF of scans took 2.4 GB):
                # what the next page needs again (its fonts) is parsed again, in less time than holding it all.
                reader.resolved_objects.clear()
                if text:
                    pages.append((number, text))
                    continue
                image = _has_image(page)
                images += image
                blank(number, "an image only, no text (a scan? run OCR on it first)" if image
                      else "no text (a blank page)")
        except DependencyError as error:
            raise Unreadable(f"encrypted PDF that needs a library to decrypt it ({error})") from None
        except (PdfReadError, PyPdfError) as error:
            raise Unreadable(f"not a readable PDF ({reason_of(error)})") from None
    if not pages:
        raise Unreadable(_no_text(count, images))
    return title, pages, count


def _unlock(reader: Any) -> None:
    """An encrypted PDF whose user password is empty opens; one that needs a password is skipped."""
    from pypdf import PasswordType

    if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
        raise Unreadable("encrypted PDF: it needs a password (save a copy without one to import it)")


def _title(reader: Any) -> str:
    try:
        metadata = reader.metadata
        return clean(str(metadata.title or "")) if metadata is not None else ""
    except Exception:  # noqa: BLE001 (a malformed info dictionary costs the title only)
        return ""


def _has_image(page: Any) -> bool:
    """Whether the page draws an image (its resources hold an image XObject)."""
    try:
        objects = page.get("/Resources", {}).get_object().get("/XObject", {}).get_object()
        return any(item.get_object().get("/Subtype") == "/Image" for item in objects.values())
    except Exception:  # noqa: BLE001 (resources pypdf cannot follow: "blank" rather than fail the page)
        return False


def _no_text(count: int, images: int) -> str:
    if count == 0:
        return "a PDF without pages"
    where = f"any of its {count} pages" if count > 1 else "its page"
    return (f"image-only: no text on {where}, only images (a scan? run OCR on it first)" if images
            else f"no text on {where}")

