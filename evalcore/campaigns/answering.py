"""One question of a campaign: ask the target, score the answer, judge it; errors are recorded, never raised."""

from __future__ import annotations

import time
from dataclasses import dataclass

from evalcore import metrics
from evalcore.campaigns.records import Outcome, Question, RunOptions, Source
from evalcore.errors import EvalError
from evalcore.judges import Verdict, run_judge
from evalcore.models import ChatModel
from evalcore.store import StoreCallCache
from evalcore.targets import Retrieved, Target
from evalcore.targets.knowledge import PassageLike


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
    judge_model: ChatModel | None = None
    cache: StoreCallCache | None = None
    cache_hits_before: int = 0


def error_text(error: BaseException) -> str:
    """One line for a question's error column."""
    if isinstance(error, EvalError):
        return error.line()
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def answer_question(plan: Plan, question: Question) -> Outcome:
    """Ask the target, score the answer, judge it: the outcome to store (errors included, never raised)."""
    start = time.perf_counter()
    try:
        reply = plan.target.answer(question.text, qid=question.qid)
        latency = time.perf_counter() - start
        retrieved = tuple(reply.retrieved)
        sources = question_sources(retrieved)
        measures, signatures = metrics.score_question(
            relevant=question.relevant, ranked=[hit.pid for hit in retrieved], answer=reply.answer,
            references=list(question.references), expected_answer=question.expected_answer,
            expected_sources=list(question.expected_sources) or None,
            retrieved_sources=[source.to_dict() for source in sources],
        )
        notes = list(reply.notes)
        verdicts: dict[str, Verdict] = {}
        if plan.judges and reply.answer is not None:
            verdicts, judge_notes = judge(plan, question, reply.answer, [hit.text for hit in retrieved])
            notes += judge_notes
            for name, verdict in verdicts.items():
                if verdict.score is not None:
                    measures[f"judge.{name}"] = float(verdict.score)
                    signatures[f"judge.{name}"] = f"{verdict.signature}|model:{verdict.model}"
        return Outcome(answer=reply.answer, retrieved=retrieved, sources=sources, measures=measures,
                       signatures=signatures, judges=verdicts, latency_s=latency, prompt_tokens=reply.prompt_tokens,
                       completion_tokens=reply.completion_tokens, notes=tuple(notes))
    except Exception as error:  # noqa: BLE001 - a failed question is recorded and the campaign goes on
        return Outcome.failed(error_text(error), time.perf_counter() - start)


def judge(plan: Plan, question: Question, answer: str, context: list[str]) -> tuple[dict[str, Verdict], list[str]]:
    """Run each requested judge; a judge that breaks is noted, never fails the question."""
    verdicts, notes = {}, []
    for name in plan.judges:
        if metrics.MEASURES[f"judge.{name}"].needs_reference and not question.expected_answer:
            continue
        if plan.judge_model is None:
            raise EvalError("judges need a chat model", where="judges")
        try:
            verdicts[name] = run_judge(plan.judge_model, name, question=question.text, answer=answer, context=context,
                                       expected=question.expected_answer, samples=plan.options.judge_samples)
        except Exception as error:  # noqa: BLE001 - recorded on the question, the campaign goes on
            notes.append(f"judge {name} failed: {error_text(error)}")
    return verdicts, notes


def question_sources(retrieved: tuple[Retrieved, ...]) -> tuple[Source, ...]:
    """The distinct documents an answer drew on: passage id (or the external id) and title."""
    sources: dict[tuple[int | str | None, str], Source] = {}
    for hit in retrieved:
        source_id = hit.pid if hit.pid is not None else (hit.source or None)
        if source_id is not None or hit.title:
            sources.setdefault((source_id, hit.title), Source(source_id, hit.title))
    return tuple(sources.values())
