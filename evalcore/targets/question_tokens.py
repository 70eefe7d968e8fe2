"""The `default` tokens of every question and reference answer of a dataset, kept in the index folder.

A campaign reads each question's tokens (BM25's query, the extractive generator's words) and each reference's
(BLEU, ROUGE, coverage). A dataset's questions are evaluated again and again, one change at a time, and jieba on
their Chinese was a sizeable share of every campaign's CPU. So the first campaign on a dataset's content tokenizes
them all once and saves the table in the index folder (`tokens.npz`, in a folder named by the dataset's content
digest and the tokenizer); later campaigns read it back and `tokens_once` reads a text's tokens from it (a text not
in the table is tokenized as before).

A token is kept as its number in the table's own vocabulary, each text as its tokens' numbers in order; the texts
themselves are not saved: they are the dataset's, in a fixed order (`dataset_texts`), which its digest pins. Each
text's language (`language_once`: the extractive generator answers in the question's) is kept beside its tokens.
"""

from __future__ import annotations

import os
import tempfile
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from pathlib import Path
from typing import Protocol

import numpy as np

from evalcore.targets.sentences import LANGUAGES

FILE = "tokens.npz"
FORMAT = 2
PROGRESS_EVERY = 500
_VOCABULARIES = 4  # vocabularies a table keeps its texts numbered in


