"""Real document files written for tests and benchmarks: PDF (a small writer of our own), Word (python-docx),
HTML, Markdown and text, in English, French and Chinese, and folders of them shaped like a team's documents.

The PDF writer draws each page's lines in Helvetica (text that Windows-1252 encodes) and in a CID font with a
ToUnicode map (Chinese and anything else), so a reader extracts the very characters written; a page may also
draw an image (random bytes, incompressible, as a scan's), and the file streams to disk page by page, so a
file of gigabytes costs no memory to write.
"""

from __future__ import annotations

import io
import random
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

_FONTS = (b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
          (b"<< /Type /Font /Subtype /Type0 /BaseFont /Song /Encoding /Identity-H /DescendantFonts [5 0 R] "
           b"/ToUnicode 6 0 R >>"),
          (b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Song /CIDSystemInfo << /Registry (Adobe) "
           b"/Ordering (Identity) /Supplement 0 >> /FontDescriptor 7 0 R /DW 1000 >>"))
_DESCRIPTOR = (b"<< /Type /FontDescriptor /FontName /Song /Flags 4 /FontBBox [0 -200 1000 900] /ItalicAngle 0 "
               b"/Ascent 880 /Descent -120 /CapHeight 700 /StemV 80 >>")
_FIRST_PAGE_OBJECT = 9  # 1 catalog, 2 pages, 3-5 fonts, 6 ToUnicode, 7 descriptor, 8 info


