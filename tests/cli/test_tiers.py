"""``evalatlas tiers`` end to end: the Scylla dry run, seed 001 example 3, edge cases."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.stats.intervals import wilson_interval

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
DRYRUN = FIXTURES / "scylla" / "dryrun"
runner = CliRunner()


def _ok(args: list[str]) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def _tiers(db: Path, *args: str) -> dict:
    return json.loads(_ok(["--db", str(db), "tiers", "--format", "json", *args]))


@pytest.fixture(scope="module")
def dryrun_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("tiers") / "s.duckdb"
    _ok(["--db", str(db), "ingest", str(FIXTURES / "scylla")])
    return db


def _runs_csv() -> dict[str, dict[str, str]]:
    with (DRYRUN / "data" / "runs.csv").open(encoding="utf-8") as fh:
        return {r["tier"]: r for r in csv.DictReader(fh)}


def _subtests_csv() -> dict[str, dict[str, str]]:
    with (DRYRUN / "data" / "subtests.csv").open(encoding="utf-8") as fh:
        return {r["tier"]: r for r in csv.DictReader(fh)}


def test_dryrun_tier_rows_match_upstream(dryrun_db: Path) -> None:
    env = _tiers(dryrun_db)
    assert env["schema"] == "evalatlas.tiers/1" and env["baseline"] == "T0"
    runs, subtests = _runs_csv(), _subtests_csv()
    rows = {r["tier"]: r for r in env["rows"]}
    assert list(rows) == ["T0", "T1", "T2", "T3", "T4", "T5", "T6"]
    t0_comp = (1 + float(runs["T0"]["impl_rate"])) / 2
    for tier, row in rows.items():
        impl = float(runs[tier]["impl_rate"])
        assert (row["runs"], row["passed"], row["pass_rate"]) == (1, 1, 1.0)
        assert (row["pass_rate_ci_low"], row["pass_rate_ci_high"]) == pytest.approx(
            wilson_interval(1, 1))
        assert row["impl_rate"] == pytest.approx(impl, abs=1e-12)
        assert row["composite_median"] == pytest.approx((1 + impl) / 2, abs=1e-12)
        assert row["grade"] == "A"  # every composite is >= 0.95 (seed scale)
        assert row["mean_cost_usd"] == float(subtests[tier]["mean_cost"])
        assert row["cost_of_pass_usd"] == float(subtests[tier]["cop"])
        assert row["uplift"] == pytest.approx(((1 + impl) / 2 - t0_comp) / t0_comp)
        assert row["uplift_ci_low"] is None  # one run per tier: no spread to resample
        assert row["impl_rate_ci_low"] is None and row["composite_median_ci_low"] is None
    costs = [float(runs[t]["cost_usd"]) for t in rows]
    assert env["pass_rate_variance"] == 0.0
    assert env["cost_variance"] == pytest.approx(np.var(costs), rel=1e-12)
    assert env["cost_delta"] == pytest.approx(0.24744315 - 0.06531415, abs=1e-12)


def test_dryrun_scylla_scale_and_sample_variance(dryrun_db: Path) -> None:
    env = _tiers(dryrun_db, "--scale", "scylla", "--ddof", "1")
    grades = {r["tier"]: r["grade"] for r in env["rows"]}
    # T2 and T5: impl_rate 1.0 and passed -> composite exactly 1.0 -> S (S only at 1.0)
    assert grades == {"T0": "A", "T1": "A", "T2": "S", "T3": "A", "T4": "A", "T5": "S",
                      "T6": "A"}
    costs = [float(r["cost_usd"]) for r in _runs_csv().values()]
    assert env["cost_variance"] == pytest.approx(np.var(costs, ddof=1), rel=1e-12)


def test_table_and_markdown_render(dryrun_db: Path) -> None:
    text = _ok(["--db", str(dryrun_db), "tiers", "--format", "markdown", "--baseline", "T5"])
    assert "| T5 |" in text and "uplift vs T5" in text
    assert "cost delta $0.1821" in text
    table = _ok(["--db", str(dryrun_db), "tiers"])
    assert "T6" in table and "cross-tier" in table


# --------------------------------------------------------------------------- synthetic


def _run(root: Path, tier: str, run: int, passed: bool, achieved: float, maximum: float,
         cost: float) -> None:
    d = root / tier / "01" / f"run_{run:02d}"
    jd = d / "judge" / "judge_01"
    jd.mkdir(parents=True)
    (jd / "judgment.json").write_text(json.dumps({
        "score": 0.5, "passed": passed, "is_valid": True,
        "criteria_scores": {"all": {"achieved": achieved, "max": maximum}}}))
    (d / "run_result.json").write_text(json.dumps({
        "run_number": run, "exit_code": 0, "cost_usd": cost,
        "token_stats": {"input_tokens": 1, "output_tokens": 1}}))


def _ingest(tmp_path: Path, runs: list[tuple]) -> Path:
    root = tmp_path / "2026-02-02T00-00-00-test-007"
    for r in runs:
        _run(root, *r)
    db = tmp_path / "s.duckdb"
    _ok(["--db", str(db), "ingest", str(root)])
    return db


def test_seed_example_3_uplifts(tmp_path: Path) -> None:
    """Seed 001 example 3: composite medians 0.70/0.80/0.85/0.90 -> 0.143/0.214/0.286."""
    db = _ingest(tmp_path, [("T0", 1, True, 2, 5, 1.0), ("T1", 1, True, 3, 5, 1.0),
                            ("T2", 1, True, 7, 10, 1.0), ("T3", 1, True, 4, 5, 1.0)])
    rows = {r["tier"]: r for r in _tiers(db)["rows"]}
    assert [rows[t]["composite_median"] for t in ("T0", "T1", "T2", "T3")] == pytest.approx(
        [0.70, 0.80, 0.85, 0.90])
    assert [round(rows[t]["uplift"], 3) for t in ("T1", "T2", "T3")] == [0.143, 0.214, 0.286]
    assert rows["T0"]["uplift"] == 0.0


def test_repeated_runs_interval_and_cost_of_pass(tmp_path: Path) -> None:
    runs = [("T0", i, i <= 2, 1, 2, 0.2) for i in range(1, 5)]  # 2/4 pass, impl 0.5
    runs += [("T1", i, True, 2, 2, 0.1 * i) for i in range(1, 5)]  # 4/4, impl 1.0
    db = _ingest(tmp_path, runs)
    env = _tiers(db)
    t0, t1 = env["rows"]
    assert (t0["pass_rate"], t1["pass_rate"]) == (0.5, 1.0)
    assert (t0["pass_rate_ci_low"], t0["pass_rate_ci_high"]) == pytest.approx(
        wilson_interval(2, 4))
    assert t0["composite_median"] == 0.5 and t1["composite_median"] == 1.0
    assert (t0["grade"], t1["grade"]) == ("F", "A")
    assert t0["cost_of_pass_usd"] == pytest.approx(0.2 / 0.5)
    assert t1["mean_cost_usd"] == pytest.approx(0.25)
    assert t1["uplift"] == pytest.approx(1.0)
    # resampled T0 medians are 0.25, 0.5 or 0.75: uplift in [1/3, 3]
    lo, hi = t1["uplift_ci_low"], t1["uplift_ci_high"]
    assert 1 / 3 - 1e-9 <= lo <= 1.0 <= hi <= 3 + 1e-9
    assert env["cost_delta"] == pytest.approx(0.25 - 0.2)
    # cost interval: percentile bootstrap of the mean over runs (one task), inside the
    # range of resampled means [0.1, 0.4] and never below 0
    from evalatlas.stats import nonnegative_mean_interval

    iv = nonnegative_mean_interval([0.1, 0.2, 0.3, 0.4])
    assert (t1["mean_cost_ci_low"], t1["mean_cost_ci_high"]) == pytest.approx((iv.low, iv.high))
    assert 0.1 <= t1["mean_cost_ci_low"] < 0.25 < t1["mean_cost_ci_high"] <= 0.4
    assert 0.25 <= t0["composite_median_ci_low"] <= 0.5 <= t0["composite_median_ci_high"] <= 0.75
    assert t0["impl_rate"] == 0.5
    assert env["pass_rate_variance"] == pytest.approx(np.var([0.5, 1.0]))


def test_zero_baseline_uplift_is_undefined_not_zero(tmp_path: Path) -> None:
    db = _ingest(tmp_path, [("T0", 1, False, 0, 5, 0.3), ("T1", 1, True, 5, 5, 0.3)])
    env = _tiers(db)
    t0, t1 = env["rows"]
    assert t0["composite_median"] == 0.0
    assert t0["cost_of_pass_usd"] == "inf"  # never passes (JSON "inf", not a number)
    assert t1["uplift"] is None and "baseline score is 0" in t1["uplift_note"]
    text = _ok(["--db", str(db), "tiers", "-f", "markdown"])
    assert "undefined (baseline score is 0" in text and "| inf |" in text


def test_missing_baseline_and_no_tiers(tmp_path: Path) -> None:
    db = _ingest(tmp_path, [("T1", 1, True, 5, 5, 0.3)])
    env = _tiers(db, "--baseline", "T0")
    assert env["rows"][0]["uplift"] is None and env["baseline"] is None
    assert any("baseline 'T0' has no runs" in n for n in env["notes"])
    env = _tiers(db, "--label", "nosuchlabel")
    assert env["rows"] == []
    res = runner.invoke(app, ["--db", str(db), "tiers", "--scale", "bogus"])
    assert res.exit_code == 2


# ------------------------------------------------------------------- CLI JSON = API


@pytest.fixture(scope="module")
def demo_and_dryrun_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo (3 tiers x many runs: intervals) and the Scylla dry run (one run per tier)."""
    db = tmp_path_factory.mktemp("tiers-api") / "s.duckdb"
    for src in (Path(__file__).resolve().parents[2] / "examples", FIXTURES / "scylla"):
        _ok(["--db", str(db), "ingest", str(src)])
    return db


