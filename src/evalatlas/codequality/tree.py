"""Code quality of one file or a whole tree, files analysed in parallel.

Each file is read as bytes, decoded by its PEP 263 declaration (UTF-8 by default) and
handed to :func:`evalatlas.codequality.static.analyse_source`; nothing is imported or run.
A file that cannot be read, decoded or parsed is reported as a
:class:`~evalatlas.errors.Problem` (file, line, reason) and left out of the totals; the
other files are still analysed. Work is spread over worker processes
(``concurrent.futures.ProcessPoolExecutor``, 2 by default) in chunks, because radon's
visitors are pure Python and hold the GIL.
"""

from __future__ import annotations

import fnmatch
import io
import os
import tokenize
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalatlas.codequality.static import analyse_source, combine
from evalatlas.errors import Problem

SKIP_DIRS = frozenset({".git", "__pycache__", ".venv", "node_modules", ".tox",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis"})
DEFAULT_WORKERS = 2


@dataclass
class CodeQualityResult:
    """Per-file rows (sorted by path), totals over the analysed files, and problems."""

    root: str
    files: list[dict[str, Any]] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    framework_prefixes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The JSON-able form stored in ``ExperimentRecord.extra["code_quality"]``."""
        return {"root": self.root, "framework_prefixes": self.framework_prefixes,
                "totals": self.totals, "files": self.files,
                "problems": [{"file": p.file, "line": p.line, "reason": p.reason}
                             for p in self.problems]}


def iter_python_files(path: Path, exclude: Sequence[str] = ()) -> Iterator[Path]:
    """``path`` itself if a file, else every ``*.py`` below it (sorted, skipping caches,
    VCS and virtualenv directories; symlinked directories are not followed). ``exclude``
    holds ``fnmatch`` patterns matched against each file and directory path, as radon's
    ``--exclude`` does (``"*/site-packages/*"``)."""
    if path.is_file():
        yield path
        return

    def excluded(p: str) -> bool:
        return any(fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p + "/", pat) for pat in exclude)

    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS
                             and not excluded(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if name.endswith(".py") and not excluded(full):
                yield Path(full)


def read_source(path: Path) -> str:
    """Decode a Python file as the interpreter would (BOM / coding cookie, else UTF-8)."""
    data = path.read_bytes()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def analyse_file(path: str, prefixes: Sequence[str] = ()) -> dict[str, Any] | Problem:
    """One file's metrics (with ``path``), or a Problem saying why it was skipped."""
    try:
        source = read_source(Path(path))
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return Problem(path, f"cannot read: {exc}")
    try:
        row = analyse_source(source, framework_prefixes=prefixes)
    except SyntaxError as exc:
        return Problem(path, f"syntax error: {exc.msg}", line=exc.lineno)
    except (ValueError, RecursionError, MemoryError, tokenize.TokenError) as exc:
        return Problem(path, f"cannot analyse: {type(exc).__name__}: {exc}")
    return {"path": path, **row}


def _analyse_chunk(paths: list[str], prefixes: tuple[str, ...]) -> list[dict[str, Any] | Problem]:
    return [analyse_file(p, prefixes) for p in paths]


def analyse_path(
    path: str | Path,
    *,
    framework_prefixes: Sequence[str] = (),
    workers: int = DEFAULT_WORKERS,
    chunk_size: int = 4,
    exclude: Sequence[str] = (),
) -> CodeQualityResult:
    """Analyse a file or a tree; per-file rows and totals. ``workers <= 1`` runs inline."""
    root = Path(path)
    prefixes = tuple(framework_prefixes)
    result = CodeQualityResult(root=str(root), framework_prefixes=list(prefixes))
    if not root.exists():
        result.problems.append(Problem(str(root), "no such file or directory"))
        return result
    paths = [str(p) for p in iter_python_files(root, exclude)]
    items: list[dict[str, Any] | Problem] = []
    if workers <= 1 or len(paths) <= chunk_size:
        items = _analyse_chunk(paths, prefixes)
    else:
        chunks = [paths[i:i + chunk_size] for i in range(0, len(paths), chunk_size)]
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for part in pool.map(_analyse_chunk, chunks, [prefixes] * len(chunks)):
                items.extend(part)
    for item in items:
        if isinstance(item, Problem):
            result.problems.append(item)
        else:
            result.files.append(item)
    result.totals = combine(result.files)
    return result
