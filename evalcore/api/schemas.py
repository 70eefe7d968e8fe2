"""What the API answers: one response model per route, wrapping the engine's records as clients see them.

Every success is `{"success": true, "data": ...}` (`Ok[T]`). The models follow the engine records'
`to_dict` shapes; the server's own file paths never appear in them.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")


class Ok(BaseModel, Generic[T]):
    """The success envelope."""

    success: bool = True
    data: T


class Out(BaseModel):
    """A response part: extra keys a newer engine adds pass through."""

    model_config = ConfigDict(extra="allow")


DIAGNOSIS = ("the stage the question failed at: retrieval miss, ranking miss, generation miss, ok, unlabeled or "
             "failed (null or 'not attributed': stored before failure attribution existed)")


class ProgressOut(Out):
    """Questions finished of total; before them, the index build's step with its chunks done of total."""

    finished: int
    total: int
    rate_per_s: float | None = Field(description="questions per second over the last half minute (the session's "
                                                 "average once ended)")
    eta_s: float | None = Field(description="seconds left in the current stage at its recent rate (null: unknown)")
    stage: str | None = Field(description="the index build's step, e.g. 'embedding the corpus with use'; null once "
                                          "questions run")
    stage_done: int | None = Field(default=None, description="chunks done in that step")
    stage_total: int | None = Field(default=None, description="chunks of that step")


class RunOptionsOut(Out):
    concurrency: int
    time_limit: float
    max_failed_share: float
    judge_samples: int = 1
    models: dict[str, str] = Field(default={}, description="evaluation tasks: which chat and rerank model each "
                                   "role got, and why (an id, the operator's default, none configured)")
    graded_thresholds: dict[str, float] = Field(default={}, description="graded retrieval: the pass mark of each "
                                                "measure, as its results used")


class CampaignOut(Out):
    """A campaign: status (and its numeric code), progress, the configuration snapshot and run options."""

    id: str
    name: str = Field(description="given at launch, or made from the configuration's distinguishing settings")
    tenant: str
    kind: str = Field(description="dataset or suite")
    source: str = Field(description="the dataset id, or the suite id")
    suite_id: str | None
    target_id: str | None
    status: str = Field(description="queued (waiting for a worker), pending, running, succeeded, "
                                    "succeeded_with_failures (every question ran, "
                                    "some failed), failed, interrupted or cancelled")
    status_code: int = Field(description="0 queued or pending, 1 running, 2 succeeded (with or without failures), "
                                         "3 otherwise")
    status_text: str = Field(description="the status as people read it, e.g. 'succeeded with 3 failed'")
    error: str | None
    total: int
    finished: int
    failed: int
    created_at: float
    started_at: float | None
    ended_at: float | None
    heartbeat: float | None
    session_finished: int
    cancel_requested: bool
    config: dict[str, Any]
    dataset_hash: str | None
    use_judge: bool
    judges: list[str]
    cache: bool
    cache_hits: int
    options: RunOptionsOut
    stage: str | None
    progress: ProgressOut


class AggregateOut(Out):
    mean: float | None
    count: int


class RetrievedOut(Out):
    pid: int | None
    source: str
    title: str
    text: str
    score: float
    stages: dict[str, float]


class SourceOut(Out):
    id: int | str | None
    title: str
    file_name: str = Field(default="", description="the file an agent named for it (file_name, filename, source, "
                                                   "path, url or agent_source_file), matched by expected sources")


class VerdictOut(Out):
    judge: str
    model: str
    score: float | None
    reason: str
    result: str = Field(description="pass, fail, unknown (unreadable or failed), or skipped (no reference answer)")
    threshold: float | None
    prompt_hash: str
    prompt_version: str
    signature: str
    tokens: int
    prompt_tokens: int
    completion_tokens: int
    error: str | None
    context_cut: str | None = Field(None, description="how the context was cut to fit the judge model's context "
                                    "window; null when the judge saw it whole")


