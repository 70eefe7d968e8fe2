"""The files of a folder to import, the limits they are held to, and the folders a request may name.

The command line acts as the server's operator and imports any folder it can read. A request (an API key)
names only a folder the operator listed in EVALCORE_IMPORT_DIRS, by the name given there, or a folder
inside one (`manuals/2024`); anything else is refused before the file system is touched.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from evalcore.access.principals import Forbidden
from evalcore.documents.import_report import SUFFIXES, Kind, Skipped
from evalcore.errors import EvalError
from evalcore.language.text import shown

FILE_MB_SETTING = "EVALCORE_IMPORT_FILE_MB"
FILES_SETTING = "EVALCORE_IMPORT_FILES"
DIRS_SETTING = "EVALCORE_IMPORT_DIRS"
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_ROOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
KNOWN = ", ".join(SUFFIXES)


@dataclass(frozen=True)
class Limits:
    """What one import reads at most: bytes per file (a Word document's unpacked parts too) and files."""

    file_bytes: int = 100 * 2**20
    files: int = 10_000

    @classmethod
    def from_env(cls) -> Limits:
        """EVALCORE_IMPORT_FILE_MB (default 100) and EVALCORE_IMPORT_FILES (default 10,000)."""
        return cls(_setting(FILE_MB_SETTING, "100") * 2**20, _setting(FILES_SETTING, "10000"))


def _setting(name: str, default: str) -> int:
    text = os.environ.get(name, default).strip() or default
    if not text.isdigit() or int(text) < 1:
        raise EvalError("not a whole number of at least 1", where=name, found=repr(text))
    return int(text)


def megabytes(size: int) -> str:
    """A size as people read it: `2,048.0 MB` (MB of 2^20 bytes, as the limits are set)."""
    return f"{size / 2**20:,.1f} MB"


class Found(NamedTuple):
    """A file to read: its path, its name relative to the folder (with '/'), its kind."""

    path: Path
    name: str
    kind: Kind


@dataclass
class Scan:
    """A folder's files: those to read, those skipped before reading (and why), hidden entries left out."""

    found: list[Found]
    skipped: list[Skipped]
    hidden: int = 0


def scan(folder: Path, limits: Limits, label: str | None = None) -> Scan:
    """Every file under folder, in name order: to read, or skipped with its reason; EvalError past the file limit.
    Messages name the folder as `label` (a request's name for it) when given."""
    where = shown(label or str(folder))
    if not folder.is_dir():
        raise EvalError("no folder there" if not folder.exists() else "not a folder", where=where,
                        fix="give the folder that holds the documents")
    result = Scan([], [])
    root = folder.resolve()
    unreadable: list[OSError] = []
    for current, folders, files in os.walk(folder, onerror=unreadable.append):
        here = Path(current)
        result.hidden += sum(1 for name in folders + files if name.startswith("."))
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in [n for n in folders if (here / n).is_symlink()]:
            folders.remove(name)
            result.skipped.append(Skipped(_relative(here / name, folder), "a link to a folder: links are not followed"))
        for name in sorted(n for n in files if not n.startswith(".")):
            _consider(here / name, folder, root, limits, result)
        if len(result.found) + len(result.skipped) > limits.files:
            raise EvalError(f"more than {limits.files:,} files", where=where,
                            fix=f"import a smaller folder, or raise {FILES_SETTING}")
    for error in unreadable:
        name = _relative(Path(error.filename), folder)
        if name == ".":
            raise EvalError(f"cannot read the folder ({error.strerror or error})", where=where,
                            fix="check its permissions")
        result.skipped.append(Skipped(shown(name), f"a folder that cannot be read ({error.strerror or error})"))
    result.found.sort(key=lambda item: item.name)  # in name order, subfolders among the files
    result.skipped.sort(key=lambda item: item.file)
    return result


def _consider(path: Path, folder: Path, root: Path, limits: Limits, result: Scan) -> None:
    """File one entry: found, or skipped with the reason."""
    name = _relative(path, folder)
    problem = _name_problem(name) or _type_problem(path, root, limits)
    if problem:
        result.skipped.append(Skipped(shown(name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")),
                                      problem))
        return
    result.found.append(Found(path, name, SUFFIXES[path.suffix.lower()]))


def _relative(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()


def _name_problem(name: str) -> str | None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8: rename the file"
    if _CONTROL.search(name):
        return "its name holds control characters: rename the file"
    return None


def _type_problem(path: Path, root: Path, limits: Limits) -> str | None:
    """Why a file is not read before opening it: a link out of the folder, not a file, its type, its size."""
    if path.is_symlink() and not path.resolve().is_relative_to(root):
        return "a link to a file outside the folder: not followed"
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        return f"unknown type ({suffix or 'no extension'}): the formats read are {KNOWN}"
    try:
        info = path.stat()
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size == 0:
        return "empty file"
    if info.st_size > limits.file_bytes:
        return (f"{megabytes(info.st_size)}, more than the limit of {megabytes(limits.file_bytes)} per file "
                f"({FILE_MB_SETTING}): not read")
    return None


def import_roots() -> dict[str, Path]:
    """The operator's import folders by name: EVALCORE_IMPORT_DIRS, comma-separated, each `NAME=PATH` or a path
    (named by its last part); EvalError for a malformed entry."""
    roots: dict[str, Path] = {}
    for entry in (part.strip() for part in os.environ.get(DIRS_SETTING, "").split(",")):
        if not entry:
            continue
        name, sep, path = entry.partition("=")
        name, path = (name.strip(), path.strip()) if sep else (Path(entry).name, entry)
        if not _ROOT_NAME.fullmatch(name) or not Path(path).is_absolute():
            raise EvalError("an import folder entry is malformed", where=DIRS_SETTING, found=entry,
                            expected="NAME=/absolute/path or /absolute/path, separated by commas")
        roots[name] = Path(path)
    return roots


def requested_folder(reference: str) -> Path:
    """The folder a request names (`NAME` or `NAME/sub/folder`, NAME one of EVALCORE_IMPORT_DIRS); Forbidden
    for anything else (an absolute path, `..`, a name not listed, a link leading out of the listed folder)."""
    roots = import_roots()
    parts = PurePosixPath(reference.strip()).parts if reference.strip() else ()
    # Forbidden's message is all a client sees: it says what is allowed and who decides it.
    allowed = f"allowed: {', '.join(sorted(roots)) or 'none'}; the operator lists them in {DIRS_SETTING}"
    if _CONTROL.search(reference):
        raise EvalError(f"{shown(reference)!r} holds control characters", where="folder",
                        fix="name a folder as the operator's import folders name it")
    if not parts or parts[0] not in roots or "\\" in reference or any(p in ("..", ".") for p in parts):
        raise Forbidden(f"folder: {shown(reference)!r} is not one of the server's import folders or a folder inside "
                        f"one ({allowed})", where="folder")
    root = roots[parts[0]].resolve()
    folder = root.joinpath(*parts[1:]).resolve()
    if not folder.is_relative_to(root):
        raise Forbidden(f"folder: {shown(reference)!r} leads out of the import folder {parts[0]} (a link to "
                        f"elsewhere); only the operator's import folders are read ({DIRS_SETTING})", where="folder")
    if not folder.is_dir():
        raise EvalError(f"no folder {shown(reference)!r} in the server's import folders", where="folder",
                        fix=f"name one of them or a folder inside one ({allowed})")
    return folder
