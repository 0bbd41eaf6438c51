"""Static code-quality metrics of one Python source (seed 003 table, reference section 8).

Everything comes from radon (6.x) and :mod:`ast` on the *text* of the file: the analysed
code is parsed, never imported or executed. The source is parsed once; radon's visitors
run on that tree, so the numbers equal radon's own functions:

- raw counts: ``radon.raw.analyze`` (``loc``, ``lloc``, ``sloc``, ``comments``, ``multi``,
  ``blank``, ``single_comments``); ``comment_ratio = comments / sloc`` (radon's
  ``comments`` counts ``#`` lines including inline ones; docstrings go to ``multi``),
  0 when there is no SLOC;
- cyclomatic complexity: radon's blocks (functions, methods **and classes**, flattened as
  ``cc_visit`` returns them); average and maximum over all blocks; grade ``cc_rank(avg)``,
  "A" when there are no blocks;
- maintainability index: ``mi_visit(source, multi=True)`` (multi-line strings count as
  comments), computed as ``mi_compute(h_visit_ast(tree).total.volume,
  ComplexityVisitor.from_ast(tree).total_complexity, raw.lloc, comment percent)`` which
  is exactly what ``mi_visit`` does; grade ``A`` if ``mi >= 20``, ``B`` if ``>= 10``,
  else ``C`` (the seed's scale; radon's own ``mi_rank`` is kept as ``mi_rank_radon``: it
  differs for fractional scores in (19, 20) and (9, 10));
- Halstead: the module total of ``h_visit`` (volume, difficulty, effort, bugs = V/3000);
- imports: ``import a, b`` counts 2, ``from x import a, b`` counts 1; a framework import
  is a module equal to a prefix or starting with ``prefix + "."``;
- classes, functions (``FunctionDef`` + ``AsyncFunctionDef``, nested included, lambdas
  excluded), ``type_annotation_ratio = functions with a return annotation / functions``
  (0 when there are none; parameters are ignored).

Values are unrounded (upstream rounds to 2 places, bugs to 4, when it stores them).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from radon.complexity import cc_rank
from radon.metrics import h_visit_ast, mi_compute, mi_rank
from radon.raw import analyze
from radon.visitors import ComplexityVisitor

FRAMEWORK_PREFIXES: dict[str, tuple[str, ...]] = {
    "langgraph": ("langgraph", "langchain", "langchain_openai", "langchain_core",
                  "langchain_community"),
    "pydantic_ai": ("pydantic_ai",),
    "smolagents": ("smolagents", "litellm"),
    "crewai": (),
}
"""Upstream's framework-import prefixes (crewai has none, so upstream always reports 0;
pass ``("crewai",)`` to count them)."""

SUM_KEYS = ("loc", "lloc", "sloc", "comments", "multi", "blank", "single_comments",
            "cc_blocks", "cc_total", "num_imports", "num_framework_imports", "num_classes",
            "num_functions", "num_annotated_returns")


def maintainability_grade(mi: float) -> str:
    """The seed's MI grade: A (>= 20), B (>= 10), C (below)."""
    if mi >= 20:
        return "A"
    if mi >= 10:
        return "B"
    return "C"


