"""A generated test set on disk: a dataset in the five-Parquet format (the source corpus copied as it is, the
accepted questions, their reference answers and graded labels) with `testset.json` beside it, its provenance: the
model, the prompts' hash, the seed, the corpus version, every candidate with its checks, and people's reviews.

The questions in the Parquet files are those the checks kept, less those a person rejected, plus those a person
accepted against the critic (edited texts replacing the generated ones). Every write builds the folder anew
beside its target and renames it into place: a reader sees the old set or the new one, never half of one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.access.principals import Action, Principal
from evalcore.errors import EvalError
from evalcore.language.text import shown
from evalcore.testsets.testset_records import Candidate, Decision, Review

PROVENANCE_FILE = "testset.json"
QUERIES = pa.schema([("id", pa.int64()), ("text", pa.string()), ("answerable", pa.bool_())])
ANSWERS = pa.schema([("id", pa.int64()), ("text", pa.string())])
QRELS = pa.schema([("qid", pa.int64()), ("pid", pa.int64()), ("relevance", pa.int32())])
QAS = pa.schema([("qid", pa.int64()), ("aid", pa.int64())])
_WRITING = threading.RLock()  # one rewrite of a test set at a time in a process (reviews of two sessions)


@dataclass(frozen=True)
class Provenance:
    """What a generated test set was made from and how, and what people decided on it."""

    model: str
    prompts_hash: str
    seed: int
    corpus: Mapping[str, str]  # the source dataset's name and content hash
    settings: Mapping[str, Any]  # kinds, language, questions asked, thresholds
    created_at: str
    candidates: tuple[Candidate, ...]
    reviews: tuple[Review, ...] = ()
    tokens: Mapping[str, int] = field(default_factory=dict)

    def review_of(self) -> dict[int, Review]:
        """The newest review of each question."""
        return {review.qid: review for review in sorted(self.reviews, key=lambda r: r.at)}

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (testset.json)."""
        return {"model": self.model, "prompts_hash": self.prompts_hash, "seed": self.seed, "corpus": dict(self.corpus),
                "settings": dict(self.settings), "created_at": self.created_at, "tokens": dict(self.tokens),
                "candidates": [c.to_dict() for c in self.candidates], "reviews": [r.to_dict() for r in self.reviews]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provenance:
        """From testset.json."""
        return cls(data["model"], data["prompts_hash"], int(data["seed"]), data["corpus"], data["settings"],
                   data["created_at"], tuple(Candidate.from_dict(c) for c in data["candidates"]),
                   tuple(Review.from_dict(r) for r in data.get("reviews", ())), data.get("tokens", {}))


def read_provenance(folder: Path) -> Provenance:
    """The provenance of the test set in this dataset folder (EvalError when it is not a generated test set)."""
    path = folder / PROVENANCE_FILE
    if not path.is_file():
        raise EvalError("this dataset is not a generated test set (it has no testset.json)", where=folder.name,
                        fix="generate one: evalcore testset generate --dataset CORPUS --out NAME")
    try:
        return Provenance.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as error:
        raise EvalError(f"testset.json cannot be read ({error})", where=folder.name) from None


def kept_questions(provenance: Provenance) -> list[Candidate]:
    """The questions the dataset holds: kept by the checks unless a person rejected them, or accepted by a person;
    edits applied."""
    reviews = provenance.review_of()
    kept = []
    for candidate in provenance.candidates:
        review = reviews.get(candidate.qid)
        if review is None and candidate.accepted or review is not None and review.accepted and candidate.question:
            kept.append(candidate if review is None else _edited(candidate, review))
    return kept


def _edited(candidate: Candidate, review: Review) -> Candidate:
    return dataclasses.replace(candidate, question=review.question or candidate.question,
                   answer=candidate.answer if review.answer is None else review.answer)


def write_testset(out: Path, corpus_file: Path, provenance: Provenance, *, replace: bool = False) -> None:
    """Write the dataset and its provenance in a folder beside `out`, then put it in place."""
    with _WRITING:
        if out.exists() and not replace:
            raise EvalError("a dataset already exists there", where=shown(out.name),
                            fix="choose another name, or replace it")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            folder = out.parent / f".{out.name}.writing-{secrets.token_hex(6)}"
            folder.mkdir()
        except OSError as error:
            raise EvalError(f"cannot write there ({error.strerror or error})", where=shown(out.name)) from None
        try:
            _write_files(folder, corpus_file, provenance)
            _put_in_place(folder, out)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _write_files(folder: Path, corpus_file: Path, provenance: Provenance) -> None:
    kept = kept_questions(provenance)
    shutil.copyfile(corpus_file, folder / "corpus.parquet")
    _table(folder, "queries", QUERIES, [{"id": c.qid, "text": c.question, "answerable": c.answerable} for c in kept])
    answered = [c for c in kept if c.answerable and c.answer]
    _table(folder, "answers", ANSWERS, [{"id": c.qid, "text": c.answer} for c in answered])
    _table(folder, "qas", QAS, [{"qid": c.qid, "aid": c.qid} for c in answered])
    _table(folder, "qrels", QRELS, [{"qid": c.qid, "pid": pid, "relevance": label} for c in kept
                                    for pid, label in sorted(c.labels().items())])
    (folder / PROVENANCE_FILE).write_text(json.dumps(provenance.to_dict(), ensure_ascii=False, indent=1),
                                          encoding="utf-8")


def _table(folder: Path, name: str, schema: pa.Schema, rows: Sequence[dict[str, Any]]) -> None:
    pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), folder / f"{name}.parquet")


