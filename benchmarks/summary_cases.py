"""The summary JSON of many cases on the demo and every fixture folder, to check that a
change to the summary's code leaves its output unchanged (issue 23: "the summary JSON is
unchanged, equal to 1e-9, keys and order exact").

Three steps, each its own command (the code under test is whichever ``evalatlas`` is
first on ``PYTHONPATH``: this checkout's, or another revision's ``src`` from
``git archive REV src | tar -x -C DIR``)::

    # 1. a store per fixture folder and the demo (once; made by this checkout's ingest)
    .venv/bin/python benchmarks/summary_cases.py stores --fixtures ../shared/fixtures DIR
    # 2. the JSON of every case, for the code before and after the change
    PYTHONPATH=BASE/src .venv/bin/python benchmarks/summary_cases.py run DIR base.json
    .venv/bin/python benchmarks/summary_cases.py run DIR new.json
    # 3. compare: byte-identical, equal to 1e-9 (floats), or different (listed)
    .venv/bin/python benchmarks/summary_cases.py compare base.json new.json

Cases: every store x 8 groupings x outcome (any, harness, judge) x ks (all, [1, 3, 7])
x missing (ignore; fail with the defaults), rendered as ``--format json`` renders them.
An error is a case's result too (its type and message), so a change that starts or
stops raising is a difference.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GROUPINGS = [["agent"], ["benchmark"], ["model"], ["status"], ["task"], ["experiment"],
             ["agent", "model"], ["label:split"]]


def make_stores(fixtures: Path, out: Path) -> None:
    """One store per fixture folder (``NAME.duckdb``) and the demo (``examples/``)."""
    import evalatlas as ea

    out.mkdir(parents=True, exist_ok=True)
    sources = [("demo", HERE.parent / "examples")]
    sources += [(p.name, p) for p in sorted(fixtures.iterdir()) if p.is_dir()]
    for name, src in sources:
        path = out / f"{name}.duckdb"
        if path.exists():
            continue
        store = ea.open(str(path))
        try:
            store.ingest(str(src))
        finally:
            store.close()
        print(f"{path}", file=sys.stderr)


def run_cases(stores: Path, out: Path) -> None:
    """The JSON text (or the error) of every case on every store in ``stores``."""
    import evalatlas as ea
    from evalatlas.cli.render import render_result

    results: dict[str, str] = {}
    for path in sorted(stores.glob("*.duckdb")):
        store = ea.open(str(path), read_only=True)
        for by in GROUPINGS:
            for outcome in ("any", "harness", "judge"):
                for ks in (None, [1, 3, 7]):
                    for missing in ("ignore", "fail"):
                        if missing == "fail" and (ks or outcome != "any"):
                            continue
                        case = f"{path.name} {by} {outcome} {ks} {missing}"
                        try:
                            res = ea.summary(store, by=by, outcome=outcome, ks=ks,
                                             missing=missing)
                            results[case] = render_result(res, [], "json") or ""
                        except Exception as exc:  # a case's result: compared as text
                            results[case] = f"ERROR {type(exc).__name__}: {exc}"
        store.close()
    out.write_text(json.dumps(results))
    print(f"{len(results)} cases", file=sys.stderr)


def _same(x: Any, y: Any, path: str) -> None:
    """Equal JSON values: keys in the same order, floats to 1e-9 relative."""
    if isinstance(x, dict):
        assert isinstance(y, dict) and list(x) == list(y), (path, list(x), y)
        for k in x:
            _same(x[k], y[k], f"{path}/{k}")
    elif isinstance(x, list):
        assert isinstance(y, list) and len(x) == len(y), path
        for i, (u, v) in enumerate(zip(x, y, strict=True)):
            _same(u, v, f"{path}[{i}]")
    elif isinstance(x, float) and isinstance(y, float):
        assert math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12), (path, x, y)
    else:
        assert type(x) is type(y) and x == y, (path, x, y)


def compare(base: Path, new: Path) -> int:
    """Print how many cases are byte-identical, equal to 1e-9 or different; 1 if any
    case differs."""
    a, b = json.loads(base.read_text()), json.loads(new.read_text())
    if a.keys() != b.keys():
        print(f"different cases: {sorted(set(a) ^ set(b))[:5]}")
        return 1
    ident = bad = 0
    for k in a:
        if a[k] == b[k]:
            ident += 1
            continue
        try:
            if a[k].startswith("ERROR") or b[k].startswith("ERROR"):
                raise AssertionError((a[k][:200], b[k][:200]))
            _same(json.loads(a[k]), json.loads(b[k]), k)
        except AssertionError as exc:
            bad += 1
            if bad <= 5:
                print("DIFF", k, str(exc)[:400])
    print(f"{len(a)} cases: {ident} byte-identical, {len(a) - ident - bad} equal to 1e-9, "
          f"{bad} different")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stores")
    s.add_argument("--fixtures", type=Path, default=HERE.parent.parent / "shared" / "fixtures")
    s.add_argument("out", type=Path)
    r = sub.add_parser("run")
    r.add_argument("stores", type=Path)
    r.add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("base", type=Path)
    c.add_argument("new", type=Path)
    args = ap.parse_args()
    if args.cmd == "stores":
        make_stores(args.fixtures, args.out)
    elif args.cmd == "run":
        run_cases(args.stores, args.out)
    else:
        sys.exit(compare(args.base, args.new))


if __name__ == "__main__":
    main()
