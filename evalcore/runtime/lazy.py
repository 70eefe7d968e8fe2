"""What is built on first use: a package's exports (`lazy_exports`), and values built once per process (`once`).

A package's exports are imported on first use, so that importing one light module does not load its siblings.

`evalcore.campaigns.records` would otherwise import the whole campaign engine (the manager, the
datasets' loader, the targets) through its package's `__init__`, and `python -m evalcore --help`
or `compare` on a kept comparison would pay for it.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def lazy_exports(package: str, exports: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """A module-level `__getattr__` for `package`: each name of `exports[submodule]` comes from that submodule."""
    where = {name: submodule for submodule, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = f"{package}.{where[name]}"
        # __import__ rather than importlib.import_module: the import statement's path, which `-X importtime` reports.
        __import__(module)
        value = getattr(sys.modules[module], name)
        setattr(sys.modules[package], name, value)   # found once; later lookups do not come here
        return value

    return __getattr__


def once(build: Callable[P, R]) -> Callable[P, R]:
    """`build` memoised per arguments, built once even when many threads ask at once (functools.cache is not: each
    thread that asks before the first value is stored builds its own, sixteen threads on Chinese text built jieba's
    tokenizer seven times). Threads asking for a value being built wait for it; `__wrapped__` builds anew."""
    values: dict[Hashable, R] = {}
    locks: dict[Hashable, threading.Lock] = {}
    guard = threading.Lock()

    @functools.wraps(build)
    def cached(*args: P.args, **kwargs: P.kwargs) -> R:
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        try:
            return values[key]
        except KeyError:
            pass
        with guard:
            lock = locks.setdefault(key, threading.Lock())
        with lock:
            if key not in values:
                values[key] = build(*args, **kwargs)
            return values[key]

    cached.cache_clear = values.clear  # type: ignore[attr-defined]
    return cached
