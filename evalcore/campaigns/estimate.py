"""What a campaign will cost, before it runs.

From the same configuration's earlier campaigns when there are some (the same system under test and the same judges,
ended, with questions answered): their tokens per question, by role and model, priced at today's prices. Else from the
prompts of a sample of the questions: each role's prompt counted (about 4 characters a token, a Chinese, Japanese or
Korean character a token), the context as `context_top_k` passages of the corpus's mean length, an answer as long as
the reference answers (a quarter of `max_tokens` without any), a verdict 60 tokens. The second is a rough order of
magnitude; the first is as good as the earlier campaigns are like this one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcore.campaigns.queries import campaign_summary, list_campaigns
from evalcore.campaigns.records import Question
from evalcore.costs import GENERATOR, QUERY, RERANK, Cost, Usage, cost_line, price_table, priced, summed
from evalcore.datasets import Dataset
from evalcore.formats.shapes import doc
from evalcore.language.text import counted
from evalcore.store import Store
from evalcore.targets.target_config import TargetConfig, under_test

SAMPLE = 50  # questions whose prompts are counted
PASSAGES = 500  # passages whose length is averaged
VERDICT_TOKENS = 60  # a score or label and a one-sentence reason
WIDE = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


@dataclass(frozen=True)
class Estimate:
    """A launch's expected cost: per question by role and model, in all, and how it was estimated."""

    questions: int = field(metadata=doc("the questions the launch would ask"))
    usage: tuple[Usage, ...] = field(metadata=doc("expected tokens and cost per question, by role and model"))
    per_question: Cost = field(metadata=doc("expected cost of one question"))
    total: Cost = field(metadata=doc("expected cost of the campaign"))
    method: str = field(metadata=doc("earlier (the same configuration's campaigns) or prompts (a sample counted)"))
    basis: str = field(metadata=doc("what the estimate stands on, in words"))

    def text(self) -> str:
        """`estimate: 0.027 USD for 3 questions: 0.0089 USD per question (generator ..., judge score ...), ...`."""
        line = cost_line(self.usage).removeprefix("cost: ")
        one, _, roles = line.partition(" (")
        return (f"estimate: {self.total.text()} for {counted(self.questions, 'question')}: {one} per question"
                + (f" ({roles}" if roles else "") + f", {self.basis}")

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"questions": self.questions, "usage": [use._asdict() for use in self.usage],
                "per_question": self.per_question.to_dict(), "total": self.total.to_dict(), "method": self.method,
                "basis": self.basis}


def estimate_cost(store: Store, tenant: str, config: TargetConfig, judges: tuple[str, ...], questions: list[Question],
                  corpus: Dataset) -> Estimate:
    """The expected cost of asking these questions with this configuration and these judges."""
    table = price_table(store.location)
    earlier = earlier_usage(store, tenant, config, judges)
    if earlier is not None:
        uses, answered, campaigns = earlier
        usage = tuple(priced(u.role, u.model, u.prompt, u.completion, table) for u in uses)
        per_question = tuple(scaled(use, 1 / answered) for use in usage)
        basis = (f"from {counted(campaigns, 'earlier campaign')} of this configuration "
                 f"({counted(answered, 'question')}), at today's prices")
        return finished(len(questions), per_question, "earlier", basis)
    sample = questions[:SAMPLE]
    sampled = [priced(role, model, prompt, completion, table)
               for role, model, prompt, completion in prompt_usage(config, judges, sample, corpus)]
    per_question = tuple(scaled(use, 1 / len(sample)) for use in summed(sampled))
    basis = (f"from the prompts of {counted(len(sample), 'question')}, counted at about 4 characters a token: a rough "
             "order of magnitude until a campaign of this configuration has run")
    return finished(len(questions), per_question, "prompts", basis)


def finished(count: int, per_question: tuple[Usage, ...], method: str, basis: str) -> Estimate:
    """The estimate of `count` questions from one question's expected usage."""
    one = Cost.of(per_question)
    total = Cost(one.amount * count, one.currency) if one.amount is not None else one
    return Estimate(count, per_question, one, total, method, basis)


