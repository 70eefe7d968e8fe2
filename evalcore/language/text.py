"""Text handling shared by the measures: the `default` tokenizer, accent folding, sentences.

A tokenizer is never changed in place: its name goes into every measure signature, so a
different behaviour gets a new name.
"""

from __future__ import annotations

import array
import contextlib
import functools
import logging
import os
import re
import sys
import tempfile
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from evalcore.runtime.lazy import once

if TYPE_CHECKING:
    import numpy as np

TOKENIZER = "default"
_JIEBA_VERSION = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)

# CJK unified ideographs, extension A, compatibility ideographs, extensions B-I (planes 2-3).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HAN_RUN = re.compile(f"[{_HAN}]+")
_HAN_RUN_GROUP = re.compile(f"([{_HAN}]+)")
# Scripts outside the first two planes other than Han are rare enough to leave out of the scan.
_SCANNED_PLANES = 0x20000


def _ranges(codes: Sequence[int] | np.ndarray) -> str:
    """A regex character-class body covering the given sorted code points (at least one)."""
    import numpy as np

    points = np.asarray(codes, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(points) != 1)   # the last point of each run but the last run
    starts, ends = points[np.r_[0, breaks + 1]].tolist(), points[np.r_[breaks, points.size - 1]].tolist()
    return "".join(re.escape(chr(start)) + ("" if start == end else "-" + re.escape(chr(end)))
                   for start, end in zip(starts, ends, strict=True))


class _Patterns(NamedTuple):
    word: re.Pattern[str]  # a word of letters, digits and marks (never Han)
    plain: re.Pattern[str]  # the same for text without marks: Python's own classes are faster
    # The same for text within the Basic Multilingual Plane: its class is one table lookup, where `word`'s ranges
    # beyond the plane are tried one by one at every character that ends a word.
    bmp: re.Pattern[str]


