"""Measures of an answer against what it should say: `coverage` of the expected answer, `exact_match`, and
`sources_found`."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from itertools import chain, filterfalse

from evalcore.language.text import LONG_TEXT, TOKENIZER, fold, fold_once, has_han, is_han, tokens_once
from evalcore.metrics.measure import Inputs, Measure
from evalcore.metrics.stopwords import stopwords

# Joins a text's tokens so that they are folded in one call: no token holds it, and folding (case folding, NFKD,
# combining marks dropped) maps each character on its own, with this starter as a barrier, so the pieces of the
# folded whole are the folded tokens.
_JOINER = "\0"


def _important(word: str) -> bool:
    """Not a stopword, and a number, a Han word of 2+ characters, or 3+ letters."""
    if word in stopwords():
        return False
    if any(map(str.isdigit, word)):
        return True
    if is_han(word):
        return len(word) >= 2
    return sum(map(str.isalpha, word)) >= 3


def _fold_all(words: tuple[str, ...]) -> tuple[str, ...]:
    """Each token folded (`fold`), in one pass over the joined text. ASCII text folds to its lower case, and tokens
    already are (the tokenizer case folds): those are kept as they are. Other text's tokens are read from the
    foldings of the tokens seen before (`_FOLDED`), the new ones folded together."""
    joined = _JOINER.join(words)
    if not joined.isascii():
        return _fold_known(words)
    lowered = joined.lower()
    return words if lowered == joined else tuple(lowered.split(_JOINER))


# Tokens' foldings, and folded words' importance (`_important`): a dataset's words come back question after question,
# and a dict read by `map` in C is cheaper than folding them again. Each is replaced by an empty one past
# `_KEPT_WORDS` (never emptied in place: a reader holds the one it started with), so it stays small whatever the
# campaign's size.
_FOLDED: dict[str, str] = {}
_IMPORTANCE: dict[str, bool] = {}
_KEPT_WORDS = 1 << 15  # some 3 MB for both after 10,000 realistic questions (10,000 and 15,000 words)


def _fold_known(words: tuple[str, ...]) -> tuple[str, ...]:
    """Each token folded, the new ones in one pass over their joined text."""
    global _FOLDED
    known = _FOLDED
    new = tuple(dict.fromkeys(filterfalse(known.__contains__, words)))
    if new:
        if len(known) >= _KEPT_WORDS:  # the text's words are all new to the next table
            known, new = {}, tuple(dict.fromkeys(words))
            _FOLDED = known
        known.update(zip(new, fold_once(_JOINER.join(new)).split(_JOINER), strict=True))
    return tuple(map(known.__getitem__, words))


def _important_of(words: tuple[str, ...]) -> tuple[str, ...]:
    """The important ones of distinct folded words, in order."""
    global _IMPORTANCE
    known = _IMPORTANCE
    new = list(filterfalse(known.__contains__, words))
    if new:
        if len(known) >= _KEPT_WORDS:  # the words are all new to the next table
            known, new = {}, list(words)
            _IMPORTANCE = known
        known.update(zip(new, map(_important, new), strict=True))
    return tuple(filter(known.__getitem__, words))


@functools.lru_cache(maxsize=1 << 6)
def _short_folded(text: str) -> tuple[str, ...]:
    return _fold_all(tokens_once(text))


def _folded(text: str) -> tuple[str, ...]:
    """The text's `default` tokens, folded: an answer and its references are read by coverage and exact match in turn
    (only the last few texts are kept, and no long one)."""
    return _short_folded(text) if len(text) <= LONG_TEXT else _fold_all(tokens_once(text))


def important_words(text: str) -> list[str]:
    """The distinct important words of `text`, folded (case and accents removed), in order."""
    return list(_important_words(text))


@functools.lru_cache(maxsize=1 << 12)
def _important_words(text: str) -> tuple[str, ...]:
    """important_words as a tuple, cached: a dataset's expected answers are scored again and again. The expected text
    is mostly a reference, whose tokens BLEU and ROUGE have just read (`tokens_once` keeps them for the next reader)."""
    return _important_of(tuple(dict.fromkeys(_folded(text))))  # each distinct word looked at once


@functools.lru_cache(maxsize=4)
def _answer_words(answer: str) -> frozenset[str]:
    """The answer's folded tokens, read against each expected text in turn."""
    return frozenset(_folded(answer))


@functools.lru_cache(maxsize=4)
def _answer_text(answer: str) -> str:
    """The answer's folded text, where Han words are looked for."""
    return fold_once(answer)


