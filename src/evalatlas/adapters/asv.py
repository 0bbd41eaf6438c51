"""ASV results of nop, oracle and agents -> per-benchmark speedups (reference section 3).

Accepted layouts of one task's directory (what FC-Eval's ``profile.sh`` writes):

- ``postrun_agent-<N>-<agent>:<model>.tar.gz`` tarballs (read in memory with
  :mod:`tarfile`; nothing is extracted or executed), or
- sub-directories ``agent-<N>-<agent>:<model>/`` (or ``<agent>:<model>/``) holding the
  extracted ``results/``.

Each holds ``results/benchmarks.json`` and ``results/<machine>/<commit>-<env>.json``
(ASV result file version 2: ``result_columns`` + ``results[name]`` rows; version 1
``{"result", "params", "samples"}`` dicts are also read). The machine is
``dockertest`` when present, else the first machine with a result file for the commit
in ``sha.txt``, else the first machine. Parameterised benchmarks are unrolled to
``name(p1, p2)`` with ASV's repr strings joined by ``", "``. nop and oracle are the
first keys whose agent is ``nop`` / ``oracle``; every other key (oracle included) gets
speedups from raw samples with :func:`evalatlas.metrics.speedup.benchmark_speedup`.

Differences from upstream: agents are keyed by the full ``agent:model`` (a model name
with dots, such as ``gpt-4.1``, is kept; upstream's tarball regex drops it); one
environment per agent is read (upstream's per-benchmark table keeps the last env while
its count includes every env); NaN samples are dropped (``nanmedian`` semantics) and
counted in ``extra["dropped_nan_samples"]``; negative timings are reported as problems
and make the benchmark invalid. No correctness information exists here, so episodes
carry ``extra["correctness_known"] = False``.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from evalatlas.adapters.base import Adapter, Item
from evalatlas.adapters.coerce import Refused, number
from evalatlas.adapters.fc_records import (
    AgentTrial,
    BenchmarkResult,
    experiment_for,
    is_nop,
    is_oracle,
    trial_records,
)
from evalatlas.errors import Problem
from evalatlas.metrics.speedup import benchmark_speedup

_TARBALL = re.compile(r"^postrun_agent-(\d+)-(.+)\.tar\.gz$")
_AGENT_DIR = re.compile(r"^agent-(\d+)-(.+)$")
MAX_MEMBER_BYTES = 256 * 1024 * 1024

Reader = Callable[[str], bytes | None]
"""Read a file by its path relative to the agent's root (None when absent)."""


class _TarSource:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.files: dict[str, bytes] = {}
        with tarfile.open(path, "r:gz") as tf:
            for m in tf.getmembers():
                if not m.isfile() or m.size > MAX_MEMBER_BYTES:
                    continue
                name = str(PurePosixPath(m.name))
                if not (name.endswith(".json") or name.endswith("sha.txt")):
                    continue
                fh = tf.extractfile(m)
                if fh is not None:
                    self.files[_strip_prefix(name)] = fh.read()

    def names(self) -> list[str]:
        return sorted(self.files)

    def read(self, name: str) -> bytes | None:
        return self.files.get(name)


class _DirSource:
    def __init__(self, path: Path) -> None:
        self.path = path

    def names(self) -> list[str]:
        return sorted(str(p.relative_to(self.path)).replace("\\", "/")
                      for p in self.path.rglob("*") if p.is_file())

    def read(self, name: str) -> bytes | None:
        p = self.path / name
        try:
            return p.read_bytes() if p.is_file() else None
        except OSError:
            return None