class _Question(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def references(self) -> tuple[str, ...]: ...


class Progress(Protocol):
    def __call__(self, done: int, total: int, step: str = ...) -> None: ...


@dataclass
class TokenTable:
    """Texts' tokens (`get`), read from number arrays: row r's token numbers are words[starts[r]:starts[r + 1]]; its
    language is LANGUAGES[languages[r]] (`language`)."""

    texts: Sequence[str]
    starts: np.ndarray
    words: np.ndarray
    names: list[str]
    languages: np.ndarray
    _rows: dict[str, int] = field(init=False, repr=False)
    _languages: list[str] = field(init=False, repr=False)
    # By a vocabulary's id: the vocabulary, and the texts' tokens numbered in it (`_numbered`).
    _vocabularies: dict[int, tuple[Mapping[str, int], np.ndarray, list[int]]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rows = {text: row for row, text in enumerate(self.texts)}
        self._vocabularies = {}
        self._languages = [LANGUAGES[number] for number in self.languages.tolist()]

    def get(self, text: str) -> tuple[str, ...] | None:
        """The text's tokens, or None when the table does not hold it."""
        row = self._rows.get(text)
        if row is None:
            return None
        return tuple(map(self.names.__getitem__, self.words[self.starts[row]:self.starts[row + 1]].tolist()))

    def language(self, text: str) -> str | None:
        """The text's `language_once`, or None when the table does not hold it."""
        row = self._rows.get(text)
        return None if row is None else self._languages[row]

    def numbers(self, text: str, vocabulary: Mapping[str, int]) -> list[int] | None:
        """The text's tokens as their numbers in `vocabulary`, in order, those it does not hold left out; None when
        the table does not hold the text. The table's words are looked up in a vocabulary once (`_numbered`)."""
        row = self._rows.get(text)
        if row is None:
            return None
        words, starts = self._numbered(vocabulary)
        numbers: list[int] = words[starts[row]:starts[row + 1]].tolist()
        return numbers

    def _numbered(self, vocabulary: Mapping[str, int]) -> tuple[np.ndarray, list[int]]:
        """Every text's tokens numbered in `vocabulary` (those it lacks dropped), one after the other, and where each
        text's start: worked out the first time a vocabulary is asked for (a few milliseconds for a dataset of
        10,000 questions), kept for the last few vocabularies (the index's terms, the sentence table's words)."""
        found = self._vocabularies.get(id(vocabulary))
        if found is not None and found[0] is vocabulary:
            return found[1], found[2]
        lookup = np.fromiter(map(vocabulary.get, self.names, repeat(-1)), dtype=np.int64, count=len(self.names))
        mapped = lookup[self.words] if len(self.words) else np.zeros(0, dtype=np.int64)
        held = mapped >= 0
        before = np.concatenate([[0], np.cumsum(held)])  # the held tokens before each token
        words, starts = mapped[held].astype(np.int32), before[self.starts].tolist()
        vocabularies = dict(list(self._vocabularies.items())[-(_VOCABULARIES - 1):])  # replaced whole: no lock
        vocabularies[id(vocabulary)] = (vocabulary, words, starts)
        self._vocabularies = vocabularies
        return words, starts


def dataset_texts(questions: Iterable[_Question]) -> list[str]:
    """The distinct texts of the questions and then of their references, in order."""
    questions = list(questions)
    return list(dict.fromkeys(chain((q.text for q in questions),
                                    chain.from_iterable(q.references for q in questions))))


def build_table(texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> TokenTable:
    """Tokenize every text (`tokens_fresh`: what `tokens_once` gives, nothing kept in the caches) and tell its
    language."""
    from evalcore.language.text import language_once, tokens_fresh

    vocabulary: dict[str, int] = {}
    starts: list[int] = [0]
    words: list[int] = []
    languages: list[int] = []
    for done, text in enumerate(texts, 1):
        words.extend(vocabulary.setdefault(token, len(vocabulary)) for token in tokens_fresh(text))
        starts.append(len(words))
        languages.append(LANGUAGES.index(language_once(text)))
        if progress and (done % PROGRESS_EVERY == 0 or done == len(texts)):
            progress(done, len(texts))
    return TokenTable(texts, np.asarray(starts, dtype=np.int64), np.asarray(words, dtype=np.int32), list(vocabulary),
                      np.asarray(languages, dtype=np.uint8))


def save_table(table: TokenTable, path: Path) -> None:
    """Written under a temporary name, then renamed: readers never see half a file."""
    names = np.frombuffer("\n".join(table.names).encode("utf-8"), dtype=np.uint8)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as handle:
        np.savez(handle, format=np.asarray([FORMAT, len(table.texts)], dtype=np.int64), starts=table.starts,
                 words=table.words, names=names, languages=table.languages)
    os.replace(handle.name, path)


def load_table(path: Path, texts: Sequence[str]) -> TokenTable | None:
    """The saved table of these texts; None when there is none, or it is in another format, for another number of
    texts, or damaged."""
    try:
        with np.load(path) as saved:
            if saved["format"].tolist() != [FORMAT, len(texts)]:
                return None
            joined = saved["names"].tobytes().decode("utf-8")
            starts, words, languages = saved["starts"], saved["words"], saved["languages"]
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    names = joined.split("\n") if joined else []
    if starts.shape != (len(texts) + 1,) or int(starts[0]) != 0 or int(starts[-1]) != len(words) \
            or bool(np.any(np.diff(starts) < 0)) or (len(words) and (int(words.min()) < 0
                                                                      or int(words.max()) >= len(names))) \
            or languages.shape != (len(texts),) \
            or (len(texts) and not 0 <= int(languages.min()) <= int(languages.max()) < len(LANGUAGES)):
        return None
    return TokenTable(texts, starts, words, names, languages)


_MEMO: OrderedDict[str, TokenTable] = OrderedDict()
_MEMO_LOCK = threading.Lock()
_MEMO_SIZE = 4


def dataset_tokens(content_hash: str, questions: Sequence[_Question], root: Path,
                   progress: Progress | None = None, build: bool = True) -> TokenTable | None:
    """The dataset's token table: from this process's memo, else the index folder `root`, else built and saved there
    (one build at a time per dataset, over every process: the index folder's lock); with `build` False, None where
    none is kept yet."""
    from evalcore.language.text import tokenizer_key
    from evalcore.targets.knowledge import building

    folder = root / f"tokens-{FORMAT}-{content_hash[:24]}-tok_{tokenizer_key()}"
    key = str(folder.resolve())
    with _MEMO_LOCK:
        table = _MEMO.get(key)
    if table is not None:
        return table
    texts = dataset_texts(questions)
    if not build:
        table = load_table(folder / FILE, texts)
        return None if table is None else _remembered(key, table)
    with building(folder, progress):
        table = load_table(folder / FILE, texts)
        if table is None:
            step = None
            if progress is not None:
                def step(done: int, total: int) -> None:
                    progress(done, total, "reading the words of the questions and references")
            table = build_table(texts, step)
            save_table(table, folder / FILE)
    return _remembered(key, table)


def _remembered(key: str, table: TokenTable) -> TokenTable:
    """The table, kept in this process's memo (the last few)."""
    with _MEMO_LOCK:
        _MEMO[key] = table
        _MEMO.move_to_end(key)
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return table


def clear_memo() -> None:
    """Forget the tables held in this process (the files stay)."""
    with _MEMO_LOCK:
        _MEMO.clear()
