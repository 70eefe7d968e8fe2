"""Measure names stored as short codes in a question's measures and pass/fail marks (schema version 27 on).

A campaign's every row names the same measures: on a realistic corpus the names were 535 of the 833 bytes a question's
measures and marks took (`graded.total_ground_truth_documents`: 36 characters for one number). A row written from
schema version 27 on stores each key as `~` and one character for a measure of the list below, and as `~~` and the name
for any other (a measure added later, a rubric's judge), so every key of such a row starts with `~` and no key is read
two ways; a row written before keeps the names and reads as it did. The values are stored as they were.

The list is append-only: a measure's code is its place in it, fixed once stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CODED_NAMES = (
    "precision", "recall", "ndcg@3", "ndcg@10", "mrr", "map", "ndcg_graded@3", "ndcg_graded@10", "bleu1", "bleu2",
    "bleu4", "rouge1", "rouge2", "rougel", "answer_similarity", "coverage", "sources_found", "exact_match",
    "checks_passed", "correct_abstention", "hallucination", "false_abstention", "graded.ndcg@3", "graded.xdcg@3",
    "graded.fidelity", "graded.top1_relevance", "graded.top3_max_relevance", "graded.holes", "graded.holes_ratio",
    "graded.total_retrieved_documents", "graded.total_ground_truth_documents", "judge.score", "judge.retrieval",
    "judge.groundedness", "judge.groundedness_pro", "judge.relevance", "judge.completeness", "judge.refusal",
    "judge.claims",
)
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
MARK = "~"  # what every key of a coded row starts with
CODE_OF = {name: MARK + _ALPHABET[n] for n, name in enumerate(CODED_NAMES)}
NAME_OF = {code: name for name, code in CODE_OF.items()}
CODED_HEAD = '{"' + MARK  # how a coded row's stored text starts (an empty row is `{}`, the same both ways)


def coded(values: Mapping[str, Any]) -> dict[str, Any]:
    """A row's values by measure under the keys it is stored with."""
    code = CODE_OF.get
    return {code(name) or MARK + MARK + name: value for name, value in values.items()}


def named(values: dict[str, Any]) -> dict[str, Any]:
    """A stored row's values (decoded from its text) by measure name: a coded row's keys read back, an older row's
    as they are."""
    if not values or not next(iter(values)).startswith(MARK):
        return values
    name = NAME_OF.get
    return {name(key) or key[2:]: value for key, value in values.items()}


def sql_name(column: str) -> str:
    """SQL giving the measure name of a key (`column`: a JSON object entry's key) of a row's measures, coded or not;
    literals from the fixed list above only."""
    cases = " ".join(f"WHEN '{code}' THEN '{name}'" for code, name in NAME_OF.items())
    return (f"CASE WHEN {column} LIKE '{MARK}{MARK}%' THEN substr({column}, 3) "
            f"ELSE CASE {column} {cases} ELSE {column} END END")


def stored_keys(name: str) -> tuple[str, str]:
    """The keys a measure may be stored under: coded (schema version 27 on), and its name (rows written before)."""
    return CODE_OF.get(name) or MARK + MARK + name, name
