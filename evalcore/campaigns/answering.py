"""One question of a campaign: ask the target, score the answer, judge it; errors are recorded, never raised."""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore import metrics
from evalcore.campaigns.records import Outcome, Question, RunOptions, sources_of
from evalcore.costs import GENERATOR, PriceTable, Usage, price_table, priced
from evalcore.diagnosis import Evidence, GenerationMarks, Stage, attribute
from evalcore.errors import EvalError
from evalcore.judges import JudgeSettings, Passage, Verdict, run_judge
from evalcore.metrics.answer_checks import prepared
from evalcore.metrics.graded import GradedScale
from evalcore.models import Meter, metered, noticed, refuse_long_reply
from evalcore.models.http import Calls
from evalcore.store import StoreCallCache
from evalcore.targets import Chat, Retrieved, Target, TargetAnswer, TargetConfig
from evalcore.targets.knowledge import PassageLike

if TYPE_CHECKING:
    from evalcore.datasets import Dataset
    from evalcore.targets.knowledge import Progress

logger = logging.getLogger(__name__)

UNNAMED_MODEL = "the target's own model (not named)"


@dataclass(frozen=True)
class Plan:
    """Everything a runner needs, validated before the campaign is accepted."""

    campaign_id: str
    target: Target
    passages: tuple[PassageLike, ...]
    questions: tuple[Question, ...]
    total: int  # the campaign's question count (a resume runs fewer)
    options: RunOptions
    judges: tuple[str, ...] = ()
    judging: JudgeSettings | None = None  # the judges' model, pass marks and sampling
    graded: GradedScale | None = None  # the dataset's label scale, when its qrels are graded
    cache: StoreCallCache | None = None
    cache_hits_before: int = 0
    owner_token: str = ""  # this session's claim on the campaign: a runner writes only while it holds it
    calls: Calls = field(default_factory=Calls)  # its HTTP connections, closed when the campaign ends
    answers_from: str | None = None  # a re-judge: the campaign whose stored answers it judges
    prices: PriceTable = field(default_factory=price_table)  # what each question's model calls cost
    dataset: Dataset | None = None  # the dataset the questions come from: its token table is read (`know_tokens`)


# A campaign asking fewer than half of its dataset's questions, but at least this many, keeps a table of its own
# questions' texts (named by them): a team evaluates the same few thousand questions of a large dataset again and
# again, one change at a time, and each campaign tokenized them all anew (jieba on the Chinese ones: 6% of a
# 2,000-question bm25 + extractive run's CPU for the references alone). Below it, a try's texts are tokenized as they
# come, and leave no file behind.
OWN_TABLE_FROM = 500


def know_tokens(plan: Plan, progress: Progress | None = None) -> None:
    """Give the tokenizer the plan's dataset's token table (its questions and references, tokenized once per dataset
    content and kept in the index folder). It is built now when none is there and the campaign asks at least half of
    the dataset's questions: a first try on 20 of 100,000 questions would pay for all of them (20 s of CPU against
    3). A campaign on fewer, from OWN_TABLE_FROM questions on, reads the table of its own questions' texts instead
    (built now when none is there: what tokenizing them as they come would cost). An index folder that cannot be
    written leaves the texts to be tokenized as they come."""
    if plan.dataset is None:
        return
    from evalcore.language.text import use_known_tokens
    from evalcore.targets.knowledge import index_dir
    from evalcore.targets.question_tokens import dataset_tokens
    from evalcore.targets.rag import RagTarget

    target = plan.target
    root = Path((target.cache_dir if isinstance(target, RagTarget) else None) or index_dir())
    try:
        table = dataset_tokens(plan.dataset.content_hash, plan.dataset.questions, root, progress,
                               build=2 * len(plan.questions) >= len(plan.dataset.questions))
        if table is None and len(plan.questions) >= OWN_TABLE_FROM:
            table = dataset_tokens(own_texts_key(plan.dataset.content_hash, plan.questions), plan.questions, root,
                                   progress)
    except OSError as error:
        logger.warning("the questions' tokens are not kept (%s): each is tokenized as it comes", error)
        return
    if table is not None:
        use_known_tokens(table)


def own_texts_key(content_hash: str, questions: tuple[Question, ...]) -> str:
    """What names the token table of these questions' texts (of a dataset's content): a digest of those texts, in the
    order the table keeps them."""
    from evalcore.targets.question_tokens import dataset_texts

    digest = hashlib.sha256(f"questions of {content_hash}\n".encode())
    for text in dataset_texts(questions):
        digest.update(_framed(text))
    return digest.hexdigest()