def _strip_prefix(name: str) -> str:
    """Tar member name relative to the directory holding ``results/``."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if "results" in parts:
        return "/".join(parts[parts.index("results"):])
    return "/".join(parts[-1:])


def agent_sources(root: Path) -> list[tuple[int, str, Path]]:
    """``(N, agent:model, path)`` of every tarball or agent directory, sorted by N."""
    out = []
    for p in root.iterdir():
        m = _TARBALL.match(p.name) if p.is_file() else None
        if m:
            out.append((int(m.group(1)), m.group(2), p))
            continue
        if p.is_dir() and (p / "results" / "benchmarks.json").is_file():
            md = _AGENT_DIR.match(p.name)
            n, key = (int(md.group(1)), md.group(2)) if md else (10**6, p.name)
            out.append((n, key, p))
    return sorted(out, key=lambda t: (t[0], t[1]))


def _unroll(name: str, params: list[Any]) -> list[str]:
    if not params:
        return [name]
    combos = itertools.product(*[[str(v) for v in ps] for ps in params])
    return [f"{name}({', '.join(c)})" for c in combos]


def _choose_result_file(names: list[str], sha: str | None) -> str | None:
    files = [n for n in names if n.startswith("results/") and n.count("/") == 2
             and n.endswith(".json") and not n.endswith("machine.json")
             and not n.endswith("benchmarks.json")]
    if not files:
        return None
    machines = sorted({n.split("/")[1] for n in files})
    order = (["dockertest"] if "dockertest" in machines else []) + machines
    for machine in order:
        mine = sorted(n for n in files if n.split("/")[1] == machine)
        if sha:
            hit = [n for n in mine if n.split("/")[2].startswith(sha[:8])]
            if hit:
                return hit[0]
        elif mine:
            return mine[0]
    return sorted(files)[0]


def load_samples(
    source: _TarSource | _DirSource, label: str, problems: list[Problem]
) -> tuple[dict[str, list[float | None] | None], dict[str, str]]:
    """``{unrolled name: samples or None}`` and units of one agent's ASV results."""
    where = str(source.path)
    raw_b = source.read("results/benchmarks.json")
    if raw_b is None:
        problems.append(Problem(where, "results/benchmarks.json not found", record=label))
        return {}, {}
    try:
        bench_meta = json.loads(raw_b)
    except ValueError as exc:
        problems.append(Problem(f"{where}:results/benchmarks.json", f"invalid JSON: {exc}",
                                record=label))
        return {}, {}
    sha_raw = source.read("sha.txt")
    sha = sha_raw.decode("utf-8", "replace").strip() if sha_raw else None
    rfile = _choose_result_file(source.names(), sha)
    if rfile is None:
        problems.append(Problem(where, "no ASV result file under results/<machine>/",
                                record=label))
        return {}, {}
    try:
        data = json.loads(source.read(rfile) or b"", parse_constant=lambda c: float("nan"))
    except ValueError as exc:
        problems.append(Problem(f"{where}:{rfile}", f"invalid JSON: {exc}", record=label))
        return {}, {}
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, dict):
        problems.append(Problem(f"{where}:{rfile}", "no 'results' object", field="results",
                                record=label))
        return {}, {}
    cols = data.get("result_columns") or []
    out: dict[str, list[float | None] | None] = {}
    units: dict[str, str] = {}
    for name, row in results.items():
        meta = bench_meta.get(name) if isinstance(bench_meta, dict) else None
        unit = meta.get("unit") if isinstance(meta, dict) else None
        if isinstance(row, dict):  # ASV result format 1
            params, samples = row.get("params") or [], row.get("samples")
        elif isinstance(row, list):
            rec = dict(zip(cols, row, strict=False))
            params, samples = rec.get("params") or [], rec.get("samples")
        else:
            problems.append(Problem(f"{where}:{rfile}", "result entry is neither a list nor "
                                    "an object", field=f"results.{name}", record=label))
            continue
        if not params and isinstance(meta, dict):
            params = meta.get("params") or []
        names = _unroll(name, params if isinstance(params, list) else [])
        per = samples if isinstance(samples, list) else []
        if len(names) == 1 and per and not isinstance(per[0], list | type(None)):
            per = [per]  # unparameterised benchmark stored as a flat sample list
        for i, full in enumerate(names):
            s = per[i] if i < len(per) else None
            out[full] = list(s) if isinstance(s, list) else None
            if isinstance(unit, str):
                units[full] = unit
    return out, units


