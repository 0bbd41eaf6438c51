"""Every Eval Ever export: schema-valid files, the numbers of the store, unknown outcomes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from eee_checks import GOLDEN, check_pair, check_tree, strict_loads

from evalatlas.exports.eee import (
    EeeExport,
    export_eee,
    file_uuid_for,
    identity_for,
    instance_record,
    model_identity,
)
from evalatlas.records import EvalLog
from evalatlas.records.evallog import record_json
from evalatlas.records.models import EpisodeRecord, ExperimentRecord
from evalatlas.stats import mean_with_interval
from evalatlas.stats.bounded import bounded_mean_interval
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TS = "1800000000"


def _export(tmp_path: Path, paths: list[Path], **kw: Any) -> tuple[Path, EeeExport]:
    out = tmp_path / "eee"
    tmp_path.mkdir(exist_ok=True)  # evalatlas creates no parent folders (safe_write)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, paths)
        assert rep.rejected == 0
        result = export_eee(store, out, retrieved_timestamp=TS, **kw)
    return out, result


def test_checker_accepts_the_golden_pair_and_rejects_a_bad_checksum(tmp_path: Path) -> None:
    agg = next((GOLDEN / "data").rglob("*.json"))
    data, rows = check_pair(GOLDEN, agg)
    assert len(rows) == 1 and data["schema_version"] == "0.3.0"
    # the same pair with one changed byte in the samples file must fail the checksum
    copy = tmp_path / agg.relative_to(GOLDEN)
    copy.parent.mkdir(parents=True)
    copy.write_bytes(agg.read_bytes())
    samples = agg.with_name(agg.stem + "_samples.jsonl")
    (copy.parent / samples.name).write_bytes(samples.read_bytes().replace(b"2 + 2", b"2 + 3"))
    with pytest.raises(AssertionError):
        check_pair(tmp_path, copy)


def test_examples_export_is_valid_and_matches_the_store(tmp_path: Path) -> None:
    out, result = _export(tmp_path, [EXAMPLES])
    assert result.skipped == [] and len(result.written) == 3
    tree = check_tree(out)
    assert len(tree) == 3
    logs = {lg.experiment.experiment_id: lg for lg in
            (EvalLog.load(p) for p in sorted((EXAMPLES / "evallogs").iterdir()))}
    by_id = {data["source_metadata"]["additional_details"]["experiment_id"]: (data, rows)
             for data, rows in tree.values()}
    assert set(logs) <= set(by_id)
    for exp_id, (data, rows) in by_id.items():
        with StoreConnection(tmp_path / "s.duckdb", read_only=True) as store:
            eps = store.query("SELECT task_id, reward, trajectory_id, total_tokens, "
                              "wall_time_s FROM episodes WHERE experiment_id = ? "
                              "ORDER BY trajectory_id", [exp_id])
        rewards = np.array([e["reward"] for e in eps])
        res = data["evaluation_results"][0]
        sd = res["score_details"]
        assert sd["score"] == pytest.approx(rewards.mean())
        assert data["detailed_evaluation_results"]["total_rows"] == len(eps) == len(rows)
        iv = mean_with_interval(rewards, clusters=[e["task_id"] for e in eps])
        unc = sd["uncertainty"]
        assert unc["num_samples"] == len(eps)
        assert unc["standard_error"]["value"] == pytest.approx(iv.se)
        ci = unc["confidence_interval"]
        # 0/1 rewards: the bounded interval on [0, 1] (issue 10), not the raw t interval
        b = bounded_mean_interval(rewards, clusters=[e["task_id"] for e in eps])
        assert (ci["lower"], ci["upper"]) == pytest.approx((b.low, b.high))
        assert ci["lower"] < sd["score"] < ci["upper"] and ci["confidence_level"] == 0.95
        assert sd["details"]["episodes_outcome_unknown"] == "0"
        assert sd["details"]["tasks_scored"] == "20"
        assert res["metric_config"]["metric_id"] == "success_rate"
        # rows carry the episode numbers, in store order
        for e, row in zip(eps, rows, strict=True):
            assert row["metadata"]["trajectory_id"] == e["trajectory_id"]
            assert row["sample_id"] == e["task_id"]
            assert row["evaluation"]["score"] == e["reward"]
            assert row["evaluation"]["is_correct"] == (e["reward"] > 0)
            assert row["token_usage"]["total_tokens"] == e["total_tokens"]
            assert row["performance"]["latency_ms"] == pytest.approx(e["wall_time_s"] * 1000)
            assert "sample_hash" not in row  # no real input text: no EEE sample hash
            assert row["metadata"]["task_version_hash"]
        if exp_id in logs:
            assert data["model_info"]["additional_details"]["agent_id"] == \
                logs[exp_id].experiment.agent.agent_id
        # the agent config is exported, with its API key redacted
        config = json.loads(data["model_info"]["additional_details"]["agent_config"])
        assert config["api_key"] == "***REDACTED***"
    assert {p.relative_to(out).parts[1] for p in tree} == {"toybench"}
    models = {d["model_info"]["id"] for d, _ in tree.values()}
    assert models == {"anthropic/claude-sonnet-4", "openai/gpt-4o", "openai/gpt-4o-mini"}


def test_export_is_deterministic(tmp_path: Path) -> None:
    out1, _ = _export(tmp_path / "a", [EXAMPLES])
    out2, _ = _export(tmp_path / "b", [EXAMPLES])
    files1 = sorted(p.relative_to(out1) for p in out1.rglob("*") if p.is_file())
    files2 = sorted(p.relative_to(out2) for p in out2.rglob("*") if p.is_file())
    assert files1 == files2
    for rel in files1:
        assert (out1 / rel).read_bytes() == (out2 / rel).read_bytes()
    # a re-export into the same folder replaces, never duplicates
    with StoreConnection(tmp_path / "a" / "s.duckdb", read_only=True) as store:
        export_eee(store, out1, retrieved_timestamp=TS)
    assert sorted(p.relative_to(out1) for p in out1.rglob("*") if p.is_file()) == files1


def _jsonl_experiment(path: Path, exp_id: str, name: str, rewards: list[float | None],
                      **episode_changes: object) -> None:
    """A JSONL input of one experiment (from the tiny-mini example) with given rewards."""
    lines = (EXAMPLES / "jsonl" / "tiny-mini-toybench.jsonl").read_text().splitlines()
    exp = ExperimentRecord.model_validate_json(lines[0]).model_copy(
        update={"experiment_id": exp_id, "experiment_name": name})
    base = EpisodeRecord.model_validate_json(lines[1])
    out = [record_json(exp)]
    for i, r in enumerate(rewards):
        data = base.model_dump()
        data.update({"experiment_id": exp_id, "trajectory_id": f"t{i}", "task_id": f"task-{i % 3}",
                     "attempt": i // 3, "reward": r, "success": None if r is None else r > 0,
                     **episode_changes})
        out.append(record_json(EpisodeRecord.model_validate(data)))
    path.write_text("\n".join(out) + "\n")


def test_unknown_outcomes_are_counted_not_exported(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    rewards = [1.0, None, 0.0, 0.5, None, 1.0, 0.25]
    _jsonl_experiment(src / "mixed.jsonl", "mixed0001", "mixed", rewards,
                      error_message="auth failed for sk-abcdefghijklmnopqrstuvwx",
                      error_type="AuthError", status="error", input_text="Fix the bug.",
                      expected_text="patched")
    _jsonl_experiment(src / "unknown.jsonl", "unknown0001", "all-unknown", [None, None])
    out, result = _export(tmp_path, [src])
    assert result.skipped == [("unknown0001", "no episode with a known reward")]
    (w,) = result.written
    assert (w.rows, w.outcome_unknown) == (5, 2)
    known = [r for r in rewards if r is not None]
    assert w.score == pytest.approx(np.mean(known))
    ((data, rows),) = check_tree(out).values()
    sd = data["evaluation_results"][0]["score_details"]
    assert sd["score"] == pytest.approx(np.mean(known))
    assert sd["details"]["episodes"] == "7"
    assert sd["details"]["episodes_outcome_unknown"] == "2"
    assert sd["details"]["success_rate"] == repr(4 / 5)
    assert data["detailed_evaluation_results"]["additional_details"][
        "rows_left_out_outcome_unknown"] == "2"
    assert data["evaluation_results"][0]["metric_config"]["metric_id"] == "mean_reward"
    assert [r["evaluation"]["score"] for r in rows] == known
    assert [r["evaluation"]["is_correct"] for r in rows] == [r > 0 for r in known]
    text = "".join(p.read_text() for p in out.rglob("*.json*"))
    assert "sk-abcdefghijklmnopqrstuvwx" not in text
    assert rows[0]["error"] == "AuthError: auth failed for ***REDACTED***"
    assert rows[0]["input"] == {"raw": "Fix the bug.", "reference": ["patched"]}
    assert len(rows[0]["sample_hash"]) == 64


def test_single_episode_has_no_interval_and_no_nan(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    _jsonl_experiment(src / "one.jsonl", "one0001", "one", [1.0], wall_time_s=None,
                      n_steps=0)
    out, _ = _export(tmp_path, [src])
    ((data, rows),) = check_tree(out).values()
    unc = data["evaluation_results"][0]["score_details"]["uncertainty"]
    assert unc == {"num_samples": 1}
    assert "performance" not in rows[0]
    assert rows[0]["evaluation"]["num_turns"] is None  # 0 steps is not a valid EEE count


def test_experiment_filter(tmp_path: Path) -> None:
    out = tmp_path / "eee"
    tmp_path.mkdir(exist_ok=True)  # evalatlas creates no parent folders (safe_write)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [EXAMPLES])
        result = export_eee(store, out, ["tiny-mini-toybench"], retrieved_timestamp=TS)
    assert [w.experiment_name for w in result.written] == ["tiny-mini-toybench"]
    assert len(check_tree(out)) == 1


def test_identity_and_uuid() -> None:
    u = uuid.UUID(file_uuid_for("f4332f7cd53d2f2d"))
    assert u.version == 4 and u.variant == uuid.RFC_4122
    assert file_uuid_for("f4332f7cd53d2f2d") == str(u) != file_uuid_for("other")
    assert model_identity("gpt-4o") == ("openai/gpt-4o", "gpt-4o", "openai")
    assert model_identity("claude-sonnet-4")[0] == "anthropic/claude-sonnet-4"
    assert model_identity("openai/azure/gpt-4o-mini") == (
        "openai/azure/gpt-4o-mini", "openai/azure/gpt-4o-mini", "openai")
    assert model_identity("my-model")[0] == "unknown/my-model"
    assert model_identity(None)[0] == "unknown/unknown"
    lines = (EXAMPLES / "jsonl" / "tiny-mini-toybench.jsonl").read_text().splitlines()
    exp = ExperimentRecord.model_validate_json(lines[0]).model_copy(update={
        "benchmark_name": "org/bench:v1",
        "agent": ExperimentRecord.model_validate_json(lines[0]).agent.model_copy(
            update={"llm_model": "ollama/llama3:8b"})})
    ident = identity_for(exp)
    assert ident.path_parts == ("org_bench_v1", "ollama", "llama3_8b")
    assert ident.samples_rel.endswith(f"{ident.file_uuid}_samples.jsonl")
    ep = EpisodeRecord.model_validate_json(lines[1]).model_copy(update={"reward": None,
                                                                      "success": None})
    assert instance_record(ep, ident) is None
    strict_loads(json.dumps({"a": 1.0}))
    with pytest.raises(ValueError):
        strict_loads('{"a": NaN}')


def test_hostile_rewards_have_intervals_inside_the_range(tmp_path: Path) -> None:
    """All-pass, all-fail and a few mixed tasks (3 tasks x 2 attempts each): every
    exported interval lies inside [min_score, max_score] and has width (check_tree);
    all-pass and all-fail keep a Wilson-type interval at the bound instead of [1, 1] and
    [0, 0], and a mixed run no longer reaches below 0 or above 1 (it did: [-0.07, 1.07])."""
    src = tmp_path / "in"
    src.mkdir()
    _jsonl_experiment(src / "pass.jsonl", "allpass001", "all-pass", [1.0] * 6)
    _jsonl_experiment(src / "fail.jsonl", "allfail001", "all-fail", [0.0] * 6)
    _jsonl_experiment(src / "mix.jsonl", "mixed00001", "mixed", [1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    out, _ = _export(tmp_path, [src])
    tree = check_tree(out)
    cis = {d["evaluation_results"][0]["score_details"]["score"]:
           d["evaluation_results"][0]["score_details"]["uncertainty"].get("confidence_interval")
           for d, _ in tree.values()}
    assert cis[1.0]["upper"] == 1.0 and cis[1.0]["lower"] < 1.0
    assert cis[0.0]["lower"] == 0.0 and cis[0.0]["upper"] > 0.0
    mixed = cis[4 / 6]
    assert 0.0 <= mixed["lower"] < 4 / 6 < mixed["upper"] <= 1.0


# --- hostile names in paths (issue 28 point 6) ----------------------------------------


def _named(bench: str, model: str, exp_id: str = "e0001") -> ExperimentRecord:
    lines = (EXAMPLES / "jsonl" / "tiny-mini-toybench.jsonl").read_text().splitlines()
    exp = ExperimentRecord.model_validate_json(lines[0])
    return exp.model_copy(update={
        "experiment_id": exp_id, "benchmark_name": bench,
        "agent": exp.agent.model_copy(update={"llm_model": model})})


@pytest.mark.parametrize(("bench", "model", "renamed"), [
    ("../../../../escape", "gpt-4o", {"benchmark"}),
    ("bench", "../..//x", {"model"}),
    ("bench", "m" * 300, {"model"}),
    ("b" * 1_000_000, "gpt-4o", {"benchmark"}),
    ("/abs/olute", "../../evil/../x", {"benchmark", "developer", "model"}),
    (".hidden", "openai/gpt-4o", {"benchmark"}),
])
def test_hostile_names_stay_under_data_shortened_and_reported(tmp_path, bench, model,
                                                              renamed):
    from evalatlas.exports.eee import MAX_COMPONENT_BYTES, write_experiment
    out = tmp_path / "out"
    lines = (EXAMPLES / "jsonl" / "tiny-mini-toybench.jsonl").read_text().splitlines()
    ep = EpisodeRecord.model_validate_json(lines[1]).model_copy(
        update={"experiment_id": "e0001"})
    w = write_experiment(_named(bench, model), [ep], out, retrieved_timestamp=TS)
    assert w is not None
    data = (out / "data").resolve()
    for path in (w.aggregate, w.samples):
        assert path.is_file() and path.resolve().is_relative_to(data)
        rel = path.resolve().relative_to(data).parts
        assert len(rel) == 4  # dataset / developer / model / file
        assert all(len(p.encode()) <= MAX_COMPONENT_BYTES and not p.startswith(".")
                   and p not in (".", "..") for p in rel[:3])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing escaped
    assert {part for part, _, _ in w.renamed} == renamed
    for _, name, written in w.renamed:
        assert written in w.aggregate.parts and name != written
    agg = json.loads(w.aggregate.read_text())
    assert agg["evaluation_results"][0]["evaluation_name"] == bench  # the name itself kept


def test_two_long_names_with_one_prefix_get_different_directories(tmp_path):
    from evalatlas.exports.eee import identity_for
    a = identity_for(_named("x" * 300 + "a", "gpt-4o", "e1"))
    b = identity_for(_named("x" * 300 + "b", "gpt-4o", "e2"))
    assert a.path_parts[0] != b.path_parts[0]
    assert identity_for(_named("mmlu", "openai/gpt-4o")).renamed == ()


def test_cli_reports_the_renamed_directories(tmp_path):
    from typer.testing import CliRunner

    from evalatlas.cli.main import app
    src = tmp_path / "in"
    src.mkdir()
    lines = (EXAMPLES / "jsonl" / "tiny-mini-toybench.jsonl").read_text().splitlines()
    exp = ExperimentRecord.model_validate_json(lines[0]).model_copy(
        update={"benchmark_name": "../../../../escape"})
    (src / "x.jsonl").write_text(record_json(exp) + "\n" + "\n".join(lines[1:]) + "\n")
    db = tmp_path / "s.duckdb"
    runner = CliRunner()
    assert runner.invoke(app, ["--db", str(db), "ingest", str(src)]).exit_code == 0
    res = runner.invoke(app, ["--db", str(db), "export", "eee", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "benchmark '../../../../escape' written as directory '________escape'" in \
        res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out", "s.duckdb"]
