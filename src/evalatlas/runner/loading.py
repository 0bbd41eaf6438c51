"""Turn a ``--framework`` argument into a framework instance.

- ``module:Class`` (or ``module:factory``): imported and called with no arguments;
- ``cmd:<command line>``: a :class:`SubprocessFramework` (split with :func:`shlex.split`);
- a short name of a shipped example: ``bm25``, ``echo``.
"""

from __future__ import annotations

import importlib
import inspect
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalatlas.errors import EvalAtlasError
from evalatlas.runner.subprocess_framework import SubprocessFramework

EXAMPLES = {
    "bm25": "evalatlas.runner.examples.bm25:BM25Framework",
    "echo": "evalatlas.runner.examples.echo:EchoFramework",
}


class FrameworkLoadError(EvalAtlasError):
    """The ``--framework`` argument cannot be turned into a framework."""


@dataclass
class FrameworkHandle:
    """A loaded framework and what the runner needs to know about it."""

    spec: str
    instance: Any
    kind: str  # "python" or "subprocess"
    source_file: Path | None

    @property
    def name(self) -> str:
        return str(getattr(self.instance, "name", None) or self.spec)


def load_framework(spec: str) -> FrameworkHandle:
    """Load ``spec`` (see module docstring); a clear error when it cannot be."""
    spec = spec.strip()
    if spec.startswith("cmd:"):
        try:
            argv = shlex.split(spec[4:])
        except ValueError as exc:
            raise FrameworkLoadError(f"cannot parse command {spec[4:]!r}: {exc}") from None
        if not argv:
            raise FrameworkLoadError("empty command after 'cmd:'")
        fw = SubprocessFramework(argv)
        return FrameworkHandle(spec, fw, "subprocess", fw.source_file())
    target = EXAMPLES.get(spec, spec)
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise FrameworkLoadError(
            f"--framework {spec!r}: expected module:Class, cmd:<command> or one of "
            f"{', '.join(sorted(EXAMPLES))}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise FrameworkLoadError(f"cannot import {module_name!r}: {exc}") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise FrameworkLoadError(f"{module_name!r} has no attribute {attr!r}")
    instance = obj() if callable(obj) else obj
    for needed in ("ingest", "query"):
        if not callable(getattr(instance, needed, None)):
            raise FrameworkLoadError(f"{target} has no {needed}() method (see the protocol in "
                                     "evalatlas.runner.protocol)")
    try:
        source = inspect.getsourcefile(type(instance))
    except TypeError:
        source = None
    return FrameworkHandle(spec, instance, "python", Path(source) if source else None)