class QuestionResultOut(Out):
    """One finished question: what was asked, what came back, its measures and judges."""

    qid: int
    position: int
    question: str
    expected_answer: str | None
    references: list[str]
    relevant: dict[int, int] | None
    expected_sources: list[str]
    answerable: bool | None = Field(None, description="false: declining is the right answer (an unanswerable marker "
                                    "or the dataset's answerable column); null: no reference answer")
    answer: str | None
    retrieved: list[RetrievedOut]
    context: list[RetrievedOut] = Field(description="what the answer was built from (the judges see exactly this)")
    sources: list[SourceOut] = Field(description="the documents of the context")
    measures: dict[str, float]
    signatures: dict[str, str]
    results: dict[str, str] = Field(description="pass, fail or unknown of the measures with a pass mark")
    judges: dict[str, VerdictOut]
    latency_s: float | None
    prompt_tokens: int
    completion_tokens: int
    judge_prompt_tokens: int
    judge_completion_tokens: int
    error: str | None
    attempts: int
    notes: list[str]
    diagnosis: str | None = Field(None, description=DIAGNOSIS)
    queries: list[str] = Field(default=[], description="the texts a query transformation retrieved with (a rewrite, "
                                                       "the multi-query rewrites, a HyDE passage); empty without one")
    flat: dict[str, Any] | None = Field(None,
                                        description="with ?names=: each judge's result as flat fields (evaluator: "
                                        "gpt_retrieval, retrieval_reason, response_completeness_result, "
                                        "groundedness_pro_label...; project: our names), then <measure>_result")


class TokensOut(Out):
    prompt: int
    completion: int
    total: int


class SummaryOut(Out):
    answered: int
    failed: int
    sources_found_rate: float | None
    mean_coverage: float | None
    mean_judge_score: float | None
    mean_latency_s: float | None
    tokens: TokensOut = Field(description="the answers' model calls")
    judge_tokens: TokensOut = Field(description="the judges' model calls")
    total_tokens: int
    skipped: dict[str, int] = Field(description="per judge, questions not judged for want of a reference answer")
    cut: dict[str, int] = Field(default={}, description="per judge, questions whose context was cut to fit the judge "
                                "model's context window")


class CampaignHeaderOut(Out):
    id: str
    kind: str
    source: str
    status: str
    dataset_hash: str | None
    config: dict[str, Any]
    total: int
    finished: int
    failed: int


class PassageOut(Out):
    pid: int
    title: str


class QuestionDiffOut(Out):
    qid: int
    question: str
    answer_a: str | None
    answer_b: str | None
    verdict: str = Field(description="better, worse, same, new, removed or unscored")
    basis: str | None = Field(description="the measure that decided, or 'error'")
    a: float | None
    b: float | None
    error_a: str | None
    error_b: str | None
    answer_changed: bool | None
    entered: list[PassageOut]
    left: list[PassageOut]
    diagnosis_a: str | None = Field(None, description="its failure stage in A (null when A did not ask it)")
    diagnosis_b: str | None = Field(None, description="its failure stage in B (null when B did not ask it)")
    queries_a: list[str] = Field(default=[], description="the query transformation's texts in A (empty without one)")
    queries_b: list[str] = Field(default=[], description="the query transformation's texts in B")


class TransitionOut(Out):
    a: str = Field(description="the failure stage in A")
    b: str = Field(description="the failure stage in B")
    count: int
    qids: list[int] = Field(description="the questions that moved from stage a to stage b")


class MeasureDeltaOut(Out):
    measure: str
    n: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float | None
    ci_high: float | None
    p_value: float
    test: str
    significant: bool
    improved: bool
    higher_is_better: bool
    binary: bool
    sd_diff: float | None = Field(description="standard deviation of the per-question differences B - A")
    se_bootstrap: float | None = Field(description="bootstrap standard error of the mean difference")
    mde: float | None = Field(description="smallest difference the paired t-test detects with 80% power at "
                                          "alpha 0.05 given n and sd_diff (null when power_note says why not)")
    mde_bootstrap: float | None = Field(description="(z_0.975 + z_0.8) * se_bootstrap: a check on mde")
    effect: float = Field(description="the effect size n_required is computed for, in the measure's units")
    n_required: int | None = Field(description="questions needed to detect effect with 80% power at alpha 0.05")
    power_note: str | None = Field(description="why mde and n_required are null (fewer than 2 pairs, no spread)")
    changed: int | None = Field(None, description="common questions whose value differs between A and B")
    one_way: bool | None = Field(None, description="every one of them moved in the same direction")