def _clean(samples: list[Any] | None, where: str, label: str, name: str,
           problems: list[Problem]) -> tuple[list[float] | None, int, str | None]:
    """Numbers only, NaN dropped; (samples, n_dropped_nan, reason-if-invalid)."""
    if samples is None:
        return None, 0, None
    vals: list[float] = []
    dropped = 0
    for v in samples:
        try:  # the one coercion rule (adapters/coerce.py): a finite JSON number
            c = number(v)
        except Refused:  # a boolean, a string, a list: not a sample
            dropped += 1
            continue
        if c.value is not None:
            vals.append(c.value)
        elif isinstance(v, float) and math.isinf(v):
            problems.append(Problem(where, "infinite timing sample", field=name,
                                    record=label))
            return None, dropped, "infinite timing sample"
        else:  # null, NaN (or the string "NaN"): a failed repeat
            dropped += 1
    if any(v < 0 for v in vals):
        problems.append(Problem(where, "negative timing sample", field=name, record=label))
        return vals, dropped, "negative timing sample"
    return vals, dropped, None


def detect(path: Path) -> bool:
    """A directory holding ``postrun_agent-*.tar.gz`` or ``agent-*/results/benchmarks.json``."""
    try:
        return len(agent_sources(path)) >= 2
    except OSError:
        return False


def read_asv_dir(root: Path) -> Iterator[Item]:
    """One task's ASV results of nop, oracle and agents -> records."""
    problems: list[Problem] = []
    found = agent_sources(root)
    loaded: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}
    for _, key, path in found:
        if key in loaded:
            problems.append(Problem(str(path), f"second result set for {key!r} ignored",
                                    record=key))
            continue
        try:
            src: _TarSource | _DirSource = _TarSource(path) if path.is_file() else \
                _DirSource(path)
        except (OSError, tarfile.TarError, EOFError) as exc:
            problems.append(Problem(str(path), f"cannot read tarball: {exc}", record=key))
            continue
        loaded[key] = load_samples(src, key, problems)
    nop_key = next((k for k in loaded if is_nop(k)), None)
    oracle_key = next((k for k in loaded if is_oracle(k)), None)
    if nop_key is None or oracle_key is None:
        problems.append(Problem(str(root), "need nop and oracle results for comparison "
                                f"(found: {', '.join(loaded) or 'none'})"))
        yield from problems
        return
    task_id = root.name
    nop, units = loaded[nop_key]
    oracle = loaded[oracle_key][0]
    source = str(root.resolve())
    trials: list[AgentTrial] = []
    for key, (agent, _) in loaded.items():
        if key == nop_key:
            continue
        common = sorted(set(nop) & set(oracle) & set(agent))
        trial = AgentTrial(agent_key=key, task_id=task_id,
                           trajectory_id=f"{task_id}.{key}".replace("/", "_"),
                           num_benchmarks=len(common), source=source)
        for name in common:
            cleaned = {}
            reasons = []
            dropped = 0
            for label, table in (("nop", nop), ("oracle", oracle), ("agent", agent)):
                s, d, r = _clean(table[name], source, key, name, problems)
                cleaned[label], dropped = s, dropped + d
                if r:
                    reasons.append(f"{label}: {r}")
            sp = benchmark_speedup(cleaned["nop"], cleaned["oracle"], cleaned["agent"])
            reason = "; ".join(reasons) or sp.reason
            valid = sp.valid and not reasons
            extra = {"dropped_nan_samples": dropped} if dropped else {}
            trial.benchmarks.append(BenchmarkResult(
                name=name, speedup_agent=sp.speedup_agent if valid else None,
                speedup_oracle=sp.speedup_oracle if valid else None, valid=valid,
                reason=reason, baseline_samples=cleaned["nop"],
                oracle_samples=cleaned["oracle"], agent_samples=cleaned["agent"],
                baseline_time=sp.baseline_time, oracle_time=sp.oracle_time,
                agent_time=sp.agent_time, unit=units.get(name, "seconds"), extra=extra))
        trials.append(trial)
    yield from problems
    for t in trials:
        exp = experiment_for(t.agent_key, source, task_id, framework="asv", n_tasks=1,
                             extra={"is_oracle": is_oracle(t.agent_key)})
        yield exp
        yield from trial_records(t, exp.experiment_id, source)


ADAPTER = Adapter(
    name="asv",
    kind="dir",
    detect=detect,
    read=read_asv_dir,
    priority=35,
    description="ASV results of nop, oracle and agents (postrun_agent-N-agent:model.tar.gz "
    "or agent-N-agent:model/results/)",
)
