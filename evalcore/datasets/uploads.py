"""Dataset uploads: five Parquet files or a zip of them, validated whole before anything is saved."""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

from evalcore.access.principals import Action, Principal
from evalcore.datasets.loader import DATASET_ID, DATASET_ROOT, FILES, load_dataset
from evalcore.errors import EvalError


def upload_limit_mb() -> int:
    """Size limit of one dataset upload, all files together (EVALCORE_UPLOAD_MB, default 100)."""
    return int(os.environ.get("EVALCORE_UPLOAD_MB", "100"))


def upload_root() -> Path:
    """Where validated uploads go (EVALCORE_UPLOAD_DIR); dataset/ by default, so uploads-<name> is a dataset id."""
    return Path(os.environ.get("EVALCORE_UPLOAD_DIR") or DATASET_ROOT)


def list_datasets() -> list[str]:
    """Dataset ids: `default` first, then every folder under dataset/ (and the upload folder) with Parquet files."""
    roots = {DATASET_ROOT.resolve(), upload_root().resolve()}
    found = []
    for root in roots:
        for folder in sorted(root.iterdir()) if root.is_dir() else ():
            # A hidden folder is no dataset id: an import being written (.<name>.importing-...), or a folder kept aside.
            if folder.is_dir() and folder.name != "samples" and not folder.name.startswith(".") \
                    and any(folder.glob("*.parquet")):
                found.append(folder.name if root == DATASET_ROOT.resolve() else str(folder))
    return ["default", *sorted(found)]


def upload_name_problem(name: str) -> str | None:
    """Why an upload cannot be saved under this name, or None; saved as uploads-<name>, a valid dataset id."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,40}", name) or not DATASET_ID.fullmatch(f"uploads-{name}"):
        return "use 1-41 lowercase letters, digits, '-' or '_', starting with a letter or digit"
    if (upload_root() / f"uploads-{name}").exists():
        return f"a dataset uploads-{name} already exists: choose another name"
    return None


def _unpack(uploads: list[tuple[str, bytes]], folder: Path) -> dict[str, list[str]]:
    """Write the five Parquet files (given one by one or in a zip) into folder; return per-file problems."""
    problems: dict[str, list[str]] = {}
    files: list[tuple[str, bytes]] = []
    for name, data in uploads:
        if name.lower().endswith(".zip"):
            files += _zip_members(name, data, problems)
        else:
            files.append((name, data))
    expected = {f"{f}.parquet" for f in FILES}
    written: dict[str, tuple[str, bytes]] = {}
    for name, data in files:
        stem = Path(name).name.lower()  # "Corpus.PARQUET" from a Windows export is still the corpus
        if stem not in expected:
            problems.setdefault(Path(name).name, []).append("unexpected file: a dataset has "
                                                            f"{', '.join(sorted(expected))}")
        elif stem in written and written[stem][1] != data:
            # Two different files for one table (two folders in a zip): refuse rather than pick one silently.
            problems.setdefault(stem, []).append(f"given twice with different content ({written[stem][0]} and "
                                                 f"{name}): keep one")
        else:
            written[stem] = (name, data)
            (folder / stem).write_bytes(data)
    return problems


def _zip_members(name: str, data: bytes, problems: dict[str, list[str]]) -> list[tuple[str, bytes]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir() and not Path(m.filename).name.startswith(".")]
        # The declared sizes are checked before anything is inflated (zip bombs).
        if sum(m.file_size for m in members) > upload_limit_mb() * 1024 * 1024:
            problems.setdefault(name, []).append(f"unpacks to more than {upload_limit_mb()} MB")
            return []
        return [(m.filename, archive.read(m)) for m in members]
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        problems.setdefault(name, []).append(f"not a readable zip file ({error})")
        return []


def validate_upload(uploads: list[tuple[str, bytes]], name: str, *,
                    principal: Principal | None = None) -> tuple[str | None, dict[str, list[str]]]:
    """Validate uploaded files with the loader; save them as uploads-<name> only when valid.

    Returns (dataset id or None, problems per file name); "" keys problems about the whole upload.
    Saving a dataset changes what every campaign can run on: a principal needs a role that may change things.
    """
    if principal is not None:
        principal.require(Action.CHANGE)
    total = sum(len(data) for _, data in uploads)
    if total > upload_limit_mb() * 1024 * 1024:
        return None, {"": [(f"the upload is {total / 1e6:.1f} MB; the limit is {upload_limit_mb()} MB "
                            "(EVALCORE_UPLOAD_MB)")]}
    if not uploads:
        return None, {"": ["no file chosen: add the five .parquet files or one .zip, then validate"]}
    if problem := upload_name_problem(name):
        return None, {"": [f"dataset name {name!r}: {problem}"]}
    with tempfile.TemporaryDirectory(prefix="evalcore-upload-") as tmp:
        folder = Path(tmp) / "dataset"
        folder.mkdir()
        problems = _unpack(uploads, folder)
        try:
            load_dataset(folder)
        except EvalError as error:
            for line in error.problems:
                _file_problem(problems, line.removeprefix(f"{folder.name}/").removeprefix(f"{folder}: "))
        if problems:
            return None, problems
        target = upload_root() / f"uploads-{name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(folder, target)
    return (target.name if upload_root().resolve() == DATASET_ROOT.resolve() else str(target)), {}


def _file_problem(problems: dict[str, list[str]], line: str) -> None:
    """File a loader problem under the Parquet file it names (or under the whole upload)."""
    match = re.match(r"(\w+\.parquet)[: ]", line)
    problems.setdefault(match.group(1) if match else "", []).append(line)