@pytest.mark.parametrize(("args", "kwargs"), [
    ([], {}),
    (["--baseline", "T5", "--scale", "scylla", "--ddof", "1", "--confidence", "0.9",
      "--pass-weight", "0.7", "--impl-weight", "0.3"],
     {"baseline": "T5", "scale": "scylla", "ddof": 1, "confidence": 0.9,
      "weights": (0.7, 0.3)}),
    (["--baseline", "none"], {"baseline": None}),
    (["--label", "nosuchlabel"], {"label": "nosuchlabel"}),
    (["-e", "planner-sonnet-toybench"], {"experiment": ["planner-sonnet-toybench"]}),
])
def test_cli_json_is_the_api_results_to_dict(demo_and_dryrun_db: Path, args: list[str],
                                             kwargs: dict) -> None:
    """``evalatlas tiers --format json`` prints ``ea.tiers(...).to_dict()`` and nothing
    more: the cross-tier sentence is one of the result's notes."""
    import evalatlas as ea

    cli = _tiers(demo_and_dryrun_db, *args)
    with ea.open(demo_and_dryrun_db, read_only=True) as store:
        report = ea.tiers(store, **kwargs)
    assert cli == report.to_dict()
    assert cli["notes"] == report.notes and len(report.notes) >= 1
    if report.rows:
        assert report.notes[-1].startswith("cross-tier: pass-rate variance ")
    else:
        assert "no episodes carry the experiment label 'nosuchlabel'" in report.notes[-1]
