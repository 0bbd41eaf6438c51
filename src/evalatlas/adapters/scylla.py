"""ProjectScylla run directories (reference scylla.md sections 2, 3 and 6).

Layout: ``<experiment>/[completed/]T<n>/<NN>/run_<NN>/{run_result.json, agent/, judge/}``,
where ``<experiment>`` is upstream's ``<YYYY-MM-DDTHH-MM-SS>-<test-id>`` folder (the
published dry run keeps it as ``docs/arxiv/dryrun/raw``). Each such folder is claimed.

Mapping (why each choice):

- **one experiment per tier x subtest**: a subtest is one agent configuration, so its
  runs are repeated attempts of the same agent; labels ``tier``, ``subtest``,
  ``experiment`` (upstream experiment folder), ``test`` (task id) and ``model``;
- **one episode per run**: ``task_id`` = the test id (every Scylla experiment is one
  task), ``attempt`` = run number - 1, ``trajectory_id`` = ``T0-00-run_01``;
- **pass** = strict majority vote of the *valid* judges' own ``passed`` flags (what
  upstream's e2e runner does, quirk 1), reward 1/0. When no judge is valid the run is
  ``status="error"``, ``error_type="judges_invalid"``, reward 0 and scores missing;
- **scores**: ``score`` = mean of the valid judges' self-reported scores clamped to
  [0, 1] (upstream never recomputes it from the categories, quirk 3); ``impl_rate`` =
  median across valid judges of sum(achieved)/sum(max) over rubric categories, "N/A"
  counting 0 in both sums, category weights ignored (quirk 2); missing when no judge has
  criteria (never 0);
- **cost** = the CLI's ``cost_usd`` (agent only, judge cost excluded, quirk 4); tokens:
  ``prompt_tokens`` = input + cache-read + cache-write tokens (input seen by the model,
  OpenAI convention where cached tokens are a subset), ``cached_tokens`` = cache-read,
  ``cache_creation_tokens`` = cache-write, so ``total_tokens`` equals ``runs.csv``;
- **wall_time_s** = agent time only; upstream's ``duration_seconds`` adds judge time
  (quirk 5) and is kept in ``extra`` with the judge time;
- a non-zero agent exit code gives ``status="error"``, ``error_type="nonzero_exit"``
  (the run is still judged, as upstream does).

Judge self-reported values that disagree with the recomputed ones (``judge_passed``,
``judge_score`` of ``run_result.json``) are kept in ``extra`` for audit.
"""

from __future__ import annotations

import datetime as _dt
import re
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.adapters.base import Adapter, Item
from evalatlas.adapters.coerce import Fields, Refused, number
from evalatlas.errors import InputError, Problem
from evalatlas.records.ids import experiment_id_for
from evalatlas.records.jsonio import read_json_file
from evalatlas.records.models import AgentInfo, BenchmarkSubset, EpisodeRecord, ExperimentRecord
from evalatlas.records.validate import parse_record

RUN_RESULT = "run_result.json"
_TIER = re.compile(r"^T\d+$")
_RUN = re.compile(r"^run_(\d+)$")
_EXP_FOLDER = re.compile(r"(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-[^/\\]+)[/\\]")
_MODEL_MD = re.compile(r"^\*\*Model\*\*:\s*(\S+)", re.MULTILINE)
_ID_NAMESPACE = "projectscylla"


def _tier_root(path: Path) -> Path:
    """The folder holding ``T<n>/`` (``completed/`` in newer runs)."""
    completed = path / "completed"
    return completed if completed.is_dir() else path


def _run_dirs(tier_dir: Path) -> Iterator[tuple[str, Path]]:
    for sub in sorted(p for p in tier_dir.iterdir() if p.is_dir()):
        for run in sorted(p for p in sub.iterdir() if p.is_dir() and _RUN.match(p.name)):
            yield sub.name, run


def is_scylla_dir(path: Path) -> bool:
    """True when ``path`` (or its ``completed/``) has ``T<n>/<NN>/run_<NN>/run_result.json``."""
    root = _tier_root(path)
    for tier in root.iterdir():
        if tier.is_dir() and _TIER.match(tier.name):
            for sub in tier.iterdir():
                if sub.is_dir() and any(
                    (r / RUN_RESULT).is_file() for r in sub.glob("run_*")
                ):
                    return True
    return False