def scaled(use: Usage, factor: float) -> Usage:
    """A usage scaled (a campaign's to one question's): tokens rounded, the cost kept exact."""
    return use._replace(prompt=round(use.prompt * factor), completion=round(use.completion * factor),
                        cost=None if use.cost is None else use.cost * factor)


def earlier_usage(store: Store, tenant: str, config: TargetConfig,
                  judges: Sequence[str]) -> tuple[tuple[Usage, ...], int, int] | None:
    """The tokens of the tenant's ended campaigns of the same system under test and judges: their usage summed, the
    questions they stored, how many campaigns; None when there is none."""
    wanted = under_test(config.to_dict())
    same = [c for c in list_campaigns(store, tenant) if not c.active and c.finished
            and sorted(c.judges) == sorted(judges) and under_test(c.config.target.to_dict()) == wanted]
    if not same:
        return None
    uses = [use for c in same for use in campaign_summary(store, c.id).usage]
    return summed(uses), sum(c.finished for c in same), len(same)


def approx_tokens(text: str) -> int:
    """About how many tokens a text is: a wide (CJK) character each, four other characters each."""
    wide = len(WIDE.findall(text))
    return wide + math.ceil((len(text) - wide) / 4)


def prompt_usage(config: TargetConfig, judges: Sequence[str], sample: Sequence[Question],
                 corpus: Dataset) -> list[tuple[str, str, int, int]]:
    """Each sampled question's expected calls: (role, model, prompt tokens, completion tokens)."""
    from evalcore.judges.prompts import load_prompt
    from evalcore.judges.rubrics import parse_rubric, rubric_prompt
    from evalcore.targets.generators import build_chat_model, judge_model_name
    from evalcore.targets.rerank import LLM_RERANK_PROMPT, rerank_chat_model

    passages = [approx_tokens(p.text) for p in corpus.passages[:PASSAGES]] or [0]
    passage = sum(passages) / len(passages)
    if config.chunks.chunking == "tokens":
        passage = min(passage, config.chunks.chunk_size * 4 / 3)
    context = round(passage * config.generation.context_top_k)
    model = build_chat_model(config) if config.kind == "rag" else None
    rubrics = dict(config.judge.rubrics)
    templates = {name: rubric_prompt(parse_rubric(name, rubrics[name])) if name in rubrics else load_prompt(name)
                 for name in judges}
    judge_model = judge_model_name(config) if judges else None
    calls: list[tuple[str, str, int, int]] = []
    for question in sample:
        asked = approx_tokens(question.text)
        references = [*question.references, *([question.expected_answer] if question.expected_answer else [])]
        answer = min(config.generation.max_tokens, round(sum(map(approx_tokens, references)) / len(references))) \
            if references else config.generation.max_tokens // 4
        if model is not None:
            prompts = config.prompts
            calls.append((GENERATOR, model.name, approx_tokens(prompts.system_prompt + prompts.prompt_template)
                          + asked + context, answer))
            calls += query_calls(config, model.name, asked, passage)
        if config.kind == "rag" and config.rerank.reranker == "llm":
            calls += [(RERANK, rerank_chat_model(config).name, approx_tokens(LLM_RERANK_PROMPT) + asked
                       + round(passage), 1)] * config.retrieval.embedding_top_k
        if judge_model is not None:
            for name, prompt in templates.items():
                read = approx_tokens(prompt.system + prompt.user) + asked + answer + context \
                    + sum(map(approx_tokens, references))
                calls.append((f"judge:{name}", judge_model, read, min(VERDICT_TOKENS, config.judge.judge_max_tokens)))
    return calls


def query_calls(config: TargetConfig, model: str, asked: int, passage: float) -> list[tuple[str, str, int, int]]:
    """A query transformation's calls for one question: a rewrite (or HyDE passage), or the multi-query ones."""
    if config.query.query_transform == "none":
        return []
    if config.query.query_transform == "hyde":
        return [(QUERY, model, approx_tokens(config.query.hyde_prompt) + asked,
                 min(config.query.query_max_tokens, round(passage)))]
    calls = config.query.multi_query_n if config.query.query_transform == "multi_query" else 1
    return [(QUERY, model, approx_tokens(config.query.rewrite_prompt) + asked * (1 + number), asked)
            for number in range(calls)]

