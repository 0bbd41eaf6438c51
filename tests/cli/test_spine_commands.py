"""The spine's commands end to end: ingest, summary formats, quarantine, export, schema."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def _db(tmp_path: Path) -> list[str]:
    return ["--db", str(tmp_path / "s.duckdb")]


def test_ingest_then_summary_json(tmp_path: Path) -> None:
    r = runner.invoke(app, [*_db(tmp_path), "ingest", str(EXAMPLES)])
    assert r.exit_code == 0, r.output
    assert "3 experiments, 180 episodes" in r.output
    r = runner.invoke(app, [*_db(tmp_path), "summary", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["schema"] == "evalatlas.summary/1" and doc["group_by"] == ["agent"]
    rows = {row["agent"]: row for row in doc["rows"]}
    assert set(rows) == {"planner-sonnet", "react-gpt-4o", "tiny-mini"}
    assert rows["planner-sonnet"]["episodes"] == 60 and rows["planner-sonnet"]["tasks"] == 20
    lo, hi = rows["tiny-mini"]["success_rate_ci_low"], rows["tiny-mini"]["success_rate_ci_high"]
    assert lo < rows["tiny-mini"]["success_rate"] < hi
    # tiny-mini reports tokens but no cost: priced from its model, and marked as computed.
    assert rows["tiny-mini"]["cost_computed_episodes"] == 60
    assert rows["tiny-mini"]["total_cost_usd"] > 0


def test_env_var_selects_the_store(tmp_path: Path) -> None:
    env = {"EVALATLAS_DB": str(tmp_path / "env.duckdb")}
    assert runner.invoke(app, ["ingest", str(EXAMPLES)], env=env).exit_code == 0
    assert (tmp_path / "env.duckdb").exists()


def test_summary_by_label_csv_and_markdown(tmp_path: Path) -> None:
    runner.invoke(app, [*_db(tmp_path), "ingest", str(EXAMPLES)])
    r = runner.invoke(app, [*_db(tmp_path), "summary", "--by", "label:tier", "-f", "csv"])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.output)))
    assert sorted(row["label:tier"] for row in rows) == ["T0", "T1", "T2"]
    r = runner.invoke(app, [*_db(tmp_path), "summary", "--by", "benchmark", "-f", "markdown"])
    assert "| benchmark |" in r.output and "toybench" in r.output
    r = runner.invoke(app, [*_db(tmp_path), "summary", "--by", "nonsense"])
    assert r.exit_code == 2 and "unknown grouping" in r.output


def test_rejections_are_counted_and_listed(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"experiment_id": "e", "task_id": "t", "trajectory_id": "a", "reward": 1}\n'
                   '{"experiment_id": "e", "task_id": "t", "trajectory_id": "b"}\n')
    r = runner.invoke(app, [*_db(tmp_path), "ingest", str(bad)])
    assert r.exit_code == 0
    assert "rejected 1 records" in r.output and "evalatlas quarantine" in r.output
    r = runner.invoke(app, [*_db(tmp_path), "quarantine", "-f", "json"])
    doc = json.loads(r.output)
    assert doc["total"] == 1
    assert doc["rows"][0] == {"file": str(bad), "line": 2, "record": "b", "field": "reward",
                              "reason": "reward: required field is missing", "batch": 1}
    with ea.open(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.quarantine().to_dict() == doc  # the CLI's JSON is the API's result
        assert store.quarantine(source="nothing").rows == []
        assert store.quarantine(limit=0).rows == [] and store.quarantine(limit=0).total == 1
        with pytest.raises(ValueError, match="limit"):
            store.quarantine(limit=-1)
    r = runner.invoke(app, [*_db(tmp_path), "quarantine", "-f", "markdown"])
    assert "1 rejected records in the store" in r.output


def test_ingest_of_only_bad_input_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json}\n")
    r = runner.invoke(app, [*_db(tmp_path), "ingest", str(bad)])
    assert r.exit_code == 1


def test_summary_without_store_is_a_clear_error(tmp_path: Path) -> None:
    r = runner.invoke(app, [*_db(tmp_path), "summary"])
    assert r.exit_code == 2 and "does not exist" in r.output


def test_export_jsonl_and_parquet(tmp_path: Path) -> None:
    runner.invoke(app, [*_db(tmp_path), "ingest", str(EXAMPLES)])
    out = tmp_path / "all.jsonl"
    r = runner.invoke(app, [*_db(tmp_path), "export", "jsonl", str(out)])
    assert r.exit_code == 0, r.output
    assert len(out.read_text().splitlines()) == 3 + 180  # experiment records, episodes
    r = runner.invoke(app, [*_db(tmp_path), "export", "jsonl", str(out), "-e",
                            "tiny-mini-toybench"])
    assert len(out.read_text().splitlines()) == 1 + 60
    r = runner.invoke(app, [*_db(tmp_path), "export", "parquet", str(tmp_path / "pq")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "pq" / "episodes.parquet").is_file()


def test_schema_command(tmp_path: Path) -> None:
    r = runner.invoke(app, ["schema", "EpisodeRecord"])
    assert r.exit_code == 0
    schema = json.loads(r.output)
    assert {"experiment_id", "task_id", "reward", "trajectory_id"} <= set(schema["required"])
    r = runner.invoke(app, ["schema", "--write", str(tmp_path)])
    assert (tmp_path / "ExperimentRecord.schema.json").is_file()


def test_exported_secrets_are_redacted(tmp_path: Path) -> None:
    runner.invoke(app, [*_db(tmp_path), "ingest", str(EXAMPLES)])
    runner.invoke(app, [*_db(tmp_path), "export", "parquet", str(tmp_path / "pq")])
    raw = (tmp_path / "pq" / "experiments.parquet").read_bytes()
    assert b"sk-example" not in raw
    assert b"REDACTED" in raw


def _private_model_episode(tmp_path: Path) -> Path:
    p = tmp_path / "private.jsonl"
    p.write_text(json.dumps({"experiment_id": "e", "task_id": "t", "trajectory_id": "a",
                             "reward": 1.0, "usage": {"prompt_tokens": 2_000_000,
                                                      "completion_tokens": 1_000_000,
                                                      "model": "acme-private-7"}}) + "\n")
    return p


def test_unknown_model_cost_is_unknown_then_zero_or_priced_on_request(tmp_path: Path) -> None:
    src = _private_model_episode(tmp_path)
    runner.invoke(app, ["--db", str(tmp_path / "a.duckdb"), "ingest", str(src)])
    doc = json.loads(runner.invoke(app, ["--db", str(tmp_path / "a.duckdb"), "summary",
                                         "-f", "json"]).output)
    assert doc["unknown_price_models"] == ["acme-private-7"]
    assert doc["rows"][0]["total_cost_usd"] is None
    assert doc["rows"][0]["cost_unknown_episodes"] == 1

    runner.invoke(app, ["--db", str(tmp_path / "b.duckdb"), "ingest", str(src),
                        "--unknown-model-cost", "zero"])
    doc = json.loads(runner.invoke(app, ["--db", str(tmp_path / "b.duckdb"), "summary",
                                         "-f", "json"]).output)
    assert doc["rows"][0]["total_cost_usd"] == 0.0

    prices = tmp_path / "prices.toml"
    prices.write_text('[models."acme-private-7"]\ninput = 1.5\noutput = 4.0\n')
    r = runner.invoke(app, ["--db", str(tmp_path / "c.duckdb"), "ingest", str(src),
                            "--prices", str(prices)])
    assert r.exit_code == 0, r.output
    doc = json.loads(runner.invoke(app, ["--db", str(tmp_path / "c.duckdb"), "summary",
                                         "-f", "json"]).output)
    assert doc["rows"][0]["total_cost_usd"] == pytest.approx(2 * 1.5 + 1 * 4.0)
    assert doc["rows"][0]["cost_computed_episodes"] == 1

    # the price file was this ingest's only: the next one in the same process prices as
    # before (no process-wide price book stays configured)
    runner.invoke(app, ["--db", str(tmp_path / "d.duckdb"), "ingest", str(src)])
    doc = json.loads(runner.invoke(app, ["--db", str(tmp_path / "d.duckdb"), "summary",
                                         "-f", "json"]).output)
    assert doc["rows"][0]["total_cost_usd"] is None
    assert doc["unknown_price_models"] == ["acme-private-7"]

    # a bad price file is a one-line error, and no store is created
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."acme-private-7"]\ninput = 1.5\nouput = 4.0\n')
    r = runner.invoke(app, ["--db", str(tmp_path / "e.duckdb"), "ingest", str(src),
                            "--prices", str(bad)])
    assert r.exit_code != 0 and "ouput" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "e.duckdb").exists()


def test_summary_pass_at_k_and_clustered_interval_match_the_metrics(tmp_path: Path) -> None:
    from evalatlas.metrics.outcomes import pass_at_k_over_tasks
    from evalatlas.records import EvalLog

    runner.invoke(app, [*_db(tmp_path), "ingest", str(EXAMPLES)])
    doc = json.loads(runner.invoke(app, [*_db(tmp_path), "summary", "-f", "json"]).output)
    rows = {r["agent"]: r for r in doc["rows"]}
    for path in sorted((EXAMPLES / "evallogs").iterdir()):
        log = EvalLog.load(path)
        by_task: dict[str, list[bool]] = {}
        for e in log.episodes:
            by_task.setdefault(e.task_id, []).append(bool(e.success))
        row = rows[log.experiment.agent.name]
        assert row["min_attempts"] == 3
        assert row["pass_at_k"]["2"]["value"] == pytest.approx(pass_at_k_over_tasks(by_task, 2))
        assert row["success_rate_clustered_ci_low"] < row["success_rate"]
        assert row["success_rate"] < row["success_rate_clustered_ci_high"]
