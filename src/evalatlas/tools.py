"""Public API calls that need no store: input formats, record schemas, prices, code quality.

They sit beside :mod:`evalatlas.api` (same layer) rather than in it so that
``evalatlas formats``, ``schema``, ``price`` and ``codequality`` do not load DuckDB,
numpy or pandas: ``evalatlas.api`` imports the store and every analysis at import time.
Each returns a typed result whose ``to_dict()`` is the command's ``--format json``.

    import evalatlas as ea
    ea.formats().rows[0]["name"]           # the first format detection tries
    ea.price("openai/gpt-4o", input_tokens=1000).rows[0]["cost_usd"]
    ea.code_quality("src/").totals          # SLOC, complexity, ... of a tree
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from evalatlas.analysis.results import TableResult
from evalatlas.codequality import FRAMEWORK_PREFIXES as _FRAMEWORK_PREFIXES
from evalatlas.codequality.tree import DEFAULT_MAX_LINE_CHARS as _MAX_LINE_CHARS

__all__ = [
    "CODE_QUALITY_FRAMEWORKS",
    "CODE_QUALITY_MAX_LINE_CHARS",
    "CodeQualityReport",
    "FormatsResult",
    "PriceResult",
    "code_quality",
    "formats",
    "price",
    "price_presets",
    "record_schemas",
]

CODE_QUALITY_FRAMEWORKS: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _FRAMEWORK_PREFIXES.items()}
"""Framework name -> the module prefixes upstream counts as that framework's imports
(``code_quality(..., framework=name)``)."""

CODE_QUALITY_MAX_LINE_CHARS: int = _MAX_LINE_CHARS
"""Files with a longer line are skipped by default (minified or generated code)."""

FORMAT_EXAMPLES: dict[str, str] = {
    "evalatlas-parquet": "(the folder `evalatlas export parquet DIR` writes)",
    "evallog": "fixtures/cube/xray/v2_no_status",
    "inspect": "fixtures/inspect/log_read_sample.eval",
    "eee": "fixtures/eee/skill_reference_conversion/data/demo-source/demo-org/demo-model/"
           "f3a1c0de-4b2e-4c1a-9f6d-1b7e5a2c8d40.json",
    "jsonl": "examples/jsonl/tiny-mini-toybench.jsonl",
    "scylla": "fixtures/scylla/dryrun/raw",
    "tau-bench": "fixtures/tau-bench/gpt-4o-airline.reduced.json",
    "fc-website": "fixtures/formulacode/website_data.csv",
    "swebench": "fixtures/swebench-java-verified/20240825_SWE-agent_deepseek-chat-v2",
    "swebench-pro-docent": "fixtures/swebench-pro/agent_runs_data.csv",
    "swebench-pro": "fixtures/swebench-pro",
    "terminal-bench": "fixtures/terminal-bench/20250711_openhands_claude-4-sonnet",
    "framework-report": "fixtures/frameworks/results/comparison_rag_qa_baseline.md",
}
"""One real input per format: ``fixtures/`` is the shared fixture folder
(``../shared/fixtures`` beside a checkout), ``examples/`` the repository's demo data;
tests/cli/test_formats.py checks that each is claimed by its format."""


@dataclass
class FormatsResult(TableResult):
    """The input formats ``ingest`` recognises, in the order detection tries them: rows
    with ``name``, ``claims`` (file or directory), ``priority``, ``description`` and
    ``example`` (a real input of that format, or None)."""

    SCHEMA: ClassVar[str] = "evalatlas.formats/1"


def formats() -> FormatsResult:
    """Every input format (adapter), in detection order, each with an example input."""
    from evalatlas.adapters.registry import all_adapters

    return FormatsResult(rows=[
        {"name": a.name, "claims": a.kind, "priority": a.priority,
         "description": a.description, "example": FORMAT_EXAMPLES.get(a.name)}
        for a in all_adapters()])


def record_schemas() -> dict[str, dict[str, Any]]:
    """Record name (``ExperimentRecord``, ``EpisodeRecord``, ``Measurement``, ...,
    ``EvalLog``) -> its JSON Schema (validation mode: what evalatlas accepts); the files
    ``evalatlas schema --write DIR`` writes."""
    from evalatlas.records.schemas import all_schemas

    return all_schemas()


# ---------------------------------------------------------------------------- prices


@dataclass
class PriceResult(TableResult):
    """The cost of a token count for one model (``evalatlas price``): one row with the
    model as given and ``normalised``, the token counts, the price used (``source``,
    ``matched``, ``valid_from``, ``input/output/cache_read/cache_write_per_mtok`` in USD
    per million tokens; None when no source knows the model), ``cost_usd`` (None when
    unknown) and ``cost_source``. ``notes``: what a reader must know (no price known,
    cache priced as input ...)."""

    SCHEMA: ClassVar[str] = "evalatlas.price/1"

    @property
    def cost_usd(self) -> float | None:
        return self.rows[0]["cost_usd"] if self.rows else None


def price_presets() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the preset price tables used by default, in order; every preset name, sorted)."""
    from evalatlas.pricing.tables import DEFAULT_PRESETS, PRESETS

    return tuple(DEFAULT_PRESETS), tuple(sorted(PRESETS))


