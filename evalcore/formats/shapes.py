"""A record's JSON shape, declared once on the record itself.

A record is a frozen dataclass (or a NamedTuple). The keys its `to_dict` gives are its fields, in
their order, described by `doc(...)` in each field's metadata, followed by the keys it computes
(`JSON_EXTRA`: a `Key` each, e.g. a campaign's progress). A field's metadata may rename its key, leave
it out of the JSON (`hidden`), mark it as given only sometimes (`optional`), keep it from API clients
(`private`), or spread a nested record's keys into the parent's (`flatten`). `keys(cls)` reads the
declaration back: the API derives its response models from it (evalcore/api/schemas.py), and a test
checks it against what `to_dict` gives, so a field cannot be missing from either side.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Key:
    """One key of a record's JSON: its name, its Python type, what it means, and when it is there."""

    name: str
    type: Any
    doc: str = ""
    optional: bool = False  # only some objects have it (to_dict adds it when it applies)
    private: bool = False  # in to_dict (stored, exported), never shown to API clients


def doc(text: str = "", *, key: str | None = None, hidden: bool = False, optional: bool = False,
        private: bool = False, flatten: bool = False) -> dict[str, Any]:
    """A field's metadata: `field(metadata=doc("what it means"))`."""
    return {"doc": text, "key": key, "hidden": hidden, "optional": optional, "private": private, "flatten": flatten}


def keys(cls: type) -> tuple[Key, ...]:
    """The keys of cls's JSON in to_dict's order: its fields (nested flattened ones spread), then JSON_EXTRA."""
    hints = typing.get_type_hints(cls)
    found: list[Key] = []
    for name, meta in _fields(cls):
        if meta.get("hidden"):
            continue
        if meta.get("flatten"):
            found.extend(keys(hints[name]))
            continue
        found.append(Key(meta.get("key") or name, hints[name], meta.get("doc", ""), meta.get("optional", False),
                         meta.get("private", False)))
    extra: tuple[Key, ...] = getattr(cls, "JSON_EXTRA", ())
    return (*found, *extra)


def _fields(cls: type) -> list[tuple[str, dict[str, Any]]]:
    """Field names with their metadata, in declaration order (a NamedTuple annotates its fields:
    `Annotated[int, "what it is"]`, or `Annotated[str, doc(...)]` for more than the text)."""
    if dataclasses.is_dataclass(cls):
        return [(f.name, dict(f.metadata)) for f in dataclasses.fields(cls)]
    hints = typing.get_type_hints(cls, include_extras=True)
    return [(name, _annotation(getattr(hints[name], "__metadata__", ()))) for name in getattr(cls, "_fields", ())]


def _annotation(metadata: tuple[Any, ...]) -> dict[str, Any]:
    """A NamedTuple field's metadata from its annotation: a doc(...) dict, or just the text."""
    for item in metadata:
        if isinstance(item, dict):
            return item
        if isinstance(item, str):
            return {"doc": item}
    return {"doc": ""}


def is_record(tp: Any) -> bool:
    """Whether tp declares a JSON shape (a dataclass or a NamedTuple)."""
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp) or hasattr(tp, "_fields"))
