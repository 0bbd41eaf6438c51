"""Module attributes imported on first use: one ``__getattr__``/``__dir__`` pair for the
packages that name more than they import (``evalatlas``, ``evalatlas.api``,
``evalatlas.records``, ``evalatlas.serve``).

Why: ``import evalatlas`` must not import DuckDB or pandas (``evalatlas --version``), and
every ``evalatlas ingest`` imports ``evalatlas.records`` and ``evalatlas.api`` without
needing their EvalLog model or the analyses' result classes (0.075 s of its imports
with every module compiled from source, session 21). Written here, not taken from a
library: it is PEP 562's module ``__getattr__`` plus a cache, a dozen lines.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_attributes(namespace: dict[str, Any], names: Mapping[str, str],
                    submodules: Iterable[str] = ()
                    ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` (``namespace``: its ``globals()``):
    each of ``names`` (name -> the module defining it) is imported on first access and
    kept in ``namespace`` (later accesses do not come here again); each of
    ``submodules`` is the submodule of that name."""
    package = namespace["__name__"]
    subs = tuple(submodules)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
            namespace[name] = value
            return value
        if name in subs:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *names, *subs})

    return __getattr__, __dir__
