"""Code quality over a tree: parallel, per-file rows and totals, syntax errors skipped."""

from __future__ import annotations

from pathlib import Path

from evalatlas.codequality import analyse_path
from evalatlas.codequality.static import analyse_source
from evalatlas.codequality.tree import read_source


def _tree(tmp_path: Path, n: int = 40) -> Path:
    root = tmp_path / "proj"
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / ".venv").mkdir()
    for i in range(n):
        (root / "pkg" / f"m{i:02d}.py").write_text(
            f"import os\n\ndef f{i}(x) -> int:\n    if x > {i}:\n        return 1\n    return 0\n",
            encoding="utf-8")
    (root / "pkg" / "broken.py").write_text("def nope(:\n    pass\n", encoding="utf-8")
    (root / "pkg" / "__pycache__" / "skip.py").write_text("x = 1\n", encoding="utf-8")
    (root / ".venv" / "skip.py").write_text("x = 1\n", encoding="utf-8")
    (root / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\ns = '\xe9'\n")
    return root


def test_tree_parallel_equals_inline(tmp_path):
    root = _tree(tmp_path)
    par = analyse_path(root, workers=2, chunk_size=4)
    seq = analyse_path(root, workers=1)
    assert par.files == seq.files and par.totals == seq.totals
    assert len(par.files) == 41  # 40 modules + latin.py; caches, venvs skipped
    assert [p.file for p in par.problems] == [str(root / "pkg" / "broken.py")]
    assert par.problems[0].line == 1 and "syntax error" in par.problems[0].reason
    assert par.totals["num_functions"] == 40
    assert par.totals["cc_blocks"] == 40 and par.totals["avg_cyclomatic_complexity"] == 2.0
    assert par.totals["type_annotation_ratio"] == 1.0
    assert par.totals["sloc"] == sum(f["sloc"] for f in par.files)
    d = par.as_dict()
    assert d["problems"][0]["line"] == 1 and len(d["files"]) == 41


def test_single_file_and_missing_path(tmp_path):
    f = tmp_path / "one.py"
    f.write_text("from smolagents import CodeAgent\nimport litellm\n", encoding="utf-8")
    r = analyse_path(f, framework_prefixes=("smolagents", "litellm"))
    assert len(r.files) == 1 and r.totals["num_framework_imports"] == 2
    assert r.files[0]["path"] == str(f)
    missing = analyse_path(tmp_path / "nope")
    assert missing.files == [] and "no such file" in missing.problems[0].reason


def test_pep263_encoding(tmp_path):
    f = tmp_path / "latin.py"
    f.write_bytes(b"# -*- coding: latin-1 -*-\ns = '\xe9'\n")
    assert "é" in read_source(f)
    assert analyse_path(f).totals["sloc"] == analyse_source(read_source(f))["sloc"]


def test_exclude_patterns(tmp_path):
    root = _tree(tmp_path)
    r = analyse_path(root, exclude=["*/pkg/*"], workers=1)
    assert [Path(f["path"]).name for f in r.files] == ["latin.py"] and r.problems == []
    r = analyse_path(root, exclude=["*/m0?.py"], workers=1)
    assert len(r.files) == 31