def _framed(text: str) -> bytes:
    """A text's UTF-8 bytes with its length before them (no two lists of texts give the same bytes); a lone
    surrogate is written as its escape."""
    data = text.encode("utf-8", "surrogatepass")
    return f"{len(data)}:".encode() + data


def error_text(error: BaseException) -> str:
    """One line for a question's error column."""
    if isinstance(error, EvalError):
        return error.line()
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


@dataclass(frozen=True)
class Asked:
    """What the target gave one question, before scoring: its reply or its error, the time and tokens it took."""

    reply: TargetAnswer | None
    error: str | None = None
    latency_s: float = 0.0
    tokens: tuple[int, int] = (0, 0)  # prompt, completion: those of the calls that succeeded, for a failed question
    calls: tuple[tuple[str, str, int, int, int], ...] = ()  # role, model, prompt, completion, cached prompt tokens

    @classmethod
    def timed_out(cls, limit: float) -> Asked:
        """A question still unanswered at its time limit."""
        return cls(None, timed_out_text(limit), limit)


def timed_out_text(limit: float) -> str:
    """The error of a question past its time limit."""
    return f"timed out after {limit:g} s"


def answer_question(plan: Plan, question: Question) -> Outcome:
    """Ask the target, score the answer, judge it: the outcome to store (errors included, never raised)."""
    return settle(plan, question, ask(plan.target, question))


def ask(target: Target, question: Question) -> Asked:
    """Ask the target one question; an error is returned, never raised (the one half of answering a worker does)."""
    start = time.perf_counter()
    with metered() as meter:
        try:
            chat = question_chat(question)
            # Only a turn of a conversation passes `chat`, to a target that takes it: one written before conversations
            # answers each turn alone.
            reply = (target.answer(question.text, qid=question.qid, chat=chat)
                     if chat is not None and takes_chat(type(target))
                     else target.answer(question.text, qid=question.qid))
            # Scoring work grows with the answer's length: whatever the target, nothing over the cap is
            # scored, so a question past its time limit stops costing CPU within a bounded time.
            refuse_long_reply(reply.answer, target.config.generation.max_reply_chars)
            return Asked(reply, latency_s=time.perf_counter() - start, calls=calls_of(meter, reply))
        except Exception as error:  # noqa: BLE001 - a failed question is recorded and the campaign goes on
            # The calls that did succeed were paid for: their tokens stay on the question.
            return Asked(None, error_text(error), time.perf_counter() - start, meter.total(), calls_of(meter))


def calls_of(meter: Meter, reply: TargetAnswer | None = None) -> tuple[tuple[str, str, int, int, int], ...]:
    """The tokens a meter counted, by role and model; a target's own count beyond them (a target of one's own
    that calls its model some other way) as an unnamed model's, which has no price."""
    calls = [(role, model, prompt, completion, cached)
             for (role, model), (prompt, completion, cached) in meter.tokens.items()]
    if reply is not None:
        counted = meter.total()
        beyond = (reply.prompt_tokens - counted[0], reply.completion_tokens - counted[1])
        if beyond[0] > 0 or beyond[1] > 0:
            calls.append((GENERATOR, UNNAMED_MODEL, max(beyond[0], 0), max(beyond[1], 0), 0))
    return tuple(calls)


def usage_of(plan: Plan, asked: Asked, verdicts: dict[str, Verdict]) -> tuple[Usage, ...]:
    """A question's tokens by role and model, the target's then each judge's, priced by the plan's table."""
    calls = [*asked.calls, *((f"judge:{name}", verdict.model, verdict.prompt_tokens, verdict.completion_tokens,
                              verdict.cached_prompt_tokens) for name, verdict in verdicts.items() if verdict.tokens)]
    return tuple(priced(role, model, prompt, completion, plan.prices, cached)
                 for role, model, prompt, completion, cached in calls)


@functools.cache
def takes_chat(kind: type[Target]) -> bool:
    """Whether a target class's `answer` takes the conversation (`chat`)."""
    return "chat" in inspect.signature(kind.answer).parameters


def question_chat(question: Question) -> Chat | None:
    """Where a question stands in its conversation (None for a question asked alone)."""
    if question.conversation is None:
        return None
    return Chat(question.conversation, question.turn or 1, question.history)


def settle(plan: Plan, question: Question, asked: Asked) -> Outcome:
    """The outcome of an asked question: scored and judged, or its error (recorded, never raised)."""
    if asked.reply is None:
        return Outcome.failed(asked.error or "no reply", asked.latency_s, asked.tokens, usage_of(plan, asked, {}))
    try:
        return scored(plan, question, asked, asked.reply)
    except Exception as error:  # noqa: BLE001 - a failed question is recorded and the campaign goes on
        return Outcome.failed(error_text(error), asked.latency_s,
                              (asked.reply.prompt_tokens, asked.reply.completion_tokens), usage_of(plan, asked, {}))


