"""Find adapters and walk input paths, choosing the adapter for each file or directory.

Detection tries adapters in the order of :data:`ADAPTER_TABLE` (priority, then name)
and imports an adapter's module only when its turn comes, stopping at the first that
claims the path: a ``.jsonl`` file imports 4 of the 16 adapter modules (importing all
of them cost 0.072 s wall, 0.11 CPU s per process, the four 0.015 s, with modules
compiled from source; with bytecode cached a 10,000-episode ingest gained 0.02 s;
session 21). The table is checked against the modules' own ``ADAPTER``/``ADAPTERS`` by
tests/adapters/test_registry.py, so an adapter without a row fails CI.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import evalatlas.adapters as _pkg
from evalatlas.adapters.base import Adapter
from evalatlas.errors import Problem
from evalatlas.walk import Skipped, TreeWalk

_FILE_SUFFIXES = {".jsonl", ".ndjson", ".gz", ".zst", ".json", ".csv", ".eval", ".cast",
                  ".yaml", ".yml"}
_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules", ".hypothesis", ".pytest_cache"}
_NOT_ADAPTER_MODULES = {"base", "registry"}


@dataclass(frozen=True)
class AdapterRow:
    """Where an adapter lives and what detection needs to order it without importing it:
    ``module`` under :mod:`evalatlas.adapters`, and the adapter's ``name``, ``kind`` and
    ``priority`` as its module defines them."""

    module: str
    name: str
    kind: str
    priority: int


ADAPTER_TABLE: tuple[AdapterRow, ...] = tuple(sorted((
    AdapterRow("evalatlas_parquet", "evalatlas-parquet", "dir", 5),
    AdapterRow("cube", "evallog", "dir", 10),
    AdapterRow("inspect", "inspect", "file", 15),
    AdapterRow("eee", "eee", "file", 18),
    AdapterRow("eee", "eee-samples", "file", 18),
    AdapterRow("pyirt", "pyirt", "file", 18),
    AdapterRow("jsonl", "jsonl", "file", 20),
    AdapterRow("scylla", "scylla", "dir", 20),
    AdapterRow("fceval", "fceval", "dir", 25),
    AdapterRow("tau_bench", "tau-bench", "file", 25),
    AdapterRow("swebench_pro", "swebench-pro", "dir", 29),
    AdapterRow("fc_website", "fc-website", "file", 30),
    AdapterRow("framework_results", "framework-results", "file", 30),
    AdapterRow("swebench", "swebench", "dir", 30),
    AdapterRow("swebench", "swebench-pro-docent", "file", 30),
    AdapterRow("terminal_bench", "terminal-bench", "dir", 30),
    AdapterRow("terminal_bench", "terminal-bench-file", "file", 30),
    AdapterRow("framework_report", "framework-report", "file", 31),
    AdapterRow("asv", "asv", "dir", 35),
), key=lambda r: (r.priority, r.name)))
"""Every adapter, in detection order (lower priority first, ties by name)."""


def module_adapters(module: str) -> tuple[Adapter, ...]:
    """The adapters a module of :mod:`evalatlas.adapters` defines (its ``ADAPTER``, then
    its ``ADAPTERS``), importing it."""
    mod = importlib.import_module(f"{_pkg.__name__}.{module}")
    found = [getattr(mod, "ADAPTER", None), *getattr(mod, "ADAPTERS", ())]
    return tuple(a for a in found if isinstance(a, Adapter))


def discover() -> list[tuple[str, Adapter]]:
    """(module, adapter) for every adapter defined by a module of the package, importing
    them all: what :data:`ADAPTER_TABLE` must list."""
    return [(info.name, adapter)
            for info in pkgutil.iter_modules(_pkg.__path__)
            if not info.name.startswith("_") and info.name not in _NOT_ADAPTER_MODULES
            for adapter in module_adapters(info.name)]


@cache
def _load(row: AdapterRow) -> Adapter:
    for adapter in module_adapters(row.module):
        if adapter.name == row.name:
            return adapter
    raise LookupError(f"evalatlas.adapters.{row.module} defines no adapter {row.name!r} "
                      f"(ADAPTER_TABLE is out of date)")


def all_adapters() -> tuple[Adapter, ...]:
    """Every adapter, by priority (importing every adapter module)."""
    return tuple(_load(row) for row in ADAPTER_TABLE)


def adapter_named(name: str) -> Adapter:
    """The adapter called ``name``, importing only its module."""
    for row in ADAPTER_TABLE:
        if row.name == name:
            return _load(row)
    known = ", ".join(row.name for row in ADAPTER_TABLE)
    raise KeyError(f"unknown input format {name!r}; known formats: {known}")


def detect(path: Path, kind: str | None = None) -> Adapter | None:
    """The first adapter claiming ``path``. Only regular files and directories are
    offered to adapters (a FIFO would block their sniffing reads)."""
    if kind is None:
        kind = TreeWalk(path).classify(path, explicit=True)
        if kind is None:
            return None
    for row in ADAPTER_TABLE:
        if row.kind == kind:
            adapter = _load(row)
            try:
                if adapter.detect(path):
                    return adapter
            except OSError:
                continue
    return None


def plan(
    paths: list[Path], fmt: str | None = None, skipped: list[Skipped] | None = None
) -> Iterator[tuple[Path, Adapter] | Problem]:
    """Yield (path, adapter) for everything ingestible under ``paths``, in sorted order.

    A directory claimed by a directory adapter is not descended into; otherwise the
    walk recurses, by the rules of :mod:`evalatlas.walk` (no symlink out of the tree or
    twice, nothing but regular files and directories; a FIFO is never opened). Paths the
    walk leaves out are appended to ``skipped`` with their reason. Explicitly named paths
    that nothing claims are reported as problems; unclaimed files found while walking
    are skipped silently (READMEs, logs, ...).
    """
    forced = adapter_named(fmt) if fmt else None
    notes: list[Skipped] = skipped if skipped is not None else []
    for path in paths:
        if not path.exists() and not path.is_symlink():
            yield Problem(str(path), "no such file or directory")
            continue
        walk = TreeWalk(path)
        kind = walk.classify(path, explicit=True)
        if kind is None:
            for s in walk.skipped:
                hint = ("; to stream it, use `evalatlas ingest - < PATH`"
                        if "FIFO" in s.reason or "device" in s.reason else "")
                yield Problem(s.path, s.reason + hint)
            continue
        found = False
        for step in _walk(path, kind, forced, walk, explicit=True):
            found = True
            yield step
        notes.extend(walk.skipped)
        if not found and kind == "dir":
            if path.suffix.lower() in _FILE_SUFFIXES:
                yield Problem(str(path), f"is a directory, expected a {path.suffix} file")
            else:
                yield Problem(str(path), "no ingestible files found under this directory")


def _walk(
    path: Path, kind: str, forced: Adapter | None, walk: TreeWalk, explicit: bool
) -> Iterator[tuple[Path, Adapter] | Problem]:
    if forced is not None:
        if (forced.kind == "dir") == (kind == "dir") and (forced.detect(path) or explicit):
            yield (path, forced)
            return
    else:
        adapter = detect(path, kind)
        if adapter is not None:
            yield (path, adapter)
            return
    if kind == "dir":
        for child in walk.children(path, _skip_name):
            child_kind = walk.classify(child)
            if child_kind is not None:
                yield from _walk(child, child_kind, forced, walk, explicit=False)
    elif explicit:
        yield Problem(str(path), "unrecognised input format (no adapter claims this file)")


def _skip_name(name: str) -> bool:
    return name in _SKIP_DIRS or name.startswith(".")
