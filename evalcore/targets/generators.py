"""Generators: extractive (deterministic, no model), or a chat model (OpenAI-compatible or local).

The generator sees the best `context_top_k` retrieved chunks; with none, the answer is the
fallback answer and no model is called.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, Protocol

from evalcore.errors import EvalError
from evalcore.language.text import known_language, language_once
from evalcore.models import ChatModel, ChatReply, LocalChatModel, Message, OpenAIChatModel
from evalcore.targets.base import Retrieved, Round, TargetAnswer, history_messages
from evalcore.targets.target_config import TargetConfig

if TYPE_CHECKING:  # numpy is loaded with the knowledge base, not with the generators
    from evalcore.targets.sentences import SentenceTable


class Generator(Protocol):
    """Writes the answer from the question and the context chunks."""

    def generate(self, question: str, context: list[Retrieved], answer: TargetAnswer,
                 history: Sequence[Round] = ()) -> str: ...


# `language_once` cached: a corpus's sentences come back in the contexts of many questions.
language = functools.lru_cache(maxsize=1 << 14)(language_once)


class ExtractiveGenerator:
    """Picks the context sentences that share the most (idf-weighted) words with the question.

    A sentence's weight is the idf sum of the question words it contains, times the DCG
    discount 1/log2(rank + 1) of its chunk (rank 1 = best), so retrieval order still counts.
    The idf is computed over the context's own sentences, so words found everywhere ("the",
    "le") weigh little. Sentences in the question's language are preferred when there are any.
    Ties go to the better-ranked chunk, then the earlier sentence. No model, fully deterministic.

    With the knowledge base's sentence table (`corpus`, set when the target is prepared), a context chunk's
    sentences, languages and words are read from it, worked out once when the corpus was indexed; a chunk it does
    not hold (another target's text) is read as before. The answer is the same either way.
    """

    def __init__(self, sentences: int, corpus: SentenceTable | None = None) -> None:
        self.sentences = sentences
        self.corpus = corpus

    def generate(self, question: str, context: list[Retrieved], answer: TargetAnswer,
                 history: Sequence[Round] = ()) -> str:
        """The best sentences, best first, joined by a space (a conversation's history plays no part)."""
        asked = known_language(question) or language_once(question)
        if self.corpus is not None:
            found = _from_table(self.corpus, question, asked, context, self.sentences)
            if found is not None:
                return found
        return self._read(question, asked, context)

    def _read(self, question: str, asked: str, context: list[Retrieved]) -> str:
        """The answer from the context's text itself (split, detected and tokenized here)."""
        from evalcore.language.text import tokens, tokens_once

        sentences = [(rank, s) for rank, item in enumerate(context, 1) for s in _sentences(item.text)]
        # The sentences with words in the question's language, else those with words in any: a sentence in another
        # language is only tokenized when none is in the question's (a Chinese one needs jieba's dictionary).
        ranked = [(rank, s) for rank, s in sentences if language(s) == asked and tokens(s)] \
            or [(rank, s) for rank, s in sentences if tokens(s)]
        sets: list[frozenset[str]] = [_token_set(s) for _, s in ranked]
        best = self._best([rank for rank, _ in ranked], sets, set(tokens_once(question)))
        if not best:
            return context[0].text
        joiner = "" if asked == "zh" else " "
        return joiner.join(ranked[i][1].strip() for i in best)

    def _best(self, ranks: list[int], token_sets: Sequence[frozenset[Hashable]], question_words: set[Any]) -> list[int]:
        """The positions of the best `sentences` sentences by weight, best first (none when there is none)."""
        frequency = Counter(chain.from_iterable(token_sets))
        # fsum: the exactly rounded sum, whatever order the set gives its words (which varies with the process's
        # string hashes), so that the same question gets the same answer in every run.
        weights = [math.fsum(math.log(1 + len(ranks) / frequency[t]) for t in words & question_words)
                   / math.log2(rank + 1) for rank, words in zip(ranks, token_sets, strict=True)]
        return sorted(range(len(ranks)), key=lambda i: (-weights[i], i))[: self.sentences]


def _from_table(corpus: SentenceTable, question: str, asked: str, context: list[Retrieved], count: int) -> str | None:
    """The extractive answer from the table's sentences of the context chunks, with the same weights, ties and
    choice as `ExtractiveGenerator._best` on the text itself: chosen by the compiled loop where there is one
    (`SentenceTable.chosen`), else by `_chosen` (and read by `SentenceTable.choice`). None when a context chunk is
    not in the table."""
    from evalcore.language.text import give_tokens, known_numbers, tokens_once
    from evalcore.targets.sentences import LANGUAGES

    rows = corpus.rows([item.text for item in context])
    if rows is None:
        return None
    asked_number = LANGUAGES.index(asked)
    known = known_numbers(question, corpus.vocabulary)  # a dataset's question, numbered with the whole dataset's
    question_words = corpus.numbers(tokens_once(question)) if known is None else set(known)
    choice = corpus.chosen(rows, question_words, asked_number, count)
    if choice is None:
        choice = corpus.choice(_chosen(corpus, rows, question_words, asked_number, count))
    if not choice.ranks:
        return context[0].text
    parts = [context[rank - 1].text[start:end] for rank, start, end in zip(choice.ranks, choice.starts, choice.ends,
                                                                             strict=True)]
    joiner = "" if asked == "zh" else " "
    text = joiner.join(parts)
    tokens = corpus.answer_tokens(parts, choice.words, joiner)
    if tokens is not None:  # the measures read the answer's tokens next
        give_tokens(text, tokens)
    return text


def _chosen(corpus: SentenceTable, rows: list[int], question_words: set[int], asked_number: int,
            count: int) -> list[tuple[int, int]]:
    """The chosen sentences of the context chunks `rows`, best first, as (table number, chunk rank); none when no
    context sentence has a word. A sentence's words are numbers; the context's words are its chunks' runs of the
    table's word list, put together, and only the question's words found among them are read one by one (a few
    dozen of some 750), each once per sentence holding it. The same logarithms and exactly rounded sums as `_best`."""
    import numpy as np

    sentence_starts, word_starts, languages, table_words = (corpus.sentence_starts, corpus.word_starts,
                                                           corpus.languages, corpus.words)
    # The context's sentences with words, in order (chunk by chunk): table number, chunk rank, whether in the
    # question's language, and where their words start among the context's words.
    numbers: list[int] = []
    ranks: list[int] = []
    same: list[bool] = []
    offsets: list[int] = []
    pieces = []
    offset = 0
    for rank, row in enumerate(rows, 1):
        first, last = sentence_starts[row:row + 2].tolist()
        if first == last:
            continue
        starts = word_starts[first:last + 1].tolist()
        base = starts[0]
        pieces.append(table_words[base:starts[-1]])
        for number, language, start, end in zip(range(first, last), languages[first:last].tolist(), starts,
                                                starts[1:], strict=False):
            if end > start:
                numbers.append(number)
                ranks.append(rank)
                same.append(language == asked_number)
                offsets.append(offset + start - base)
        offset += starts[-1] - base
    if not numbers:
        return []
    # The sentences in the question's language, else all of them; `place` is a context sentence's position among
    # those kept (-1: not kept).
    kept = [at for at, ours in enumerate(same) if ours] if any(same) else list(range(len(numbers)))
    total = len(kept)
    place = [-1] * len(numbers)
    for position, at in enumerate(kept):
        place[at] = position
    weighed: list[tuple[float, int]] = []
    if question_words:
        wanted = np.zeros(max(len(corpus.vocabulary), 1), dtype=bool)
        wanted[list(question_words)] = True
        words = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
        hits = np.flatnonzero(wanted[words])
        if hits.size:
            owners = np.asarray(place)[np.searchsorted(np.asarray(offsets), hits, "right") - 1].tolist()
            found: dict[int, set[int]] = {}  # a kept sentence's question words, each once
            for position, word in zip(owners, words[hits].tolist(), strict=True):
                if position >= 0:
                    found.setdefault(position, set()).add(word)
            frequency: dict[int, int] = {}  # the kept sentences holding each question word
            for held in found.values():
                for word in held:
                    frequency[word] = frequency.get(word, 0) + 1
            logs = {word: math.log(1 + total / times) for word, times in frequency.items()}
            weighed = sorted((-math.fsum([logs[word] for word in held]) / _discount(ranks[kept[position]]), position)
                             for position, held in found.items())
    # Every weight is positive (a log of more than 1) or 0: after the weighed sentences, the first unweighed ones.
    best = [position for _, position in weighed[:count]]
    if len(best) < count:
        weighted = {position for _, position in weighed}
        best += [position for position in range(total) if position not in weighted][: count - len(best)]
    return [(numbers[kept[position]], ranks[kept[position]]) for position in best]


@functools.lru_cache(maxsize=128)
def _discount(rank: int) -> float:
    """The DCG discount's divisor of a chunk's rank (1 = best): log2(rank + 1)."""
    return math.log2(rank + 1)


@functools.lru_cache(maxsize=1 << 14)
def _token_set(sentence: str) -> frozenset[str]:
    """A context sentence's distinct words (cached with its sentence)."""
    from evalcore.language.text import tokens

    return frozenset(tokens(sentence))


@functools.lru_cache(maxsize=1 << 12)
def _sentences(text: str) -> tuple[str, ...]:
    """A context passage's sentences (cached: the same passages come back in the contexts of many questions)."""
    from evalcore.language.text import split_sentences

    return tuple(split_sentences(text))


class ChatGenerator:
    """Fills the prompt templates and asks a chat model."""

    def __init__(self, config: TargetConfig, model: ChatModel) -> None:
        self.config, self.model = config, model

    def generate(self, question: str, context: list[Retrieved], answer: TargetAnswer,
                 history: Sequence[Round] = ()) -> str:
        """The model's reply, stripped."""
        prompt = messages(self.config, question, context, history)
        reply = sampled_chat(self.model, self.config, prompt, self.config.generation.max_tokens)
        answer.record(reply)
        return reply.text.strip()


def sampled_chat(model: ChatModel, config: TargetConfig, prompt: list[Message], max_tokens: int) -> ChatReply:
    """One call of the target's chat model under the generation sampling settings (temperature, top_p, top_k,
    repeat_penalty)."""
    generation = config.generation
    return model.chat(prompt, temperature=generation.temperature, top_p=generation.top_p, top_k=generation.top_k,
                      repeat_penalty=generation.repeat_penalty, max_tokens=max_tokens)


def context_text(config: TargetConfig, context: list[Retrieved]) -> str:
    """The numbered context chunks through the context template."""
    return "\n\n".join(config.prompts.context_template.format(index=i, title=item.title, text=item.text, pid=item.pid)
                       for i, item in enumerate(context, 1))


def messages(config: TargetConfig, question: str, context: list[Retrieved],
             history: Sequence[Round] = ()) -> list[dict[str, Any]]:
    """System prompt (when set), a conversation's earlier rounds as user and assistant messages, and the user prompt
    with question and context filled in."""
    user = config.prompts.prompt_template.format(question=question, context=context_text(config, context))
    system = [{"role": "system", "content": config.prompts.system_prompt}] if config.prompts.system_prompt else []
    return system + history_messages(history) + [{"role": "user", "content": user}]


def build_chat_model(config: TargetConfig, cache: Any = None) -> ChatModel | None:
    """The generator's chat model; None for the extractive generator."""
    generation = config.generation
    if generation.generator == "openai":
        return OpenAIChatModel(generation.base_url, generation.model, api_key_env=generation.api_key_env,
                               timeout=generation.timeout, retries=generation.retries, backoff=generation.retry_backoff,
                               cache=cache, max_reply_chars=generation.max_reply_chars,
                               deployment=generation.deployment, api_version=generation.api_version,
                               key_header=generation.api_key_header, structured_output=generation.structured_output)
    if generation.generator == "local":
        return LocalChatModel(cache=cache)
    return None


def own_chat_model(config: TargetConfig, cache: Any = None) -> ChatModel | None:
    """The target's own chat model, which judges ask when no judge model is named: our pipeline's generator, or the
    model an HTTP agent's configuration names (generator "openai" with its model or deployment); else None."""
    if config.kind == "rag":
        return build_chat_model(config, cache)
    generation = config.generation
    if config.kind == "http_agent" and generation.generator == "openai" and (generation.model or generation.deployment):
        return build_chat_model(config, cache)
    return None


def build_judge_model(config: TargetConfig, own: ChatModel | None, cache: Any = None, *,
                      check: bool = True) -> ChatModel:
    """The judges' chat model: under judge_kind "auto" the target's own (when it has one) unless a judge model or
    server is named, else the configured one, checked (reachable, installed) unless `check` is false, so that a
    broken judge refuses the launch before anything runs.

    EvalError naming the keys to set when there is none.
    """
    judge, generation = config.judge, config.generation
    if judge.judge_kind == "auto" and own is not None and not named_judge(config):
        return own
    model: OpenAIChatModel | LocalChatModel | None = None
    # A judge server named without its model: the target's own model's name there (the same model served elsewhere).
    name = judge.judge_model or (generation.model if judge.judge_base_url and generation.generator == "openai" else "")
    if judge.judge_kind == "local":
        model = LocalChatModel(cache=cache)
    elif name or judge.judge_deployment:
        model = OpenAIChatModel(judge.judge_base_url or generation.base_url, name,
                                api_key_env=judge.judge_api_key_env, timeout=generation.timeout,
                                retries=generation.retries, backoff=generation.retry_backoff, cache=cache,
                                max_reply_chars=generation.max_reply_chars,
                                deployment=judge.judge_deployment, api_version=judge.judge_api_version,
                                key_header=judge.judge_api_key_header, structured_output=judge.judge_structured_output)
    if model is not None:
        if check:
            model.check()
        return model
    if judge.judge_base_url:
        raise EvalError("judge_base_url names the judges' server, but no judge_model names the model there",
                        where="judge_model", fix="set judge_model (on the command line --judge-model NAME)")
    raise EvalError("judges need a chat model: this target has none and no judge model is configured",
                    where="judge_model", fix='set judge_model (and judge_base_url, judge_api_key_env) for an '
                    'OpenAI-compatible judge, or judge_kind = "local"; on the command line --judge-model NAME; '
                    'an HTTP agent\'s own model: generator = "openai" with its model and base_url')


def judge_model_name(config: TargetConfig) -> str | None:
    """The name of the model the judges will ask, as their verdicts will name it (nothing connects); None when no
    model can judge (the launch says why)."""
    try:
        return build_judge_model(config, own_chat_model(config), check=False).name
    except EvalError:
        return None


def named_judge(config: TargetConfig) -> bool:
    """Whether the configuration names a judge model of its own (judge_model, judge_deployment or judge_base_url):
    under judge_kind "auto" that one judges, not the target's own chat model."""
    return bool(config.judge.judge_model or config.judge.judge_deployment or config.judge.judge_base_url)


def judged_locally(config: TargetConfig) -> bool:
    """Whether this configuration's judges ask the offline SmolLM2 (configured so, or the pipeline's own local
    model)."""
    own_local = config.kind == "rag" and config.generation.generator == "local"
    kind = config.judge.judge_kind
    return kind == "local" or (kind == "auto" and own_local and not named_judge(config))


def build_generator(config: TargetConfig, model: ChatModel | None) -> Generator:
    """Extractive without a model, else the chat generator."""
    if model is None:
        return ExtractiveGenerator(config.generation.extractive_sentences)
    return ChatGenerator(config, model)
