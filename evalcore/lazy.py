"""A package's exports imported on first use, so that importing one light module does not load its siblings.

`evalcore.campaigns.records` would otherwise import the whole campaign engine (the manager, the
datasets' loader, the targets) through its package's `__init__`, and `python -m evalcore --help`
or `compare` on a kept comparison would pay for it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any


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
