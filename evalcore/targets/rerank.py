"""Rerankers: rescore the retrieved chunks, keep those over `rerank_threshold`, best `rerank_top_k`.

Score scales: `embedding` is the cosine of a second model (-1..1); `llm` is 1.0 for a yes and
0.0 for a no; `http` is the server's relevance_score (0..1 for TEI/Jina/Cohere-style servers).
If nothing survives, the retrieval list is used and a note says so (never silently).
"""

from __future__ import annotations

import os
import re
from typing import Any, Protocol

from evalcore.costs import RERANK
from evalcore.errors import EvalError
from evalcore.models import (
    ChatModel,
    LocalChatModel,
    OpenAIChatModel,
    check_reachable,
    counted_as,
    new_client,
    post_json,
)
from evalcore.targets.base import RERANK_EMPTY_NOTE, Hit, Retrieved, TargetAnswer
from evalcore.targets.knowledge import KnowledgeBase, embed_query
from evalcore.targets.target_config import TargetConfig

LLM_RERANK_SYSTEM = "You judge whether a passage helps answer a question. Reply with one word: yes or no."
LLM_RERANK_PROMPT = "Question: {question}\n\nPassage: {title}\n{text}\n\nDoes the passage help answer the question?"
_YES = {"yes", "oui", "是", "y", "true"}


class Reranker(Protocol):
    """Scores for some of the hits, by their position in the list (missing = not relevant)."""

    name: str

    def scores(self, question: str, hits: list[Hit], answer: TargetAnswer) -> dict[int, float]: ...


class EmbeddingReranker:
    """Cosine similarity under a second embedding model (its chunk vectors come from the index)."""

    def __init__(self, kb: KnowledgeBase, model: str) -> None:
        self.kb, self.model, self.name = kb, model, f"embedding:{model}"

    def scores(self, question: str, hits: list[Hit], answer: TargetAnswer) -> dict[int, float]:
        """Cosine of each hit's chunk with the question."""
        query = embed_query(self.model, question)
        vectors = self.kb.embeddings[self.model][[hit.row for hit in hits]]
        return dict(enumerate((vectors @ query).tolist()))


class LlmReranker:
    """Pointwise yes/no from a chat model, one call per hit (cached like every call)."""

    def __init__(self, model: ChatModel) -> None:
        self.model, self.name = model, f"llm:{model.name}"

    def scores(self, question: str, hits: list[Hit], answer: TargetAnswer) -> dict[int, float]:
        """1.0 when the model says the passage helps, else 0.0."""
        result = {}
        for position, hit in enumerate(hits):
            prompt = LLM_RERANK_PROMPT.format(question=question, title=hit.item.title, text=hit.item.text)
            with counted_as(RERANK):
                reply = self.model.chat([{"role": "system", "content": LLM_RERANK_SYSTEM},
                                         {"role": "user", "content": prompt}], temperature=0.0, max_tokens=3)
            answer.record(reply)
            words = re.findall(r"\w+", reply.text.casefold())
            result[position] = 1.0 if words and words[0] in _YES else 0.0
        return result


class HttpReranker:
    """A remote /rerank API: POST {model, query, documents, top_n} -> {results: [{index, relevance_score}]}."""

    def __init__(self, config: TargetConfig) -> None:
        self.config, self.name = config, f"http:{config.rerank.rerank_model}@{config.rerank.rerank_url}"
        self._client = new_client()

    def check(self) -> None:
        """Fail fast: the key variable is set and the server answers."""
        check_reachable(self._client, self.config.rerank.rerank_url, self._headers(), self.config.generation.timeout,
                        "rerank_url")

    def scores(self, question: str, hits: list[Hit], answer: TargetAnswer) -> dict[int, float]:
        """The server's relevance scores (documents it leaves out are dropped)."""
        body = {"model": self.config.rerank.rerank_model, "query": question,
                "documents": [hit.item.text for hit in hits], "top_n": len(hits)}
        return post_json(self._client, self.config.rerank.rerank_url, body, headers=self._headers(),
                         timeout=self.config.generation.timeout, retries=self.config.generation.retries,
                         backoff=self.config.generation.retry_backoff,
                         parse=lambda data: _parse_rerank(data, len(hits)),
                         max_reply_chars=self.config.generation.max_reply_chars)

    def _headers(self) -> dict[str, str]:
        name = self.config.rerank.rerank_api_key_env
        if not name:
            return {}
        if not os.environ.get(name):
            raise EvalError(f"environment variable {name} is not set", where="rerank_api_key_env",
                            fix=f"export {name}=... or set rerank_api_key_env = \"\"")
        return {"Authorization": f"Bearer {os.environ[name]}"}


def _parse_rerank(data: Any, count: int) -> dict[int, float]:
    results = data["results"]
    scores = {int(item["index"]): float(item["relevance_score"]) for item in results}
    if any(not 0 <= index < count for index in scores):
        raise ValueError("result index out of range")
    return scores


def build_reranker(config: TargetConfig, kb: KnowledgeBase | None, cache: Any = None) -> Reranker | None:
    """The configured reranker, None for `none`."""
    if config.rerank.reranker == "embedding":
        if kb is None:
            raise EvalError("the embedding reranker needs a prepared knowledge base")
        return EmbeddingReranker(kb, rerank_embedding_model(config))
    if config.rerank.reranker == "llm":
        return LlmReranker(rerank_chat_model(config, cache))
    if config.rerank.reranker == "http":
        return HttpReranker(config)
    return None


def rerank_embedding_model(config: TargetConfig) -> str:
    """rerank_model, or by default the model retrieval does not use ("a second model")."""
    return config.rerank.rerank_model or ("e5" if config.retrieval.embedding_model == "use" else "use")


def rerank_chat_model(config: TargetConfig, cache: Any = None) -> ChatModel:
    """The llm reranker's model: an OpenAI-compatible endpoint at rerank_url, else the local model."""
    if config.rerank.rerank_url:
        rerank, generation = config.rerank, config.generation
        return OpenAIChatModel(rerank.rerank_url, rerank.rerank_model, api_key_env=rerank.rerank_api_key_env,
                               timeout=generation.timeout, retries=generation.retries, backoff=generation.retry_backoff,
                               cache=cache, max_reply_chars=generation.max_reply_chars)
    return LocalChatModel(cache=cache)


def rerank(config: TargetConfig, reranker: Reranker | None, question: str, hits: list[Hit],
           answer: TargetAnswer) -> list[Retrieved]:
    """Apply the reranker, threshold and top-k; fall back to retrieval order (noted) when empty.

    Without a reranker the retrieval list is kept whole: `embedding_top_k` alone sets its length.
    """
    if reranker is None or not hits:
        return [hit.item for hit in hits]
    scores = reranker.scores(question, hits, answer)
    kept = sorted((position for position, score in scores.items() if score >= config.rerank.rerank_threshold),
                  key=lambda position: (-scores[position], position))
    if not kept:
        answer.notes.append(RERANK_EMPTY_NOTE)
        return [hit.item for hit in hits][: config.rerank.rerank_top_k]
    return [_rescored(hits[p].item, scores[p]) for p in kept[: config.rerank.rerank_top_k]]


def _rescored(item: Retrieved, score: float) -> Retrieved:
    return item._replace(score=score, stages={**item.stages, "rerank": round(score, 6)})
