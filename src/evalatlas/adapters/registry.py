"""Find adapters and walk input paths, choosing the adapter for each file or directory."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import evalatlas.adapters as _pkg
from evalatlas.adapters.base import Adapter
from evalatlas.errors import Problem
from evalatlas.walk import Skipped, TreeWalk

_FILE_SUFFIXES = {".jsonl", ".ndjson", ".gz", ".zst", ".json", ".csv", ".eval", ".cast",
                  ".yaml", ".yml"}
_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules", ".hypothesis", ".pytest_cache"}


@cache
def all_adapters() -> tuple[Adapter, ...]:
    """Every ``ADAPTER`` defined by a module of :mod:`evalatlas.adapters`, by priority."""
    found: list[Adapter] = []
    for info in pkgutil.iter_modules(_pkg.__path__):
        if info.name.startswith("_") or info.name in {"base", "registry"}:
            continue
        module = importlib.import_module(f"{_pkg.__name__}.{info.name}")
        adapter = getattr(module, "ADAPTER", None)
        if isinstance(adapter, Adapter):
            found.append(adapter)
        for extra in getattr(module, "ADAPTERS", ()):
            if isinstance(extra, Adapter):
                found.append(extra)
    return tuple(sorted(found, key=lambda a: (a.priority, a.name)))


def adapter_named(name: str) -> Adapter:
    for a in all_adapters():
        if a.name == name:
            return a
    known = ", ".join(a.name for a in all_adapters())
    raise KeyError(f"unknown input format {name!r}; known formats: {known}")


def detect(path: Path, kind: str | None = None) -> Adapter | None:
    """The first adapter claiming ``path``. Only regular files and directories are
    offered to adapters (a FIFO would block their sniffing reads)."""
    if kind is None:
        kind = TreeWalk(path).classify(path, explicit=True)
        if kind is None:
            return None
    for adapter in all_adapters():
        if adapter.kind == kind:
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