def price(
    model: str, input_tokens: int = 0, output_tokens: int = 0, cache_read: int = 0,
    cache_write: int = 0, *, prices: str | Path | None = None,
    presets: Sequence[str] | None = None, library: bool = True,
    at: datetime | str | None = None, unknown_model_cost: str = "none",
) -> PriceResult:
    """Cost of the tokens for ``model`` (any spelling: ``openai/gpt-5-mini``,
    ``openai:gpt-5-mini``) and which source priced it.

    cost = (input*p_in + output*p_out + cache_read*p_cache_read + cache_write*p_cache_write)
    / 1e6, prices in USD per million tokens; the first source that knows the model wins:
    ``prices`` (a TOML or YAML file), then ``presets`` (default: :func:`price_presets`),
    then the genai-prices library (unless ``library=False``). ``at``: when the tokens were
    spent (a datetime or ISO text; naive means UTC): the price in force then, default
    now. ``unknown_model_cost="zero"`` reports $0 for an unpriced model (as the seeds
    do) instead of an unknown cost. Raises ValueError / :class:`evalatlas.InputError` on
    a bad price file, preset or date."""
    from numbers import Integral

    from evalatlas.errors import ArgumentError
    from evalatlas.pricing import (
        UNKNOWN_MODEL_ZERO,
        PriceBook,
        computed_cost_source,
        cost_from_price,
        normalise_model_name,
        unpriced_cost,
    )

    if unknown_model_cost not in ("none", "zero"):
        raise ArgumentError("unknown_model_cost must be 'none' or 'zero'")
    if not isinstance(model, str) or not model.strip():
        raise ArgumentError(f"model must be a model name (text), got {model!r:.60}")
    for arg, n in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                   ("cache_read", cache_read), ("cache_write", cache_write)):
        # a count: True, 2.5, NaN or "100" is a caller's mistake, never a price
        if isinstance(n, bool) or not isinstance(n, Integral) or n < 0:
            raise ArgumentError(f"{arg}: token counts must be whole numbers >= 0, got "
                                f"{type(n).__name__} {n!r:.40}")
    book = PriceBook(prices, None if presets is None else list(presets), library=library)
    when = datetime.fromisoformat(at) if isinstance(at, str) else at
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    found = book.price_for(model, when)
    notes: list[str] = []
    row: dict[str, Any] = {
        "model": model,
        "normalised": normalise_model_name(model),
        "input_tokens": input_tokens, "output_tokens": output_tokens,
        "cache_read_tokens": cache_read, "cache_write_tokens": cache_write,
    }
    if found is None:
        cost = unpriced_cost(unknown_model_cost)
        row.update({"source": None, "matched": None, "input_per_mtok": None,
                    "output_per_mtok": None, "cache_read_per_mtok": None, "valid_from": None,
                    "cache_write_per_mtok": None, "cost_usd": cost,
                    "cost_source": "unknown" if cost is None else UNKNOWN_MODEL_ZERO})
        notes.append(f"no price known for {model!r}: cost is unknown"
                     + (" (reported as $0 because of --unknown-model-cost zero)"
                        if cost == 0.0 else "; add it to a --prices file"))
    else:
        row.update({
            "source": found.source, "matched": found.matched,
            "input_per_mtok": found.input, "output_per_mtok": found.output,
            "cache_read_per_mtok": found.cache_read, "cache_write_per_mtok": found.cache_write,
            "valid_from": found.valid_from.isoformat() if found.valid_from else None,
            "cost_usd": cost_from_price(found, input_tokens, output_tokens, cache_read,
                                        cache_write),
            "cost_source": computed_cost_source(found, when),
        })
        notes.extend(found.notes)
        if (cache_read and found.cache_read is None) or (cache_write and found.cache_write
                                                          is None):
            notes.append("no cache price known: cache tokens charged at the input price")
    return PriceResult(rows=[row], notes=notes)


# ---------------------------------------------------------------------- code quality


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
