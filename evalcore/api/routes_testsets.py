"""Test sets generated from a corpus on the server: started as a job (followed at /api/v1/jobs/{id}), their quality
report, their questions with the checks' reasons, and people's review decisions."""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, Field

from evalcore.access.principals import Forbidden
from evalcore.api.auth import Admin, FullAdmin, Viewer
from evalcore.api.error_envelope import ERROR_RESPONSES, ApiError, ok
from evalcore.api.inputs import RequestBody
from evalcore.api.routes_jobs import wake_jobs
from evalcore.api.runs import JudgeModelIn
from evalcore.api.schemas import JobData, Ok, model_of
from evalcore.datasets import DATASET_ROOT, resolve_dataset
from evalcore.datasets.loader import DATASET_ID
from evalcore.errors import EvalError
from evalcore.jobs.job_queue import get_job
from evalcore.store import Conflict
from evalcore.testsets import (
    LANGUAGES,
    Candidate,
    GenerationRequest,
    Kind,
    QualityReport,
    Review,
    measure_testset,
    read_provenance,
    review_question,
    start_testset,
)

router = APIRouter(prefix="/api/v1/testsets", tags=["test sets"], responses=ERROR_RESPONSES)
ID_PATTERN = f"^{DATASET_ID.pattern}$"
DatasetId = Annotated[str, Path(max_length=64, pattern=ID_PATTERN)]

if TYPE_CHECKING:
    QualityOut = BaseModel
    CandidateOut = BaseModel
    ReviewOut = BaseModel
else:
    QualityOut = model_of(QualityReport, "TestsetQualityOut")
    CandidateOut = model_of(Candidate, "TestsetQuestionOut")
    ReviewOut = model_of(Review, "TestsetReviewOut")


class GenerateIn(RequestBody):
    """What to generate, from which corpus, with which model."""

    dataset_id: str = Field(min_length=1, max_length=64, pattern=ID_PATTERN,
                            description="the corpus (a dataset, e.g. one imported from documents)")
    out_id: str = Field(min_length=1, max_length=64, pattern=ID_PATTERN,
                        description="the new dataset's id (must not exist unless replace)")
    questions: int = Field(ge=1, description="questions to plan (at most EVALCORE_MAX_TESTSET_QUESTIONS, 5,000)")
    kinds: list[str] = Field(default_factory=lambda: [k.value for k in Kind], min_length=1, max_length=len(Kind),
                             description=f"kinds in turn: {', '.join(k.value for k in Kind)}")
    language: str | None = Field(default=None, pattern=f"^({'|'.join(LANGUAGES)})$",
                                 description="write every question in this language (left out: each passage's own)")
    seed: int = Field(default=0, ge=0, le=2**31, description="the plan's seed")
    model: JudgeModelIn = Field(description="the model that writes and checks the questions (judge keys)")
    timeout: float = Field(default=60.0, gt=0, le=3600, description="seconds per attempt of a model call")
    concurrency: int = Field(default=4, ge=1, le=32, description="questions in flight")
    duplicate_similarity: float = Field(default=0.9, ge=0, le=1,
                                        description="cosine similarity from which a question is a near-duplicate")
    replace: bool = Field(default=False, description="replace out_id if it exists")


class ReviewIn(RequestBody):
    """A person's decision on one generated question."""

    qid: int = Field(description="the question's id")
    decision: str = Field(pattern="^(accept|edit|reject)$", description="accept, edit (with new texts) or reject")
    question: str | None = Field(default=None, max_length=5000, description="the edited question (edit)")
    answer: str | None = Field(default=None, max_length=20000, description="the edited answer (edit)")
    note: str = Field(default="", max_length=2000, description="why")


class QualityData(BaseModel):
    report: QualityOut


class QuestionsData(BaseModel):
    model: str = Field(description="the model that wrote and checked them")
    prompts_hash: str
    seed: int
    questions: list[CandidateOut] = Field(description="every planned question with its checks' reasons, in plan "
                                                      "order")
    reviews: list[ReviewOut]


