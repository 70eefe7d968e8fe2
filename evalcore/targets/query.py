"""Query transformation before retrieval: the question rewritten, asked several ways, or answered hypothetically.

- `rewrite`: one call with `rewrite_prompt`; both retrieval sides search the rewritten query.
- `multi_query`: `multi_query_n` calls in one conversation. The first is the rewrite prompt (the
  same call, and cached reply, as `rewrite`); each next one asks for another query, different from
  those above, so the queries differ even at temperature 0. The question and each query are
  retrieved alone and the N + 1 ranked lists fused by reciprocal rank (`fuse`).
- `hyde`: one call with `hyde_prompt`; the vector side embeds the hypothetical passage, BM25 keeps
  searching the question (with retriever = "bm25" it would change nothing: the configuration refuses it).

Rerank and generation always see the question itself. Every call is made with the generator's
chat model and sampling settings and `query_max_tokens`; it is counted with the answer's tokens and
served by the call cache. A call that fails (after the model's own retries) or replies with nothing
leaves the question in its place, with a note: the question never fails for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from evalcore.costs import QUERY
from evalcore.models import ChatModel, Message, ModelError, counted_as
from evalcore.targets.base import Hit, Round, TargetAnswer, history_text
from evalcore.targets.generators import sampled_chat
from evalcore.targets.knowledge import KnowledgeBase
from evalcore.targets.retrievers import search
from evalcore.targets.target_config import TargetConfig

MULTI_QUERY_NEXT = ("Write one more search query for the same question, different from the queries above. "
                    "Reply with the query only.")
_QUOTES = "\"'`“”‘’«»「」"


def retrieve(kb: KnowledgeBase, config: TargetConfig, model: ChatModel | None, question: str,
             answer: TargetAnswer, history: Sequence[Round] = ()) -> list[Hit]:
    """The ranked chunks for a question under the configured transformation; `answer.queries` records the texts used.

    A rewrite (and the multi-query's first request) reads the conversation's earlier rounds through {history}, so
    that a follow-up ("and on weekends?") becomes a standalone query."""
    transform = config.query.query_transform
    if transform == "none" or model is None:
        return search(kb, config, question)
    if transform == "multi_query":
        answer.queries = multi_queries(config, model, question, answer, history)
        if not answer.queries:
            return search(kb, config, question)
        lists = [search(kb, config, text) for text in (question, *answer.queries)]
        return fuse(lists, config.retrieval.rrf_k, config.retrieval.embedding_top_k)
    hyde = transform == "hyde"
    prompt = (config.query.hyde_prompt.format(question=question) if hyde
              else config.query.rewrite_prompt.format(question=question, history=history_text(history)))
    text = ask(config, model, [{"role": "user", "content": prompt}], answer, f"query {transform}",
               str.strip if hyde else one_line)
    if text is None:
        return search(kb, config, question)
    answer.queries = [text]
    return search(kb, config, question, vector_query=text) if hyde else search(kb, config, text)


def multi_queries(config: TargetConfig, model: ChatModel, question: str, answer: TargetAnswer,
                  history: Sequence[Round] = ()) -> list[str]:
    """Up to multi_query_n search queries, each asked after the ones before it; a failed call ends the list."""
    first = config.query.rewrite_prompt.format(question=question, history=history_text(history))
    conversation: list[Message] = [{"role": "user", "content": first}]
    queries: list[str] = []
    for number in range(1, config.query.multi_query_n + 1):
        what = f"query multi_query {number} of {config.query.multi_query_n}"
        query = ask(config, model, conversation, answer, what, one_line)
        if query is None:
            break
        queries.append(query)
        conversation = [*conversation, {"role": "assistant", "content": query},
                        {"role": "user", "content": MULTI_QUERY_NEXT}]
    return queries


def ask(config: TargetConfig, model: ChatModel, messages: list[Message], answer: TargetAnswer, what: str,
        clean: Callable[[str], str]) -> str | None:
    """The model's reply through `clean`, or None with a note on the question when the call failed or said nothing."""
    try:
        with counted_as(QUERY):
            reply = sampled_chat(model, config, messages, config.query.query_max_tokens)
    except ModelError as error:
        answer.notes.append(f"{what} failed, the question was used instead: {error.line()}")
        return None
    answer.record(reply)
    text = clean(reply.text)
    if not text:
        answer.notes.append(f"{what} was empty, the question was used instead")
        return None
    return text


def one_line(text: str) -> str:
    """A search query from a reply: its first non-empty line without surrounding quotes."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0].strip(_QUOTES).strip() if lines else ""


def fuse(lists: Sequence[Sequence[Hit]], rrf_k: int, top_k: int) -> list[Hit]:
    """Reciprocal rank fusion of ranked lists: the best `top_k` chunks by the sum over the lists holding them of
    1 / (rrf_k + rank), rank 1 = best.

    Each chunk's terms are summed exactly (math.fsum), so equal sets of ranks tie whatever the order of the
    lists, and ties rank by knowledge-base row. A fused chunk keeps the stage scores of the first list that
    holds it (the question's own list first) and adds `query_rrf`, its fused score, which is also its score.
    """
    terms: dict[int, list[float]] = {}
    first: dict[int, Hit] = {}
    for hits in lists:
        for rank, hit in enumerate(hits, 1):
            terms.setdefault(hit.row, []).append(1.0 / (rrf_k + rank))
            first.setdefault(hit.row, hit)
    scores = {row: math.fsum(values) for row, values in terms.items()}
    best = sorted(scores, key=lambda row: (-scores[row], row))[:top_k]
    return [Hit(row, first[row].item._replace(score=scores[row],
                                              stages={**first[row].item.stages, "query_rrf": round(scores[row], 6)}))
            for row in best]