def _read_obj(path: Path) -> dict[str, Any]:
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise InputError.at(path, "expected a JSON object")
    return data


def _maybe_obj(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return _read_obj(path)
    except InputError:
        return None


def judge_impl_rate(criteria: dict[str, Any]) -> float | None:
    """sum(achieved) / sum(max) over rubric categories for one judge (scylla.md 3.2).

    Category weights are ignored and an "N/A" achieved or max counts as 0 in both sums,
    as upstream's analysis loader does; ``None`` when the maximum is 0 (upstream: NaN).
    """
    achieved = maximum = 0.0
    for cat in criteria.values():
        if not isinstance(cat, dict):
            continue
        try:  # the one coercion rule; what it refuses ("N/A") counts as N/A
            a, m = number(cat.get("achieved")).value, number(cat.get("max")).value
        except Refused:
            continue
        if a is None or m is None:  # "N/A" or missing: 0 in both sums
            continue
        achieved += a
        maximum += m
    return achieved / maximum if maximum > 0 else None


def _judges(run_dir: Path, run_result: dict[str, Any], f: Fields) -> list[dict[str, Any]]:
    """Per-judge verdicts: ``judge/judge_NN/judgment.json`` first, else ``judges[]``; a
    score that is not a number is missing with a note (``f``)."""
    out: list[dict[str, Any]] = []
    judge_root = run_dir / "judge"
    judges = run_result.get("judges")
    listed = {j.get("judge_number"): j for j in (judges if isinstance(judges, list) else [])
              if isinstance(j, dict) and isinstance(j.get("judge_number"), int | str | None)}
    if judge_root.is_dir():
        for jdir in sorted(judge_root.glob("judge_*")):
            jm = _maybe_obj(jdir / "judgment.json")
            if jm is None:
                continue
            try:
                number = int(jdir.name.split("_", 1)[1])
            except ValueError:
                number = None
            model = (listed.get(number) or {}).get("model")
            out.append({
                "judge_number": number,
                "model": model,
                "score": f.number(jm.get("score"), f"judge_{number}.score", strict=False),
                "passed": jm.get("passed") if isinstance(jm.get("passed"), bool) else None,
                "grade": jm.get("grade"),
                "is_valid": jm.get("is_valid", True) is not False,
                "impl_rate": judge_impl_rate(f.mapping(
                    jm.get("criteria_scores"), f"judge_{number}.criteria_scores",
                    strict=False)),
            })
    if not out:
        for j in listed.values():
            out.append({
                "judge_number": j.get("judge_number"),
                "model": j.get("model"),
                "score": f.number(j.get("score"), f"judges.{j.get('judge_number')}.score",
                                  strict=False),
                "passed": j.get("passed") if isinstance(j.get("passed"), bool) else None,
                "grade": j.get("grade"),
                "is_valid": j.get("is_valid", True) is not False,
                "impl_rate": None,
            })
    return out


def majority_pass(judges: list[dict[str, Any]]) -> bool | None:
    """Strict majority of the valid judges' ``passed`` flags; ``None`` with no valid vote."""
    votes = [j["passed"] for j in judges if j["is_valid"] and j["passed"] is not None]
    if not votes:
        return None
    return sum(votes) > len(votes) / 2


def consensus_score(judges: list[dict[str, Any]]) -> float | None:
    """Mean of the valid judges' scores, each clamped to [0, 1] (scylla.md 4.6)."""
    scores = [min(1.0, max(0.0, j["score"])) for j in judges
              if j["is_valid"] and j["score"] is not None]
    return sum(scores) / len(scores) if scores else None


def consensus_impl_rate(judges: list[dict[str, Any]]) -> float | None:
    """Median across valid judges of each judge's impl rate (scylla.md 3.2)."""
    rates = [j["impl_rate"] for j in judges if j["is_valid"] and j["impl_rate"] is not None]
    return float(statistics.median(rates)) if rates else None


def _usage(run_result: dict[str, Any], agent: dict[str, Any] | None,
           f: Fields) -> dict[str, Any]:
    """Tokens and cost through the one coercion rule: a wrong type quarantines the run
    naming the field, a negative count or cost is missing with a note."""
    ts = f.mapping(run_result.get("token_stats") or (agent or {}).get("token_stats"),
                   "token_stats")
    inp = f.count(ts.get("input_tokens"), "token_stats.input_tokens")
    out = f.count(ts.get("output_tokens"), "token_stats.output_tokens")
    cread = f.count(ts.get("cache_read_tokens"), "token_stats.cache_read_tokens")
    cwrite = f.count(ts.get("cache_creation_tokens"), "token_stats.cache_creation_tokens")
    prompt = None
    if inp is not None:
        prompt = inp + (cread or 0) + (cwrite or 0)
    cost = f.amount(run_result.get("cost_usd"), "cost_usd")
    if cost is None and agent is not None:
        cost = f.amount(agent.get("cost_usd"), "agent/result.json cost_usd")
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": out,
        "cached_tokens": cread,
        "cache_creation_tokens": cwrite,
        "total_cost_usd": cost,
        "n_llm_calls": f.count((agent or {}).get("api_calls"), "agent/result.json api_calls"),
    }
    return {k: v for k, v in usage.items() if v is not None}


