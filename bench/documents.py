"""Documents bench: a folder of documents imported as a corpus, against the reading libraries alone; the memory of
a large PDF; a 2 GB PDF.

    python bench/documents.py [--documents 300] [--rounds 5] [--big-mb 100] [--huge] [--data DIR]

- Throughput: `--documents` documents shaped like a team's (evalcore.testing.documents.write_mixed_folder:
  Markdown, HTML, PDF, Word and text in turn; English, French and Chinese in turn; a page to twenty), imported
  whole (`import_corpus`: read, clean, cut into passages, drop repeats, write Parquet) against the libraries alone
  on the same files (pypdf's extract_text per page, python-docx's paragraphs and tables, html.parser, bytes
  decoded): the floor any import pays. Interleaved rounds in this process (warm: imports and jieba's dictionary
  loaded before the first round); the median with the min-max of documents per second.
- Memory: a PDF of `--big-mb` MB (the default per-file limit is 100 MB) whose pages each hold a 256 kB image
  and 350 words, imported in a process of its own, against pypdf alone reading every page's text in another;
  the peak resident memory of each, and of a process that only imports the same modules.
- `--huge`: a 2 GB PDF of the same pages, first under the default limit (refused by its size), then with the limit
  raised to 4 GB (read whole).

Generated files go to --data (default /work/bench-data/documents), reused when present.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.documents import import_corpus
from evalcore.testing.documents import Prose, wrap, write_mixed_folder, write_pdf

ROOT = Path(__file__).resolve().parent.parent


def libraries_alone(folder: Path) -> int:
    """Read every document's text with the libraries only; the characters read."""
    from html.parser import HTMLParser

    import docx
    from pypdf import PdfReader

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.parts: list[str] = []

        def handle_data(self, data: str) -> None:
            self.parts.append(data)

    read = 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix == ".pdf":
            with open(path, "rb") as handle:
                read += sum(len(page.extract_text() or "") for page in PdfReader(handle).pages)
        elif path.suffix == ".docx":
            document = docx.Document(str(path))
            read += sum(len(p.text) for p in document.paragraphs)
            read += sum(len(cell.text) for table in document.tables for row in table.rows for cell in row.cells)
        elif path.suffix == ".html":
            parser = Text()
            parser.feed(path.read_bytes().decode("utf-8"))
            read += sum(len(part) for part in parser.parts)
        else:
            read += len(path.read_bytes().decode("utf-8"))
    return read


def throughput(folder: Path, documents: int, rounds: int) -> list[str]:
    """Rows of documents per second, ours and the libraries', interleaved."""
    libraries_alone(folder)  # warm: the libraries' imports
    timings: dict[str, list[float]] = {"import_corpus (read, clean, cut, dedupe, write)": [],
                                       "libraries alone (pypdf, python-docx, html.parser, decode)": []}
    passages = 0
    for _ in range(rounds + 1):  # the first round warms jieba and the caches; it is not counted
        scratch = Path(tempfile.mkdtemp(prefix="bench-documents-"))
        start = time.perf_counter()
        passages = import_corpus(folder, scratch / "out").passages
        ours = time.perf_counter() - start
        shutil.rmtree(scratch)
        start = time.perf_counter()
        libraries_alone(folder)
        theirs = time.perf_counter() - start
        if _ > 0:
            timings["import_corpus (read, clean, cut, dedupe, write)"].append(ours)
            timings["libraries alone (pypdf, python-docx, html.parser, decode)"].append(theirs)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20
    rows = [f"{documents} documents, {size:.1f} MB, {passages} passages; {rounds} interleaved rounds", "",
            "| what | seconds, median (min-max) | documents/s, median (min-max) |", "|---|---|---|"]
    for name, seconds in timings.items():
        rows.append(f"| {name} | {statistics.median(seconds):.2f} ({min(seconds):.2f}-{max(seconds):.2f}) | "
                    f"{documents / statistics.median(seconds):.1f} ({documents / max(seconds):.1f}-"
                    f"{documents / min(seconds):.1f}) |")
    return rows


