"""Datasets as API clients name them: by id, a folder directly under the server's dataset root, never a path."""

from __future__ import annotations

from pathlib import Path

from fastapi import Request

from evalcore.api.error_envelope import ApiError, shown
from evalcore.datasets import load_dataset, resolve_dataset
from evalcore.datasets.loader import DATASET_ID
from evalcore.errors import EvalError


def dataset_path(request: Request, dataset_id: str, *, field: str | None = "dataset_id", label: str = "",
                 questions: bool = False) -> Path:
    """The folder of a valid dataset under the root (one with questions when `questions`: a knowledge base needs
    none, an evaluation task does); 422 naming `field` (or `label`) and every problem otherwise.

    A name that is not an id is refused before the file system is touched, and messages name
    files relative to the root: an answer never tells a server path, nor whether one exists.
    """
    def refuse(message: str) -> ApiError:
        return ApiError(422, f"{label or field}: {message}", field=field)

    if not DATASET_ID.fullmatch(dataset_id):
        raise refuse(f"{shown(dataset_id)} is not a dataset name (up to 64 letters, digits, '.', '-' or '_')")
    path = resolve_dataset(dataset_id, request.app.state.dataset_root, allow_paths=False)
    if not path.is_dir():
        raise refuse(f"no dataset {dataset_id!r} (a folder under the dataset root)")
    try:
        dataset = load_dataset(path)
    except EvalError as error:
        prefix = f"{path.parent}/"
        problems = "; ".join(p.replace(prefix, "") for p in error.problems)
        raise refuse(f"dataset {dataset_id!r} is invalid: {problems}") from None
    if questions and not dataset.questions:
        raise refuse(f"dataset {dataset_id!r} has no questions yet (a corpus of {len(dataset.passages)} passages): "
                     "use it as a knowledge base, or add questions to its queries.parquet")
    return path