def _read_text(path: Path, limit: int = 200_000) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:limit]
    except OSError:
        return None


def _model_of(run_dir: Path, default: str | None) -> str | None:
    text = _read_text(run_dir / "agent" / "MODEL.md")
    if text:
        m = _MODEL_MD.search(text)
        if m:
            return m.group(1)
    return default


def _start_time(run_dir: Path, agent_duration: float | None) -> float | None:
    timing = _maybe_obj(run_dir / "agent" / "timing.json")
    if not timing or not isinstance(timing.get("measured_at"), str):
        return None
    try:
        end = _dt.datetime.fromisoformat(timing["measured_at"]).timestamp()
    except ValueError:
        return None
    return end - agent_duration if agent_duration is not None else end


def episode_from_run(
    run_dir: Path, experiment_id: str, tier: str, subtest: str, test_id: str
) -> EpisodeRecord:
    """One ``run_NN/`` folder as an EpisodeRecord (mapping in the module docstring)."""
    rr_path = run_dir / RUN_RESULT
    rr = _read_obj(rr_path)
    m = _RUN.match(run_dir.name)
    run_number = rr.get("run_number")
    if run_number is None and m:  # the schema requires it; fall back to the folder name
        run_number = int(m.group(1))
    traj = f"{tier}-{subtest}-{run_dir.name}"
    if not isinstance(run_number, int) or isinstance(run_number, bool) or run_number < 1:
        raise InputError.at(rr_path, "run_number must be an integer >= 1",
                            field="run_number", record=traj)
    agent = _maybe_obj(run_dir / "agent" / "result.json")
    f = Fields(rr_path, traj)  # the one coercion rule (adapters/coerce.py)
    judges = _judges(run_dir, rr, f)
    passed = majority_pass(judges)
    score = consensus_score(judges)
    impl = consensus_impl_rate(judges)
    exit_code = rr.get("exit_code")
    status, error_type = "completed", None
    if passed is None:
        status, error_type = "error", "judges_invalid"
    elif isinstance(exit_code, int) and exit_code != 0:
        status, error_type = "error", "nonzero_exit"
    agent_s = f.amount(rr.get("agent_duration_seconds"), "agent_duration_seconds")
    extra: dict[str, Any] = {
        "run_number": run_number,
        "exit_code": exit_code,
        "duration_seconds": f.amount(rr.get("duration_seconds"), "duration_seconds"),
        "judge_duration_seconds": f.amount(rr.get("judge_duration_seconds"),
                                           "judge_duration_seconds"),
        "judge_grade": rr.get("judge_grade"),
        "judges": [{k: j[k] for k in ("judge_number", "model", "score", "passed", "grade",
                                      "is_valid", "impl_rate")} for j in judges],
    }
    reported_pass = rr.get("judge_passed")
    if isinstance(reported_pass, bool) and passed is not None and reported_pass != passed:
        extra["judge_passed_reported"] = reported_pass
    reported_score = f.number(rr.get("judge_score"), "judge_score", strict=False)
    if reported_score is not None and score is not None and abs(reported_score - score) > 1e-9:
        extra["judge_score_reported"] = reported_score
    data = {
        "experiment_id": experiment_id,
        "task_id": test_id,
        "reward": 1.0 if passed else 0.0,
        "status": status,
        "error_type": error_type,
        "wall_time_s": agent_s,
        "timestamp": _start_time(run_dir, agent_s),
        "usage": _usage(rr, agent, f),
        "trajectory_id": traj,
        "attempt": run_number - 1,
        "scores": {"score": score, "impl_rate": impl},
        "input_text": _read_text(run_dir / "task_prompt.md"),
        "output_text": _read_text(run_dir / "agent" / "output.txt"),
        "extra": f.attach(extra),
    }
    return parse_record(EpisodeRecord, data, file=str(rr_path), record=traj)


