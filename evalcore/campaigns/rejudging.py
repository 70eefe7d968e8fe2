"""Judging a finished campaign's answers again, with other judges, without asking its target again.

A re-judge is a campaign like any other (listed, followed, cancelled, resumed, exported), whose
snapshot names the campaign whose answers it judges (`answers_from`). The answers, the ranked
passages and the contexts stay stored once, in that campaign's rows: the re-judge's own rows keep
only what judging produced (measures, verdicts, the judges' tokens, the stage), and reading its
results takes the rest from there. Its configuration is the judged campaign's with judge keys
changed, nothing else: its answer and retrieval measures are those of the answers it judges, and a
comparison of the two differs only where the judges do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore.access.principals import Principal
from evalcore.campaigns.launching import check_judges
from evalcore.campaigns.queries import get_campaign
from evalcore.campaigns.records import Campaign, QuestionResult
from evalcore.campaigns.result_rows import read_results
from evalcore.errors import EvalError
from evalcore.language.text import counted
from evalcore.store import Conflict, Store, campaign_rows
from evalcore.store.campaign_statuses import CampaignStatus
from evalcore.targets import Chat, TargetAnswer, TargetConfig
from evalcore.targets.target_config import JUDGE, TABLES

if TYPE_CHECKING:
    from evalcore.models import ChatModel
    from evalcore.targets.knowledge import PassageLike

# A campaign whose every question ran: only its answers are all there to judge again.
JUDGEABLE = (CampaignStatus.SUCCEEDED, CampaignStatus.SUCCEEDED_WITH_FAILURES)
JUDGE_KEYS = frozenset(TargetConfig.keys_in(JUDGE))
MODEL_KEYS = ("judge_model", "judge_deployment")


@dataclass(frozen=True)
class RejudgeRequest:
    """One finished campaign to judge again: which judges, with which judge settings, and how it runs."""

    campaign_id: str  # the campaign whose answers are judged
    judges: tuple[str, ...] = ()  # built-in judges or rubrics (none: the judged campaign's and the rubrics given)
    # Judge keys of the configuration changed (judge_model, judge_kind, rubrics, judge_prompts, judge_thresholds...).
    settings: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None  # a name to recognise it by (None: the judged campaign's, with its judges)
    tenant: str | None = None  # only a campaign of this workspace, when no principal says so (None: any)
    principal: Principal | None = None  # who asks (None: the local operator)
    concurrency: int | None = None  # questions judged at once (None: the judged campaign's)
    judge_samples: int | None = None  # each judge asked this many times (None: the judged campaign's)
    cache: bool = True  # reuse cached judge replies


def judged_campaign(store: Store, campaign_id: str, tenant: str | None) -> Campaign:
    """The campaign to judge again: one of this tenant's, whose every question ran; else a clear refusal."""
    campaign = get_campaign(store, campaign_id, tenant)
    if campaign.status not in JUDGEABLE:
        raise Conflict(f"only a campaign whose every question ran can be judged again: this one is "
                       f"{campaign.status_text}", where=campaign_id, expected="succeeded (with or without failures)",
                       fix="wait for it to end, or resume it until every question has a result")
    return campaign


def rejudged_config(config: TargetConfig, settings: Mapping[str, Any]) -> TargetConfig:
    """The judged campaign's configuration with judge keys changed; EvalError for any other key.

    Another judge model under judge_kind "auto" is the judge (not the target's own chat model, which auto would
    pick); the stored answers are read on this machine.
    """
    other = sorted(key for key in settings if key not in JUDGE_KEYS)
    if other:
        raise EvalError(f"a re-judge changes only the judges: {other[0]} is not a judge key", where=other[0],
                        expected=", ".join(sorted(JUDGE_KEYS)),
                        fix="launch a new campaign to change what answers the questions")
    # A table (pass marks, prompts, rubrics) adds to the judged campaign's, as on a launch.
    tables = {key: {**dict(config.value(key)), **dict(value)} for key, value in settings.items() if key in TABLES}
    changed = {**config.to_dict(), **settings, **tables, "executor": "local"}
    if changed["judge_kind"] == "auto" and any(changed[key] != config.value(key) for key in MODEL_KEYS):
        changed["judge_kind"] = "openai"
    return TargetConfig.from_dict(changed)


def rejudge_judges(source: Campaign, judges: Sequence[str], config: TargetConfig,
                   settings: Mapping[str, Any]) -> tuple[str, ...]:
    """The judges of a re-judge: those named (built-in judges or rubrics of its configuration), else the judged
    campaign's and the rubrics given."""
    rubrics = tuple(name for name, _ in config.judge.rubrics)
    names = check_judges(tuple(judges) or (*source.judges, *dict(settings.get("rubrics") or {})), rubrics)
    if not names:
        raise EvalError("a re-judge needs a judge", where="judges",
                        fix="name judges (--judge score) or give a rubric (--rubric NAME=FILE)")
    return names


def rejudge_name(name: str | None, source: Campaign, judges: Sequence[str], limit: int) -> str:
    """The name given, else the judged campaign's with the judges that judge it again (cut to `limit`)."""
    return name if name is not None else f"{source.name} · judged again: {', '.join(judges)}"[:limit]


def refuse_if_judged_again(store: Store, campaign_id: str, doing: str) -> None:
    """Conflict when re-judges read this campaign's answers: deleting or answering it again would change theirs."""
    readers = campaign_rows.readers_of(store, campaign_id)
    if readers:
        raise Conflict(f"cannot {doing}: its answers are judged again by {counted(len(readers), 'campaign')}, "
                       "which read them from it",
                       where=campaign_id, found=", ".join(readers),
                       fix="delete those campaigns first")


class AnswerFailed(EvalError):
    """The judged campaign's question failed: the re-judge records the same error, word for word."""


class StoredAnswers:
    """The target of a re-judge: the judged campaign's stored answers, given back; nothing is asked.

    Its chat model is the target's own (built, not called) for judges under judge_kind "auto".
    """

    def __init__(self, store: Store, campaign_id: str, config: TargetConfig, cache: Any = None) -> None:
        self.config = config
        self._cache = cache
        self._results: dict[tuple[int | None, str], QuestionResult] = {
            (r.question.qid, r.question.text): r for r in read_results(store, campaign_id)}

    def check(self) -> None:
        """Nothing to reach: the answers are stored."""

    def prepare(self, passages: Sequence[PassageLike], progress: Any = None) -> None:
        """No index to build: the passages each answer was built from are stored."""

    def answer(self, question: str, qid: int | None = None, chat: Chat | None = None) -> TargetAnswer:
        """The stored answer to this question (its error raised again, for the same failed question)."""
        found = self._results.get((qid, question))
        if found is None:
            raise EvalError("the judged campaign has no answer to this question", where=f"question {qid}")
        outcome = found.outcome
        if outcome.error is not None:
            raise AnswerFailed(outcome.error)
        return TargetAnswer(outcome.answer, list(outcome.retrieved), list(outcome.context),
                            queries=list(outcome.queries))

    def chat_model(self) -> ChatModel | None:
        """The target's own chat model (a pipeline's generator), for judges that use it."""
        from evalcore.targets.generators import build_chat_model

        return build_chat_model(self.config, self._cache) if self.config.kind == "rag" else None
