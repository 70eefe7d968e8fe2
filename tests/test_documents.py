"""A folder of documents imported as a dataset's corpus: every format read from real files written here, the
passages cut by the pipeline's chunking, identical ones once, and every bad input skipped or refused with its
reason, nothing half-written."""

from __future__ import annotations

import io
import os
import tracemalloc
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pypdf import PdfReader, PdfWriter

from evalcore.datasets import dataset_stats, load_dataset
from evalcore.documents import Chunking, ImportReport, Limits, import_corpus
from evalcore.documents import passages as passages_module
from evalcore.documents.import_report import Unreadable
from evalcore.documents.passages import windows
from evalcore.documents.pdf import read_pdf
from evalcore.documents.word import read_docx
from evalcore.errors import EvalError
from evalcore.targets.knowledge import chunk_spans
from evalcore.testing.documents import docx_bytes, pdf_bytes, write_mixed_folder, write_pdf
from evalcore.testing.multilingual_corpus import EN, FR, ZH

ROUTER = "The router restarts when the firmware update finishes, and its light turns green."
ROUTEUR = "Le routeur redémarre après la mise à jour : la garantie court deux ans à compter de l'été."
LUYOUQI = "路由器在固件更新完成后会重新启动，指示灯变为绿色。保修期为两年。"


def imported(folder: Path, tmp_path: Path, **options: object) -> tuple[ImportReport, list[dict]]:
    """Import folder into tmp_path/out; the report and corpus.parquet's rows."""
    out = tmp_path / "out"
    report = import_corpus(folder, out, **options)  # type: ignore[arg-type]
    return report, pq.read_table(out / "corpus.parquet").to_pylist()


