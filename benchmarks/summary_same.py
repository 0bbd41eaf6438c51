"""Check: ``summary``'s JSON of this checkout equals another revision's (issue 23, scale).

A change to how the summary reads the store (``store/summary_scan.py`` and the queries
beside it) must not change one number, key or row order. This builds one file store per
input (the demo's ``examples/`` and every folder of the real fixtures), then runs
``ea.summary(...).to_dict()`` on each store for every grouping and option below, once
with this checkout's ``src/`` and once with the revision's (``git archive REV src``, first
on ``PYTHONPATH``), each side in one process, and compares the two: the same keys in the
same order, the same strings, and floats equal to 1e-9 (relative, or absolute near 0).

Run (from the worktree root)::

    .venv/bin/python benchmarks/summary_same.py main --fixtures ../shared/fixtures

Prints the number of cases compared and each difference (exit status 1 when any).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

GROUPINGS: list[list[str]] = [
    ["agent"], ["experiment"], ["benchmark"], ["model"], ["task"], ["status"],
    ["label:tier"], ["benchmark", "model"]]
OPTIONS: list[dict[str, Any]] = [
    {}, {"outcome": "harness"}, {"outcome": "judge"}, {"ks": [1, 2, 5]},
    {"missing": "fail"}, {"outcome": "judge", "missing": "fail", "ks": [1, 3]}]

_RUN = """
import json, sys
import evalatlas as ea
stores, groupings, options, out = json.loads(sys.argv[1])
res = {}
for name, db in stores.items():
    with ea.open(db, read_only=True) as store:
        for by in groupings:
            for opt in options:
                key = json.dumps([name, by, opt])
                try:
                    res[key] = ea.summary(store, by=by, **opt).to_dict()
                except Exception as exc:  # the same error on both sides is the same answer
                    res[key] = {"error": type(exc).__name__, "message": str(exc)}
with open(out, "w") as fh:
    json.dump(res, fh)
"""


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where ``a`` and ``b`` differ: keys and their order, types, strings, and floats by
    more than 1e-9 (relative; absolute below 1)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{path}[{i}]")]
    numbers = (float, int)
    if (isinstance(a, float) or isinstance(b, float)) and isinstance(a, numbers) \
            and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        x, y = float(a), float(b)
        if math.isnan(x) and math.isnan(y):
            return []
        if abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y)):
            return []
        return [f"{path}: {a!r} != {b!r}"]
    if type(a) is not type(b) or a != b:
        return [f"{path}: {a!r:.80} != {b!r:.80}"]
    return []


def _stores(tmp: Path, fixtures: Path | None) -> dict[str, str]:
    inputs = {"demo": ROOT / "examples"}
    if fixtures is not None:
        inputs.update({p.name: p for p in sorted(fixtures.iterdir()) if p.is_dir()})
    evalatlas = str(Path(sys.executable).with_name("evalatlas"))
    stores = {}
    for name, src in inputs.items():
        db = tmp / f"{name}.duckdb"
        subprocess.run([evalatlas, "--db", str(db), "ingest", str(src)],
                       capture_output=True, check=False)
        if db.exists():
            stores[name] = str(db)
    return stores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rev", help="the revision to compare with (e.g. main)")
    ap.add_argument("--fixtures", type=Path, help="the real fixtures' folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base = tmp / "base"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.rev, "src"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        stores = _stores(tmp, args.fixtures)
        results = {}
        for side, src in {"rev": base / "src", "this": ROOT / "src"}.items():
            out = tmp / f"{side}.json"
            subprocess.run([sys.executable, "-c", _RUN,
                            json.dumps([stores, GROUPINGS, OPTIONS, str(out)])],
                           env=dict(os.environ, PYTHONPATH=str(src)), check=True)
            results[side] = json.loads(out.read_text())
    diffs = []
    for key, want in results["rev"].items():
        got = results["this"].get(key)
        diffs += [f"{key}: {d}" for d in differences(want, got)] if got is not None \
            else [f"{key}: missing"]
    errors = sum("error" in v for v in results["rev"].values())
    print(f"{len(results['rev'])} cases ({len(stores)} stores x {len(GROUPINGS)} groupings "
          f"x {len(OPTIONS)} options; {errors} raise the same error on both sides): "
          f"{len(diffs)} differences")
    for d in diffs[:50]:
        print("  " + d)
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
