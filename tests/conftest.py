"""Shared test fixtures: where the real upstream fixtures live, and what happens without them.

The real upstream fixtures sit in ``../shared/fixtures`` beside the repository. A fresh
clone without them must still pass ``make test``: every test that needs them is skipped,
with one line in the summary saying how many and why; every other test runs. In CI
(``CI`` set to anything but empty/0/false) a missing ``../shared`` is an error before any
test runs, so a broken CI checkout can never pass by skipping.

A test needs the fixtures when it requests the ``fixtures`` fixture, or when its code
(or a helper function or fixture of its module it uses) reads a module-level path under
``../shared`` (``FIXTURES = REPO.parent / "shared" / "fixtures"``): such tests are given
the ``fixtures`` fixture at collection (:func:`needs_shared`).
"""

from __future__ import annotations

import ast
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "fixtures"
REFERENCE = SHARED / "reference"

MISSING_REASON = (f"shared fixtures not found at {FIXTURES} (the real upstream fixtures, "
                  "../shared beside the repository); with CI=true this is an error")


def in_ci() -> bool:
    """True when the ``CI`` environment variable is set to a true value (``CI=true``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def shared_missing(fixtures_dir: Path = FIXTURES) -> bool:
    return not fixtures_dir.is_dir()


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """``../shared/fixtures``; skips the test when it is absent (fails in CI)."""
    if shared_missing():
        if in_ci():
            pytest.fail(f"shared fixtures not found at {FIXTURES} (CI has ../shared beside "
                        "the repo)")
        pytest.skip(MISSING_REASON)
    return FIXTURES


# --- which tests need ../shared ------------------------------------------------------


def _shared_globals(module: types.ModuleType, root: Path = SHARED) -> set[str]:
    """Names of the module's globals that are paths under ``root``, or that its top-level
    statements derive from such names (``TB = FIXTURES / "tb"``, ``RUNS = sorted(TB.glob(
    ...))``: a list that is empty without ../shared is still the fixtures' list)."""
    out = set()
    for name, value in vars(module).items():
        if isinstance(value, Path):
            try:
                value.resolve().relative_to(root.resolve())
            except ValueError:
                continue
            out.add(name)
    try:
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return out
    assigns = [n for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign)]
    changed = True
    while changed:
        changed = False
        for node in assigns:
            if node.value is None:
                continue
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            if not used & out:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and n.id not in out:
                        out.add(n.id)
                        changed = True
    return out