def _put_in_place(folder: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.replaced-", dir=out.parent))
        os.replace(out, old / "dataset")
    try:
        os.rename(folder, out)
    except OSError as error:
        if old is not None:
            os.replace(old / "dataset", out)
        raise EvalError(f"cannot put the test set in place ({error.strerror or error})", where=shown(out.name)) \
            from None
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def add_review(folder: Path, review: Review) -> Provenance:
    """Record a person's decision on one question and rewrite the dataset with it (EvalError for an unknown id)."""
    with _WRITING:
        provenance = read_provenance(folder)
        if review.qid not in {c.qid for c in provenance.candidates}:
            raise EvalError("no generated question has this id", where=str(review.qid))
        updated = dataclasses.replace(provenance, reviews=(*provenance.reviews, review))
        write_testset(folder, folder / "corpus.parquet", updated, replace=True)
    return updated


def review_question(folder: Path, qid: int, decision: str, *, author: str = "", question: str | None = None,
                    answer: str | None = None, note: str = "", principal: Principal | None = None) -> Review:
    """A person's decision on one generated question (accept, edit with new texts, reject), recorded in the
    provenance and applied to the dataset at once. The author is the acting key (a principal names no one else),
    or for the local operator (the CLI) the name given."""
    if principal is not None:
        principal.require(Action.CHANGE)
        author = f"key {principal.key_id}" if principal.key_id else "local"
    try:
        chosen = Decision(decision)
    except ValueError:
        raise EvalError("not a review decision", where="decision", found=decision,
                        expected=", ".join(d.value for d in Decision)) from None
    question, answer = (" ".join(text.split()) if text is not None else None for text in (question, answer))
    if chosen == Decision.EDIT and not (question or answer):
        raise EvalError("an edit gives the new question or the new answer", where="question",
                        fix="give --question and/or --answer, or accept it as it is")
    if chosen != Decision.EDIT and (question or answer):
        raise EvalError("new texts are given with an edit only", where="decision", found=chosen.value,
                        fix="use the decision edit")
    review = Review(qid, chosen, author.strip() or "local", time.time(), question or None, answer or None, note.strip())
    add_review(folder, review)
    return review