class PdfWriter:
    """A PDF written to a binary stream one page at a time; close() writes the page tree and the cross-references.

    Pages are numbered objects from 9 on (page, contents, image); the page tree and the CID font's ToUnicode
    map, which depend on every page, are written last under their reserved numbers.
    """

    def __init__(self, sink: BinaryIO, *, title: str | None = None) -> None:
        self._sink, self._title = sink, title
        self._offsets: dict[int, int] = {}
        self._pages: list[int] = []
        self._cids: dict[str, int] = {}
        self._next = _FIRST_PAGE_OBJECT
        self._write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")

    def _write(self, data: bytes) -> None:
        self._sink.write(data)

    def _object(self, number: int, body: bytes, stream: bytes | None = None) -> None:
        self._offsets[number] = self._sink.tell()
        if stream is None:
            self._write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
        else:
            self._write(b"%d 0 obj\n%s\nstream\n%s\nendstream\nendobj\n" % (number, body, stream))

    def page(self, lines: Sequence[str] = (), *, image_bytes: int = 0, seed: int = 0) -> None:
        """A page of text lines (top to bottom), drawing a random image of `image_bytes` bytes under them."""
        page, contents = self._next, self._next + 1
        image = self._next + 2 if image_bytes else None
        self._next += 3 if image else 2
        drawn = (b"q 500 0 0 700 50 70 cm /Im0 Do Q\n" if image else b"") + self._text(lines)
        packed = zlib.compress(drawn)
        xobject = b" /XObject << /Im0 %d 0 R >>" % image if image else b""
        self._object(page, b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents %d 0 R /Resources "
                           b"<< /Font << /F1 3 0 R /F2 4 0 R >>%s >> >>" % (contents, xobject))
        self._object(contents, b"<< /Length %d /Filter /FlateDecode >>" % len(packed), packed)
        if image:
            side = max(1, int(image_bytes ** 0.5))
            pixels = random.Random(seed).randbytes(side * side)
            self._object(image, b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
                                b"/BitsPerComponent 8 /Length %d >>" % (side, side, len(pixels)), pixels)
        self._pages.append(page)

    def _text(self, lines: Sequence[str]) -> bytes:
        if not lines:
            return b""
        out = [b"BT 12 TL 50 800 Td"]
        for line in lines:
            out.append(b"".join(self._run(run) for run in _runs(line)) + b" T*")
        return b"\n".join(out) + b"\nET\n"

    def _run(self, run: str) -> bytes:
        if _latin(run[0]):
            escaped = run.encode("cp1252").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
            return b" /F1 10 Tf (%s) Tj" % escaped
        codes = b"".join(b"%04X" % self._cids.setdefault(char, len(self._cids) + 1) for char in run)
        return b" /F2 10 Tf <%s> Tj" % codes

    def close(self) -> None:
        """Write the fonts, the page tree, the metadata and the cross-references."""
        for number, body in zip((3, 4, 5), _FONTS, strict=True):
            self._object(number, body)
        cmap = _to_unicode(self._cids)
        self._object(6, b"<< /Length %d >>" % len(cmap), cmap)
        self._object(7, _DESCRIPTOR)
        self._object(1, b"<< /Type /Catalog /Pages 2 0 R >>")
        kids = b" ".join(b"%d 0 R" % page for page in self._pages)
        self._object(2, b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(self._pages)))
        self._object(8, b"<< /Title <%s> /Producer (evalcore tests) >>" % ("\ufeff" + (self._title or "")).encode(
            "utf-16-be").hex().encode() if self._title else b"<< /Producer (evalcore tests) >>")
        start = self._sink.tell()
        size = max(self._offsets) + 1
        rows = [b"0000000000 65535 f \n"] + [b"%010d 00000 n \n" % self._offsets[n] if n in self._offsets
                                            else b"0000000000 65535 f \n" for n in range(1, size)]
        self._write(b"xref\n0 %d\n%s" % (size, b"".join(rows)))
        self._write(b"trailer\n<< /Size %d /Root 1 0 R /Info 8 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, start))


def _latin(char: str) -> bool:
    try:
        char.encode("cp1252")
        return True
    except UnicodeEncodeError:
        return False


def _runs(line: str) -> list[str]:
    """The line cut where it changes between Windows-1252 characters and others."""
    runs: list[str] = []
    for char in line:
        if runs and _latin(runs[-1][-1]) == _latin(char):
            runs[-1] += char
        else:
            runs.append(char)
    return runs


def _to_unicode(cids: dict[str, int]) -> bytes:
    pairs = sorted((cid, char) for char, cid in cids.items())
    blocks = []
    for start in range(0, len(pairs), 100):
        chunk = pairs[start:start + 100]
        entries = "\n".join(f"<{cid:04X}> <{char.encode('utf-16-be').hex().upper()}>" for cid, char in chunk)
        blocks.append(f"{len(chunk)} beginbfchar\n{entries}\nendbfchar")
    body = "\n".join(blocks)
    return ("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CIDSystemInfo << /Registry (Adobe) "
            "/Ordering (UCS) /Supplement 0 >> def\n/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
            f"1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n{body}\nendcmap\n"
            "CMapName currentdict /CMap defineresource pop\nend\nend").encode("ascii")


def pdf_bytes(pages: Iterable[Sequence[str]], *, title: str | None = None,
              image_pages: Iterable[int] = ()) -> bytes:
    """A PDF of these pages (each a list of lines; page numbers in image_pages from 1 also draw an image)."""
    sink = io.BytesIO()
    writer = PdfWriter(sink, title=title)
    images = set(image_pages)
    for number, lines in enumerate(pages, 1):
        writer.page(lines, image_bytes=4096 if number in images else 0, seed=number)
    writer.close()
    return sink.getvalue()


def docx_bytes(paragraphs: Sequence[str], *, heading: str | None = None, core_title: str | None = None,
               table: Sequence[Sequence[str]] = ()) -> bytes:
    """A Word document: an optional Heading 1, paragraphs, then an optional table."""
    import docx

    document = docx.Document()
    if heading:
        document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for row, values in zip(grid.rows, table, strict=True):
            for cell, value in zip(row.cells, values, strict=True):
                cell.text = value
    if core_title:
        document.core_properties.title = core_title
    sink = io.BytesIO()
    document.save(sink)
    return sink.getvalue()


def wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` characters (words kept whole; Chinese cut anywhere)."""
    lines: list[str] = []
    line = ""
    for word in (text.split(" ") if " " in text else [text[i:i + width] for i in range(0, len(text), width)]):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def write_pdf(path: Path, pages: Iterable[Sequence[str]], *, title: str | None = None, image_bytes: int = 0) -> None:
    """A PDF file written page by page (each page drawing a random image of image_bytes, when given)."""
    with open(path, "wb") as sink:
        writer = PdfWriter(sink, title=title)
        for number, lines in enumerate(pages, 1):
            writer.page(lines, image_bytes=image_bytes, seed=number)
        writer.close()


# Words of the generated documents: each language's common words and its corpus's, with invented terms (product
# names, codes) so that the documents differ; the numbers and punctuation of real manuals.
def _split(text: str) -> list[str]:
    return text.split()


_WORDS = {
    "en": _split("the a of to and in is for on with by that this it be are from as at your can when must not router "
           "firmware update warranty policy employee leave security password network device reset customer "
           "refund delivery battery charge support hours train ticket bread oven"),
    "fr": _split("le la les de des du et en est pour sur avec par que une un ce cette au aux dans qui ne pas routeur "
           "garantie politique congé sécurité passe réseau appareil réinitialiser mise à jour client "
           "remboursement livraison batterie charge horaires billet pain four été délai"),
    "zh": _split("的 是 在 和 了 有 不 这 我 你 可以 需要 如果 路由器 固件 更新 保修 政策 员工 休假 "
           "安全 密码 网络 设备 重置 顾客 退款 发货 电池 充电 客服 时间 高铁 车票 面包 烤箱 手册 规定"),
}
_SYLLABLES = _split("ka lo mi ren tor vel san qui dor phe lin mar zo bel tri gan sul hex nor pra")
LANGUAGES = ("en", "fr", "zh")
FORMATS = ("md", "html", "pdf", "docx", "txt")


class Prose:
    """Sentences and paragraphs in one of three languages, the same for the same seed."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.terms = ["".join(self.random.choice(_SYLLABLES) for _ in range(self.random.randint(2, 3)))
                      for _ in range(400)]

    def sentence(self, language: str) -> str:
        pick = self.random
        words = [pick.choice(_WORDS[language]) if pick.random() < 0.8 or language == "zh" else pick.choice(self.terms)
                 for _ in range(pick.randint(6, 24))]
        if language == "zh":
            return "".join(words) + pick.choice("。。。，！？")[0].replace("，", "。")
        if pick.random() < 0.2:
            words.append(f"({pick.randint(1, 9999)}{pick.choice(['%', ' €', ' ms', ' GB', ''])})")
        text = " ".join(words)
        return text[0].upper() + text[1:] + "."

    def paragraph(self, language: str) -> str:
        return ("" if language == "zh" else " ").join(self.sentence(language)
                                                      for _ in range(self.random.randint(2, 8)))

    def paragraphs(self, language: str, words: int) -> list[str]:
        """Paragraphs of about `words` words in all (a Chinese character counts as half a word)."""
        out: list[str] = []
        while sum(len(p) // 2 if language == "zh" else p.count(" ") + 1 for p in out) < words:
            out.append(self.paragraph(language))
        return out


_HEADINGS = {"en": "Manual", "fr": "Manuel", "zh": "手册"}


def write_mixed_folder(folder: Path, count: int = 30, *, seed: int = 2026) -> list[Path]:
    """`count` documents shaped like a team's: Markdown, HTML, PDF, Word and text in turn, in English, French and
    Chinese in turn, of lengths from a page to twenty (PDF pages of about 350 words), in subfolders by language.
    Same arguments, same bytes."""
    prose = Prose(seed)
    written = []
    for index in range(count):
        language, kind = LANGUAGES[index % 3], FORMATS[index % 5]
        title = f"{_HEADINGS[language]} {index} · {prose.random.choice(prose.terms)}"
        words = prose.random.choice((300, 600, 900, 1500, 2500, 4000, 7000))
        path = folder / language / f"{kind}-{index:04d}.{kind}"
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_document(path, kind, language, title, prose.paragraphs(language, words), prose)
        written.append(path)
    return written


def _write_document(path: Path, kind: str, language: str, title: str, paragraphs: list[str], prose: Prose) -> None:
    if kind == "md":
        body = "\n\n".join(f"## {prose.sentence(language)[:40]}\n\n{p}" if i % 3 == 0 else p
                           for i, p in enumerate(paragraphs))
        path.write_text(f"---\ntitle: {title}\n---\n\n# {title}\n\n{body}\n", encoding="utf-8")
    elif kind == "html":
        body = "\n".join(f"<h2>{prose.sentence(language)[:40]}</h2><p>{p}</p>" if i % 3 == 0 else f"<p>{p}</p>"
                         for i, p in enumerate(paragraphs))
        path.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>p {{ margin: "
                        "0 }}</style><script>var tracking = 1;</script></head><body><nav><a href='/'>Home</a> | "
                        f"<a href='/docs'>Docs</a></nav><main><h1>{title}</h1>{body}</main><footer>© 2026</footer>"
                        "</body></html>", encoding="utf-8")
    elif kind == "pdf":
        width = 45 if language == "zh" else 90
        lines = [line for p in paragraphs for line in [*wrap(p, width), ""]]
        per_page = 48
        write_pdf(path, [lines[i:i + per_page] for i in range(0, len(lines), per_page)], title=title)
    elif kind == "docx":
        rows = [[prose.sentence(language)[:30] for _ in range(3)] for _ in range(4)]
        path.write_bytes(docx_bytes(paragraphs, heading=title, table=rows))
    else:
        path.write_text(f"{title}\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