def is_framework_module(module: str, prefixes: Sequence[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def ast_counts(tree: ast.AST, prefixes: Sequence[str] = ()) -> dict[str, int]:
    """Imports, framework imports, classes, functions and annotated returns (upstream)."""
    imports = fw = classes = functions = annotated = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports += len(node.names)
            fw += sum(1 for a in node.names if is_framework_module(a.name, prefixes))
        elif isinstance(node, ast.ImportFrom):
            imports += 1
            if is_framework_module(node.module or "", prefixes):
                fw += 1
        elif isinstance(node, ast.ClassDef):
            classes += 1
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions += 1
            if node.returns is not None:
                annotated += 1
    return {"num_imports": imports, "num_framework_imports": fw, "num_classes": classes,
            "num_functions": functions, "num_annotated_returns": annotated}


def analyse_source(source: str, *, framework_prefixes: Sequence[str] = ()) -> dict[str, Any]:
    """Every seed metric of one source text; raises ``SyntaxError`` if it does not parse."""
    tree = ast.parse(source)
    raw = analyze(source)
    visitor = ComplexityVisitor.from_ast(tree)
    blocks = visitor.blocks
    complexities = [b.complexity for b in blocks]
    avg_cc = sum(complexities) / len(complexities) if complexities else 0.0
    halstead = h_visit_ast(tree).total
    comment_lines = raw.comments + raw.multi
    comment_pct = comment_lines / float(raw.sloc) * 100 if raw.sloc != 0 else 0
    mi = mi_compute(halstead.volume, visitor.total_complexity, raw.lloc, comment_pct)
    counts = ast_counts(tree, framework_prefixes)
    n_fun = counts["num_functions"]
    return {
        "loc": raw.loc, "lloc": raw.lloc, "sloc": raw.sloc, "comments": raw.comments,
        "multi": raw.multi, "blank": raw.blank, "single_comments": raw.single_comments,
        "comment_ratio": raw.comments / raw.sloc if raw.sloc > 0 else 0.0,
        "cc_blocks": len(complexities), "cc_total": sum(complexities),
        "avg_cyclomatic_complexity": avg_cc,
        "max_cyclomatic_complexity": max(complexities) if complexities else 0,
        "complexity_grade": cc_rank(avg_cc) if complexities else "A",
        "maintainability_index": mi,
        "maintainability_grade": maintainability_grade(mi),
        "mi_rank_radon": mi_rank(mi),
        "halstead_volume": halstead.volume, "halstead_difficulty": halstead.difficulty,
        "halstead_effort": halstead.effort, "halstead_bugs": halstead.bugs,
        **counts,
        "type_annotation_ratio": counts["num_annotated_returns"] / n_fun if n_fun else 0.0,
    }


def combine(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals over several files (no single-file formula exists for a tree, so each is
    documented): counts are summed; ``comment_ratio = Σcomments / Σsloc``; average CC over
    all blocks of all files, maximum CC over all; grade ``cc_rank`` of that average; MI is
    the SLOC-weighted mean of the files' MI (radon has no project MI); Halstead volume,
    effort and bugs are summed and ``difficulty = Σeffort / Σvolume`` (since E = D x V);
    ``type_annotation_ratio = Σannotated / Σfunctions``."""
    tot: dict[str, Any] = {k: sum(int(r[k]) for r in rows) for k in SUM_KEYS}
    tot["files"] = len(rows)
    blocks = tot["cc_blocks"]
    avg_cc = tot["cc_total"] / blocks if blocks else 0.0
    sloc = tot["sloc"]
    mi = (sum(r["maintainability_index"] * r["sloc"] for r in rows) / sloc if sloc
          else (sum(r["maintainability_index"] for r in rows) / len(rows) if rows else 100.0))
    vol = sum(r["halstead_volume"] for r in rows)
    eff = sum(r["halstead_effort"] for r in rows)
    tot.update({
        "comment_ratio": tot["comments"] / sloc if sloc else 0.0,
        "avg_cyclomatic_complexity": avg_cc,
        "max_cyclomatic_complexity": max((r["max_cyclomatic_complexity"] for r in rows),
                                         default=0),
        "complexity_grade": cc_rank(avg_cc) if blocks else "A",
        "maintainability_index": mi, "maintainability_grade": maintainability_grade(mi),
        "mi_rank_radon": mi_rank(mi),
        "halstead_volume": vol, "halstead_effort": eff,
        "halstead_difficulty": eff / vol if vol else 0.0,
        "halstead_bugs": sum(r["halstead_bugs"] for r in rows),
        "type_annotation_ratio": (tot["num_annotated_returns"] / tot["num_functions"]
                                  if tot["num_functions"] else 0.0),
    })
    return tot
