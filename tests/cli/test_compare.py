"""``evalatlas compare`` on leaderboard data: "is the top of this leaderboard a tie?"."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.stats import bounded_mean_interval

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
VERIFIED = FIXTURES / "swebench-verified"
GEMINI = "20251118_mini-v1.15.0_gemini-3-pro-preview-20251118"
SONNET = "20250929_mini-v1.13.3_sonnet-4-5-20250929"
runner = CliRunner()


def _ok(args: list[str]) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("compare") / "s.duckdb"
    for name in ("swebench-verified", "terminal-bench", "scylla"):
        _ok(["--db", str(path), "ingest", str(FIXTURES / name)])
    return path


def _compare(db: Path, *args: str) -> dict:
    return json.loads(_ok(["--db", str(db), "compare", "--format", "json", *args]))


def _resolved(folder: str) -> dict[str, bool]:
    data = json.loads((VERIFIED / folder / "per_instance_details.json").read_text())
    return {k: v["resolved"] for k, v in data.items()}


def test_swebench_top_two_paired(db: Path) -> None:
    """Gemini 3 Pro vs Claude 4.5 Sonnet on the 500 shared instances, checked by hand."""
    env = _compare(db, "Gemini 3 Pro Preview (2025-11-18)", "Claude 4.5 Sonnet (20250929)")
    assert env["schema"] == "evalatlas.compare/1" and env["score"] == "reward"
    (row,) = env["rows"]
    a, b = _resolved(GEMINI), _resolved(SONNET)
    ids = sorted(a)
    av = np.array([a[i] for i in ids], dtype=float)
    bv = np.array([b[i] for i in ids], dtype=float)
    a_only = int(np.sum((av == 1) & (bv == 0)))
    b_only = int(np.sum((av == 0) & (bv == 1)))
    assert (row["discordant_a_only"], row["discordant_b_only"]) == (a_only, b_only)
    assert row["shared_tasks"] == 500 and row["test"] == "McNemar"
    assert (row["success_a"], row["success_b"]) == (0.742, 0.706)
    assert row["diff"] == pytest.approx(0.036, abs=1e-12)
    assert row["p"] == pytest.approx(stats.binomtest(min(a_only, b_only), a_only + b_only,
                                                     0.5).pvalue, rel=1e-12)
    d = av - bv
    # interval: Wilson on an effective n over the differences in [-1, 1]; close to the
    # symmetric t interval at n = 500, but never outside [-1, 1]
    iv = bounded_mean_interval(d, lower=-1, upper=1)
    assert (row["diff_ci_low"], row["diff_ci_high"]) == pytest.approx((iv.low, iv.high))
    half = stats.t.ppf(0.975, 499) * d.std(ddof=1) / math.sqrt(500)
    assert (row["diff_ci_low"], row["diff_ci_high"]) == pytest.approx(
        (0.036 - half, 0.036 + half), abs=1e-3)
    costs = json.loads((VERIFIED / GEMINI / "per_instance_details.json").read_text())
    assert row["cost_a"] == pytest.approx(sum(v["cost"] for v in costs.values()) / 500)
    assert row["verdict_p"] == "raw" and "p_holm" not in row
    assert row["sentence"] == (
        "Gemini 3 Pro Preview (2025-11-18) passes 3.6 points more often than Claude 4.5 "
        f"Sonnet (20250929) (95% CI {100 * iv.low:.1f} to {100 * iv.high:.1f} points; "
        f"McNemar p = {row['p']:.3f}; 500 shared tasks)")


def test_reversed_order_names_the_better_one_first(db: Path) -> None:
    (row,) = _compare(db, f"label:system={SONNET}", f"label:system={GEMINI}")["rows"]
    assert row["diff"] == pytest.approx(-0.036, abs=1e-12)
    assert row["sentence"].startswith(f"system={GEMINI} passes 3.6 points more often than "
                                      f"system={SONNET}")


def test_a_tie_and_the_tasks_it_would_take(db: Path) -> None:
    """GPT-5.1 and GPT-5.1-codex both resolve 330/500: no detectable difference."""
    env = _compare(db, "label:system=20251120_mini-v1.15.0_gpt-5.1-2025-11-13",
                   "label:system=20251124_mini-v1.16.0_gpt-5.1-codex", "--detect", "0.05")
    (row,) = env["rows"]
    assert row["diff"] == 0.0 and row["p"] > 0.05
    a = _resolved("20251120_mini-v1.15.0_gpt-5.1-2025-11-13")
    b = _resolved("20251124_mini-v1.16.0_gpt-5.1-codex")
    d = np.array([float(a[i]) - float(b[i]) for i in sorted(a)])
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    need = math.ceil(z * z * d.var(ddof=1) / 0.05**2 - 1e-9)
    assert row["tasks_needed"] == need
    mdd = z * math.sqrt(d.var(ddof=1) / 500)
    assert row["detectable_difference"] == pytest.approx(mdd)
    assert need < 500  # so no "N tasks would be needed" after 500 (issue 21.7)
    assert re.fullmatch(
        r"no detectable difference between .+ and .+ at 0\.05 \(difference 0\.0 points, "
        r"95% CI -\d+\.\d to \d+\.\d points; McNemar p = 1\.000; 500 shared tasks\); "
        r"with 500 shared tasks this comparison detects differences of "
        + f"{100 * mdd:.1f}" + r" points or more \(80% power\)",
        row["sentence"])
    assert "-0.0" not in row["sentence"]


def test_three_agents_holm(db: Path) -> None:
    env = _compare(db, "Factory Droid (20250923_droid_claude-4-1-opus)", "ob1-agent:ob1-sdk",
                   "Factory Droid (20250923_droid_claude-4-sonnet)")
    rows = env["rows"]
    assert len(rows) == 3
    assert all(r["test"] == "Wilcoxon" and r["shared_tasks"] == 80 for r in rows)
    p = [r["p"] for r in rows]
    order = np.argsort(p)
    expected = np.empty(3)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, p[i] * (3 - rank)))
        expected[i] = running
    assert [r["p_holm"] for r in rows] == pytest.approx(expected.tolist())
    for r in rows:  # raw and adjusted p, and which one the verdict used
        assert r["verdict_p"] == "holm"
        assert f"Wilcoxon p = {r['p']:.3f}" in r["sentence"] or r["p"] < 0.001
        assert "after Holm adjustment for 3 comparisons" in r["sentence"]
    # task success = mean over the 5 runs: opus 0.5875 vs sonnet 0.505
    opus_vs_sonnet = rows[1]
    assert (opus_vs_sonnet["success_a"], opus_vs_sonnet["success_b"]) == pytest.approx(
        (0.5875, 0.505))


def test_pair_by_attempt_pairs_only_seeded_attempts(db: Path) -> None:
    """Terminal-Bench trial i of one agent and trial i of another are independent draws
    (no seed says otherwise): --pair-by attempt pairs nothing and says why."""
    env = _compare(db, "LeadArchitectAgent (20250902_orchestrator_claude-4-sonnet)",
                   "LeadArchitectAgent (20250902_orchestrator_qwen-3-coder-480B)",
                   "--pair-by", "attempt")
    (row,) = env["rows"]
    assert (row["pairs"], row["shared_tasks"], row["diff"]) == (0, 0, None)
    assert "no two episodes share a seed" in row["sentence"]
    assert "use --pair-by task" in row["sentence"]
    (by_task,) = _compare(db, "LeadArchitectAgent (20250902_orchestrator_claude-4-sonnet)",
                          "LeadArchitectAgent (20250902_orchestrator_qwen-3-coder-480B)"
                          )["rows"]
    assert (by_task["pairs"], by_task["shared_tasks"]) == (80, 80)
    assert (by_task["success_a"], by_task["success_b"]) == pytest.approx((0.36, 0.1925))


def test_scylla_tiers_judge_score_and_too_few_tasks(db: Path) -> None:
    env = _compare(db, "label:tier=T0", "label:tier=T5")
    (row,) = env["rows"]
    assert env["score"] == "score"
    assert (row["score_a"], row["score_b"]) == pytest.approx((0.9733333333, 0.9833333333))
    assert (row["cost_a"], row["cost_b"]) == (0.1351093, 0.06531415)
    assert row["sentence"] == ("tier=T0 and tier=T5 cannot be compared: 1 shared task; "
                               "at least 2 pairs are needed")


def test_selector_errors(db: Path) -> None:
    for args, message in [
        (["nobody-at-all", "label:tier=T0"], "matches no agent"),
        (["label:tier=T0"], "at least two"),
        (["label:tier=T9", "label:tier=T0"], "no experiment has label tier='T9'"),
        # two agents start so: ambiguous, both listed (names people type, issue 21.5)
        (["Factory Droid", "label:tier=T0"], "is ambiguous"),
        (["factory_droid", "label:tier=T0"],
         "agent Factory Droid (20250923_droid_claude-4-1-opus), "
         "agent Factory Droid (20250923_droid_claude-4-sonnet)"),
        (["nobody-at-all", "label:tier=T0"], "closest:"),
    ]:
        res = runner.invoke(app, ["--db", str(db), "compare", *args])
        assert res.exit_code == 2, args
        assert message in res.output, (args, res.output)
    res = runner.invoke(app, ["--db", str(db), "compare", "a", "b", "--pair-by", "x"])
    assert res.exit_code == 2


def test_names_people_type(db: Path) -> None:
    """Issue 21.5: any case, ``-``/``_``/space alike, a unique prefix or substring."""
    exact = _compare(db, "Gemini 3 Pro Preview (2025-11-18)", "Claude 4.5 Sonnet (20250929)")
    typed = _compare(db, "gemini-3-pro", "claude_4.5 SONNET")
    assert typed["rows"][0]["a"] == "Gemini 3 Pro Preview (2025-11-18)"
    assert typed["rows"][0]["b"] == "Claude 4.5 Sonnet (20250929)"
    assert typed["rows"][0]["diff"] == exact["rows"][0]["diff"] == pytest.approx(0.036)
    # a substring: "preview (2025-11-18)" names Gemini 3 Pro only
    sub = _compare(db, "preview (2025-11-18)", "claude 4.5 sonnet")
    assert sub["rows"][0]["a"] == "Gemini 3 Pro Preview (2025-11-18)"


def test_id_prefix_selector(db: Path) -> None:
    rows = json.loads(_ok(["--db", str(db), "summary", "--format", "json"]))["rows"]
    gem = next(r for r in rows if r["agent"] == "Gemini 3 Pro Preview (2025-11-18)")
    env = _compare(db, gem["agent_id"][:10], f"label:system={SONNET}")
    assert env["rows"][0]["a"] == "Gemini 3 Pro Preview (2025-11-18)"
    assert env["rows"][0]["diff"] == pytest.approx(0.036)


def test_compare_finds_a_mislabelled_duplicate_run(tmp_path: Path) -> None:
    """SWE-Bench Pro: Docent's 'Claude Opus 4.1 - paper' is claude-sonnet-4-paper's data.
    Each source ingested on its own keeps its labels (the folder merges them:
    tests/adapters/test_swebench_pro_merge.py)."""
    path = tmp_path / "pro.duckdb"
    pro = FIXTURES / "swebench-pro"
    _ok(["--db", str(path), "ingest", str(pro / "agent_runs_data.csv"),
         str(pro / "claude-sonnet-4-paper"), str(pro / "claude-opus-4-1-paper")])
    (row,) = _compare(path, "Claude Opus 4.1 - paper", "claude-sonnet-4-paper")["rows"]
    assert (row["shared_tasks"], row["tasks_only_a"], row["tasks_only_b"]) == (663, 0, 0)
    assert (row["discordant_a_only"], row["discordant_b_only"], row["p"]) == (0, 0, 1.0)
    (row,) = _compare(path, "Claude Opus 4.1 - paper", "claude-opus-4-1-paper")["rows"]
    assert row["discordant_a_only"] + row["discordant_b_only"] > 0
    assert row["tasks_only_b"] > 0  # claude-opus-4-1-paper covers 891 instances
