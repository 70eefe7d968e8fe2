"""What the API answers: one response model per route, wrapping the engine's records as clients see them.

Every success is `{"success": true, "data": ...}` (`Ok[T]`). A record's model is derived from the
record's own declaration (`model_of`, over evalcore.formats.shapes): its keys, their types and descriptions,
nested records as their own models. Keys a record gives only sometimes are left out when absent; keys it
keeps from clients (the server's own file paths) never appear; a key it does not declare is an error.
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.experimental.missing_sentinel import MISSING

from evalcore.campaigns import Aggregate, Campaign, QuestionResult, Summary
from evalcore.campaigns.conversation_measures import ConversationResult, ConversationSummary
from evalcore.campaigns.estimate import Estimate
from evalcore.campaigns.listing import CampaignRow
from evalcore.campaigns.question_labels import Label
from evalcore.campaigns.records import DIAGNOSIS
from evalcore.campaigns.trust import ComparisonTrust
from evalcore.compare import Comparison
from evalcore.compare.preference import Preference
from evalcore.formats.shapes import is_record, keys
from evalcore.gates import Check
from evalcore.jobs.job_queue import Job
from evalcore.metrics.agreement import Agreement
from evalcore.suites import Case, Suite
from evalcore.targets.saved_targets import ID_NAMES, SavedTarget

T = TypeVar("T")


class Ok(BaseModel, Generic[T]):
    """The success envelope."""

    success: bool = True
    data: T


class Out(BaseModel):
    """A response part derived from an engine record: exactly the keys the record declares."""

    model_config = ConfigDict(extra="forbid")


MODELS: dict[type, type[BaseModel]] = {}


def model_of(record: type, name: str | None = None, **more: Any) -> type[BaseModel]:
    """The API model of an engine record: its public keys in order, then `more` (API-only fields; one of the
    record's keys given there keeps its place, described as the API says it)."""
    fields: dict[str, Any] = {}
    for key in keys(record):
        if not key.private:
            described = key.doc or None
            fields[key.name] = ((api_type(key.type) | MISSING, Field(MISSING, description=described)) if key.optional
                                else (api_type(key.type), Field(description=described)))
    summary = (record.__doc__ or "").split("\n\n")[0].strip()
    model: type[BaseModel] = create_model(name or f"{record.__name__}Out", __base__=Out, __doc__=summary,
                                          __module__=__name__, **{**fields, **more})
    return model


def api_type(tp: Any) -> Any:
    """A record's field type as the API gives it: nested records as their models, tuples as lists."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(tp, type) and issubclass(tp, dict):  # a stored configuration snapshot: its JSON as stored
        return dict[str, Any]
    if is_record(tp):
        if tp not in MODELS:
            MODELS[tp] = model_of(tp)
        return MODELS[tp]
    if origin in (tuple, list, Sequence):
        return types.GenericAlias(list, (api_type(args[0]),))
    if origin in (dict, Mapping):
        return types.GenericAlias(dict, (args[0], api_type(args[1])))
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, map(api_type, args))
    return tp


if TYPE_CHECKING:  # the type checker sees models; what they hold is derived when the module loads
    CampaignOut = BaseModel
    AggregateOut = BaseModel
    SummaryOut = BaseModel
    CheckOut = BaseModel
    ComparisonOut = BaseModel
    QuestionResultOut = BaseModel
    CampaignListed = BaseModel
    TargetOut = BaseModel
    CaseOut = BaseModel
    LabelOut = BaseModel
    AgreementOut = BaseModel
    SuiteOut = BaseModel
    PreferenceOut = BaseModel
    TrustOut = BaseModel
    JobOut = BaseModel
    EstimateOut = BaseModel
    ConversationOut = BaseModel
    ConversationSummaryOut = BaseModel
else:
    CampaignOut = api_type(Campaign)
    AggregateOut = api_type(Aggregate)
    SummaryOut = api_type(Summary)
    CheckOut = api_type(Check)
    ComparisonOut = api_type(Comparison)
    QuestionResultOut = model_of(QuestionResult, flat=(dict[str, Any] | None, Field(None, description=(
        "with ?names=: each judge's result as flat fields (evaluator: gpt_retrieval, retrieval_reason, "
        "response_completeness_result, groundedness_pro_label...; project: our names), then <measure>_result"))))
    CampaignListed = model_of(CampaignRow, "CampaignListed")
    TargetOut = model_of(SavedTarget, "TargetOut")
    CaseOut = api_type(Case)
    EstimateOut = api_type(Estimate)
    LabelOut = api_type(Label)
    AgreementOut = api_type(Agreement)
    # The API describes agent_id in its own words (what the name means there); the record's other keys as declared.
    SuiteOut = model_of(Suite, "SuiteOut", agent_id=(str, Field(description=ID_NAMES["agent_id"])))
    PreferenceOut = api_type(Preference)
    TrustOut = model_of(ComparisonTrust, "TrustOut")
    JobOut = api_type(Job)
    ConversationOut = api_type(ConversationResult)
    ConversationSummaryOut = api_type(ConversationSummary)


class CampaignList(BaseModel):
    campaigns: list[CampaignListed]


class CampaignDetail(BaseModel):
    campaign: CampaignOut
    aggregates: dict[str, AggregateOut]
    diagnosis: dict[str, int] = Field(description="questions per failure stage: " + DIAGNOSIS)
    summary: SummaryOut = Field(description="answered and failed questions, tokens by role, and per judge what its "
                                            "figures leave out: unreadable (unknown), skipped, cut, no claim")


class CampaignOnly(BaseModel):
    campaign: CampaignOut


class ResultsPage(BaseModel):
    results: list[QuestionResultOut]
    offset: int
    limit: int
    total: int
    finished: int


class ConversationList(BaseModel):
    summary: ConversationSummaryOut
    conversations: list[ConversationOut]


class ComparisonData(BaseModel):
    comparison: ComparisonOut
    agreement: TrustOut = Field(description="how far each judge agrees with people's labels in A and in B, and, when "
                                            "A and B judged the same answers, B's judge with A's")


class PreferenceData(BaseModel):
    pairwise: PreferenceOut


class JobData(BaseModel):
    job: JobOut


class JobList(BaseModel):
    jobs: list[JobOut]


class SuiteListed(SuiteOut):
    """A suite in a list: its last campaign instead of its cases."""

    last_run: CampaignOut | None


class SuiteWithCases(SuiteOut):
    cases: list[CaseOut]


class SuiteList(BaseModel):
    suites: list[SuiteListed]


class SuiteDetail(BaseModel):
    suite: SuiteWithCases


class RunDetail(BaseModel):
    run: CampaignOut
    results: list[QuestionResultOut]
    summary: SummaryOut


class RunOnly(BaseModel):
    run: CampaignOut


class EstimateOnly(BaseModel):
    estimate: EstimateOut


class RunList(BaseModel):
    runs: list[CampaignOut]


class TargetList(BaseModel):
    targets: list[TargetOut]


class TargetDetail(BaseModel):
    target: TargetOut


class Health(BaseModel):
    status: str
    version: str


class Me(BaseModel):
    key_id: str
    tenant: str
    role: str
    capability: str


class ChecksData(BaseModel):
    checks: list[CheckOut]
    exit_code: int = Field(description="what `run` or `compare` would exit with: 0 passed, 1 campaign failed, "
                                       "3 questions failed, 4 gate failed, 5 worse")
    verdict: str


class LabelOnly(BaseModel):
    label: LabelOut


class LabelList(BaseModel):
    labels: list[LabelOut]


class ImportedLabels(BaseModel):
    imported: int


class AgreementData(BaseModel):
    agreement: dict[str, AgreementOut]
