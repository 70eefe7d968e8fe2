"""The sentences of every chunk of a knowledge base, with their language and words, kept beside its index.

The extractive generator reads a context chunk as its sentences (`split_sentences`), each with its language
(`language_once`) and its distinct `default` tokens. Worked out question after question, that is most of a
campaign's CPU on a large corpus (jieba on every Chinese sentence the first time it is retrieved), for passages
the index build has already read. So the build works it out once per corpus and settings and saves it in the
index folder (`sentences.npz`); every later process reads it back.

A token is kept as its number in the table's own vocabulary, and each sentence as its tokens' numbers in order: the
generator counts, intersects and weighs token sets, which numbers do as well as strings, and the tokens of an answer
made of whole sentences are theirs put together (`answer_tokens`), which the measures read instead of tokenizing the
answer again. A sentence is kept as its span in the chunk's text.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from evalcore.runtime import compiled

FILE = "sentences.npz"
FORMAT = 2
LANGUAGES = ("en", "fr", "zh")
PROGRESS_EVERY = 200
EXTRACT = Path(__file__).with_name("extract.c")
# The compiled choice keeps a question's words as the bits of a 64-bit word: a question with more distinct words the
# table knows is chosen in Python.
COMPILED_WORDS = 64
# The table's arrays as the compiled choice reads them.
_LAYOUT = (("sentence_starts", np.int64), ("word_starts", np.int64), ("languages", np.uint8), ("words", np.int32),
           ("spans", np.int64))
# Room for this many words of the chosen sentences in the compiled choice's answer (a longer answer is asked again
# with the room it needs).
ANSWER_WORDS = 256


class Sentence(NamedTuple):
    """One sentence of a chunk: its text, its language (en / fr / zh), its distinct token numbers (empty when it has
    no word), and its number in the table."""

    text: str
    language: str
    words: frozenset[int]
    number: int


# An extractive answer in Chinese joins its sentences with nothing between them: their tokens are the answer's only
# where no word, number or Han run can run on from one sentence into the next, as after these.
_CLOSED = frozenset("。！？!?”’」』）)")


class Choice(NamedTuple):
    """The extractive generator's chosen sentences, best first: their table numbers, their chunks' ranks in the
    context (1 = best), their spans in their chunks' texts, and their words' numbers, sentence after sentence."""

    numbers: list[int]
    ranks: list[int]
    starts: list[int]
    ends: list[int]
    words: list[int]


@dataclass
class SentenceTable:
    """Every chunk's sentences (rows in index order), read by chunk text; `vocabulary` numbers the tokens."""

    texts: Sequence[str]
    sentence_starts: np.ndarray  # a chunk's sentences are rows sentence_starts[c]:sentence_starts[c + 1]
    spans: np.ndarray  # (start, end) of each sentence in its chunk's text
    languages: np.ndarray  # index into LANGUAGES
    word_starts: np.ndarray  # a sentence's token numbers are words[word_starts[s]:word_starts[s + 1]]
    words: np.ndarray
    vocabulary: dict[str, int]

    def __post_init__(self) -> None:
        self._rows = {text: row for row, text in enumerate(self.texts)}
        self._names = list(self.vocabulary)  # numbered in order
        # The addresses of the arrays the compiled choice reads, in one argument (each taken once: taking one costs a
        # few microseconds), or None when they are not laid out as it reads them.
        arrays = [getattr(self, name) for name, _ in _LAYOUT]
        laid_out = all(array.dtype == dtype and array.flags.c_contiguous
                       for array, (_, dtype) in zip(arrays, _LAYOUT, strict=True)) and self.spans.ndim == 2
        self._addresses = (ctypes.c_int64 * len(arrays))(*(array.ctypes.data for array in arrays)) if laid_out else None

    def of(self, text: str) -> tuple[Sentence, ...] | None:
        """The sentences of a chunk's text, or None when no chunk has that text."""
        row = self._rows.get(text)
        if row is None:
            return None
        first, last = int(self.sentence_starts[row]), int(self.sentence_starts[row + 1])
        if first == last:
            return ()
        spans = self.spans[first:last].tolist()
        languages = self.languages[first:last].tolist()
        bounds = self.word_starts[first:last + 1].tolist()
        words = self.words[bounds[0]:bounds[-1]].tolist()
        base = bounds[0]
        return tuple(Sentence(text[start:end], LANGUAGES[language],
                              frozenset(words[bounds[i] - base:bounds[i + 1] - base]), first + i)
                     for i, ((start, end), language) in enumerate(zip(spans, languages, strict=True)))

    def rows(self, texts: Sequence[str]) -> list[int] | None:
        """The rows of the chunks with these texts; None when one is no chunk's."""
        rows = [self._rows.get(text) for text in texts]
        return None if None in rows else rows  # type: ignore[return-value]

    def answer_tokens(self, texts: Sequence[str], words: Sequence[int], joiner: str) -> tuple[str, ...] | None:
        """The `default` tokens of sentences (their texts, and their words' numbers one sentence after the other)
        joined by `joiner` (" " or ""), from theirs; None when that could differ from tokenizing the joined text
        (with "", a sentence that does not end on a closing mark)."""
        if joiner not in ("", " ") or (joiner == "" and any(text[-1:] not in _CLOSED for text in texts[:-1])):
            return None
        return tuple(map(self._names.__getitem__, words))

    def choice(self, chosen: Sequence[tuple[int, int]]) -> Choice:
        """The choice of these sentences (sentence number, chunk rank), best first: their spans and words read."""
        numbers = [number for number, _ in chosen]
        spans = self.spans[numbers].tolist()
        words: list[int] = []
        for number in numbers:  # a sentence's bounds as Python integers: slicing by numpy's is slower
            first, last = self.word_starts[number:number + 2].tolist()
            words += self.words[first:last].tolist()
        return Choice(numbers, [rank for _, rank in chosen], [start for start, _ in spans], [end for _, end in spans],
                      words)

    def chosen(self, rows: Sequence[int], question_words: set[int], asked: int, count: int) -> Choice | None:
        """The extractive generator's choice among the sentences of the chunks `rows` (best first) by the compiled
        loop (`extract.c`): the best `count`, best first (none when no sentence has a word); None where there is no
        compiled loop (or the question has over COMPILED_WORDS words the table knows), and `generators._chosen`
        with `choice` gives the same."""
        library = extract_library()
        if library is None or self._addresses is None or len(question_words) > COMPILED_WORDS or count < 1:
            return None
        room = max(len(rows) + len(question_words), 4 * count + 1 + ANSWER_WORDS)
        while True:
            io = (ctypes.c_int64 * room)(*rows, *sorted(question_words))
            found = library.evalcore_extract(self._addresses, io, room, len(rows), len(question_words), asked, count)
            if found != -2:
                break
            room = io[0]
        if found < 0:  # no memory for the loop's lists: Python's will fail as clearly
            return None
        end = 4 * count + 1
        return Choice(io[:found], io[count:count + found], io[2 * count:2 * count + found],
                      io[3 * count:3 * count + found], io[end:end + io[end - 1]] if found else [])

    def numbers(self, tokens: Sequence[str]) -> set[int]:
        """The numbers of the tokens the table knows (a token no sentence holds matches none)."""
        return {number for number in map(self.vocabulary.get, tokens) if number is not None}