class ComparisonOut(Out):
    """Two campaigns: per-question verdicts and per-measure deltas with intervals."""

    a: CampaignHeaderOut
    b: CampaignHeaderOut
    verdicts: dict[str, int]
    transitions: list[TransitionOut] = Field([], description="how the common questions moved between failure "
                                             "stages from A to B (the counts add up to the common questions)")
    questions: list[QuestionDiffOut]
    measures: list[MeasureDeltaOut]
    warnings: list[str]
    power_warnings: list[str] = Field(description="measures with no significant difference that could not have "
                                                  "shown one of the effect size")
    notes: list[str]
    config_diff: dict[str, list[Any]]
    seed: int
    resamples: int
    effect: float = Field(description="the effect size to detect (the `effect` query parameter)")
    power: float = Field(description="the power the minimum detectable effects are computed for")
    alpha: float
    basis: str | None = Field(default=None, description="the measure deciding per-question verdicts first")
    basis_reason: str = Field(default="", description="why that measure (what changed between the configurations)")
    verdicts_without_tolerance: dict[str, int] = Field(default_factory=dict, description="the verdict counts if any "
                                                       "difference counted")
    tolerance: dict[str, float] = Field(default_factory=dict, description="the smallest meaningful difference used "
                                        "for each measure that decided a verdict (a smaller change is the same)")
    unchanged: list[str] = Field(default_factory=list, description="measures with the same value in A and B on every "
                                 "common question")
    disagreements: list[str] = Field(default_factory=list, description="measures whose interval and test disagree, "
                                     "with what that means in words")


class SettingsOut(Out):
    """The settings that tell configurations apart at a glance."""

    retriever: str
    reranker: str
    generator: str = Field(description="the model of an OpenAI-compatible generator, else the generator")
    top_k: int | None = Field(description="chunks each question retrieves (after the reranker when there is one)")


class CampaignListed(CampaignOut):
    """A campaign in a list: also its dataset or suite name, key settings and headline measures."""

    source_name: str = Field(description="the dataset id, or the suite's name")
    settings: SettingsOut
    headline: dict[str, float] = Field(description="mean of each headline measure the campaign has (those that "
                                                   "decide a question's verdict in a comparison)")


class CampaignList(BaseModel):
    campaigns: list[CampaignListed]


class CampaignDetail(BaseModel):
    campaign: CampaignOut
    aggregates: dict[str, AggregateOut]
    diagnosis: dict[str, int] = Field(description="questions per failure stage: " + DIAGNOSIS)


class CampaignOnly(BaseModel):
    campaign: CampaignOut


class ResultsPage(BaseModel):
    results: list[QuestionResultOut]
    offset: int
    limit: int
    total: int
    finished: int


class ComparisonData(BaseModel):
    comparison: ComparisonOut


class CaseOut(Out):
    question: str
    expected_answer: str | None
    expected_sources: list[str]


class SuiteOut(Out):
    """A suite: its name, the saved target configuration its campaigns run, and its size."""

    id: str
    name: str
    agent_id: str = Field(description="the saved target configuration its campaigns run")
    case_count: int
    created_at: float
    updated_at: float


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


class RunList(BaseModel):
    runs: list[CampaignOut]


class TargetOut(Out):
    id: str
    name: str
    config: dict[str, Any]
    config_hash: str
    created_at: float


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


class CheckOut(Out):
    """One gate, one measure's regression check, or one failed question."""

    kind: str = Field(description="gate, regression or question")
    name: str
    passed: bool
    reason: str = Field(description="one line: what was measured, and why it failed")
    value: float | None = Field(description="the mean (or bound) a gate took, or a regression's delta")


class ChecksData(BaseModel):
    checks: list[CheckOut]
    exit_code: int = Field(description="what `run` or `compare` would exit with: 0 passed, 1 campaign failed, "
                                       "3 questions failed, 4 gate failed, 5 worse")
    verdict: str
class LabelOut(Out):
    qid: int
    judge: str
    label: str = Field(description="on the judge's scale (1-5, a rubric's label) or pass / fail")
    note: str
    author: str = Field(description="who labelled: the API key's id, a user name, or the CSV's author column")
    labelled_at: float


class LabelOnly(BaseModel):
    label: LabelOut


class LabelList(BaseModel):
    labels: list[LabelOut]


class ImportedLabels(BaseModel):
    imported: int


class AgreementOut(Out):
    judge: str
    n: int = Field(description="labelled questions the judge gave a readable verdict on")
    categories: list[str] = Field(description="the scale compared on: the judge's own, or fail / pass")
    accuracy: float | None
    kappa: float | None = Field(description="Cohen's kappa; null where undefined (one category on both sides)")
    weighted_kappa: float | None = Field(description="quadratic-weighted kappa, on ordinal scales (1-5, a rubric's)")
    interval: list[float] | None = Field(description="95% bootstrap interval of the weighted kappa (else of kappa)")
    confusion: list[list[int]] = Field(description="rows: the people's labels, columns: the judge's, in category order")


class AgreementData(BaseModel):
    agreement: dict[str, AgreementOut]