# Combining marks start at U+0300: text below it (ASCII, Latin-1, Latin Extended) has none.
_FIRST_MARK = "\u0300"
# The first code point beyond the Basic Multilingual Plane.
_BEYOND_BMP = 0x10000
# Which word or mark pattern a text needs, found by a scan in C (max() of a text makes a string of every
# character: three times as long on a French sentence).
_FROM_FIRST_MARK = re.compile(f"[{_FIRST_MARK}-\U0010ffff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


@once
def _patterns() -> _Patterns:
    """The word regular expressions, built once from the Unicode database."""
    # Letters, digits and marks: a word keeps its accents and vowel signs; Han runs are segmented apart.
    import numpy as np

    scanned = _scanned()
    word = np.zeros(len(scanned), dtype=bool)
    for match in re.finditer(r"[^\W_]+", scanned):   # what str.isalnum() accepts, a run at a time
        word[match.start():match.end()] = True
    word[_marks()] = True
    for match in _HAN_RUN.finditer(scanned):
        word[match.start():match.end()] = False
    # A point or comma between two digits stays inside the token: 3.14, 3,5, 1,000.
    decimals = "(?:(?<=\\d)[.,](?=\\d){0})*"
    chars = f"[{_ranges(np.flatnonzero(word))}]+"
    bmp = f"[{_ranges(np.flatnonzero(word[:_BEYOND_BMP]))}]+"
    return _Patterns(
        re.compile(chars + decimals.format(chars)),
        re.compile("[^\\W_]+" + decimals.format("[^\\W_]+")),
        re.compile(bmp + decimals.format(bmp)),
    )


@once
def _combining() -> re.Pattern[str]:
    """Combining marks (a non-zero combining class), for accent stripping."""
    return re.compile(f"[{_ranges(_combining_marks())}]+")


@once
def _combining_bmp() -> re.Pattern[str]:
    """The same within the Basic Multilingual Plane, for text that has nothing beyond it: one table lookup per
    character, where `_combining`'s ranges beyond the plane are tried one by one at every character that is no
    mark (180 µs for a French sentence of 300 characters, against 10)."""
    marks = _combining_marks()
    return re.compile(f"[{_ranges(marks[marks < _BEYOND_BMP])}]+")


@once
def _combining_marks() -> np.ndarray:
    """The code points of the scanned planes with a non-zero combining class, in order."""
    other, codes = _not_alphanumeric()
    marks: np.ndarray = codes[[bool(unicodedata.combining(char)) for char in other]]
    return marks


@once
def _scanned() -> str:
    """Every code point of the scanned planes, in order, as one string (surrogates included)."""
    import numpy as np

    return np.arange(_SCANNED_PLANES, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


@once
def _not_alphanumeric() -> tuple[str, np.ndarray]:
    """The code points of the scanned planes that str.isalnum() refuses, as a string and as numbers: half the planes,
    and the only ones that can be marks (a letter or a digit is never one; nor is anything but a mark of a non-zero
    combining class)."""
    import numpy as np

    other = re.sub(r"[^\W_]+", "", _scanned())
    return other, np.frombuffer(other.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.int64)


def _marks() -> np.ndarray:
    """The code points of the scanned planes whose category is a mark (Mn, Mc, Me), in order."""
    other, codes = _not_alphanumeric()
    marks: np.ndarray = codes[[category[0] == "M" for category in map(unicodedata.category, other)]]
    return marks


@once
def _jieba() -> object:
    """A private jieba tokenizer (its dictionary loads once, on first Chinese text)."""
    with _without_pkg_resources():
        import jieba
        import jieba.finalseg

    jieba.setLogLevel(logging.WARNING)
    # jieba's HMM Viterbi copies the best path so far at every character: quadratic in the length
    # of a run of characters its dictionary does not join into words (40,000 of them took 8 s, a
    # 200,000-character answer minutes). The same recurrence with back-pointers gives the same
    # segmentation in linear time.
    jieba.finalseg.viterbi = _viterbi
    tokenizer = jieba.Tokenizer()
    # jieba's own cache of its prefix dictionary (a marshal of 500,000 entries) takes 1.5 s to load; the same
    # entries kept as one array of counts and one text of words load in 0.35 s (`_load_prefixes`).
    cache = _prefix_cache(jieba)
    prefixes = _load_prefixes(cache) if cache is not None else None
    if prefixes is None:
        tokenizer.initialize()
        if cache is not None:
            _save_prefixes(cache, tokenizer.FREQ, tokenizer.total)
    else:
        tokenizer.FREQ, tokenizer.total = prefixes
        tokenizer.initialized = True
    return tokenizer


@contextlib.contextmanager
def _without_pkg_resources() -> Iterator[None]:
    """jieba opens its files through setuptools' `pkg_resources` when that imports, else from its own folder: the
    same files, but importing `pkg_resources` takes 0.2 s (and it is deprecated). It is hidden from that one import
    unless something has already loaded it."""
    if "pkg_resources" in sys.modules:
        yield
        return
    sys.modules["pkg_resources"] = None  # type: ignore[assignment]   # None in sys.modules: the import fails
    try:
        yield
    finally:
        if sys.modules.get("pkg_resources", False) is None:
            del sys.modules["pkg_resources"]


@once
def tokenizer_key() -> str:
    """What a saved index or token table was tokenized with: the tokenizer's name and the version of jieba that cuts
    its Chinese (a new jieba may cut words differently, so what an older one saved is not read back). The version is
    read from jieba's source, not by importing it (a run that reads saved tokens never loads jieba)."""
    import importlib.util

    spec = importlib.util.find_spec("jieba")
    version = "none"
    if spec is not None and spec.origin:
        try:
            found = _JIEBA_VERSION.search(Path(spec.origin).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            found = None
        version = found.group(1) if found else "unknown"
    return f"{TOKENIZER}-jieba{version}"


_PREFIXES_MAGIC = b"evalcore jieba prefixes 1\n"


def _prefix_cache(jieba: Any) -> Path | None:
    """Where the default dictionary's prefix dictionary is kept (the temporary folder, as jieba keeps its own),
    named after jieba's version and the dictionary file's size and time; None when that file is not found."""
    try:
        stat = (Path(jieba.__file__).parent / "dict.txt").stat()
    except OSError:
        return None
    name = f"evalcore-jieba-{jieba.__version__}-{stat.st_size}-{stat.st_mtime_ns}.prefixes"
    return Path(tempfile.gettempdir()) / name


def _load_prefixes(path: Path) -> tuple[dict[str, int], int] | None:
    """The prefix dictionary and total count kept at `path` (`_save_prefixes`), or None when it is missing or not
    whole."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    start = len(_PREFIXES_MAGIC) + 16
    if not data.startswith(_PREFIXES_MAGIC) or len(data) < start:
        return None
    count, total = (int.from_bytes(data[at:at + 8], "little", signed=True) for at in (start - 16, start - 8))
    counts = array.array("q")
    if count < 0 or len(data) < start + 8 * count or counts.itemsize != 8:
        return None
    counts.frombytes(data[start:start + 8 * count])
    if sys.byteorder != "little":
        counts.byteswap()
    try:
        words = data[start + 8 * count:].decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None
    if len(words) != count:
        return None
    return dict(zip(words, counts.tolist(), strict=True)), total


def _save_prefixes(path: Path, prefixes: dict[str, int], total: int) -> None:
    """Keep the prefix dictionary at `path` for the next process (written whole or not at all; a folder that cannot
    be written keeps nothing)."""
    if any("\n" in word for word in prefixes):
        return
    counts = array.array("q", prefixes.values())
    if sys.byteorder != "little":
        counts.byteswap()
    body = b"".join([_PREFIXES_MAGIC, len(prefixes).to_bytes(8, "little", signed=True),
                     total.to_bytes(8, "little", signed=True), counts.tobytes(), "\n".join(prefixes).encode("utf-8")])
    try:
        handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".evalcore-jieba-")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(body)
        os.replace(scratch, path)
    except OSError:
        Path(scratch).unlink(missing_ok=True)


def _viterbi(obs: str, states: str, start_p: dict[str, float], trans_p: dict[str, dict[str, float]],
             emit_p: dict[str, dict[str, float]]) -> tuple[float, list[str]]:
    """jieba.finalseg's Viterbi (same tables, sums, comparisons and ties) keeping back-pointers: linear time."""
    from jieba.finalseg import MIN_FLOAT, PrevStatus

    scores = {y: start_p[y] + emit_p[y].get(obs[0], MIN_FLOAT) for y in states}
    back: list[dict[str, str]] = []
    for char in obs[1:]:
        step, best = {}, {}
        for y in states:
            emit = emit_p[y].get(char, MIN_FLOAT)
            step[y], best[y] = max([(scores[y0] + trans_p[y0].get(y, MIN_FLOAT) + emit, y0) for y0 in PrevStatus[y]])
        scores = step
        back.append(best)
    prob, state = max((scores[y], y) for y in "ES")
    path = [state]
    for best in reversed(back):
        path.append(best[path[-1]])
    return prob, path[::-1]


def _cut(run: str) -> tuple[str, ...]:
    """jieba words (HMM on) of one run of Han characters."""
    return tuple(word for word in _jieba().cut(run, HMM=True) if word.strip())  # type: ignore[attr-defined]


class _Segmented:
    """The jieba words of the last `size` distinct Han runs segmented (a corpus's sentences come back); a text seen
    once reads them without adding its own runs (`known`)."""

    def __init__(self, size: int) -> None:
        self._words: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def __call__(self, run: str) -> tuple[str, ...]:
        """The run's words, kept for the next time."""
        with self._lock:
            words = self._words.get(run)
            if words is not None:
                self._words.move_to_end(run)
                return words
        words = _cut(run)
        with self._lock:
            self._words[run] = words
            if len(self._words) > self._size:
                self._words.popitem(last=False)
        return words

    def known(self, run: str) -> tuple[str, ...]:
        """The run's words: those kept when the run was segmented before, else segmented now and not kept."""
        with self._lock:
            words = self._words.get(run)
        return words if words is not None else _cut(run)

    def cache_clear(self) -> None:
        with self._lock:
            self._words.clear()


_segment_han = _Segmented(1 << 16)


def normalize(text: str) -> str:
    """Unicode NFKC and case folding (folding can denormalise, so NFKC runs again)."""
    if text.isascii():  # NFKC leaves ASCII alone and casefold is lower()
        return text.lower()
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def _words(segment: str) -> list[str]:
    patterns = _patterns()
    if _FROM_FIRST_MARK.search(segment) is None:
        return patterns.plain.findall(segment)
    return (patterns.word if _ASTRAL.search(segment) else patterns.bmp).findall(segment)


def _tokenize(text: str, segment: Callable[[str], tuple[str, ...]]) -> tuple[str, ...]:
    tokens: list[str] = []
    runs: dict[str, tuple[str, ...]] = {}  # a run that comes back within the text is segmented once
    # split() with a group alternates other text (even indexes) and Han runs (odd indexes).
    for index, part in enumerate(_HAN_RUN_GROUP.split(normalize(text))):
        if index % 2:
            words = runs.get(part)
            if words is None:
                words = runs[part] = segment(part)
            tokens.extend(words)
        else:
            tokens.extend(_words(part))
    return tuple(tokens)


@functools.lru_cache(maxsize=1 << 16)
def _tokens(text: str) -> tuple[str, ...]:
    return _tokenize(text, _segment_han)


def tokenize(text: str) -> list[str]:
    """Tokenizer `default`: NFKC, casefold, jieba for Han runs, words with accents and decimals."""
    return list(tokens(text))


def tokens(text: str) -> tuple[str, ...]:
    """Like `tokenize`, as the cached tuple itself (no copy): for hot loops that only read."""
    return _tokens(text) if len(text) <= LONG_TEXT else _long_tokens(text)


def tokens_once(text: str) -> tuple[str, ...]:
    """Like `tokens`, for a text seen once (a question, its answer, its references): only the last few hundred such
    texts are kept (a question's texts are read by retrieval, the generator and several measures, one after the
    other), and their Han runs are read from the cache without joining it, so that a campaign's memory does not grow
    with its questions. The large caches are for texts that come back (a corpus's sentences, words). A text whose
    tokens were given (`give_tokens`) is not tokenized again."""
    given = _given.get(text)
    if given is None:
        given = _read_known.get(text)
    if given is not None:
        return given
    for table in _known:
        given = table.get(text)
        if given is not None:
            _read_known.give(text, given)  # a question's tokens: retrieval, the generator and the measures read them
            return given
    return _once_tokens(text) if len(text) <= LONG_TEXT else _long_once_tokens(text)


class _Given:
    """The last few texts whose tokens their writer already knew (an extractive answer, made of corpus sentences
    tokenized when the corpus was indexed), for the measures that read them next."""

    def __init__(self, size: int) -> None:
        self._tokens: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, text: str) -> tuple[str, ...] | None:
        with self._lock:
            return self._tokens.get(text)

    def give(self, text: str, words: tuple[str, ...]) -> None:
        with self._lock:
            self._tokens[text] = words
            self._tokens.move_to_end(text)
            if len(self._tokens) > self._size:
                self._tokens.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._tokens.clear()


_given = _Given(1 << 8)


def give_tokens(text: str, words: tuple[str, ...]) -> None:
    """Tell `tokens_once` a text's tokens: the caller must know them to be exactly what the tokenizer gives."""
    _given.give(text, words)


class KnownTokens(Protocol):
    """Texts' tokens worked out ahead (a dataset's questions and references): None for a text it does not hold."""

    def get(self, text: str) -> tuple[str, ...] | None: ...

    def numbers(self, text: str, vocabulary: Mapping[str, int]) -> list[int] | None:
        """The text's tokens as their numbers in `vocabulary`, in order (those it lacks left out), or None."""

    def language(self, text: str) -> str | None:
        """The text's `language_once`, or None."""


_known: tuple[KnownTokens, ...] = ()  # replaced whole, never changed in place: readers need no lock
_read_known = _Given(1 << 6)  # the last texts read from those tables, forgotten with them
_KNOWN_TABLES = 4


def use_known_tokens(table: KnownTokens) -> None:
    """Let `tokens_once` read texts' tokens from this table (kept with the last few given): the caller must know them
    to be exactly what the tokenizer gives."""
    global _known
    _known = (table, *(known for known in _known if known is not table))[:_KNOWN_TABLES]
    _read_known.clear()


def known_numbers(text: str, vocabulary: Mapping[str, int]) -> list[int] | None:
    """The numbers in `vocabulary` of a text's `tokens_once` tokens, in order, those it does not hold left out (an
    index's term ids, a sentence table's word numbers), read from the tables given to `use_known_tokens`, which
    number their words once per vocabulary rather than once per text; None when no table holds the text."""
    for table in _known:
        numbers = table.numbers(text, vocabulary)
        if numbers is not None:
            return numbers
    return None


def known_language(text: str) -> str | None:
    """A text's `language_once`, read from the tables given to `use_known_tokens` (a dataset's question, its language
    told once with its tokens); None when no table holds the text."""
    for table in _known:
        language = table.language(text)
        if language is not None:
            return language
    return None


def tokens_fresh(text: str) -> tuple[str, ...]:
    """Like `tokens_once`, kept nowhere: for a text read once in a pass over a corpus (the index build's sentences).
    Its Han runs are read from the segmentation cache without joining it."""
    return _tokenize(text, _segment_han.known)


@functools.lru_cache(maxsize=1 << 8)
def _once_tokens(text: str) -> tuple[str, ...]:
    return _tokenize(text, _segment_han.known)


@functools.lru_cache(maxsize=8)  # a long reply, read by several measures in turn: tokenized once, like `_long_tokens`
def _long_once_tokens(text: str) -> tuple[str, ...]:
    return _tokenize(text, _segment_han.known)


# Texts longer than this (replies, mostly: read by several measures, then never again) have a cache of their
# own of a few entries, so a server that scored thousands of long replies does not keep them.
LONG_TEXT = 4096


@functools.lru_cache(maxsize=8)
def _long_tokens(text: str) -> tuple[str, ...]:
    return _tokenize(text, _segment_han)


def clear_caches() -> None:
    """Forget cached tokens and segmentations (benchmarks measure cold starts with it)."""
    _tokens.cache_clear()
    _long_tokens.cache_clear()
    _once_tokens.cache_clear()
    _long_once_tokens.cache_clear()
    _segment_han.cache_clear()
    _fold.cache_clear()
    _given.clear()
    use_no_known_tokens()


def use_no_known_tokens() -> None:
    """Forget the tables given to `use_known_tokens`."""
    global _known
    _known = ()
    _read_known.clear()


def fold(text: str) -> str:
    """Casefold and strip accents (NFKD, combining marks dropped): `Été` -> `ete` (cached, but for long texts:
    measures fold the same words question after question)."""
    return _fold(text) if len(text) <= LONG_TEXT else _fold.__wrapped__(text)


def fold_once(text: str) -> str:
    """Like `fold`, for a text seen once (an answer): not cached."""
    return _fold.__wrapped__(text)


@functools.lru_cache(maxsize=1 << 16)
def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    if decomposed.isascii():
        return decomposed
    return (_combining() if _ASTRAL.search(decomposed) else _combining_bmp()).sub("", decomposed)


_FRENCH_WORDS = {"le", "la", "les", "des", "du", "un", "une", "est", "et", "quel", "quelle", "quels", "quelles",
                 "comment", "pourquoi", "combien", "où", "que", "qui", "pour", "dans", "sur", "au", "aux", "en"}
_ENGLISH_WORDS = {"the", "a", "an", "is", "are", "what", "which", "how", "why", "who", "where", "when", "of",
                  "to", "in", "for", "on", "and", "does", "do", "can"}


_CHINESE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_WORD = re.compile(r"\w+")
_FRENCH_LETTER = re.compile(r"[éèêàçùûôîœ]")


def language_once(text: str) -> str:
    """A coarse guess, zh / fr / en (the extractive generator answers in the question's language; not cached: a
    question is seen once)."""
    if _CHINESE.search(text):
        return "zh"
    folded = text.casefold()
    words = _WORD.findall(folded)
    french = sum(map(_FRENCH_WORDS.__contains__, words)) + 2 * len(_FRENCH_LETTER.findall(folded))
    return "fr" if french > sum(map(_ENGLISH_WORDS.__contains__, words)) else "en"


def is_han(text: str) -> bool:
    """True when every character of `text` is a Han ideograph (and there is at least one)."""
    return _HAN_RUN.fullmatch(text) is not None


def has_han(text: str) -> bool:
    """True when `text` holds a Han ideograph."""
    return _HAN_RUN.search(text) is not None


# A sentence ends after . ! ? or an ellipsis followed by a space (so 2.4 and 3,5 never end one),
# after Chinese 。！？ directly, and at a line break; closing quotes and brackets stay with it.
_SENTENCE_END = re.compile(
    r"""(?:[.!?\u2026]+["'\u201d\u2019\u00bb)\]]*(?=\s|$|[""" + _HAN + r"""])"""
    r"""|[\u3002\uff01\uff1f]+[\u201d\u2019\u300d\u300f\uff09)]*|\n)"""
)
# "1." at the start of a sentence or after a colon numbers a list item, it ends nothing.
_ENUMERATOR = re.compile(r"(?:^|[:\uff1a]\s*)\d{1,3}\.$")


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`, stripped; every non-space character lands in exactly one sentence."""
    return list(sentences_of(text))


def sentences_of(text: str) -> Iterator[str]:
    """`split_sentences` one at a time, each found as it is asked for (a reader of the first few does not split the
    rest)."""
    carry = ""
    for piece in _pieces(text):
        merged = carry + piece
        sentence = merged.strip()
        carry = merged if _ENUMERATOR.search(sentence) else ""
        if not carry and sentence:
            yield sentence
    if carry.strip():
        yield carry.strip()


def _pieces(text: str) -> Iterator[str]:
    """The text cut after each sentence end, as it is read."""
    start = 0
    for match in _SENTENCE_END.finditer(text):
        yield text[start : match.end()]
        start = match.end()
    yield text[start:]




# Names (of suites, campaigns, saved configurations) and stored text shown on a terminal. Control
# characters would reach the terminal as escape sequences; format characters (zero-width spaces, bidi
# overrides) make names look alike or reorder what is shown.
_BIDI = "\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}]")
_SHOWN_CONTROL = re.compile(f"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f{_BIDI}]")  # keeps \t \n \r


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): drawn as nothing whatever the font, the
# Hangul fillers (U+115F, U+1160, U+3164, U+FFA0) and the combining grapheme joiner (U+034F) among them.
_IGNORABLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
                        "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")


def name_problem(name: str) -> str | None:
    """Why a name cannot be used (a control character, nothing visible), or None."""
    if (found := _CONTROL.search(name)) is not None:
        return f"a name cannot hold a control character (found {shown(found.group())})"
    if not name_key(name):
        return "a name needs a visible character (it holds only spaces or invisible characters)"
    return None


def name_key(name: str) -> str:
    """What two names are compared by: what they look like. NFKC, case folded, without default-ignorable code
    points (zero-width characters, Hangul fillers, joiners) or other format characters, spaces collapsed, and
    each character as Unicode's confusables table draws it (the UTS #39 skeleton): `ｓｕｉｔｅＡ`, `suite\u200bA`,
    `suite\u3164A`, `SuiteA` and `ѕuiteA` (a Cyrillic s) have one key."""
    visible = "".join(char for char in _IGNORABLE.sub("", normalize(name)) if unicodedata.category(char) != "Cf")
    return " ".join(skeleton(normalize(skeleton(visible))).split())


def skeleton(text: str) -> str:
    """UTS #39's skeleton: the text decomposed (NFD), each character replaced by its prototype in Unicode's
    confusables table, decomposed again; two texts that can be confused have the same skeleton."""
    prototypes = _prototypes()
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFD", "".join(prototypes.get(char, char) for char in decomposed))


@once
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype, from Unicode's confusables.txt as the confusable-homoglyphs package
    ships it (each source lists its one prototype, each prototype its sources; a source and a prototype that list
    only each other both map to the lower of the two, so their skeletons meet)."""
    import json
    from importlib import resources

    table = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    marks = str.maketrans("", "", "\u200e\u200f")  # the data wraps right-to-left prototypes in direction marks

    def target(entry: dict[str, str]) -> str:
        return entry["c"].translate(marks)

    prototypes = {}
    for char, entries in table.items():
        if len(entries) != 1:
            continue  # a prototype of several characters
        found = target(entries[0])
        back = table.get(found, [])
        prototypes[char] = min(char, found) if len(back) == 1 and target(back[0]) == char else found
    return prototypes


def shown(text: str) -> str:
    """Text safe to print on a terminal: control and bidi characters (but tab and line breaks) escaped."""
    return _SHOWN_CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """A count and its noun in the right number: `1 question`, `3 questions` (never `question(s)`)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
