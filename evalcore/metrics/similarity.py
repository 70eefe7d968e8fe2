"""Semantic answer similarity: the cosine between the answer's and a reference answer's sentence embeddings.

Risch, Möller, Gutsch and Pietsch (2021), "Semantic Answer Similarity for Evaluating Question Answering
Models": an answer worded differently from its reference is still scored by meaning. Here a
bi-encoder (the offline multilingual models retrieval uses), the best reference when there are several.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from evalcore.metrics.measure import Inputs, Measure

# One text in, its embedding out (any norm: the cosine normalises).
Embed = Callable[[str], np.ndarray]


class AnswerEmbedding(NamedTuple):
    """The embedding model answers are compared with: its name (in the signature) and how it embeds a text."""

    model: str
    embed: Embed


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """a·b / (|a| |b|), 0 when either vector is zero."""
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / norms) if norms else 0.0


def answer_similarity(answer: str, references: Sequence[str], embed: Embed) -> float | None:
    """max over the references of cosine(embed(answer), embed(reference)); None without an answer or a reference."""
    texts = [text for text in references if text.strip()]
    if not answer.strip() or not texts:
        return None
    vector = np.asarray(embed(answer), dtype=np.float64)
    return max(cosine(vector, np.asarray(embed(text), dtype=np.float64)) for text in texts)


def _of_question(inputs: Inputs) -> float | None:
    """The similarity of the answer to what it should say (the expected answer, else every reference)."""
    if inputs.similarity is None or inputs.answer is None:
        return None
    return answer_similarity(inputs.answer, inputs.expected, inputs.similarity.embed)


def _model(inputs: Inputs) -> dict[str, str]:
    return {"model": inputs.similarity.model if inputs.similarity else "none"}


DECLARED = (
    Measure("answer_similarity", "max over the references of cos(e(answer), e(reference)), e a multilingual sentence "
            "embedding (Risch et al. 2021, semantic answer similarity); off unless answer_similarity_model is set.",
            "generation", needs=("answer", "expected", "similarity"), settings=(("model", "none"), ("refs", "max")),
            compute=_of_question, signed=_model, checked="a direct numpy cosine on the embedding models' own vectors"),
)
