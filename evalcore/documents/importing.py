"""A folder of documents imported as a dataset: its passages in corpus.parquet, no questions yet.

The five Parquet files are written in a temporary folder beside the target and renamed into place once
complete: an import that fails, or is interrupted, leaves nothing behind, and a dataset replaced is
replaced whole. corpus.parquet holds `id, text, title, file_name, page, position`: `file_name` is the
document's path inside the folder read (what sources match, as for suites), `page` a PDF's page (null
elsewhere), `position` the passage's number in its document (from 0). A passage's id is made from its text,
so importing a folder again after a change keeps the ids of the passages that did not change.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.documents.folders import Found, Limits, scan
from evalcore.documents.import_report import DocumentRead, ImportReport, Skipped, Unreadable
from evalcore.documents.passages import Chunking, Kept, pieces
from evalcore.documents.reading import read_document
from evalcore.errors import EvalError
from evalcore.language.text import shown

Progress = Callable[[int, int, str], None]  # (documents done, documents in all, the file being read)
CORPUS = pa.schema([("id", pa.int64()), ("text", pa.string()), ("title", pa.string()), ("file_name", pa.string()),
                    ("page", pa.int32()), ("position", pa.int32())])
EMPTY = {"queries": pa.schema([("id", pa.int64()), ("text", pa.string())]),
         "answers": pa.schema([("id", pa.int64()), ("text", pa.string())]),
         "qrels": pa.schema([("qid", pa.int64()), ("pid", pa.int64())]),
         "qas": pa.schema([("qid", pa.int64()), ("aid", pa.int64())])}
BATCH = 2_000  # passages written at a time
REPORT_FILE = "import.json"  # the report beside the Parquet files (the loader reads only those)
PROBLEMS_SHOWN = 20


def import_corpus(folder: Path, out: Path, *, chunking: Chunking | None = None, encoding: str | None = None,
                  replace: bool = False, limits: Limits | None = None, progress: Progress | None = None,
                  name: str | None = None, origin: str | None = None,
                  skipped: Sequence[Skipped] = ()) -> ImportReport:
    """Read every document of folder into a new dataset at out; EvalError (nothing written) when none is
    readable or out is taken. `name` is how the report names the dataset (default: out), `origin` where the
    documents came from (default: folder), `skipped` files left out before (an upload's unsafe names)."""
    began = time.perf_counter()
    chunking = chunking or Chunking()
    limits = limits or Limits.from_env()
    _check_target(out, replace)
    if encoding:
        _check_encoding(encoding)
    found = scan(folder, limits, origin)
    found.skipped[:0] = skipped
    with _Writing(out, replace) as writing:
        documents = []
        for done, item in enumerate(found.found):
            if progress:
                progress(done, len(found.found), item.name)
            read = writing.document(item, chunking, limits, encoding, found.skipped)
            documents += [read] if read else []
        if progress:
            progress(len(found.found), len(found.found), "")
        if not documents:
            raise _nothing_readable(origin or str(folder), found.skipped)
        report = ImportReport(name or str(out), chunking.size, chunking.overlap, len(writing.kept),
                              sum(d.duplicates for d in documents), tuple(documents), tuple(found.skipped),
                              tuple(writing.blank_pages), found.hidden, round(time.perf_counter() - began, 3))
        writing.finish(report, origin or str(folder))
    return report


def _check_target(out: Path, replace: bool) -> None:
    if out.exists() and not replace:
        raise EvalError("a dataset already exists there", where=shown(str(out)),
                        fix="choose another name, or replace it (--replace)")
    if out.exists() and not (out.is_dir() and (out / "corpus.parquet").is_file()):
        raise EvalError("exists and is not a dataset folder: it is not replaced", where=shown(str(out)),
                        fix="choose another name")


def _check_encoding(encoding: str) -> None:
    import codecs

    try:
        codecs.lookup(encoding)
    except LookupError:
        raise EvalError("unknown encoding", where="encoding", found=repr(encoding),
                        expected="a name Python knows, e.g. utf-8, cp1252, latin-1, gb18030, big5") from None


def _nothing_readable(folder: str, skipped: list[Skipped]) -> EvalError:
    lines = [s.line() for s in skipped[:PROBLEMS_SHOWN]]
    if len(skipped) > PROBLEMS_SHOWN:
        lines.append(f"and {len(skipped) - PROBLEMS_SHOWN} more files skipped")
    what = f"{len(skipped)} {'file' if len(skipped) == 1 else 'files'}, none readable" if skipped else "no file"
    return EvalError("no document to import", problems=[
        f"{shown(folder)}: no document to import ({what}); nothing was written", *lines])


class _Writing:
    """The dataset being written in a temporary folder beside its target, renamed into place by finish()."""

    def __init__(self, out: Path, replace: bool) -> None:
        self.out, self.replace = out, replace
        self.kept = Kept()
        self.blank_pages: list[Skipped] = []
        self._rows: list[dict[str, Any]] = []
        self._finished = False

    def __enter__(self) -> Self:
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            # Not mkdtemp, whose folder only its owner may read: the dataset keeps the permissions of any new folder.
            self.folder = self.out.parent / f".{self.out.name}.importing-{secrets.token_hex(6)}"
            self.folder.mkdir()
        except OSError as error:
            raise EvalError(f"cannot write there ({error.strerror or error})", where=shown(str(self.out)),
                            fix="give a folder you can write to") from None
        self._writer = pq.ParquetWriter(self.folder / "corpus.parquet", CORPUS)
        return self

    def __exit__(self, *exc: object) -> None:
        self._writer.close()
        if not self._finished:
            shutil.rmtree(self.folder, ignore_errors=True)

    def document(self, item: Found, chunking: Chunking, limits: Limits, encoding: str | None,
                 skipped: list[Skipped]) -> DocumentRead | None:
        """Read one document and queue its new passages; None (and a skipped line) when it cannot be read."""
        blank: list[Skipped] = []
        try:
            document = read_document(item.path, item.kind, unpacked_limit=limits.file_bytes, encoding=encoding,
                                     blank=lambda page, reason: blank.append(Skipped(item.name, reason, page)))
        except Unreadable as error:
            skipped.append(Skipped(item.name, error.reason))
            return None
        self.blank_pages += blank
        title = document.title or Path(item.name).stem
        stored = duplicates = 0
        for piece in pieces(document.pages, chunking):
            pid = self.kept.new_id(piece.text)
            if pid is None:
                duplicates += 1
                continue
            stored += 1
            self._rows.append({"id": pid, "text": piece.text, "title": title, "file_name": item.name,
                               "page": piece.page, "position": piece.position})
            if len(self._rows) >= BATCH:
                self._flush()
        return DocumentRead(item.name, item.kind, title, document.page_count, stored, duplicates, document.encoding)

    def _flush(self) -> None:
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=CORPUS))
            self._rows = []

    def finish(self, report: ImportReport, origin: str) -> None:
        """Write the other four files and the report, then put the folder in place (the old one replaced)."""
        self._flush()
        self._writer.close()
        for table, schema in EMPTY.items():
            pq.write_table(schema.empty_table(), self.folder / f"{table}.parquet")
        record = {"folder": origin, "imported_at": datetime.now(UTC).isoformat(timespec="seconds"),
                  **report.to_dict()}
        (self.folder / REPORT_FILE).write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
        self._put_in_place()
        self._finished = True

    def _put_in_place(self) -> None:
        old = None
        if self.replace and self.out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.replaced-", dir=self.out.parent))
            os.replace(self.out, old / "dataset")
        try:
            os.rename(self.folder, self.out)
        except OSError as error:
            if old is not None:
                os.replace(old / "dataset", self.out)
            raise EvalError(f"cannot put the dataset in place ({error.strerror or error})", where=shown(str(self.out)),
                            fix="another import may have written it meanwhile: choose another name") from None
        finally:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
