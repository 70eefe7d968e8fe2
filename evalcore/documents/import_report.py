"""What an import of documents reports: each document read, each file skipped and why, the passages written."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evalcore.formats.shapes import doc


class Unreadable(Exception):
    """A document that cannot be read, with the reason a person can act on (never a traceback)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def reason_of(error: BaseException) -> str:
    """An exception's first line, at most 160 characters (its type when it says nothing)."""
    text = (str(error).splitlines() or [""])[0] or type(error).__name__
    return text if len(text) <= 160 else text[:159] + "…"


class Kind(StrEnum):
    """The document formats read."""

    MARKDOWN = "markdown"
    TEXT = "text"
    HTML = "html"
    PDF = "pdf"
    DOCX = "docx"


SUFFIXES = {".md": Kind.MARKDOWN, ".markdown": Kind.MARKDOWN, ".txt": Kind.TEXT, ".text": Kind.TEXT,
            ".html": Kind.HTML, ".htm": Kind.HTML, ".pdf": Kind.PDF, ".docx": Kind.DOCX}


@dataclass(frozen=True)
class Skipped:
    """A file that was not read, or a page of a read PDF that has no text, and why."""

    file: str = field(metadata=doc("the file, relative to the folder read (control characters escaped)"))
    reason: str = field(metadata=doc("why, in words"))
    page: int | None = field(default=None, metadata=doc("the PDF page without text (1 for the first); null for a "
                                                        "whole file"))

    def line(self) -> str:
        """`file: reason` or `file page N: reason`."""
        return f"{self.file}{f' page {self.page}' if self.page is not None else ''}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"file": self.file, "reason": self.reason, "page": self.page}


@dataclass(frozen=True)
class DocumentRead:
    """One document read into passages."""

    file: str = field(metadata=doc("the file, relative to the folder read: the passages' file_name"))
    kind: Kind = field(metadata=doc("its format: markdown, text, html, pdf or docx"))
    title: str = field(metadata=doc("its first heading, HTML title or PDF title, else the file name without its "
                                    "extension"))
    pages: int | None = field(metadata=doc("a PDF's pages; null for the other formats"))
    passages: int = field(metadata=doc("passages stored from it"))
    duplicates: int = field(metadata=doc("its passages identical to one stored before (from it or an earlier file), "
                                         "not stored again"))
    encoding: str | None = field(metadata=doc("the encoding its text was read in when not UTF-8 (detected, or the "
                                              "one given)"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"file": self.file, "kind": str(self.kind), "title": self.title, "pages": self.pages,
                "passages": self.passages, "duplicates": self.duplicates, "encoding": self.encoding}


@dataclass(frozen=True)
class ImportReport:
    """A corpus imported from a folder of documents: what was read, what was skipped and why, what was written."""

    dataset: str = field(metadata=doc("the dataset written: its id, or its folder for the command line"))
    chunk_size: int = field(metadata=doc("words per passage (jieba words for Chinese)"))
    chunk_overlap: int = field(metadata=doc("words shared by consecutive passages of a document"))
    passages: int = field(metadata=doc("passages stored (identical ones once)"))
    duplicates: int = field(metadata=doc("passages identical to one already stored, not stored again"))
    documents: tuple[DocumentRead, ...] = field(metadata=doc("each document read, in file name order"))
    skipped: tuple[Skipped, ...] = field(metadata=doc("each file not read, and why"))
    pages_without_text: tuple[Skipped, ...] = field(metadata=doc("pages of read PDFs that gave no text "
                                                                 "(image-only or blank), and which"))
    hidden: int = field(metadata=doc("hidden files and folders (names starting with '.') left out"))
    seconds: float = field(metadata=doc("time the import took"))

    def summary(self) -> str:
        """One line: documents, passages, duplicates, skipped files and where it went."""
        kinds = {kind: sum(1 for d in self.documents if d.kind == kind) for kind in Kind}
        mix = ", ".join(f"{count} {kind}" for kind, count in kinds.items() if count)
        duplicates = f" ({self.duplicates} identical passages stored once)" if self.duplicates else ""
        skipped = f"; {_count(len(self.skipped), 'file')} skipped" if self.skipped else ""
        return (f"read {_count(len(self.documents), 'document')} ({mix}) into {_count(self.passages, 'passage')}"
                f"{duplicates}{skipped} in {self.seconds:.1f} s: {self.dataset}")

    def lines(self) -> list[str]:
        """The summary, then each file skipped, each page without text and each file read in another encoding."""
        out = [self.summary()]
        if self.skipped:
            out += [f"skipped {_count(len(self.skipped), 'file')}:"] + [f"  {s.line()}" for s in self.skipped]
        if self.pages_without_text:
            out += [f"{_count(len(self.pages_without_text), 'page')} without text:"]
            out += [f"  {s.line()}" for s in self.pages_without_text]
        decoded = [d for d in self.documents if d.encoding]
        if decoded:
            out += ["read in another encoding than UTF-8:"] + [f"  {d.file}: {d.encoding}" for d in decoded]
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"dataset": self.dataset, "chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap,
                "passages": self.passages, "duplicates": self.duplicates,
                "documents": [d.to_dict() for d in self.documents], "skipped": [s.to_dict() for s in self.skipped],
                "pages_without_text": [s.to_dict() for s in self.pages_without_text], "hidden": self.hidden,
                "seconds": self.seconds}


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