class ReviewData(BaseModel):
    review: ReviewOut


def _root(request: Request) -> FilePath:
    return FilePath(request.app.state.dataset_root or DATASET_ROOT)


def _unpathed(error: EvalError, root: FilePath) -> ApiError:
    """The error as a 422 whose message names datasets, not the server's folders."""
    message = "; ".join(error.problems)
    for folder in (f"{root.resolve()}/", f"{root}/", str(root.resolve()), str(root)):
        message = message.replace(folder, "" if folder.endswith("/") else "the dataset root")
    return ApiError(422, message)


@router.post("", status_code=202, response_model=Ok[JobData],
             summary="Generate a test set from a corpus: a job to follow at /api/v1/jobs/{id} (full-access keys)")
def generate(request: Request, body: GenerateIn, principal: FullAdmin) -> dict[str, Any]:
    """Queues the generation and answers at once (409 while the same job is under way). The job writes each
    question with its reference answer, has the critic check it, rejects near-duplicates, labels other relevant
    passages and writes the new dataset with its provenance; its result is the quality report. Every model call is
    cached: the same request gives the same set."""
    model = {f"judge_{name}": value for name, value in body.model.model_dump().items()} | {"timeout": body.timeout}
    try:
        testset = GenerationRequest(body.dataset_id, body.out_id, body.questions, Kind.parse(body.kinds), body.language,
                                 body.seed, model, body.concurrency, body.duplicate_similarity, body.replace)
        root = _root(request)
        job_id = start_testset(request.app.state.store, testset, root=root, principal=principal)
    except EvalError as error:
        if isinstance(error, (Forbidden, Conflict)):
            raise
        raise _unpathed(error, _root(request)) from None
    wake_jobs(request)
    return ok({"job": get_job(request.app.state.store, job_id).to_dict()})


@router.get("/{dataset_id}/report", response_model=Ok[QualityData], summary="A generated test set's quality")
def report(request: Request, dataset_id: DatasetId, principal: Viewer) -> dict[str, Any]:
    """Accepted share by kind, rejections by reason, near-duplicate rate, documents covered, the baseline
    retriever's recall, and the critic's agreement with people where they reviewed."""
    root = _root(request)
    try:
        return ok({"report": measure_testset(resolve_dataset(dataset_id, root, allow_paths=False)).to_dict()})
    except EvalError as error:
        raise _unpathed(error, root) from None


@router.get("/{dataset_id}/questions", response_model=Ok[QuestionsData],
            summary="A generated test set's questions, each with its checks, and the reviews")
def questions(request: Request, dataset_id: DatasetId, principal: Viewer) -> dict[str, Any]:
    """Every planned question (accepted or not, with why), and every review decision, oldest first."""
    root = _root(request)
    try:
        provenance = read_provenance(resolve_dataset(dataset_id, root, allow_paths=False))
    except EvalError as error:
        raise _unpathed(error, root) from None
    return ok({"model": provenance.model, "prompts_hash": provenance.prompts_hash, "seed": provenance.seed,
               "questions": [c.to_dict() for c in provenance.candidates],
               "reviews": [r.to_dict() for r in provenance.reviews]})


@router.post("/{dataset_id}/reviews", status_code=201, response_model=Ok[ReviewData],
             summary="Accept, edit or reject one generated question (applied to the dataset at once)")
def review(request: Request, dataset_id: DatasetId, body: ReviewIn, principal: Admin) -> dict[str, Any]:
    """The decision is kept in the test set's provenance; the dataset holds the accepted questions from then on."""
    root = _root(request)
    try:
        done = review_question(resolve_dataset(dataset_id, root, allow_paths=False), body.qid, body.decision,
                               question=body.question,
                               answer=body.answer, note=body.note, principal=principal)
    except EvalError as error:
        if isinstance(error, Forbidden):
            raise
        raise _unpathed(error, root) from None
    return ok({"review": done.to_dict()})

