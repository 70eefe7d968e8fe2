"""Datasets made on the server: a folder of documents of the operator's imported as a new dataset's corpus."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from evalcore.access.principals import Forbidden
from evalcore.api.auth import Admin
from evalcore.api.error_envelope import ERROR_RESPONSES, ApiError, ok
from evalcore.api.inputs import RequestBody
from evalcore.api.schemas import Ok, model_of
from evalcore.datasets import DATASET_ROOT
from evalcore.documents import Chunking, ImportReport, import_folder
from evalcore.errors import EvalError

router = APIRouter(prefix="/api/v1/datasets", tags=["datasets"], responses=ERROR_RESPONSES)
BODY_FIELDS = ("folder", "dataset_id", "chunk_size", "chunk_overlap")

if TYPE_CHECKING:
    ImportReportOut = BaseModel
else:
    ImportReportOut = model_of(ImportReport, "ImportReportOut")


class ImportIn(RequestBody):
    """Which of the operator's folders to read, and the new dataset's id."""

    folder: str = Field(min_length=1, max_length=1000,
                        description="one of the server's import folders by the name the operator gave it "
                                    "(EVALCORE_IMPORT_DIRS), or a folder inside one: `manuals`, `manuals/2024`; "
                                    "never a path")
    dataset_id: str = Field(min_length=1, max_length=64,
                            description="the new dataset's id (a folder under the dataset root; must not exist)")
    chunk_size: int | None = Field(default=None, description="words per passage (default: the chunk_size key, 200)")
    chunk_overlap: int | None = Field(default=None,
                                      description="words shared by consecutive passages (default: chunk_overlap, 40)")


class ImportOut(BaseModel):
    report: ImportReportOut


@router.post("/import", status_code=201, response_model=Ok[ImportOut],
             summary="Import a folder of documents of the operator's as a new dataset (admins)")
def import_documents(request: Request, body: ImportIn, principal: Admin) -> dict[str, Any]:
    """Reads Markdown, text, HTML, PDF and Word files (subfolders included) into the new dataset's corpus, with no
    questions yet; the report says what was read and each file skipped, and why. A folder the operator did not
    list answers 403; a dataset id in use, or a folder with nothing readable, 422 (nothing is written)."""
    root = request.app.state.dataset_root or DATASET_ROOT
    try:
        chunking = Chunking.of(body.chunk_size, body.chunk_overlap)
    except EvalError as error:
        raise ApiError(422, "; ".join(error.problems), field=error.problems[0].split(":")[0]) from None
    try:
        report = import_folder(body.folder, body.dataset_id, root, principal=principal, chunking=chunking)
    except Forbidden:
        raise
    except EvalError as error:
        # Messages name the dataset, not the server's folders.
        message = "; ".join(error.problems).replace(f"{root.resolve()}/", "").replace(f"{root}/", "")
        raise ApiError(422, message, field=error.where if error.where in BODY_FIELDS else None) from None
    return ok({"report": report.to_dict()})
