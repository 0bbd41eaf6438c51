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

_FILE_SUFFIXES = {".jsonl", ".ndjson", ".json", ".csv", ".eval", ".cast", ".yaml", ".yml"}
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


def detect(path: Path) -> Adapter | None:
    kind = "dir" if path.is_dir() else "file"
    for adapter in all_adapters():
        if adapter.kind == kind:
            try:
                if adapter.detect(path):
                    return adapter
            except OSError:
                continue
    return None


def plan(paths: list[Path], fmt: str | None = None) -> Iterator[tuple[Path, Adapter] | Problem]:
    """Yield (path, adapter) for everything ingestible under ``paths``, in sorted order.

    A directory claimed by a directory adapter is not descended into; otherwise the
    walk recurses. Explicitly named paths that nothing claims are reported as problems;
    unclaimed files found while walking are skipped silently (READMEs, logs, ...).
    """
    forced = adapter_named(fmt) if fmt else None
    for path in paths:
        if not path.exists():
            yield Problem(str(path), "no such file or directory")
            continue
        found = False
        for step in _walk(path, forced, explicit=True):
            found = True
            yield step
        if not found and path.is_dir():
            if path.suffix.lower() in _FILE_SUFFIXES:
                yield Problem(str(path), f"is a directory, expected a {path.suffix} file")
            else:
                yield Problem(str(path), "no ingestible files found under this directory")


def _walk(
    path: Path, forced: Adapter | None, explicit: bool
) -> Iterator[tuple[Path, Adapter] | Problem]:
    if forced is not None:
        if (forced.kind == "dir") == path.is_dir() and (forced.detect(path) or explicit):
            yield (path, forced)
            return
    else:
        adapter = detect(path)
        if adapter is not None:
            yield (path, adapter)
            return
    if path.is_dir():
        try:
            children = sorted(path.iterdir())
        except OSError as exc:
            yield Problem(str(path), f"cannot list directory: {exc.strerror or exc}")
            return
        for child in children:
            if child.name in _SKIP_DIRS or child.name.startswith("."):
                continue
            yield from _walk(child, forced, explicit=False)
    elif explicit:
        yield Problem(str(path), "unrecognised input format (no adapter claims this file)")