def folder_of(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    """A folder holding these files (text written as UTF-8)."""
    folder = tmp_path / "docs"
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return folder


def by_file(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in rows:
        out.setdefault(row["file_name"], []).append(row)
    return out


def reasons(report: ImportReport) -> dict[str, str]:
    return {s.file: s.reason for s in report.skipped}


# --- formats ------------------------------------------------------------------------------------------------------

def test_markdown_gives_its_title_and_its_words_without_marks(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, {
        "front.md": f"---\ntitle: 'Router guide'\nauthor: ops\n---\n# Setup\n\n{ROUTER} See [the **manual**]"
                    "(http://example.com/manual) and ![a diagram](d.png).\n\n```\nreset --hard\n```\n",
        "heading.markdown": f"Intro line\n\nGarantie\n========\n\n> {ROUTEUR}\n\n<br/>*Fin* du `texte`.",
        "plain.md": "No heading at all, just words.\n",
    })
    report, rows = imported(folder, tmp_path)
    files = by_file(rows)
    assert [d.title for d in report.documents] == ["Router guide", "Garantie", "plain"]
    front = files["front.md"][0]["text"]
    assert front.startswith("Setup\n\nThe router restarts")
    assert "See the manual and a diagram." in front
    assert "reset --hard" in front
    assert not any(mark in front for mark in ("#", "](", "**", "```", "---"))
    assert files["heading.markdown"][0]["text"] == f"Intro line\n\nGarantie\n\n{ROUTEUR}\n\nFin du texte."


def test_text_in_three_languages_and_in_other_encodings_reads_the_same_characters(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, {
        "en.txt": ROUTER, "fr.txt": ROUTEUR, "zh.txt": LUYOUQI,
        "fr-latin1.txt": ROUTEUR.replace("'", " ").encode("latin-1"),
        "fr-short-latin1.txt": "Café à emporter, déjà payé.".encode("latin-1"),
        "fr-cp1252.txt": "L’été « chaud » coûte 5 €.".encode("cp1252"),
        "zh-gbk.txt": LUYOUQI.encode("gbk"),
        "zh-utf16.text": LUYOUQI.encode("utf-16"),
        "bom.txt": b"\xef\xbb\xbf" + ROUTER.encode(),
    })
    report, rows = imported(folder, tmp_path)
    texts = {row["file_name"]: row["text"] for row in rows}
    assert texts["bom.txt"] == ROUTER
    assert texts["zh-gbk.txt"] == LUYOUQI
    assert texts["fr.txt"] == ROUTEUR
    assert texts["fr-latin1.txt"] == ROUTEUR.replace("'", " ")
    assert texts["fr-short-latin1.txt"] == "Café à emporter, déjà payé."
    assert texts["fr-cp1252.txt"] == "L’été « chaud » coûte 5 €."
    # The same text in another encoding is the same passage, stored once.
    assert {d.file for d in report.documents if d.duplicates} == {"en.txt", "zh.txt", "zh-utf16.text"}
    encodings = {d.file: d.encoding for d in report.documents}
    assert encodings["en.txt"] is None
    assert encodings["bom.txt"] is None
    assert encodings["zh.txt"] is None
    assert encodings["fr-latin1.txt"] == encodings["fr-short-latin1.txt"] == "cp1252"
    assert encodings["zh-gbk.txt"] == "gb18030"
    assert encodings["zh-utf16.text"] == "utf-16"
    assert report.lines()[-1] == "  zh-utf16.text: utf-16"


def test_an_encoding_given_is_used_for_every_text_file(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, {"a.txt": "Ça coûte 5 €.".encode("iso8859-15")})
    report, rows = imported(folder, tmp_path, encoding="iso8859-15")
    assert rows[0]["text"] == "Ça coûte 5 €."
    assert report.documents[0].encoding == "iso8859-15"
    with pytest.raises(EvalError, match="unknown encoding"):
        import_corpus(folder, tmp_path / "other", encoding="klingon")


def test_html_gives_its_title_and_its_text_without_scripts_styles_or_navigation(tmp_path: Path) -> None:
    page = ("<!DOCTYPE html><html><head><title>FAQ &amp; help</title><style>p {{color: red}}</style>"
            "<script>var secret = 1;</script></head><body><nav><a href='/'>Home</a> | Menu</nav>"
            "<h1>Questions</h1><p>{body}</p><ul><li>One&nbsp;item</li><li>Caf&eacute;</li></ul>"
            "<pre>line 1\nline 2</pre><svg><title>icon</title></svg><noscript>Enable JS</noscript></body></html>")
    folder = folder_of(tmp_path, {
        "faq.html": page.format(body=ROUTER),
        "gbk.htm": ("<html><head><meta http-equiv='Content-Type' content='text/html; charset=gb2312'></head><body>"
                    f"<h2>常见问题</h2><p>{LUYOUQI}</p></body></html>").encode("gb2312"),
    })
    report, rows = imported(folder, tmp_path)
    texts = {row["file_name"]: row["text"] for row in rows}
    assert [d.title for d in report.documents] == ["FAQ & help", "常见问题"]
    assert texts["faq.html"] == f"Questions\n\n{ROUTER}\n\nOne item\n\nCafé\n\nline 1\nline 2"
    assert texts["gbk.htm"] == f"常见问题\n\n{LUYOUQI}"
    assert report.documents[1].encoding == "gb2312"


def test_pdf_pages_titles_and_chinese_text_come_through(tmp_path: Path) -> None:
    # 13 words, 13 words, 9 jieba words, an image, 17 words: passages of 13 words start on pages 1, 2, 3 and 5.
    folder = folder_of(tmp_path, {
        "guide.pdf": pdf_bytes([[ROUTER], [ROUTER.upper()], ["路由器在固件更新完成后", "会重新启动。"], [], [ROUTEUR]],
                               title="Router guide 指南", image_pages=[4]),
        "untitled.pdf": pdf_bytes([[ROUTEUR]]),
    })
    report, rows = imported(folder, tmp_path, chunking=Chunking(13, 0))
    guide = by_file(rows)["guide.pdf"]
    assert [(row["page"], row["position"]) for row in guide] == [(1, 0), (2, 1), (3, 2), (5, 3)]
    assert {row["title"] for row in guide} == {"Router guide 指南"}
    assert guide[0]["text"] == ROUTER
    assert guide[1]["text"] == ROUTER.upper()
    assert guide[2]["text"] == "路由器在固件更新完成后会重新启动。\n\nLe routeur redémarre après la"  # lines joined
    assert report.documents[0].pages == 5
    assert report.documents[1].title == "untitled"
    assert [(s.file, s.page) for s in report.pages_without_text] == [("guide.pdf", 4)]
    assert report.pages_without_text[0].reason == "an image only, no text (a scan? run OCR on it first)"


def test_word_documents_give_their_heading_paragraphs_and_tables_in_order(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, {
        "manual.docx": docx_bytes([ROUTER, ROUTEUR], heading="Router manual",
                                  table=[["Model", "Price"], ["R1", "49 €"]]),
        "core.docx": docx_bytes([LUYOUQI], core_title="路由器手册"),
        "bare.docx": docx_bytes(["Just a paragraph."]),
    })
    report, rows = imported(folder, tmp_path)
    titles = {d.file: d.title for d in report.documents}
    assert titles == {"bare.docx": "bare", "core.docx": "路由器手册", "manual.docx": "Router manual"}
    texts = {row["file_name"]: row["text"] for row in rows}
    assert texts["manual.docx"] == f"Router manual\n\n{ROUTER}\n\n{ROUTEUR}\n\nModel | Price\nR1 | 49 €"


# --- passages -----------------------------------------------------------------------------------------------------

def test_a_long_text_cut_a_block_at_a_time_has_the_windows_of_the_whole_text(monkeypatch: pytest.MonkeyPatch) -> None:
    sentences = [text for _, text in EN + FR + ZH]
    text = "\n\n".join(sentences[i % len(sentences)] for i in range(300))
    whole = chunk_spans(text, 50, 10)
    monkeypatch.setattr(passages_module, "BLOCK_CHARS", 700)
    assert list(windows(text, Chunking(50, 10))) == whole
    assert len(whole) > 20


def test_identical_passages_are_stored_once_under_ids_made_from_their_text(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, {"a.txt": ROUTER, "copy/a.txt": ROUTER, "b.md": f"{ROUTEUR}\n"})
    report, rows = imported(folder, tmp_path)
    assert report.passages == 2
    assert report.duplicates == 1
    assert [(d.file, d.passages, d.duplicates) for d in report.documents] == [("a.txt", 1, 0), ("b.md", 1, 0),
                                                                               ("copy/a.txt", 0, 1)]
    assert "(1 identical passages stored once)" in report.summary()
    ids = {row["text"]: row["id"] for row in rows}
    # Another folder with one more document: the passages already there keep their ids.
    (folder / "c.txt").write_text(LUYOUQI, encoding="utf-8")
    _, again = imported(folder, tmp_path / "again")
    assert {row["text"]: row["id"] for row in again if row["text"] in ids} == ids
    assert all(0 < row["id"] < 2**52 for row in again)


def test_chunking_follows_the_configuration_keys_and_their_bounds() -> None:
    assert Chunking.of() == Chunking(200, 40)
    assert Chunking.of(300) == Chunking(300, 40)
    problems = []
    for size, overlap in ((5, 0), (100, 100)):
        with pytest.raises(EvalError) as error:
            Chunking.of(size, overlap)
        problems += error.value.problems
    assert problems == ["chunk_size: expected a value in [8, 8192], found 5",
                        "chunk_overlap: must be smaller than chunk_size (100), found 100"]


# --- the dataset --------------------------------------------------------------------------------------------------

def test_the_dataset_loads_with_no_questions_and_its_passages_name_their_file(tmp_path: Path) -> None:
    write_mixed_folder(tmp_path / "docs", 10)
    report = import_corpus(tmp_path / "docs", tmp_path / "corpus")
    dataset = load_dataset(tmp_path / "corpus")
    assert dataset.questions == ()
    assert len(dataset.passages) == report.passages > 10
    assert {p.file_name for p in dataset.passages} == {d.file for d in report.documents}
    assert {p.title for p in dataset.passages} == {d.title for d in report.documents}
    stats = dataset_stats(dataset)
    assert stats.total_queries == 0
    assert stats.answer_share == 0.0
    assert stats.han_share > 0
    assert sorted(p.name for p in (tmp_path / "corpus").iterdir()) == sorted(
        ["answers.parquet", "corpus.parquet", "import.json", "qas.parquet", "qrels.parquet", "queries.parquet"])
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


# --- bad input ----------------------------------------------------------------------------------------------------

def test_unreadable_files_are_skipped_each_with_its_reason(tmp_path: Path) -> None:
    encrypted = PdfWriter()
    encrypted.append(PdfReader(io.BytesIO(pdf_bytes([[ROUTER]]))))
    encrypted.encrypt(user_password="secret", owner_password="owner")
    locked = io.BytesIO()
    encrypted.write(locked)
    open_but_encrypted = PdfWriter()
    open_but_encrypted.append(PdfReader(io.BytesIO(pdf_bytes([[ROUTEUR]]))))
    open_but_encrypted.encrypt(user_password="", owner_password="owner")
    readable = io.BytesIO()
    open_but_encrypted.write(readable)
    folder = folder_of(tmp_path, {
        "ok.txt": ROUTER, "empty.md": b"", "spaces.txt": "   \n\n  ", "notes.odt": b"PK\x03\x04",
        "README": ROUTER, "scan.pdf": pdf_bytes([[], []], image_pages=[1, 2]), "blank.pdf": pdf_bytes([[]]),
        "locked.pdf": locked.getvalue(), "owner-only.pdf": readable.getvalue(),
        "broken.pdf": pdf_bytes([[ROUTER]])[:200], "fake.docx": b"not a zip at all",
        "binary.txt": b"\x00\x01\x02\xff\xfe\x00" * 50, ".hidden.txt": ROUTER, ".git/config": ROUTER,
    })
    report, rows = imported(folder, tmp_path)
    assert [d.file for d in report.documents] == ["ok.txt", "owner-only.pdf"]
    why = reasons(report)
    assert why["empty.md"] == "empty file"
    assert why["spaces.txt"] == "no text (the file holds only spaces or markup)"
    assert why["notes.odt"].startswith("unknown type (.odt): the formats read are .md")
    assert why["README"].startswith("unknown type (no extension)")
    assert why["scan.pdf"] == "image-only: no text on any of its 2 pages, only images (a scan? run OCR on it first)"
    assert why["blank.pdf"] == "no text on its page"
    assert why["locked.pdf"] == "encrypted PDF: it needs a password (save a copy without one to import it)"
    assert why["broken.pdf"].startswith("not a readable PDF")
    assert why["fake.docx"] == "not a Word document (.docx is a zip archive, and this file is none)"
    assert why["binary.txt"] == "binary content, not text (it holds NUL bytes)"
    assert report.hidden == 2
    assert len(rows) == 2
    assert not any("Traceback" in line or "Error:" in line for line in report.lines())


def test_a_zip_bomb_named_docx_is_refused_before_anything_is_inflated(tmp_path: Path) -> None:
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            for _ in range(64):
                part.write(bytes(2**20))  # 64 MB of zeros: about 64 kB packed
    folder = folder_of(tmp_path, {"bomb.docx": bomb.getvalue()})
    tracemalloc.start()
    report = None
    with pytest.raises(EvalError, match="no document to import") as error:
        report = import_corpus(folder, tmp_path / "out", limits=Limits(file_bytes=16 * 2**20))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert report is None, peak
    assert peak < 4 * 2**20, peak
    assert ("bomb.docx: unpacks to 64.0 MB, more than the limit of 16.0 MB (EVALCORE_IMPORT_FILE_MB): not read "
            "(a zip bomb?)") in error.value.problems, error.value.problems
    assert not (tmp_path / "out").exists()


def test_a_docx_that_understates_its_sizes_is_refused_without_filling_memory(tmp_path: Path) -> None:
    honest = io.BytesIO(docx_bytes(["x" * 1000]))
    with zipfile.ZipFile(honest) as source, zipfile.ZipFile(out := io.BytesIO(), "w", zipfile.ZIP_DEFLATED) as lie:
        for member in source.infolist():
            data = source.read(member) if member.filename != "word/document.xml" else bytes(48 * 2**20)
            lie.writestr(member.filename, data)
    raw = bytearray(out.getvalue())
    packed = zipfile.ZipFile(io.BytesIO(bytes(raw))).getinfo("word/document.xml")
    # Declare 100 bytes instead of 48 MB, in the local header and in the central directory.
    for at in _offsets(raw, (48 * 2**20).to_bytes(4, "little")):
        raw[at:at + 4] = (100).to_bytes(4, "little")
    path = tmp_path / "liar.docx"
    path.write_bytes(bytes(raw))
    assert packed.file_size == 48 * 2**20
    tracemalloc.start()
    with pytest.raises(Unreadable) as error:
        read_docx(path, 16 * 2**20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert error.value.reason == ("its part word/document.xml unpacks to more than the 100 bytes it declares: "
                                  "not read (a zip bomb?)")
    assert peak < 2 * 2**20, peak


def _offsets(data: bytearray, needle: bytes) -> list[int]:
    found, at = [], data.find(needle)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1)
    return found


def test_a_2_gb_pdf_is_skipped_by_its_size_before_it_is_opened(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, {"small.txt": ROUTER})
    with open(folder / "huge.pdf", "wb") as handle:
        handle.write(b"%PDF-1.7\n")
        handle.truncate(2 * 2**30)  # sparse: no disk used
    report, _ = imported(folder, tmp_path)
    assert reasons(report)["huge.pdf"] == ("2,048.0 MB, more than the limit of 100.0 MB per file "
                                           "(EVALCORE_IMPORT_FILE_MB): not read")


def test_file_names_with_control_characters_or_invalid_bytes_and_links_out_are_skipped(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, {"ok.txt": ROUTER, "esc\x1b[31mred.txt": ROUTEUR, "line\nbreak.md": "x"})
    with open(os.path.join(os.fsencode(folder), b"latin-\xe9t\xe9.txt"), "wb") as handle:
        handle.write(LUYOUQI.encode())
    outside = tmp_path / "secret.txt"
    outside.write_text("the server's secret", encoding="utf-8")
    (folder / "link-out.txt").symlink_to(outside)
    (folder / "link-in.txt").symlink_to(folder / "ok.txt")
    os.mkfifo(folder / "pipe.txt")  # reading it would wait for ever
    report, rows = imported(folder, tmp_path)
    why = reasons(report)
    assert why["esc\\x1b[31mred.txt"] == "its name holds control characters: rename the file"
    assert why["line\nbreak.md"] == "its name holds control characters: rename the file"
    assert why["latin-\ufffdt\ufffd.txt"] == "its name is not valid UTF-8: rename the file"
    assert why["link-out.txt"] == "a link to a file outside the folder: not followed"
    assert why["pipe.txt"] == "not a regular file"
    assert [d.file for d in report.documents] == ["link-in.txt", "ok.txt"]
    assert report.duplicates == 1
    assert "secret" not in str(rows)


def test_nothing_readable_is_an_error_and_nothing_is_written(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, {"a.odt": b"x", "b.md": b""})
    with pytest.raises(EvalError) as error:
        import_corpus(folder, tmp_path / "out")
    assert error.value.problems == [f"{folder}: no document to import (2 files, none readable); nothing was written",
                                    ("a.odt: unknown type (.odt): the formats read are .md, .markdown, .txt, .text, "
                                     ".html, .htm, .pdf, .docx"), "b.md: empty file"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(EvalError, match=r"no document to import \(no file\)"):
        import_corpus(tmp_path / "empty", tmp_path / "out")
    with pytest.raises(EvalError, match="no folder there"):
        import_corpus(tmp_path / "missing", tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "empty"]


def test_an_interrupted_import_leaves_nothing_and_a_replaced_dataset_is_replaced_whole(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, {"a.txt": ROUTER, "b.txt": ROUTEUR})

    def interrupt(done: int, total: int, name: str) -> None:
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_corpus(folder, tmp_path / "out", progress=interrupt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]
    import_corpus(folder, tmp_path / "out")
    with pytest.raises(EvalError, match="a dataset already exists there"):
        import_corpus(folder, tmp_path / "out")
    (folder / "b.txt").unlink()
    report = import_corpus(folder, tmp_path / "out", replace=True)
    assert report.passages == 1
    assert len(load_dataset(tmp_path / "out").passages) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "out"]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(EvalError, match="is not a dataset folder: it is not replaced"):
        import_corpus(folder, tmp_path / "mine", replace=True)
    assert (tmp_path / "mine" / "keep.txt").read_text(encoding="utf-8") == "mine"


def test_more_files_than_the_limit_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = folder_of(tmp_path, {f"{i}.txt": ROUTER for i in range(4)})
    monkeypatch.setenv("EVALCORE_IMPORT_FILES", "3")
    with pytest.raises(EvalError, match="more than 3 files"):
        import_corpus(folder, tmp_path / "out")
    monkeypatch.setenv("EVALCORE_IMPORT_FILES", "many")
    with pytest.raises(EvalError, match="EVALCORE_IMPORT_FILES: not a whole number"):
        import_corpus(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_pdf_is_read_in_the_memory_of_one_page_whatever_its_number_of_pages(tmp_path: Path) -> None:
    # 40 pages each over an image of 512 kB (as scans are): 20 MB that pypdf kept once parsed.
    path = tmp_path / "scans.pdf"
    write_pdf(path, ([f"{ROUTER} Page {n}."] for n in range(40)), image_bytes=2**19)
    pages: list[tuple[int, str]] = []
    tracemalloc.start()
    _, pages, count = read_pdf(path, lambda page, reason: None)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 40
    assert pages[39] == (40, f"{ROUTER} Page 39.")
    assert peak < 6 * 2**20, peak


def test_an_import_being_written_is_not_listed_as_a_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.datasets import list_datasets

    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(tmp_path))
    folder = folder_of(tmp_path / "in", {"a.txt": ROUTER})
    seen: list[list[str]] = []
    import_corpus(folder, tmp_path / "uploads-a", progress=lambda done, total, name: seen.append(list_datasets()))
    assert seen
    assert all(listed == ["default"] for listed in seen)
    # While the files are written, the temporary folder already holds corpus.parquet: it is hidden.
    scratch = tmp_path / ".uploads-b.importing-0"
    scratch.mkdir()
    (scratch / "corpus.parquet").write_bytes(b"")
    assert list_datasets() == ["default", str(tmp_path / "uploads-a")]
