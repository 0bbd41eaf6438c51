"""Imports point one way (docs/architecture.md): an AST walk over every module of
src/evalatlas, every import statement included (inside functions and under
``if TYPE_CHECKING:`` too), checked against the layer table below; and no import cycle
between packages (nor between modules).

Adding a package: give it a layer in LAYERS (and a line in docs/architecture.md).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "evalatlas"

LAYERS: dict[str, int] = {
    # 0: utilities at the package root, importable by everything
    "errors": 0, "text": 0, "selectors": 0, "_version": 0, "walk": 0, "extras": 0,
    "safe_write": 0, "interrupts": 0, "results": 0, "arguments": 0, "collector": 0,
    "lazy_names": 0,
    # 1: the contract
    "records": 1,
    # 2-3: pure functions (arrays in, numbers out); a metric may use stats (its SE)
    "stats": 2, "pricing": 2, "codequality": 2,
    "metrics": 3,
    # 4-5: formats -> records; DuckDB storage (ingest uses the adapters)
    "adapters": 4,
    "store": 5,
    # 6: frames in, typed results out; no SQL (no store), no printing
    "analysis": 6,
    # 7: built on the analyses
    "atlas": 7, "compose": 7, "report": 7, "judge": 7, "runner": 7, "exports": 7,
    # 8: the public API (evalatlas/__init__.py, api.py)
    "__init__": 8, "api": 8,
    # 8: the HTTP service over the public API (a peer of it: it calls ea.summary ...)
    "serve": 8,
    # 9: the command line; imported by nothing
    "cli": 9,
}
PEERS_ALLOWED = {0, 7, 8}
"""Layers whose packages may import each other (still without cycles)."""


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _unit(module: str) -> str:
    """The layered unit of a module: its package under evalatlas, a root-level module's
    own name, or ``__init__`` for the package root itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _local_lines(tree: ast.AST) -> set[int]:
    """Lines of imports made inside a function (run on call, not at import time)."""
    return {n.lineno for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            for n in ast.walk(f) if isinstance(n, ast.Import | ast.ImportFrom)}


def _imports(path: Path, module: str) -> list[tuple[str, int]]:
    """Every evalatlas module ``path`` imports, with the line (all statements)."""
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target == "evalatlas":  # from evalatlas import x: a submodule or a root name
                for a in node.names:
                    sub = SRC / a.name
                    is_mod = sub.is_dir() or sub.with_suffix(".py").is_file()
                    out.append((f"evalatlas.{a.name}" if is_mod else "evalatlas", node.lineno))
            else:
                out.append((target, node.lineno))
    return [(m, line) for m, line in out if m == "evalatlas" or m.startswith("evalatlas.")]