def scored(plan: Plan, question: Question, asked: Asked, reply: TargetAnswer) -> Outcome:
    """The outcome of an answered question: measures on what was retrieved and answered, then the judges."""
    retrieved = tuple(reply.retrieved)
    context = retrieved if reply.context is None else tuple(reply.context)
    sources = sources_of(context)
    scores = metrics.score_question(metrics.Inputs(
        relevant=question.relevant, ranked=[hit.pid for hit in retrieved], answer=reply.answer,
        references=list(question.references), expected_answer=question.expected_answer,
        expected_sources=list(question.expected_sources) or None,
        retrieved_sources=[source.to_dict() for source in sources], graded=plan.graded,
        answerable=question.answerable, fallback_answer=plan.target.config.prompts.fallback_answer,
        similarity=answer_embedding(plan.target.config.judge.answer_similarity_model), checks=prepared(question.checks),
        question=question.text, passages=retrieved,
    ))
    verdicts: dict[str, Verdict] = {}
    notes = [*reply.notes, *scores.failures]
    if plan.judges and plan.judging is not None and reply.answer is not None:
        verdicts, judge_notes = judge(plan.judging, plan.judges, question, reply.answer, context)
        notes += judge_notes
    for name, verdict in verdicts.items():
        if verdict.score is not None:
            scores.values[f"judge.{name}"] = float(verdict.score)
            scores.signatures[f"judge.{name}"] = f"{verdict.signature}|model:{verdict.model}"
    if (refusal := verdicts.get("refusal")) is not None and (refused := refusal.result.passed) is not None:
        metrics.judge_abstention(scores, answer=reply.answer, answerable=question.answerable, refused=refused)
    stage = diagnose(plan.target.config, question, retrieved, context, scores.values, verdicts)
    return Outcome(answer=reply.answer, retrieved=retrieved, context=context, sources=sources, measures=scores.values,
                   signatures=scores.signatures, results=scores.results, judges=verdicts, latency_s=asked.latency_s,
                   prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens, notes=tuple(notes),
                   diagnosis=stage, queries=tuple(reply.queries), usage=usage_of(plan, asked, verdicts),
                   check_results=dict(scores.checks))


def answer_embedding(model: str) -> metrics.AnswerEmbedding | None:
    """The embedding model of the semantic answer similarity, None when it is off.

    Each text is embedded as a query: E5 asks for its `query:` prefix on both sides of a symmetric
    task (semantic similarity); the universal sentence encoder has one encoder for both.
    """
    if model == "none":
        return None
    from evalcore.targets.knowledge import get_embedder

    return metrics.AnswerEmbedding(model, get_embedder(model).query)


def diagnose(config: TargetConfig, question: Question, retrieved: tuple[Retrieved, ...], context: tuple[Retrieved, ...],
             measures: dict[str, float], verdicts: dict[str, Verdict]) -> Stage:
    """The stage this answered question failed at, with the target's pass marks (evalcore.diagnosis)."""
    score = verdicts.get("score")
    evidence = Evidence(question.relevant, question.expected_sources, retrieved, context, measures,
                        judged=score.result if score else None)
    marks = config.diagnosis
    return attribute(evidence, GenerationMarks(marks.generation_pass_rougel, marks.generation_pass_coverage))


def passage_id(hit: Retrieved) -> str:
    """A context passage's id as a judge names it: the dataset's passage id, else an external target's own."""
    return str(hit.pid) if hit.pid is not None else hit.source


def judge(settings: JudgeSettings, names: tuple[str, ...], question: Question, answer: str,
          context: tuple[Retrieved, ...]) -> tuple[dict[str, Verdict], list[str]]:
    """Run each requested judge on the answer's own context (whole, with titles) and every reference answer.

    A broken judge is noted on the question, and so is what its model had to say once (an endpoint that refused the
    verdict's format: see evalcore.models.notice).
    """
    references = (question.expected_answer,) if question.expected_answer else question.references
    verdicts: dict[str, Verdict] = {}
    notes: list[str] = []
    with noticed() as said:
        for name in names:
            try:
                verdicts[name] = run_judge(settings, name, question=question.text, answer=answer,
                                           context=[Passage(hit.text, hit.title, passage_id(hit)) for hit in context],
                                           expected=references)
            except Exception as error:  # noqa: BLE001 - recorded on the question, the campaign goes on
                notes.append(f"judge {name} failed: {error_text(error)}")
    return verdicts, said + notes
