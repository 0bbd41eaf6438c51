"""Static code-quality metrics as a public result (``ea.code_quality``, ``evalatlas
codequality``): one row per file, then the totals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from evalatlas.codequality.static import FRAMEWORK_PREFIXES as _FRAMEWORK_PREFIXES
from evalatlas.codequality.tree import DEFAULT_MAX_LINE_CHARS as _MAX_LINE_CHARS
from evalatlas.records.results import TableResult

CODE_QUALITY_FRAMEWORKS: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _FRAMEWORK_PREFIXES.items()}
"""Framework name -> the module prefixes upstream counts as that framework's imports
(``code_quality(..., framework=name)``)."""

CODE_QUALITY_MAX_LINE_CHARS: int = _MAX_LINE_CHARS
"""Files with a longer line are skipped by default (minified or generated code)."""


@dataclass
class CodeQualityReport(TableResult):
    """Static code-quality metrics (``evalatlas codequality``): one row per analysed file
    (``path``, ``sloc``, ``comment_ratio``, cyclomatic complexity avg/max and grade,
    maintainability index and grade, Halstead volume/difficulty/bugs, imports, framework
    imports, classes, functions, ``type_annotation_ratio``), then a ``(total)`` row.
    ``meta``: ``root``, ``framework_prefixes``, ``files_analysed`` and ``problems``
    (skipped paths with the reason)."""

    SCHEMA: ClassVar[str] = "evalatlas.codequality/1"

    @property
    def totals(self) -> dict[str, Any]:
        return self.rows[-1] if self.rows else {}

    @property
    def problems(self) -> list[str]:
        return list(self.meta.get("problems", []))


def code_quality(
    path: str | Path, *, framework_prefixes: Sequence[str] = (),
    framework: str | None = None, workers: int = 2, exclude: Sequence[str] = (),
    max_bytes: int | None = 1_000_000,
    max_line_chars: int | None = CODE_QUALITY_MAX_LINE_CHARS,
    include_generated: bool = False, totals_only: bool = False,
) -> CodeQualityReport:
    """SLOC, comment ratio, cyclomatic complexity, maintainability index, Halstead,
    imports, classes, functions and type-annotation coverage of a Python file or a tree,
    per file and in total (radon + ast; the code is never run).

    ``framework``: add upstream's import prefixes for this framework
    (:data:`CODE_QUALITY_FRAMEWORKS`) to ``framework_prefixes``. Files larger than
    ``max_bytes`` or with a line longer than ``max_line_chars`` (None: no limit), generated
    files (unless ``include_generated``) and paths matching an ``exclude`` fnmatch pattern
    are skipped and listed in ``problems``. ``totals_only``: only the totals row."""
    from evalatlas.codequality import analyse_path

    prefixes = list(framework_prefixes)
    if framework is not None:
        if framework not in CODE_QUALITY_FRAMEWORKS:
            raise ValueError(f"unknown framework {framework!r}; known: "
                             f"{', '.join(sorted(CODE_QUALITY_FRAMEWORKS))}")
        prefixes += [p for p in CODE_QUALITY_FRAMEWORKS[framework] if p not in prefixes]
    result = analyse_path(path, framework_prefixes=prefixes, workers=workers,
                          exclude=exclude, max_bytes=max_bytes, max_line_chars=max_line_chars,
                          include_generated=include_generated)
    rows: list[dict[str, Any]] = [] if totals_only else [dict(r) for r in result.files]
    rows.append({"path": "(total)", **result.totals})
    notes = [f"{len(result.problems)} file(s) skipped (see stderr)"] if result.problems else []
    return CodeQualityReport(rows=rows, notes=notes, meta={
        "root": result.root, "framework_prefixes": prefixes,
        "files_analysed": len(result.files), "problems": [str(p) for p in result.problems]})
