"""The built-in RAG pipeline: knowledge base -> query transformation -> retrieval -> rerank -> generation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalcore.errors import EvalError
from evalcore.models import CallCache, ChatModel
from evalcore.targets.base import Chat, TargetAnswer
from evalcore.targets.generators import ExtractiveGenerator, build_chat_model, build_generator
from evalcore.targets.knowledge import KnowledgeBase, Progress, build_knowledge_base, get_embedder
from evalcore.targets.query import retrieve
from evalcore.targets.rerank import (
    HttpReranker,
    Reranker,
    build_reranker,
    rerank,
    rerank_chat_model,
    rerank_embedding_model,
)
from evalcore.targets.target_config import TargetConfig


class RagTarget:
    """Our pipeline under one configuration; `prepare` must run before `answer`."""

    def __init__(self, config: TargetConfig, *, cache: CallCache | None = None, cache_dir: Path | None = None) -> None:
        self.config = config
        self.cache = cache
        self.cache_dir = cache_dir
        self.kb: KnowledgeBase | None = None
        self._model = build_chat_model(config, cache)
        self._generator = build_generator(config, self._model)
        self._reranker: Reranker | None = None

    def embedding_models(self) -> tuple[str, ...]:
        """Models whose chunk vectors the index needs (retrieval, embedding reranker)."""
        models = [self.config.retrieval.embedding_model] if self.config.retrieval.retriever != "bm25" else []
        if self.config.rerank.reranker == "embedding":
            models.append(rerank_embedding_model(self.config))
        return tuple(dict.fromkeys(models))

    def check(self) -> None:
        """Fail fast: embedding models load, chat endpoints answer, the local model is installed."""
        for model in self.embedding_models():
            get_embedder(model)
        remote: list[Any] = [self._model]
        if self.config.rerank.reranker == "llm":
            remote.append(rerank_chat_model(self.config))
        if self.config.rerank.reranker == "http":
            remote.append(HttpReranker(self.config))
        for service in remote:
            if service is not None:
                service.check()

    def prepare(self, passages: Sequence[Any], progress: Progress | None = None) -> None:
        """Chunk, index and embed the whole corpus now (from the disk cache when possible)."""
        size = self.config.chunks.chunk_size if self.config.chunks.chunking == "tokens" else None
        self.kb = build_knowledge_base(passages, chunk_size=size, chunk_overlap=self.config.chunks.chunk_overlap,
                                       models=self.embedding_models(), cache_dir=self.cache_dir, progress=progress)
        self._reranker = build_reranker(self.config, self.kb, self.cache)
        if isinstance(self._generator, ExtractiveGenerator):
            self._generator.corpus = self.kb.sentences

    def answer(self, question: str, qid: int | None = None, chat: Chat | None = None) -> TargetAnswer:
        """Transform the query, retrieve, rerank, generate; the fallback answer when nothing is retrieved. A turn of a
        conversation brings its history to the query transformation and the generator."""
        if self.kb is None:
            raise EvalError("the target has no knowledge base yet", fix="call prepare(passages) before answer()")
        result = TargetAnswer(answer="", retrieved=[])
        history = chat.history if chat is not None else ()
        hits = retrieve(self.kb, self.config, self._model, question, result, history)
        result.retrieved = rerank(self.config, self._reranker, question, hits, result)
        result.context = result.retrieved[: self.config.generation.context_top_k]
        if not result.retrieved:
            result.answer = self.config.prompts.fallback_answer
            result.notes.append("nothing retrieved: fallback answer")
            return result
        result.answer = (self._generator.generate(question, result.context, result, history)
                         or self.config.prompts.fallback_answer)
        return result

    def chat_model(self) -> ChatModel | None:
        """The generator's chat model (None for extractive)."""
        return self._model