def coverage(answer: str, expected: str) -> float | None:
    """Share of the expected answer's important words found in the answer; None if it has none.

    Words match after folding. A Han word matches anywhere in the answer's folded text, because
    jieba may cut the same characters differently in another sentence.
    """
    wanted = _important_words(expected)
    if not wanted:
        return None
    missing = list(filterfalse(_answer_words(answer).__contains__, wanted))  # in C: most words are found or not
    found = len(wanted) - len(missing)
    if missing and not _JOINER.join(missing).isascii() and any(map(is_han, missing)):  # a Han word is not ASCII
        text = _answer_text(answer)
        found += sum(is_han(word) and word in text for word in missing)
    return found / len(wanted)


def normalized(text: str) -> tuple[str, ...]:
    """The text as exact match compares it: the `default` tokens (case and punctuation dropped), accents folded, and
    Han text character by character (jieba may cut the same characters differently in another sentence)."""
    return _normalized(_folded(text))


def _normalized(folded: tuple[str, ...]) -> tuple[str, ...]:
    """`normalized` of a text's folded tokens."""
    if not has_han(_JOINER.join(folded)):
        return folded  # no word is Han
    return tuple(chain.from_iterable(map(_compared, folded)))


@functools.lru_cache(maxsize=1 << 14)
def _compared(word: str) -> tuple[str, ...]:
    """A folded word as exact match compares it: a Han word character by character, any other whole (cached as
    `_important`: the frequent words come back)."""
    return tuple(word) if is_han(word) else (word,)


def exact_match(answer: str, expected: Sequence[str]) -> bool | None:
    """Whether the normalized answer equals some normalized expected text; None when none has a word."""
    wanted = [words for words in map(_folded, expected) if words]  # normalized is empty when folded is
    if not wanted:
        return None
    # Equal normalized texts hold as many characters (Han words are only cut into theirs): the answer is normalized
    # only when some expected text has its number of characters, which an answer seldom has.
    mine = _folded(answer)
    size = sum(map(len, mine))
    alike = [words for words in wanted if sum(map(len, words)) == size]
    return bool(alike) and _normalized(mine) in set(map(_normalized, alike))


def _matches(expected: str, source: Mapping[str, object]) -> bool:
    # Titles and file names match on any part ("CGV" finds "CGV_2024.pdf"), ids only whole.
    names = (fold(str(source.get(key) or "")) for key in ("title", "file_name"))
    identifier = source.get("id")
    return any(expected in name for name in names) or (identifier is not None
                                                        and expected == fold(str(identifier)).strip())


def sources_found(expected_sources: Sequence[str], retrieved_sources: Sequence[Mapping[str, object]]) -> bool | None:
    """True when every expected source is in a retrieved title or file name, or equals its id."""
    wanted = [fold(source).strip() for source in expected_sources if source and source.strip()]
    if not wanted:
        return None
    return all(any(_matches(item, source) for source in retrieved_sources) for item in wanted)


def _coverage(inputs: Inputs) -> float | None:
    """The best coverage over what the answer should say (the expected answer, else every reference)."""
    shares = [share for text in inputs.expected
              if inputs.answer is not None and (share := coverage(inputs.answer, text)) is not None]
    return max(shares) if shares else None


def _exact_match(inputs: Inputs) -> float | None:
    matched = exact_match(inputs.answer or "", inputs.expected)
    return None if matched is None else 1.0 if matched else 0.0


def _sources_found(inputs: Inputs) -> float | None:
    found = sources_found(list(inputs.expected_sources or ()), inputs.retrieved_sources)
    return None if found is None else 1.0 if found else 0.0


DECLARED = (
    Measure("coverage", "share of the expected answer's important words (no stopword; a digit, 2+ Han characters or "
            "3+ letters) found in the answer, case and accents ignored.", "suite", needs=("answer", "expected"),
            settings=(("tok", TOKENIZER), ("stop", "en,fr,zh")), verdict_priority=1, compute=_coverage,
            checked="hand-checked tables in English, French and Chinese"),
    Measure("sources_found", "1 when every expected source is contained in a retrieved title or file name or equals "
            "its id, case and accents ignored, else 0.", "suite", binary=True, settings=(("match", "fold"),),
            verdict_priority=2, compute=_sources_found, checked="hand-checked tables"),
    Measure("exact_match", "1 when the answer equals the expected answer (else one of the references) once both are "
            "normalized: the default tokens, so case and punctuation are dropped, accents folded, Han text compared "
            "character by character; else 0 (exact match, Rajpurkar et al. 2016, SQuAD, without its English-only "
            "article removal).", "generation", binary=True, needs=("answer", "expected"),
            settings=(("tok", TOKENIZER), ("match", "fold"), ("refs", "any")), compute=_exact_match,
            checked="hand-made tables in English, French and Chinese"),
)
