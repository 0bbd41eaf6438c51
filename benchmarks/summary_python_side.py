"""The Python side of ``summary`` at scale, apart from its SQL (issue 23): everything
after the store's statements (reshaping the fetched cells, the grouped statistics, the
JSON envelope), replayed on one summary's captured store results, so that two versions
of that code can be compared in the same run without 40 s of SQL each time.

``capture`` runs ``summary_of`` once on a store and pickles what the store side
returned (the cells and rows ``summary_scan`` hands to ``_shape``, the catalog, error
kinds, published numbers ...) and the JSON the CLI printed. ``replay`` runs
``summary_of`` and the JSON render on those results with the store functions replaced
by the captured values: wall and CPU seconds per run and per step, and whether the JSON
equals the captured one (to 1e-9, keys and order exact; ``lake`` left out). The code
replayed is whichever ``evalatlas`` is first on ``PYTHONPATH``::

    .venv/bin/python benchmarks/summary_python_side.py capture \\
        ducklake:/work/scale/sum100m/100m.ducklake /work/scale/sumpy/replay
    PYTHONPATH=BASE/src .venv/bin/python benchmarks/summary_python_side.py replay \\
        /work/scale/sumpy/replay --repeats 2
    .venv/bin/python benchmarks/summary_python_side.py replay /work/scale/sumpy/replay

(``BASE/src``: ``git archive REV src | tar -x -C BASE``.) At 100M episodes the capture
is ~0.8 GB (10M cells).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

STORE_FUNCTIONS = ("experiment_catalog", "experiments_of", "error_counts",
                   "published_metrics", "score_values", "unknown_price_models",
                   "source_notes")
"""What :mod:`evalatlas.compose.summary` asks the store besides ``summary_scan``."""


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def capture(store_location: str, out: Path) -> None:
    import evalatlas as ea
    from evalatlas.cli.render import render_result
    from evalatlas.compose import summary as cs
    from evalatlas.store import summary_scan as ss

    captured: dict[str, list[Any]] = {}
    for name in STORE_FUNCTIONS:
        def keep(*a: Any, _f: Any = getattr(cs, name), _n: str = name, **k: Any) -> Any:
            result = _f(*a, **k)
            captured.setdefault(_n, []).append(copy.deepcopy(result))
            return result
        setattr(cs, name, keep)
    shape = ss._shape

    def keep_shape(*args: Any) -> Any:
        captured.setdefault("_shape", []).append(
            tuple(copy.deepcopy(a) if i in (3, 4, 5) else a for i, a in enumerate(args)))
        return shape(*args)
    ss._shape = keep_shape
    store = ea.open(store_location, read_only=True)
    start = time.perf_counter()
    result = cs.summary_of(store)
    print(f"summary_of {time.perf_counter() - start:.1f} s", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "cap.pkl", "wb") as fh:
        pickle.dump(captured, fh, protocol=5)
    (out / "expected.json").write_text(render_result(result, [], "json") or "")


def replay(folder: Path, repeats: int) -> int:
    start = time.perf_counter()
    from evalatlas.analysis import summary as an
    from evalatlas.cli.render import render_result
    from evalatlas.compose import summary as cs
    from evalatlas.records import results as rr
    from evalatlas.store import summary_scan as ss

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from summary_same import differences

    print(f"imports {time.perf_counter() - start:.2f} s", file=sys.stderr)
    with open(folder / "cap.pkl", "rb") as fh:
        captured = pickle.load(fh)
    steps: dict[str, float] = {}

    def timed(owner: Any, name: str) -> None:
        f = getattr(owner, name)

        def run(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                steps[name] = steps.get(name, 0.0) + time.perf_counter() - t
        setattr(owner, name, run)

    for name in STORE_FUNCTIONS:
        values = captured.get(name, [])
        calls = {"i": 0}

        def stored(*a: Any, _v: list[Any] = values, _c: dict[str, int] = calls,
                   **k: Any) -> Any:
            value = _v[_c["i"] % len(_v)]
            _c["i"] += 1
            return copy.deepcopy(value)
        if values:
            setattr(cs, name, stored)
    args = captured["_shape"][0]
    timed(ss, "_shape")

    def scan(*a: Any, **k: Any) -> Any:
        # the rows _shape changes in place, copied (outside the timed step)
        fresh = list(args)
        fresh[0] = dict(fresh[0])
        fresh[3], fresh[4] = copy.deepcopy(fresh[3]), copy.deepcopy(fresh[4])
        return ss._shape(*fresh)
    cs.summary_scan = scan
    for name in ("group_rows", "outcome_rows", "cost_rows"):
        timed(cs, name)
    timed(an, "_mean_reward_intervals")
    timed(rr.TableResult, "to_dict")
    expected = json.loads((folder / "expected.json").read_text())
    expected.pop("lake", None)
    same = True
    for i in range(repeats):
        steps.clear()
        wall, cpu = time.perf_counter(), _cpu()
        result = cs.summary_of(None)
        text = render_result(result, [], "json") or ""
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        try:
            diffs = differences(expected, json.loads(text))
            assert not diffs, diffs[:5]
        except AssertionError as exc:
            same = False
            print(f"DIFFERENT: {str(exc)[:300]}", file=sys.stderr)
        print(f"run {i}: {wall:.2f} s wall, {cpu:.2f} s CPU, load "
              f"{os.getloadavg()[0]:.1f}; " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                      steps.items()), file=sys.stderr)
    print("JSON equal to the captured one (1e-9)" if same else "JSON DIFFERENT",
          file=sys.stderr)
    return 0 if same else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("store")
    c.add_argument("out", type=Path)
    r = sub.add_parser("replay")
    r.add_argument("folder", type=Path)
    r.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    if args.cmd == "capture":
        capture(args.store, args.out)
    else:
        sys.exit(replay(args.folder, args.repeats))


if __name__ == "__main__":
    main()