def big_pdf(path: Path, megabytes: int) -> None:
    """A PDF of about `megabytes` MB: pages of 350 words of English, French or Chinese, each over an image of
    256 kB (a scanned page's size)."""
    if path.exists():
        return
    prose = Prose(7)
    image = 2**18
    pages = max(1, megabytes * 2**20 // (image + 3_000))
    languages = ("en", "fr", "zh")

    def page(number: int) -> list[str]:
        language = languages[number % 3]
        return [line for p in prose.paragraphs(language, 350) for line in wrap(p, 45 if language == "zh" else 90)]

    partial = path.with_suffix(".partial")  # renamed once complete: an interrupted run leaves no half file to reuse
    write_pdf(partial, (page(n) for n in range(pages)), title=f"A large PDF of {pages} pages", image_bytes=image)
    partial.rename(path)


CHILD = """
import json, os, sys, time, tempfile, shutil
from pathlib import Path
sys.path.insert(0, {root!r})
from evalcore.documents import import_corpus
from evalcore.errors import EvalError
import pypdf, docx, pyarrow
mode, path = sys.argv[1], Path(sys.argv[2])
start = time.perf_counter()
result = ""
if mode == "import":
    scratch = Path(tempfile.mkdtemp(dir=path.parent))
    folder = scratch / "in"
    folder.mkdir()
    os.link(path, folder / path.name)  # the same file, without copying it (a link to outside is not followed)
    try:
        report = import_corpus(folder, scratch / "out")
        result = f"{{report.passages}} passages"
    except EvalError as error:
        result = error.problems[-1]
    shutil.rmtree(scratch)
elif mode == "pypdf":
    with open(path, "rb") as handle:
        result = f"{{sum(len(p.extract_text() or '') for p in pypdf.PdfReader(handle).pages)}} characters"
seconds = time.perf_counter() - start
# VmHWM, this process's own peak: ru_maxrss keeps the parent's from before exec.
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({{"seconds": seconds, "peak_mb": peak / 1024, "result": result}}))
"""


def child(mode: str, path: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    """Run one reading in a fresh process: its seconds, its peak resident memory (MB) and what it said."""
    import os

    done = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT)), mode, str(path)], capture_output=True,
                          text=True, check=True, env={**os.environ, **(env or {})})
    data: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def memory(path: Path, label: str, env: dict[str, str] | None = None) -> list[str]:
    """Rows of peak memory: the modules alone, pypdf alone, the import."""
    size = path.stat().st_size / 2**20
    rows = [f"{label}: {size:,.0f} MB", "", "| process | seconds | peak resident MB | result |", "|---|---|---|---|"]
    for mode in ("modules", "pypdf", "import"):
        data = child(mode, path, env)
        rows.append(f"| {mode} | {data['seconds']:.1f} | {data['peak_mb']:.0f} | {data['result']} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--documents", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--big-mb", type=int, default=100)
    ap.add_argument("--huge", action="store_true", help="also a 2 GB PDF (writes 2 GB to --data)")
    ap.add_argument("--data", type=Path, default=Path("/work/bench-data/documents"))
    a = ap.parse_args()
    folder = a.data / f"mixed-{a.documents}"
    if not folder.exists():
        write_mixed_folder(folder, a.documents)
    print("\n".join(throughput(folder, a.documents, a.rounds)), end="\n\n")
    big = a.data / f"big-{a.big_mb}mb.pdf"
    big_pdf(big, a.big_mb)
    print("\n".join(memory(big, "a large PDF")), end="\n\n")
    if a.huge:
        huge = a.data / "huge-2gb.pdf"
        big_pdf(huge, 2048)
        print("\n".join(memory(huge, "a 2 GB PDF, default limit")), end="\n\n")
        print("\n".join(memory(huge, "the same, EVALCORE_IMPORT_FILE_MB=4096", {"EVALCORE_IMPORT_FILE_MB": "4096"})))


if __name__ == "__main__":
    main()
