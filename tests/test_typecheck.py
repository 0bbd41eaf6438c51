"""mypy over the package, as `make lint` runs it, so that the full test suite (which
every change runs before it lands) also fails on a type error.

The configuration is ``[tool.mypy]`` in pyproject.toml: strict for ``records/``,
``metrics/``, ``stats/`` and the public API module, mypy's default plus
``check_untyped_defs`` elsewhere. mypy runs in a subprocess from the repository root so
that it reads that configuration and shares ``.mypy_cache`` with ``make lint`` (a warm
re-run takes a second or two; a cold one about 20 s of CPU).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(900)  # a cold run on a loaded 2-core machine took 3 minutes
def test_mypy_is_clean() -> None:
    assert importlib.util.find_spec("mypy") is not None, (
        "mypy is not installed in this environment: run `make install` "
        "(pip install -e '.[dev]'), which brings mypy and the stubs it needs")
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 0, (
        "mypy found type errors ([tool.mypy] in pyproject.toml; run `.venv/bin/mypy` "
        f"to see them):\n{proc.stdout}{proc.stderr}")
    assert "Success: no issues found" in proc.stdout


IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<rest>.*)$")
EXPLAINED = re.compile(r"^\[[a-z-]+(?:, *[a-z-]+)*\]  # \S.{3,}")


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    """An ignore in the package is ``# type: ignore[code]  # reason`` on one line: mypy
    checks the code is named (``ignore-without-code``) and still needed
    (``warn_unused_ignores``); this checks the reason is written beside it."""
    unexplained = []
    n = 0
    for path in sorted((REPO / "src" / "evalatlas").rglob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found = IGNORE.search(line)
            if found is None:
                continue
            n += 1
            if not EXPLAINED.match(found["rest"]):
                unexplained.append(f"{path.relative_to(REPO)}:{i}: {line.strip()}")
    assert n > 0  # the scan reads the package (it has a few ignores, each explained)
    assert unexplained == [], "a type: ignore without its reason:\n" + "\n".join(unexplained)