def _extract_signatures() -> compiled.Signatures:
    integer = ctypes.c_int64
    numbers = ctypes.POINTER(integer)
    return {"evalcore_extract": (integer, [numbers, numbers, integer, integer, integer, integer, integer])}


# The compiled choice of sentences, its argument types declared (once per process); None where Python chooses.
extract_library = compiled.loader(EXTRACT, _extract_signatures)


class TableBuilder:
    """Adds chunks one at a time (the index build adds each right after tokenizing it, while jieba's words for its
    Chinese runs are still in the segmentation cache), then `table()`."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.sentence_starts = [0]
        self.spans: list[tuple[int, int]] = []
        self.languages: list[int] = []
        self.word_starts = [0]
        self.words: list[int] = []
        self.vocabulary: dict[str, int] = {}

    def add(self, text: str) -> None:
        """Split, detect and tokenize one chunk's sentences, as the extractive generator would."""
        from evalcore.language.text import language_once, split_sentences, tokens_fresh

        vocabulary, position = self.vocabulary, 0
        for sentence in split_sentences(text):
            start = text.index(sentence, position)  # a sentence is a stripped piece of the text, in order
            position = start + len(sentence)
            self.spans.append((start, position))
            self.languages.append(LANGUAGES.index(language_once(sentence)))
            self.words.extend(vocabulary.setdefault(token, len(vocabulary)) for token in tokens_fresh(sentence))
            self.word_starts.append(len(self.words))
        self.sentence_starts.append(len(self.spans))
        self.texts.append(text)

    def table(self) -> SentenceTable:
        return SentenceTable(self.texts, np.asarray(self.sentence_starts, dtype=np.int64),
                             np.asarray(self.spans, dtype=np.int64).reshape(-1, 2),
                             np.asarray(self.languages, dtype=np.uint8), np.asarray(self.word_starts, dtype=np.int64),
                             np.asarray(self.words, dtype=np.int32), self.vocabulary)


def build_table(texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> SentenceTable:
    """The table of these chunk texts (`progress(done, total)` every few hundred chunks)."""
    builder = TableBuilder()
    for done, text in enumerate(texts, 1):
        builder.add(text)
        if progress and (done % PROGRESS_EVERY == 0 or done == len(texts)):
            progress(done, len(texts))
    return builder.table()


def save_table(table: SentenceTable, path: Path) -> None:
    """Written under a temporary name, then renamed: readers never see half a file."""
    vocabulary = np.frombuffer("\n".join(table.vocabulary).encode("utf-8"), dtype=np.uint8)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as handle:
        np.savez(handle, format=np.asarray([FORMAT, len(table.texts)], dtype=np.int64),
                 sentence_starts=table.sentence_starts, spans=table.spans, languages=table.languages,
                 word_starts=table.word_starts, words=table.words, vocabulary=vocabulary)
    os.replace(handle.name, path)


def load_table(path: Path, texts: Sequence[str]) -> SentenceTable | None:
    """The saved table of these chunk texts; None when there is none, or it was written in another format or for
    another number of chunks."""
    try:
        with np.load(path) as saved:
            if saved["format"].tolist() != [FORMAT, len(texts)]:
                return None
            words = saved["vocabulary"].tobytes().decode("utf-8")
            table = SentenceTable(texts, saved["sentence_starts"], saved["spans"], saved["languages"],
                                  saved["word_starts"], saved["words"],
                                  {word: number for number, word in enumerate(words.split("\n"))} if words else {})
    except (OSError, KeyError, ValueError):
        return None
    if table.sentence_starts.shape != (len(texts) + 1,) or int(table.sentence_starts[-1]) != len(table.spans):
        return None
    return table
