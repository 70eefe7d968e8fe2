"""Campaigns with the shapes of real ones, written through the runner's own writer: bench/compare.py's store.

A real campaign's measures have different counts: retrieval on the labelled questions, generation on
those with a reference answer, the abstention measures split between answerable and unanswerable
questions, graded retrieval where labels are graded, and judges (a 1-5 score with its pass/fail rate,
a pass/fail judge) where they ran. 23 measures, 30 retrieved passages with long document titles.
Campaign B changes some questions' values and keeps the others (real comparisons have many zero
differences, so each measure has its own count of non-zero ones).
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

from dashboard import WORDS, campaign_row, store_campaign

from evalcore.campaigns import Outcome, Question, get_manager
from evalcore.judges import Verdict
from evalcore.metrics import MEASURES
from evalcore.targets import Retrieved

RETRIEVAL = ["precision", "recall", "ndcg@3", "ndcg@10", "mrr", "map", "ndcg_graded@3", "ndcg_graded@10"]
GENERATION = ["bleu1", "bleu2", "bleu4", "rouge1", "rouge2", "rougel"]
GRADED = ["graded.ndcg@3", "graded.xdcg@3", "graded.holes_ratio"]
PASSAGES = 30
CORPUS_SIZE = 20_000


def title(pid: int) -> str:
    """A long document id, as real collections have."""
    return f"clueweb09-en{pid % 10_000:04d}-{pid % 97:02d}-{pid:05d}"


def questions(count: int) -> list[Question]:
    """85% labelled (60% graded), 70% with a reference answer, 8% unanswerable."""
    rng = random.Random(0)
    asked = []
    for n in range(count):
        labelled, graded = rng.random() < 0.85, rng.random() < 0.6
        relevant = ({rng.randrange(CORPUS_SIZE): rng.randint(1, 3 if graded else 1) for _ in range(rng.randint(1, 4))}
                    if labelled else None)
        reference = (" ".join(rng.choices(WORDS, k=20)),) if rng.random() < 0.7 else ()
        asked.append(Question(n, n + 1, f"Question {n + 1}: {' '.join(rng.choices(WORDS, k=12))}?",
                              references=reference, relevant=relevant, answerable=rng.random() >= 0.08))
    return asked


def graded(question: Question) -> bool:
    """Labels beyond 1: the graded measures apply."""
    return bool(question.relevant) and max(question.relevant.values()) > 1


def measures(question: Question, rng: random.Random) -> dict[str, float]:
    """The measures a real campaign stores for this question (discrete where the measure is)."""
    values: dict[str, float] = {}
    if question.relevant:
        values |= {name: rng.choice([0.0, 0.0, 1 / 3, 0.5, 0.63, 1.0]) for name in RETRIEVAL}
    if question.references:
        values |= {name: round(rng.random(), 4) for name in GENERATION}
    if question.answerable:
        values["false_abstention"] = float(rng.random() < 0.05)
    else:
        refused = float(rng.random() < 0.6)
        values |= {"correct_abstention": refused, "hallucination": 1.0 - refused}
    if graded(question):
        values |= {name: round(rng.random(), 3) for name in GRADED}
    return values


def verdict(judge: str, score: float | None, result: str) -> Verdict:
    """A judge's verdict as the runner stores it."""
    return Verdict(judge=judge, model="judge-model", prompt_hash="h" * 12, prompt_version="1",
                   signature=f"{judge}|v1", threshold=3.0 if judge == "score" else None, score=score,
                   reason="because", result=result)


def judges(question: Question, rng: random.Random) -> dict[str, Verdict]:
    """A 1-5 score (needs a reference; a few unreadable) and a pass/fail groundedness judge (every question)."""
    out = {}
    if question.references and rng.random() < 0.97:
        score = float(rng.randint(1, 5))
        out["score"] = verdict("score", score, "pass" if score >= 3 else "fail")
    grounded = rng.random() < 0.8   # needs no reference: asked of every question
    out["groundedness_pro"] = verdict("groundedness_pro", float(grounded), "pass" if grounded else "fail")
    return out


def outcome(question: Question, rng: random.Random) -> Outcome:
    """An answer of ~40 words, 30 retrieved passages (some relevant), the measures and verdicts."""
    found = [pid for pid in question.relevant or {} if rng.random() < 0.6]
    pids = list(dict.fromkeys(found + rng.sample(range(CORPUS_SIZE), PASSAGES)))[:PASSAGES]
    rng.shuffle(pids)
    retrieved = tuple(Retrieved(pid, title(pid), " ".join(random.Random(pid).choices(WORDS, k=30)), 1.0 - k / 30,
                                {"bm25": 30.0 - k}) for k, pid in enumerate(pids))
    values = measures(question, rng)
    return Outcome(answer=" ".join(rng.choices(WORDS, k=40)), retrieved=retrieved, context=retrieved[:5],
                   measures=values, signatures={name: MEASURES[name].signature for name in values},
                   judges=judges(question, rng), latency_s=rng.uniform(0.01, 0.2), diagnosis="ok")


def fill(db: str, count: int, changed: float = 0.4) -> None:
    """Campaigns bench_00 (A) and bench_01 (B): B redraws the outcome of a `changed` share of the questions."""
    store = get_manager(db).store
    rng, now, asked = random.Random(1), time.time(), questions(count)
    a_outcomes = [outcome(q, rng) for q in asked]
    b_outcomes = [outcome(q, rng) if rng.random() < changed else o for q, o in zip(asked, a_outcomes, strict=True)]
    for number, outcomes in enumerate((a_outcomes, b_outcomes)):
        store_campaign(store, campaign_row(number, count, now), asked, outcomes)
    get_manager(db).close()


def fill_as(code: Path, db: Path, count: int) -> None:
    """fill() run by another checkout's own code (its bench/shapes.py), so that the store is in the format that code
    reads: a newer schema is refused by older code, whatever the values."""
    script = "import sys; sys.path.insert(0, 'bench'); from shapes import fill; fill(sys.argv[1], int(sys.argv[2]))"
    subprocess.run([sys.executable, "-c", script, str(db), str(count)], cwd=code, check=True, capture_output=True)