def _code_names(code: types.CodeType) -> set[str]:
    """Global names a function's code (and its nested functions, lambdas) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _is_test_module(module: types.ModuleType | None) -> bool:
    path = getattr(module, "__file__", None)
    return bool(path) and Path(path).resolve().is_relative_to(REPO / "tests")


def needs_shared(function: Any, fixture_functions: list[Any], root: Path = SHARED) -> bool:
    """Whether a test reads a path under ``root`` through module globals: its own code,
    the functions of test modules (its own or a helper's) it calls, transitively, and the
    fixtures it requests (``fixture_functions``)."""
    seen: set[int] = set()
    shared_of: dict[str, set[str]] = {}
    stack = [function, *fixture_functions]
    while stack:
        f = stack.pop()
        f = getattr(f, "__wrapped__", f)
        code = getattr(f, "__code__", None)
        module = sys.modules.get(getattr(f, "__module__", "") or "")
        if code is None or id(code) in seen or not _is_test_module(module):
            continue
        seen.add(id(code))
        if module.__name__ not in shared_of:
            shared_of[module.__name__] = _shared_globals(module, root)
        names = _code_names(code)
        if names & shared_of[module.__name__]:
            return True
        for name in names:
            value = getattr(vars(module).get(name), "__wrapped__", vars(module).get(name))
            if isinstance(value, types.FunctionType):  # @cache-wrapped functions too
                stack.append(value)
    return False


def pytest_sessionstart(session: pytest.Session) -> None:
    if shared_missing() and in_ci():
        raise pytest.UsageError(f"CI=true but the shared fixtures are missing: {FIXTURES} "
                                "(CI must have ../shared beside the repository)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give the ``fixtures`` fixture (skip without ../shared) to every test that reads a
    module-level path under ../shared, so it skips instead of failing."""
    if not shared_missing():
        return
    for item in items:
        if not isinstance(item, pytest.Function) or "fixtures" in item.fixturenames:
            continue
        defs = item._fixtureinfo.name2fixturedefs
        fixture_functions = [d[-1].func for d in defs.values() if d]
        empty = [m for m in item.own_markers if m.name == "skip"
                 and "got empty parameter set" in str(m.kwargs.get("reason", ""))]
        if (empty and _shared_globals(item.module)) or needs_shared(item.function,
                                                                    fixture_functions):
            # parametrized over a glob of ../shared: its empty-set skip becomes ours
            item.own_markers = [m for m in item.own_markers if m not in empty]
            item.fixturenames.insert(0, "fixtures")


_FIXTURE_LINE = Path(__file__).read_text(encoding="utf-8").split("\ndef fixtures(")[0].count("\n")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """Every skip for want of ../shared is reported at one place (this file), so ``-rs``
    prints one line with the count and the reason instead of one per test."""
    report = yield
    if report.skipped and isinstance(report.longrepr, tuple) \
            and MISSING_REASON in str(report.longrepr[2]):
        report.longrepr = (__file__, _FIXTURE_LINE, report.longrepr[2])
    return report


def _add_test_helper_dirs() -> None:
    """Let test helper modules (e.g. tests/report/upstream_reports.py) import by name.

    pytest runs in importlib mode (test files in different folders may share a basename),
    which does not put test folders on sys.path; helper modules need unique names.
    """
    import sys

    for d in [REPO / "benchmarks", *sorted(p for p in (REPO / "tests").iterdir() if p.is_dir())]:
        if str(d) not in sys.path and not d.name.startswith((".", "__")):
            sys.path.append(str(d))


_add_test_helper_dirs()


# -- disks that fail: a full tmpfs, a read-only mount, a folder only root may write ------
# (tests/test_safe_write.py, tests/cli/test_writes.py, tests/store/test_disk_faults.py)

def _root_mount(*args: str) -> str | None:
    """Run mount(8); None when it worked, else why not (not root, no mount permission)."""
    import os
    import subprocess

    if os.geteuid() != 0:
        return "mounting a test file system needs root (CI runs as root)"
    try:
        out = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"mount is not available: {exc}"
    return None if out.returncode == 0 else f"mount failed: {out.stderr.strip()}"


def _umount(path: Path) -> None:
    import subprocess

    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


@pytest.fixture
def small_tmpfs(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A factory of tmpfs mounts of a given size (``small_tmpfs("1m")``), unmounted after
    the test: a real full disk (ENOSPC). Skipped with the reason where mounting is not
    possible; the injected-OSError tests cover those machines."""
    mounted: list[Path] = []

    def make(size: str = "1m", name: str = "tmpfs") -> Path:
        mnt = tmp_path / name
        mnt.mkdir()
        why = _root_mount("-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(mnt))
        if why:
            pytest.skip(why)
        mounted.append(mnt)
        return mnt

    yield make
    for m in reversed(mounted):
        _umount(m)


@pytest.fixture
def read_only_mount(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A factory that remounts a folder read-only in place (a bind mount): a read-only
    file system, even for root."""
    mounted: list[Path] = []

    def make(folder: Path) -> Path:
        why = _root_mount("--bind", str(folder), str(folder))
        if why:
            pytest.skip(why)
        mounted.append(folder)
        why = _root_mount("-o", "remount,ro,bind", str(folder))
        if why:
            pytest.skip(why)
        return folder

    yield make
    for m in reversed(mounted):
        _umount(m)


@pytest.fixture
def as_nobody():  # type: ignore[no-untyped-def]
    """``(folder, run)``: a scratch folder every user can read, and ``run(args, **kw)``
    running a command as the unprivileged user ``nobody`` (setpriv), so a folder's
    permissions apply (root ignores them). Skipped with the reason where privileges
    cannot be dropped."""
    import os
    import shutil
    import subprocess
    import tempfile

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("dropping privileges needs root and setpriv (CI runs as root)")
    folder = Path(tempfile.mkdtemp(prefix="evalatlas-nobody-"))
    folder.chmod(0o755)

    def run(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "HOME": str(folder)}
        return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup",
                               "--clear-groups", *args], capture_output=True, text=True,
                              env=env, timeout=300, **kw)  # type: ignore[call-overload]

    yield folder, run
    shutil.rmtree(folder, ignore_errors=True)


# --- a record with every field of the contract set -------------------------------------


def _contract_value(f: Any, i: int) -> Any:
    """A value of field spec ``f`` (:mod:`evalatlas.records.spec`) that no other field of
    the record has (``i``: the field's position, offset for nested records), within its
    bounds."""
    if f.record is not None and f.json_type == "object":
        return contract_record(f.record, 100 * i + 100)
    if f.choices:
        return f.choices[-2]
    if f.pattern:
        return "computed: test price of 2026-01-01"
    if f.json_type == "string":
        return f"{f.name}-{i}"
    if f.json_type == "integer":
        return int(f.minimum or 0) + 3 + i
    if f.json_type == "number":
        return 0.25 + i / 10000
    if f.json_type == "boolean":
        return True
    if f.json_type == "array":
        if f.record is not None:
            return [contract_record(f.record, 100 * i + 100)]
        return {"string": [f"{f.name}-a", f"{f.name}-b"], "number": [1.5, 2.5 + i]}[f.items]
    if f.items == "number":
        return {"a": 0.5 + i / 10000, "b": None} if f.items_nullable else {"a": 0.5}
    if f.items == "string":
        return {"k": f"{f.name}-{i}"}
    return {"k": [1, {"n": f.name}], "i": i}


_CROSS_FIELD = {
    # what the models' validators require beyond the field specs
    "EpisodeRecord": {"success": True, "outcome_source": "judge:gpt-x",
                      "trajectory_id": "traj-1"},
    "AgentInfo": {"agent_id": "a" * 64},
}


def contract_record(rspec: Any, base: int = 0) -> dict[str, Any]:
    """A JSON object with every field of record spec ``rspec`` set to a distinct value
    (see ``tests/store/test_rows.py``): a field added to the contract is then set in
    every test built on it, and a consumer that drops it fails there."""
    from evalatlas.records.models import FORMAT_VERSION

    out = {f.name: _contract_value(f, base + i) for i, f in enumerate(rspec.fields)}
    if "format_version" in out:
        out["format_version"] = FORMAT_VERSION
    out.update(_CROSS_FIELD.get(rspec.name, {}))
    return out


@pytest.fixture
def full_record() -> Any:
    """:func:`contract_record`: a record (as JSON) with every contract field set."""
    return contract_record
