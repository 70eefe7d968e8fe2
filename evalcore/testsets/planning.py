"""Which passages each generated question is written from, decided before any model is asked: documents taken in
turn (so that many documents get a question), a seed for the order, and ids that depend on the plan alone (the same
settings give the same ids, whatever the replies)."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from itertools import islice
from typing import NamedTuple

from evalcore.datasets import Passage
from evalcore.errors import EvalError
from evalcore.testsets.testset_records import LANGUAGES, Kind

MIN_WORDS = 8  # a passage shorter than this has no fact to ask about
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W\d_]+")
_FRENCH = frozenset(("le", "la", "les", "des", "du", "un", "une", "est", "et", "dans", "pour", "que", "qui", "sur",
                    "pas", "avec", "au", "aux", "ce", "cette", "sont", "par", "plus", "ne", "se", "ses", "leur", "été",
                    "être", "où"))
_ENGLISH = frozenset(("the", "and", "is", "of", "to", "in", "that", "for", "with", "on", "are", "it", "as", "by",
                     "this", "be", "was", "from", "at", "an", "or", "which", "have", "has"))


def language_of(text: str) -> str:
    """en, fr or zh: Chinese when Han characters are a fifth of its letters, French when its common words outnumber
    English's, else English."""
    han = len(_HAN.findall(text))
    words = [word.casefold() for word in _WORD.findall(text)]
    if han and han >= 0.2 * (han + sum(len(word) for word in words if not _HAN.search(word))):
        return "zh"
    french = sum(word in _FRENCH for word in words)
    english = sum(word in _ENGLISH for word in words)
    return "fr" if french > english else "en"


class Planned(NamedTuple):
    """One question to write: where in the plan, what kind, from which passages, in which language, its id."""

    position: int
    kind: Kind
    sources: tuple[int, ...]
    language: str
    qid: int


def _usable(passage: Passage) -> bool:
    """Whether the passage has MIN_WORDS words (two Han characters for a word), counting no further."""
    words = sum(1 for _ in islice(_WORD.finditer(passage.text), MIN_WORDS))
    return words >= MIN_WORDS or words + sum(1 for _ in islice(_HAN.finditer(passage.text), 2 * MIN_WORDS)) // 2 \
        >= MIN_WORDS


def _in_turn(passages: Sequence[Passage], rng: random.Random) -> list[Passage]:
    """Every usable passage, one document after another in turn (documents and passages shuffled by the seed)."""
    documents: dict[str, list[Passage]] = {}
    for passage in passages:
        if _usable(passage):
            documents.setdefault(passage.file_name or passage.title or str(passage.pid), []).append(passage)
    groups = [documents[name] for name in sorted(documents)]
    rng.shuffle(groups)
    for group in groups:
        rng.shuffle(group)
    return [group[turn] for turn in range(max(map(len, groups), default=0)) for group in groups if turn < len(group)]


def _partner(source: Passage, ordered: list[Passage], at: int) -> Passage:
    """The second passage of a two-passage question: another of the same document when it has one, else the next
    passage in turn."""
    same = [p for p in ordered if p.pid != source.pid and p.file_name == source.file_name and source.file_name]
    if same:
        return min(same, key=lambda p: p.pid)
    return ordered[(at + 1) % len(ordered)]


def question_id(kind: Kind, sources: Sequence[int], language: str, seed: int, position: int) -> int:
    """A stable id: 15 hex digits of a hash of what the question is planned from (fits int64)."""
    text = f"{kind.value}|{','.join(map(str, sources))}|{language}|{seed}|{position}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


def plan(passages: Sequence[Passage], count: int, kinds: Sequence[Kind], *, seed: int,
         language: str | None) -> list[Planned]:
    """`count` questions, kinds in turn, passages in turn over the documents; EvalError when no passage is long
    enough to ask about (or a two-passage question has a corpus of one)."""
    if language is not None and language not in LANGUAGES:
        raise EvalError("not a language questions are written in", where="language", found=language,
                        expected=", ".join(LANGUAGES) + " (or none: each passage's own)")
    ordered = _in_turn(passages, random.Random(seed))
    if not ordered:
        raise EvalError(f"no passage has {MIN_WORDS} words or more: nothing to ask about", where="dataset",
                        fix="import documents with text (corpus import), then generate")
    if Kind.TWO_PASSAGES in kinds and len(ordered) < 2:
        raise EvalError("a two-passage question needs two passages; the corpus has one", where="kinds",
                        fix="leave two-passages out of the kinds")
    planned = []
    for position in range(count):
        kind = kinds[position % len(kinds)]
        at = position % len(ordered)
        source = ordered[at]
        sources = (source.pid, _partner(source, ordered, at).pid) if kind == Kind.TWO_PASSAGES else (source.pid,)
        tongue = language or language_of(source.text)
        planned.append(Planned(position, kind, sources, tongue, question_id(kind, sources, tongue, seed, position)))
    return planned
