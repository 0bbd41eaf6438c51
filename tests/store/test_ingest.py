"""Ingest into the DuckDB store: idempotence, replacement, quarantine, exports."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from evalatlas.api import summary as _summary
from evalatlas.records import EpisodeRecord, EvalLog
from evalatlas.stats.intervals import wilson_interval
from evalatlas.store.db import StoreConnection
from evalatlas.store.export import export_jsonl, export_parquet, iter_episodes
from evalatlas.store.ingest import ingest_paths


def summary(store: StoreConnection) -> list[dict]:
    return _summary(store).rows


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def counts(store: StoreConnection) -> tuple[int, int, int]:
    return store.count("experiments"), store.count("episodes"), store.count("quarantine")


def test_examples_ingest_and_idempotence(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [EXAMPLES])
        assert (rep.experiments, rep.episodes, rep.rejected) == (3, 180, 0)
        first = store.query("SELECT * FROM episodes ORDER BY experiment_id, trajectory_id")
        rep2 = ingest_paths(store, [EXAMPLES], force=True)
        assert rep2.episodes == 180
        assert counts(store) == (3, 180, 0)
        # Without force the unchanged JSONL file is skipped (directories are re-read).
        rep3 = ingest_paths(store, [EXAMPLES])
        assert [Path(p).name for p in rep3.unchanged] == ["tiny-mini-toybench.jsonl"]
        assert counts(store) == (3, 180, 0)
        again = store.query("SELECT * FROM episodes ORDER BY experiment_id, trajectory_id")
    strip = [{k: v for k, v in r.items() if k != "ingest_batch"} for r in first]
    assert strip == [{k: v for k, v in r.items() if k != "ingest_batch"} for r in again]


def test_summary_numbers_match_the_records(tmp_path: Path) -> None:
    logs = [EvalLog.load(p) for p in sorted((EXAMPLES / "evallogs").iterdir())]
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [EXAMPLES])
        rows = {r["agent"]: r for r in summary(store)}
    for log in logs:
        row = rows[log.experiment.agent.name]
        eps = log.episodes
        s = sum(e.success for e in eps)
        assert row["episodes"] == len(eps) and row["successes"] == s
        assert row["success_rate"] == pytest.approx(s / len(eps))
        lo, hi = wilson_interval(s, len(eps))
        assert (row["success_rate_ci_low"], row["success_rate_ci_high"]) == pytest.approx((lo, hi))
        assert row["total_tokens"] == sum(e.usage.total_tokens for e in eps)
        assert row["total_cost_usd"] == pytest.approx(sum(e.usage.total_cost_usd for e in eps))
        assert row["cost_unknown_episodes"] == 0
        errors: dict[str, int] = {}
        for e in eps:
            if e.status != "completed" or e.error_type:
                errors[e.error_type or e.status] = errors.get(e.error_type or e.status, 0) + 1
        assert row["errors_by_type"] == errors
        assert row["mean_wall_time_s"] == pytest.approx(
            sum(e.wall_time_s for e in eps) / len(eps))


def test_retried_episode_replaces_the_earlier_one(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    ep = {"experiment_id": "e1", "task_id": "t", "trajectory_id": "t_ep0", "reward": 0.0}
    src.write_text(json.dumps(ep) + "\n")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [src])
        src.write_text(json.dumps({**ep, "reward": 1.0}) + "\n")
        ingest_paths(store, [src])
        rows = store.query("SELECT reward, success FROM episodes")
    assert rows == [{"reward": 1.0, "success": True}]


def test_bad_records_quarantined_good_ones_kept(tmp_path: Path) -> None:
    src = tmp_path / "mixed.jsonl"
    good = {"experiment_id": "e1", "task_id": "t", "reward": 1.0}
    src.write_text("\n".join([
        json.dumps({**good, "trajectory_id": "a"}),
        json.dumps({**good, "trajectory_id": "b", "reward": "high"}),
        json.dumps({**good, "trajectory_id": "c"}),
    ]) + "\n")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [src])
        assert (rep.episodes, rep.rejected) == (2, 1)
        q = store.query("SELECT source_file, line, record, field, reason FROM quarantine")
        # Re-ingesting does not duplicate quarantine rows.
        ingest_paths(store, [src])
        assert store.count("quarantine") == 1
    assert q == [{"source_file": str(src), "line": 2, "record": "b", "field": "reward",
                  "reason": "reward: Value error, must be a JSON number or null, got str "
                            "'high'"}]


def test_episodes_without_experiment_still_count(tmp_path: Path) -> None:
    src = tmp_path / "orphans.jsonl"
    src.write_text(json.dumps({"experiment_id": "nope", "task_id": "t", "trajectory_id": "x",
                               "reward": 1.0}) + "\n")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [src])
        rows = summary(store)
    assert rows[0]["agent"] == "(no experiment record)" and rows[0]["episodes"] == 1


def test_export_jsonl_round_trip(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [EXAMPLES])
        stored = list(iter_episodes(store))
        n = export_jsonl(store, tmp_path / "out.jsonl")
    assert n == 180
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    # experiment records come first (3), then the episodes (no measurements here)
    assert len(lines) == 3 + 180
    back = [EpisodeRecord.model_validate(json.loads(x)) for x in lines[3:]]
    assert back == stored
    originals = {(e.experiment_id, e.trajectory_id): e for p in
                 sorted((EXAMPLES / "evallogs").iterdir()) for e in EvalLog.load(p).episodes}
    for ep in back:
        if (ep.experiment_id, ep.trajectory_id) in originals:
            assert ep == originals[(ep.experiment_id, ep.trajectory_id)]


def test_export_parquet(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [EXAMPLES])
        counts_ = export_parquet(store, tmp_path / "pq")
    assert counts_["episodes"] == 180
    n = duckdb.sql(f"SELECT count(*) FROM '{tmp_path / 'pq' / 'episodes.parquet'}'").fetchall()[0]
    assert n[0] == 180


def test_cube_fixture_ingest(tmp_path: Path, fixtures: Path) -> None:
    xray = fixtures / "cube" / "xray"
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [xray])
        assert (rep.experiments, rep.episodes, rep.rejected) == (2, 3, 0)
        st = store.query("SELECT status, count(*) AS n FROM episodes GROUP BY 1 ORDER BY 1")
    assert st == [{"status": "completed", "n": 2}, {"status": "max_steps", "n": 1}]


def test_unknown_outcomes_are_counted_apart(tmp_path: Path) -> None:
    src = tmp_path / "mixed.jsonl"
    rows = [{"experiment_id": "e1", "task_id": f"t{i}", "trajectory_id": f"t{i}",
             "reward": r} for i, r in enumerate([1.0, 0.0, None, None])]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [src])
        (row,) = summary(store)
    assert row["episodes"] == 4 and row["outcome_unknown_episodes"] == 2
    assert row["success_rate"] == 0.5
    assert (row["success_rate_ci_low"], row["success_rate_ci_high"]) == pytest.approx(
        wilson_interval(1, 2))


def test_other_harnesses_jsonl_is_not_mistaken_for_records(tmp_path: Path,
                                                           fixtures: Path) -> None:
    (samples,) = (fixtures / "eee" / "lm_eval").glob("samples_*.jsonl")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [samples])
    assert rep.episodes == 0 and rep.rejected == 1
    assert rep.problems[0].reason == "unrecognised input format (no adapter claims this file)"


def test_compare_and_tiers_skip_unknown_outcomes(tmp_path: Path) -> None:
    from evalatlas.api import compare, tiers

    lines = []
    for agent, outcomes in (("a", [1.0, 1.0, None, None]), ("b", [0.0, 1.0, 0.0, 0.0])):
        lines.append({"experiment_id": agent, "experiment_name": agent, "benchmark_name": "b",
                      "benchmark_subset": {"name": "b", "n_tasks": 4}, "labels": {"tier": agent},
                      "agent": {"name": agent, "config": {"a": agent}}})
        lines += [{"experiment_id": agent, "task_id": f"t{i}", "trajectory_id": f"t{i}",
                   "reward": r} for i, r in enumerate(outcomes)]
    src = tmp_path / "x.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [src])
        (pair,) = compare(store, "a", "b").rows
        report = tiers(store, baseline="b")
    assert pair["shared_tasks"] == 2  # t2, t3 have no known outcome for a
    assert (pair["success_a"], pair["success_b"]) == (1.0, 0.5)
    rows = {r["tier"]: r for r in report.rows}
    assert rows["a"]["runs"] == 2 and rows["a"]["pass_rate"] == 1.0


def test_mean_reward_interval_is_task_clustered(tmp_path: Path) -> None:
    from evalatlas.stats import bounded_mean_interval

    logs = [EvalLog.load(p) for p in sorted((EXAMPLES / "evallogs").iterdir())]
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [EXAMPLES])
        rows = {r["agent"]: r for r in summary(store)}
    for log in logs:
        iv = bounded_mean_interval([e.reward for e in log.episodes],
                                   clusters=[e.task_id for e in log.episodes])
        row = rows[log.experiment.agent.name]
        assert (row["mean_reward_ci_low"], row["mean_reward_ci_high"]) == pytest.approx(
            (iv.low, iv.high))
        assert iv.low < row["mean_reward"] < iv.high


def test_fixing_a_file_clears_its_quarantine(tmp_path: Path) -> None:
    src = tmp_path / "f.jsonl"
    good = {"experiment_id": "e1", "task_id": "t", "trajectory_id": "a", "reward": 1.0}
    src.write_text(json.dumps({**good, "reward": "high"}) + "\n")
    other = tmp_path / "other.jsonl"
    other.write_text("{broken\n")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [src, other])
        assert store.count("quarantine") == 2
        src.write_text(json.dumps(good) + "\n")
        ingest_paths(store, [src])
        left = store.query("SELECT source_file FROM quarantine")
        assert store.count("episodes") == 1
    assert left == [{"source_file": str(other)}]  # other sources' problems are kept


def test_ingest_pauses_the_collector_and_steps_after_each_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cyclic collector is paused over an ingest (collector.paused_in_steps: 3-8% of
    an adapter ingest's CPU) and collects the young objects after every batch written, so
    cycles never pile up over a long ingest; it is on again after, and a caller's own
    pause is kept."""
    import gc

    from evalatlas import collector

    steps: list[bool] = []
    real = collector.paused_in_steps

    @contextlib.contextmanager
    def counted() -> Iterator[Callable[[], None]]:
        with real() as step:
            def counting() -> None:
                steps.append(gc.isenabled())
                step()
            yield counting

    monkeypatch.setattr(collector, "paused_in_steps", counted)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [EXAMPLES], batch_size=50)
        assert rep.batches > 3
        assert len(steps) == rep.batches  # one step per write, each while paused
        assert not any(steps)
        assert gc.isenabled()
        gc.disable()
        try:
            ingest_paths(store, [EXAMPLES], force=True, batch_size=50)
            assert not gc.isenabled()
        finally:
            gc.enable()