def _experiment_label(root: Path, config: dict[str, Any] | None) -> str:
    """Upstream experiment folder name (``<timestamp>-<test-id>``) when it can be found."""
    if _EXP_FOLDER.match(root.name + "/"):
        return root.name
    for rr in _tier_root(root).glob("T*/*/run_*/" + RUN_RESULT):
        data = _maybe_obj(rr) or {}
        m = _EXP_FOLDER.search(str(data.get("workspace_path") or ""))
        if m:
            return m.group(1)
        break
    if config and isinstance(config.get("experiment_id"), str):
        return config["experiment_id"]
    return root.resolve().name


def read_scylla_dir(root: Path) -> Iterator[Item]:
    """Stream one ProjectScylla experiment folder: per subtest an experiment, then runs."""
    config = _maybe_obj(root / "config" / "experiment.json")
    exp_label = _experiment_label(root, config)
    test_id = str((config or {}).get("experiment_id") or re.sub(
        r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-", "", exp_label))
    models = (config or {}).get("models")
    if not isinstance(models, list):
        models = []
    default_model = models[0] if len(models) == 1 and isinstance(models[0], str) else None
    judge_models = [m for m in (config or {}).get("judge_models") or [] if isinstance(m, str)]
    tier_root = _tier_root(root)
    tiers = sorted((p for p in tier_root.iterdir() if p.is_dir() and _TIER.match(p.name)),
                   key=lambda p: int(p.name[1:]))
    for tier_dir in tiers:
        by_sub: dict[str, list[Path]] = {}
        for sub, run in _run_dirs(tier_dir):
            if (run / RUN_RESULT).is_file():
                by_sub.setdefault(sub, []).append(run)
            else:
                yield Problem(str(run), f"no {RUN_RESULT}: run skipped", record=run.name)
        for sub, runs in by_sub.items():
            tier = tier_dir.name
            model = _model_of(runs[0], default_model)
            manifest = _maybe_obj(tier_dir / sub / "config_manifest.json") or {}
            name = f"{exp_label}/{tier}/{sub}"
            exp_id = experiment_id_for(name, _ID_NAMESPACE)
            config_agent = {"harness": "ProjectScylla", "model": model, "tier": tier,
                            "subtest": sub,
                            "resources": manifest.get("resources"),
                            "claude_md_hash": manifest.get("claude_md_hash")}
            labels = {"tier": tier, "subtest": sub, "experiment": exp_label, "test": test_id}
            if model:
                labels["model"] = model
            yield ExperimentRecord(
                experiment_id=exp_id,
                experiment_name=name,
                framework_name="ProjectScylla",
                agent=AgentInfo(name=f"{model or 'claude-code'} {tier}/{sub}",
                                config=config_agent, config_type="claude-code",
                                llm_model=model),
                benchmark_name=test_id,
                benchmark_subset=BenchmarkSubset(name=test_id, n_tasks=1),
                labels=labels,
                extra={"judge_models": judge_models,
                       "fixture_config_path": manifest.get("fixture_config_path")},
            )
            for run in runs:
                try:
                    yield episode_from_run(run, exp_id, tier, sub, test_id)
                except InputError as exc:
                    yield exc.problem


ADAPTER = Adapter(
    name="scylla",
    kind="dir",
    detect=is_scylla_dir,
    read=read_scylla_dir,
    priority=20,
    description="ProjectScylla experiment folder ([completed/]T<n>/<NN>/run_<NN>/"
    "run_result.json)",
)
