"""The front door (issue 21, point 1): ``make test`` on a clone without ``../shared``.

The real ``tests/conftest.py`` is copied into a scratch repository with no ``shared``
beside it, next to test files that need the fixtures in each way the suite does (the
``fixtures`` fixture, a module-level path read in the test, in a helper, through a
``@cache`` helper, a parametrize over a glob of ../shared) and tests that do not; pytest
runs there in a subprocess. Without ``CI`` the run passes, the fixture tests are skipped
with one summary line, the others run; with ``CI=true`` the run fails before any test,
naming the missing folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

NEEDS = '''
from functools import cache
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
TB = FIXTURES / "terminal-bench"
RUNS = sorted(TB.glob("*/results.json"))


def _helper():
    return (FIXTURES / "x.json").read_text()


@cache
def _cached():
    return (FIXTURES / "y.json").read_text()


def test_uses_fixture(fixtures):
    assert (fixtures / "x.json").is_file()


def test_reads_global():
    assert FIXTURES.is_dir()


def test_reads_through_helper():
    assert _helper()


def test_reads_through_cached_helper():
    assert _cached()


def test_reads_derived_list():
    assert len(RUNS) == 2


@pytest.mark.parametrize("path", RUNS)
def test_parametrized_over_glob(path):
    assert path.is_file()


def test_plain_runs():
    assert 1 + 1 == 2
'''

PLAIN = '''
def test_other_module_runs():
    assert sum([1, 2]) == 3
'''


def _scratch(tmp_path: Path) -> Path:
    repo = tmp_path / "clone"
    (repo / "tests" / "sub").mkdir(parents=True)
    shutil.copy(TESTS / "conftest.py", repo / "tests" / "conftest.py")
    (repo / "tests" / "sub" / "test_needs.py").write_text(NEEDS, encoding="utf-8")
    (repo / "tests" / "test_plain.py").write_text(PLAIN, encoding="utf-8")
    (repo / "pytest.ini").write_text("[pytest]\naddopts = -rs --import-mode=importlib\n",
                                     encoding="utf-8")
    assert not (tmp_path / "shared").exists()
    return repo


def _pytest(repo: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "tests"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)


def test_without_shared_the_fixture_tests_skip_with_one_line(tmp_path: Path) -> None:
    repo = _scratch(tmp_path)
    res = _pytest(repo, None)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [x for x in res.stdout.splitlines() if "shared fixtures not found" in x]
    assert len(lines) == 1, res.stdout
    # 6 tests of test_needs.py need ../shared (the glob parametrize is one item)
    assert re.match(r"SKIPPED \[6\] .*conftest\.py:\d+: shared fixtures not found at "
                    + re.escape(str(tmp_path / "shared" / "fixtures")), lines[0]), lines[0]
    assert re.search(r"\b2 passed, 6 skipped\b", res.stdout), res.stdout


@pytest.mark.parametrize("ci", ["true", "1"])
def test_in_ci_missing_shared_fails_loudly(tmp_path: Path, ci: str) -> None:
    repo = _scratch(tmp_path)
    res = _pytest(repo, ci)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "CI=true but the shared fixtures are missing" in out
    assert str(tmp_path / "shared" / "fixtures") in out
    assert "passed" not in res.stdout  # nothing ran


def test_with_shared_everything_runs(tmp_path: Path) -> None:
    repo = _scratch(tmp_path)
    tb = tmp_path / "shared" / "fixtures" / "terminal-bench"
    for run in ("a", "b"):
        (tb / run).mkdir(parents=True)
        (tb / run / "results.json").write_text("{}", encoding="utf-8")
    for name in ("x.json", "y.json"):
        (tmp_path / "shared" / "fixtures" / name).write_text("{}", encoding="utf-8")
    res = _pytest(repo, "true")
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"\b9 passed\b", res.stdout) and "skipped" not in res.stdout, res.stdout
