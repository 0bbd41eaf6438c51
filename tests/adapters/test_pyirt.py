"""py-irt JSON-lines response matrices: detection, episodes, --benchmark, bad lines."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evalatlas.adapters.pyirt import ADAPTER
from evalatlas.adapters.registry import detect
from evalatlas.cli.main import app
from evalatlas.errors import Problem
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

runner = CliRunner()
LINES = [
    {"subject_id": "gpt-x", "responses": {"q1": 1, "q2": 0, "q3": 1}},
    {"subject_id": "llama-y", "responses": {"q1": 0, "q2": 0, "q4": True}},
]


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_detected_and_read_as_one_experiment_per_subject(tmp_path: Path) -> None:
    path = _write(tmp_path / "leaderboard.jsonlines", LINES)
    assert detect(path) is ADAPTER
    assert detect(_write(tmp_path / "other.jsonl", [{"experiment_id": "e"}])) is not ADAPTER
    items = list(ADAPTER.read(path))
    exps = [i for i in items if isinstance(i, ExperimentRecord)]
    eps = [i for i in items if isinstance(i, EpisodeRecord)]
    assert [e.agent.name for e in exps] == ["gpt-x", "llama-y"]
    assert {e.benchmark_name for e in exps} == {"leaderboard"}
    assert exps[0].benchmark_subset.n_tasks == 4  # distinct items in the file
    assert len(eps) == 6
    by = {(e.experiment_id, e.task_id): e for e in eps}
    assert by[(exps[1].experiment_id, "q4")].reward == 1.0
    assert by[(exps[0].experiment_id, "q2")].success is False


def test_bad_responses_are_problems_not_crashes(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.jsonl", [LINES[0], {"subject_id": "z", "responses": {
        "q1": "yes", "q2": 1}}, ["not", "an", "object"]])
    items = list(ADAPTER.read(path))
    problems = [i for i in items if isinstance(i, Problem)]
    assert len(problems) == 2
    assert problems[0].field == "responses.q1" and problems[0].line == 2
    assert sum(isinstance(i, EpisodeRecord) for i in items) == 4


def test_ingest_with_benchmark_name_then_fit(tmp_path: Path) -> None:
    path = _write(tmp_path / "matrix.jsonlines", LINES)
    db = tmp_path / "s.duckdb"
    res = runner.invoke(app, ["--db", str(db), "ingest", str(path), "--benchmark", "mmlu"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["--db", str(db), "atlas", "fit", "--holdout", "0",
                              "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {r["benchmark"] for r in out["items"]} == {"mmlu"}
    assert {r["agent"] for r in out["agents"]} == {"gpt-x", "llama-y"}
