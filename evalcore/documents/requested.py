"""Imports a request asks for: documents uploaded from the dashboard, or a folder of the operator's (the API).

Both create a dataset, which every campaign can then run on: a principal needs a role that may change
things. A request never names a server path: uploads are unpacked in a temporary folder, and a folder is
named by the operator's import folders (`folders.requested_folder`).
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from evalcore.access.principals import Action, Principal
from evalcore.datasets.loader import DATASET_ID, DATASET_ROOT
from evalcore.datasets.uploads import upload_limit_mb, upload_name_problem, upload_root
from evalcore.documents.folders import Limits, requested_folder
from evalcore.documents.import_report import ImportReport, Skipped, reason_of
from evalcore.documents.importing import Progress, import_corpus
from evalcore.documents.passages import Chunking
from evalcore.errors import EvalError
from evalcore.language.text import shown


def import_uploads(files: list[tuple[str, bytes]], name: str, *, principal: Principal | None = None,
                   chunking: Chunking | None = None, progress: Progress | None = None) -> ImportReport:
    """Import uploaded documents (each a file, or a zip of a folder of them) as dataset uploads-<name>."""
    if principal is not None:
        principal.require(Action.CHANGE)
    limit = upload_limit_mb() * 2**20
    total = sum(len(data) for _, data in files)
    if not files:
        raise EvalError("no file chosen: add documents (or a zip of them), then import", where="upload")
    if total > limit:
        raise EvalError(f"the upload is {total / 2**20:.1f} MB; the limit is {upload_limit_mb()} MB", where="upload",
                        fix="upload fewer files, or ask the operator to raise EVALCORE_UPLOAD_MB")
    if problem := upload_name_problem(name):
        raise EvalError(problem, where="dataset name", found=repr(name))
    limits = Limits.from_env()
    with tempfile.TemporaryDirectory(prefix="evalcore-documents-") as scratch:
        folder = Path(scratch)
        skipped = _unpack(files, folder, limit, limits)
        target = upload_root() / f"uploads-{name}"
        # Named as the dataset list names it: an id under dataset/, else the upload folder's path.
        dataset = target.name if upload_root().resolve() == DATASET_ROOT.resolve() else str(target)
        return import_corpus(folder, target, chunking=chunking, limits=limits, progress=progress, name=dataset,
                             origin="upload", skipped=skipped)


def import_folder(reference: str, dataset_id: str, root: Path, *, principal: Principal | None = None,
                  chunking: Chunking | None = None) -> ImportReport:
    """Import a folder as dataset `dataset_id` under root. With a principal (a request) the folder is one of the
    operator's import folders, named as EVALCORE_IMPORT_DIRS names it; without one (the operator), any path."""
    if principal is not None:
        principal.require(Action.CHANGE)
        folder = requested_folder(reference)
    else:
        folder = Path(reference).expanduser()
    if not DATASET_ID.fullmatch(dataset_id):
        raise EvalError(f"{shown(dataset_id)!r} is not a dataset name", where="dataset_id",
                        expected="up to 64 letters, digits, '.', '-' or '_', starting with a letter or digit")
    if (root / dataset_id).exists():
        raise EvalError(f"a dataset {dataset_id!r} already exists", where="dataset_id", fix="choose another name")
    return import_corpus(folder, root / dataset_id, chunking=chunking, name=dataset_id, origin=reference)


def _unpack(files: list[tuple[str, bytes]], folder: Path, limit: int, limits: Limits) -> list[Skipped]:
    """Write each uploaded file (a zip's members in their folders) under folder; what could not be, and why."""
    skipped: list[Skipped] = []
    for name, data in files:
        base = Path(name.replace("\\", "/")).name
        if base.lower().endswith(".zip"):
            skipped += _unzip(base, data, folder, limit, limits)
        elif base in ("", ".", ".."):
            skipped.append(Skipped(shown(name), "no file name"))
        elif (folder / base).exists():
            skipped.append(Skipped(shown(base), "given twice: the first one is read"))
        else:
            (folder / base).write_bytes(data)
    return skipped


def _unzip(name: str, data: bytes, folder: Path, limit: int, limits: Limits) -> list[Skipped]:
    """A zip's members under folder, in their own folders; its sizes are checked before anything is inflated."""
    import io

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir()]
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        return [Skipped(shown(name), f"not a readable zip file ({reason_of(error)})")]
    if len(members) > limits.files or sum(m.file_size for m in members) > limit:
        return [Skipped(shown(name), f"unpacks to more than {limit // 2**20} MB or {limits.files:,} files "
                                     "(EVALCORE_UPLOAD_MB, EVALCORE_IMPORT_FILES): not unpacked")]
    skipped = []
    for member in members:
        parts = PurePosixPath(member.filename.replace("\\", "/")).parts
        inside = f"{name}: {member.filename}"
        if not parts or parts[0] == "/" or any(part in ("..", ".", "") for part in parts):
            skipped.append(Skipped(shown(inside), "an unsafe path in the zip (absolute, or with '..'): not unpacked"))
            continue
        target = folder.joinpath(*parts)
        if target.exists():
            skipped.append(Skipped(shown(member.filename), "given twice: the first one is read"))
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink)
        except (zipfile.BadZipFile, OSError, ValueError) as error:
            skipped.append(Skipped(shown(inside), f"cannot be unpacked ({reason_of(error)})"))
    return skipped