def _graph() -> tuple[dict[str, list[tuple[str, str, int]]], dict[str, set[int]]]:
    """(module -> [(imported module, file, line)], module -> lines of function-local
    imports)."""
    graph: dict[str, list[tuple[str, str, int]]] = {}
    local: dict[str, set[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        graph[module] = [(m, str(path.relative_to(SRC.parent)), line)
                         for m, line in _imports(path, module)]
        local[module] = _local_lines(ast.parse(path.read_text(encoding="utf-8")))
    return graph, local


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


GRAPH, LOCAL = _graph()


def test_every_package_has_a_layer() -> None:
    units = {_unit(m) for m in GRAPH}
    missing = sorted(units - set(LAYERS))
    assert not missing, f"give these a layer in tests/test_layers.py LAYERS: {missing}"


def test_imports_point_down() -> None:
    bad = []
    for module, imports in GRAPH.items():
        src = _unit(module)
        for target, file, line in imports:
            dst = _unit(target)
            if dst == src or src not in LAYERS or dst not in LAYERS:
                continue
            ls, ld = LAYERS[src], LAYERS[dst]
            if ld < ls or (ld == ls and ls in PEERS_ALLOWED):
                continue
            bad.append(f"{file}:{line}: {src} (layer {ls}) imports {target} "
                       f"({dst}, layer {ld})")
    assert not bad, "imports against the layer direction:\n" + "\n".join(bad)


def test_nothing_imports_cli() -> None:
    bad = [f"{file}:{line}" for module, imports in GRAPH.items() if _unit(module) != "cli"
           for target, file, line in imports if _unit(target) == "cli"]
    assert not bad, f"cli is imported by: {bad}"


def test_analysis_has_no_sql_and_no_printing() -> None:
    bad = []
    for path in sorted((SRC / "analysis").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id == "print":
                bad.append(f"{path.name}:{node.lineno}: print")
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""]
                bad += [f"{path.name}:{node.lineno}: imports {n}" for n in names
                        if n.split(".")[0] in {"duckdb", "rich", "typer"}]
    assert not bad, bad


def test_no_cycle_between_packages() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, imports in GRAPH.items():
        for target, _, _ in imports:
            if _unit(target) != _unit(module):
                edges[_unit(module)].add(_unit(target))
    assert _cycles(edges) == []


def _module_edges(*, deferred: bool) -> dict[str, set[str]]:
    """module -> the evalatlas modules it imports (``from pkg.mod import name`` counts as
    ``pkg.mod``; a package's ``__init__`` importing its own submodules is not an edge);
    ``deferred``: imports inside functions too."""
    edges: dict[str, set[str]] = defaultdict(set)
    for module, imports in GRAPH.items():
        for target, _, line in imports:
            if not deferred and line in LOCAL[module]:
                continue
            t = target
            while t not in GRAPH and "." in t:  # `from pkg.mod import name`
                t = t.rsplit(".", 1)[0]
            if t != module and not module.startswith(t + "."):
                edges[module].add(t)
    return edges


def test_no_cycle_between_modules() -> None:
    """Between modules too, for imports made at import time (module scope, including
    ``if TYPE_CHECKING:``): the old ``store.costs`` <-> ``store.db`` fails here."""
    assert _cycles(_module_edges(deferred=False)) == []


def test_no_cycle_even_through_imports_inside_functions() -> None:
    """No cycle hidden by deferring an import into a function either (issue 22): the old
    ``stats.standard_errors -> stats.bootstrap -> stats.bounded -> stats.standard_errors``
    and ``report.specs -> report.failures -> report.specs`` were such cycles. A deferred
    import is for start-up time (scipy, pandas), never to dodge a cycle."""
    cycles = _cycles(_module_edges(deferred=True))
    assert cycles == [], "import cycles (function-level imports included):\n" + "\n".join(
        " -> ".join(c) for c in cycles)


@pytest.mark.parametrize("source, expected", [
    ("from evalatlas.store.db import StoreConnection\n", ["evalatlas.store.db"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import evalatlas.cli\n",
     ["evalatlas.cli"]),
    ("def f():\n    from ..store import db\n", ["evalatlas.store"]),
    ("from evalatlas import __version__, store\n", ["evalatlas", "evalatlas.store"]),
])
def test_the_walk_sees_every_kind_of_import(tmp_path: Path, source: str,
                                            expected: list[str]) -> None:
    f = tmp_path / "m.py"
    f.write_text(source)
    assert sorted(m for m, _ in _imports(f, "evalatlas.analysis.m")) == expected


def test_the_check_catches_a_violation() -> None:
    """The check is live: a store module importing analysis is reported."""
    src, dst = LAYERS["store"], LAYERS["analysis"]
    assert not (dst < src or (dst == src and src in PEERS_ALLOWED))
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_store_computes_no_statistic() -> None:
    """store/ is storage: no metrics, stats or analysis imports (pricing is allowed: costs
    are completed at ingest)."""
    bad = [f"{file}:{line}: {target}" for module, imports in GRAPH.items()
           if _unit(module) == "store"
           for target, file, line in imports
           if _unit(target) in {"metrics", "stats", "analysis"}]
    assert not bad, bad


RENDERER_UTILITIES = {"render.py": ("evalatlas.text", "evalatlas.records.redact")}
"""The one exception: the CLI's table/JSON/CSV/Markdown renderer uses the shared text
utilities (strict JSON, CSV and Markdown escaping, number formatting, terminal-safe text)
and the one redaction function, which compute nothing and are not public API."""


def _public_api_violations(path: Path, allowed: tuple[str, ...] = ()) -> list[str]:
    """Imports of ``path`` that are neither a name of ``evalatlas.__all__`` (from
    ``evalatlas`` or ``evalatlas.api``) nor a CLI helper (``evalatlas.cli.*``), nor one
    of the ``allowed`` modules."""
    import evalatlas

    public = set(evalatlas.__all__)
    bad = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module == "evalatlas.cli" or module.startswith("evalatlas.cli.") \
                    or module in allowed:
                continue
            if module in ("evalatlas", "evalatlas.api"):
                bad += [f"{path.name}:{node.lineno}: {module}.{a.name} (not in __all__)"
                        for a in node.names if a.name not in public]
            elif module.split(".")[0] == "evalatlas":
                bad.append(f"{path.name}:{node.lineno}: from {module} import ...")
        elif isinstance(node, ast.Import):
            bad += [f"{path.name}:{node.lineno}: import {a.name}" for a in node.names
                    if a.name.split(".")[0] == "evalatlas" and a.name != "evalatlas"
                    and not a.name.startswith("evalatlas.cli") and a.name not in allowed]
    return bad


def test_the_cli_is_a_layer_over_the_public_api() -> None:
    """Every module of ``evalatlas.cli`` (each command, and the helpers they share)
    imports nothing of evalatlas but the public API (``evalatlas.__all__``), other
    ``cli`` modules and, in the renderer only, the text utilities: the numbers, the store
    and the runner are reached the way a script reaches them."""
    modules = sorted((SRC / "cli").glob("*.py"))
    assert len(modules) >= 20  # every command module is walked
    bad = [v for path in modules
           for v in _public_api_violations(path, RENDERER_UTILITIES.get(path.name, ()))]
    assert not bad, "use the public API (add to evalatlas.__all__ if missing):\n" + \
        "\n".join(bad)


def test_the_public_api_check_catches_a_violation(tmp_path: Path) -> None:
    f = tmp_path / "cmd.py"
    f.write_text("from evalatlas import summary, Store\nfrom evalatlas.cli.render import x\n"
                 "from .common import y\n")
    assert _public_api_violations(f) == []
    f.write_text("from evalatlas.store.ingest import ingest_paths\n"
                 "from evalatlas.api import check_experiments\nimport evalatlas.store.db\n")
    assert len(_public_api_violations(f)) == 3
    f.write_text("from evalatlas.text import csv_line\n")
    assert len(_public_api_violations(f)) == 1  # below the API ...
    assert _public_api_violations(f, ("evalatlas.text",)) == []  # ... unless allowed


SQL = re.compile(
    r"\b(SELECT\b[\s\S]*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
    r"CREATE\s+(OR\s+REPLACE\s+)?(TEMP\s+)?(TABLE|VIEW|INDEX|MACRO|SEQUENCE)|"
    r"DROP\s+(TABLE|VIEW|MACRO)|ALTER\s+TABLE|COPY\s+\w+\s+(TO|FROM)|ATTACH\s+')\b")
"""SQL statements as they appear in a string literal (keywords in capitals, as the
store's queries write them)."""
CONNECTION_CALLS = {"execute", "executemany", "sql", "query", "query_arrays", "register",
                    "unregister", "fetchall", "fetchone", "fetchmany", "fetchnumpy",
                    "fetch_arrow_table", "fetch_df"}
"""Methods of a DuckDB connection or of :class:`evalatlas.store.db.StoreConnection` that run SQL
or read its results."""


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings (of a module, class or function, or
    the string after an assignment that documents it): prose may name SQL."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for stmt in body if isinstance(body, list) else []:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and \
                    isinstance(stmt.value.value, str):
                out.add(id(stmt.value))
    return out


def _sql_outside_store(path: Path) -> list[str]:
    """Where ``path`` speaks SQL: a call of a connection/store method that runs SQL, an
    access to a store's connection (``.con``), an import of duckdb, or a string literal
    (an f-string's parts included) holding a SQL statement."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docs = _docstrings(tree)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in CONNECTION_CALLS:
            bad.append(f"{path.name}:{node.lineno}: .{node.func.attr}(...)")
        elif isinstance(node, ast.Attribute) and node.attr == "con":
            bad.append(f"{path.name}:{node.lineno}: .con (a store's connection)")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                else [node.module or ""]
            bad += [f"{path.name}:{node.lineno}: imports {n}" for n in names
                    if n.split(".")[0] == "duckdb"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                id(node) not in docs and SQL.search(node.value):
            bad.append(f"{path.name}:{node.lineno}: SQL {node.value.strip()[:50]!r}")
    return bad


def test_all_sql_lives_in_store() -> None:
    """``store/`` is the only package that speaks SQL (issue 22): every query is a named
    function there, with its docstring saying what and why; everything above calls
    those functions."""
    modules = [p for p in sorted(SRC.rglob("*.py"))
               if p.relative_to(SRC).parts[0] != "store"]
    assert len(modules) > 100  # every module outside store/ is walked
    bad = [f"{p.relative_to(SRC)}: {v}" for p in modules for v in _sql_outside_store(p)]
    assert not bad, "SQL outside store/ (move it into a named query in store/):\n" + \
        "\n".join(bad)


@pytest.mark.parametrize("source", [
    'def f(store):\n    return store.query("SELECT 1 FROM episodes")\n',
    'def f(store, ids):\n    return store.query_arrays(f"SELECT * FROM x WHERE id IN {ids}")\n',
    'def f(store):\n    store.con.register("t", None)\n',
    "import duckdb\n",
    'Q = """\n    DELETE FROM quarantine WHERE true"""\n',
    'SQL = f"INSERT INTO episodes VALUES ({1})"\n',
])
def test_the_sql_check_catches_sql(tmp_path: Path, source: str) -> None:
    f = tmp_path / "m.py"
    f.write_text(source)
    assert _sql_outside_store(f)


def test_the_sql_check_lets_prose_be(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text('"""Selects rows: SELECT * FROM episodes is what the store runs."""\n'
                 'X = 1\n"""SELECT x FROM y, said of X."""\n'
                 'def f():\n    """DELETE FROM a docstring."""\n    return "select the best"\n')
    assert _sql_outside_store(f) == []


def test_compose_is_below_report_and_the_api() -> None:
    """``compose`` (store -> rows -> analysis -> result) sits below everything that shows
    a result: the report, the public API and the CLI call it, never the other way."""
    above = {"report", "__init__", "api", "tools", "cli", "serve"}
    bad = [f"{file}:{line}: {target}" for module, imports in GRAPH.items()
           if _unit(module) == "compose"
           for target, file, line in imports if _unit(target) in above]
    assert not bad, bad


def test_the_report_computes_no_statistic_of_its_own() -> None:
    """The report's numbers are the commands' by construction (issue 22): it imports no
    statistic (``stats``) and no pair rule (``analysis.compare``); its leaderboard, paired
    matrix, tiers, speedups, framework data and failures come from ``compose``."""
    bad = [f"{file}:{line}: {target}" for module, imports in GRAPH.items()
           if _unit(module) == "report"
           for target, file, line in imports
           if _unit(target) == "stats" or target.startswith("evalatlas.analysis.compare")]
    assert not bad, bad
