"""``evalatlas gate`` / ``gate plan``: every format (junit parsed as XML, github lines
matched), the exit codes, ``--baseline-db``, and the real SWE-bench Verified fixture."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from scipy import stats
from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app
from evalatlas.errors import ArgumentError

runner = CliRunner()
GEMINI = "20251118_mini-v1.15.0_gemini-3-pro-preview-20251118"
SONNET = "20250929_mini-v1.13.3_sonnet-4-5-20250929"


def _write(path: Path, agent: str, bench: str, outcomes: dict[str, list[int]],
           start: float = 1000.0) -> Path:
    """A JSONL file of one experiment: ``outcomes`` maps task -> its attempts' 0/1."""
    exp = f"exp-{agent}-{bench}"
    lines = [{"experiment_id": exp, "experiment_name": f"{agent}-{bench}",
              "agent": {"name": agent, "config_type": "T", "config": {"name": agent}},
              "benchmark_name": bench,
              "benchmark_subset": {"name": bench, "n_tasks": len(outcomes)}}]
    t = start
    for n, (task, outs) in enumerate(outcomes.items()):
        for i, o in enumerate(outs):
            t += 1
            lines.append({"experiment_id": exp, "trajectory_id": f"{agent}-{n}-{i}",
                          "task_id": task, "attempt": i, "success": bool(o),
                          "reward": float(o), "timestamp": t})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _invoke(db: Path, *args: str) -> tuple[int, str, str]:
    res = runner.invoke(app, ["--db", str(db), *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base and cand on two benchmarks: a clear regression on `web` (30 -> 10 of 30
    single attempts), no change on `code` (3 attempts), one hard-regressed task on code
    and a flaky one; `same` equals base (a passing candidate)."""
    d = tmp_path_factory.mktemp("gate")
    web_base = {f"w{i:02d}": [1] for i in range(30)}
    web_cand = {f"w{i:02d}": [1 if i >= 20 else 0] for i in range(30)}
    code_base = {f"c{i:02d}": [1, 1, 1] if i % 2 else [0, 0, 0] for i in range(40)}
    code_base["c00"] = [1, 0, 1]
    code_cand = dict(code_base)
    code_cand["c01"] = [0, 0, 0]
    code_cand["c02"] = [1, 1, 1]
    files = [_write(d / "a.jsonl", "base", "web", web_base),
             _write(d / "b.jsonl", "base", "code", code_base),
             _write(d / "c.jsonl", "cand", "web", web_cand),
             _write(d / "e.jsonl", "cand", "code", code_cand),
             _write(d / "f.jsonl", "same", "web", web_base),
             _write(d / "g.jsonl", "same", "code", code_base)]
    path = d / "s.duckdb"
    res = runner.invoke(app, ["--db", str(path), "ingest", *map(str, files)])
    assert res.exit_code == 0, res.output
    return path


def test_json_envelope_and_exit_code_regression(db: Path) -> None:
    code, out, err = _invoke(db, "gate", "--baseline", "base", "--candidate", "cand",
                             "--format", "json")
    assert code == 1 and "regression" in err
    env = json.loads(out)
    assert env["schema"] == "evalatlas.gate/1" and env["verdict"] == "regression"
    rows = {r["group"]: r for r in env["rows"]}
    required = {"group", "baseline", "candidate", "shared_tasks", "baseline_rate",
                "candidate_rate", "diff", "diff_ci_low", "diff_ci_high", "p_value", "p_holm",
                "test", "max_drop", "mde", "verdict", "flaky_tasks", "regressed_tasks"}
    assert all(required <= set(r) for r in env["rows"])
    web, code_row = rows["web"], rows["code"]
    assert web["test"] == "McNemar exact (one-sided)" and web["verdict"] == "regression"
    assert web["p_value"] == pytest.approx(
        stats.binomtest(20, 20, 0.5, alternative="greater").pvalue)
    assert web["diff"] == pytest.approx(-20 / 30) and web["shared_tasks"] == 30
    assert code_row["test"] == "sign-flip permutation (one-sided)"
    assert code_row["regressed_tasks"] == ["c01"]
    assert code_row["flaky_tasks"] == [{"task_id": "c00", "successes": 2, "attempts": 3}]
    assert code_row["verdict"] == "pass"
    assert sorted([web["p_holm"], code_row["p_holm"]]) == pytest.approx(
        sorted(ea.gate(ea.open(db, read_only=True), "base", "cand").rows[i]["p_holm"]
               for i in range(2)))


def test_api_matches_cli(db: Path) -> None:
    with ea.open(db, read_only=True) as store:
        result = ea.gate(store, "base", "cand")
    assert isinstance(result, ea.GateResult) and result.verdict == "regression"
    _, out, _ = _invoke(db, "gate", "--baseline", "base", "--candidate", "cand", "-f", "json")
    assert json.loads(out) == json.loads(json.dumps(result.to_dict()))
    # argument errors name the argument in API words, before any store is read
    with pytest.raises(ArgumentError, match="metric must be one of success, reward"):
        ea.gate(db, "base", "cand", metric="pass")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="drop must be a fraction"):
        ea.gate_plan(db, "base", drop=3)


def test_pass_exit_zero_and_table_fits_80_columns(db: Path) -> None:
    res = runner.invoke(app, ["--db", str(db), "gate", "--baseline", "base", "--candidate",
                              "same"], env={"COLUMNS": "80"}, terminal_width=80)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(len(x) for x in lines) <= 80
    text = " ".join(res.stdout.split())  # sentences wrap at 80 columns
    assert "verdict: pass" in text
    assert re.search(r"pass: candidate scores the same as the baseline on web \(p = 1\.000, "
                     r"Holm\); this suite detects drops of \d+\.\d points", text)


def test_table_sentence_regression(db: Path) -> None:
    res = runner.invoke(app, ["--db", str(db), "gate", "--baseline", "base", "--candidate",
                              "cand"], terminal_width=80)
    assert res.exit_code == 1
    text = " ".join(res.stdout.split())
    assert re.search(r"REGRESSION: candidate is 66\.7 points worse on web \(p = \S+, Holm\); "
                     r"this suite detects drops of \d+\.\d points", text)
    assert "hard regressions on code" in text and "c01" in text
    assert "flaky on code" in text and "c00 (2/3)" in text


def test_junit_is_valid_xml_with_a_failure_per_regressed_group(db: Path) -> None:
    code, out, _ = _invoke(db, "gate", "--baseline", "base", "--candidate", "cand",
                           "--format", "junit")
    assert code == 1
    root = ET.fromstring(out.encode())
    assert root.tag == "testsuites" and root.get("failures") == "1"
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"web", "code"}
    failure = cases["web"].find("failure")
    assert failure is not None and failure.get("type") == "regression"
    assert "66.7 points worse on web" in failure.get("message", "")
    assert cases["code"].find("failure") is None
    assert "c01" in cases["code"].findtext("system-out", "")


def test_github_workflow_commands(db: Path) -> None:
    code, out, _ = _invoke(db, "gate", "--baseline", "base", "--candidate", "cand",
                           "--format", "github")
    assert code == 1
    lines = out.splitlines()
    assert any(re.fullmatch(r"::error title=evalatlas gate regression%3A web::REGRESSION: "
                            r"candidate is 66\.7 points worse on web .*", x) for x in lines)
    assert any(re.fullmatch(r"::notice title=evalatlas gate pass%3A code::pass: .*", x)
               for x in lines)
    assert any(x.startswith("::warning title=hard regressions%3A code::") and "c01" in x
               for x in lines)
    assert any(x.startswith("::notice title=flaky tasks%3A code::") and "c00 (2/3)" in x
               for x in lines)
    assert all(x.startswith("::") for x in lines)


def test_markdown_comment(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "comment.md"
    code, _, _ = _invoke(db, "gate", "--baseline", "base", "--candidate", "cand",
                         "--format", "markdown", "--output", str(target))
    assert code == 1
    md = target.read_text(encoding="utf-8")
    assert md.startswith("### evalatlas gate: REGRESSION")
    assert "| web | 30 |" in md and "**Hard regressions on code**" in md
    assert "<details><summary>1 flaky task(s) on code" in md


def test_inconclusive_and_fail_inconclusive(tmp_path: Path) -> None:
    base = {f"t{i}": [1, 1, 0] for i in range(10)}
    cand = {**{f"t{i}": [1, 0, 0] for i in range(3)}, **{f"t{i}": [1, 1, 0]
                                                         for i in range(3, 10)}}
    files = [_write(tmp_path / "a.jsonl", "b", "x", base),
             _write(tmp_path / "b.jsonl", "c", "x", cand)]
    db = tmp_path / "s.duckdb"
    assert runner.invoke(app, ["--db", str(db), "ingest", *map(str, files)]).exit_code == 0
    code, out, _ = _invoke(db, "gate", "--baseline", "b", "--candidate", "c", "-f", "json")
    assert code == 0 and json.loads(out)["verdict"] == "inconclusive"
    code, _, _ = _invoke(db, "gate", "--baseline", "b", "--candidate", "c",
                         "--fail-inconclusive")
    assert code == 3
    code, out, _ = _invoke(db, "gate", "--baseline", "b", "--candidate", "c",
                           "--max-drop", "0.15", "-f", "json")
    assert code == 0 and json.loads(out)["verdict"] == "pass"
    code, out, _ = _invoke(db, "gate", "--baseline", "b", "--candidate", "c",
                           "--sequential", "--exclude-flaky", "-f", "json")
    env = json.loads(out)  # every task is flaky: nothing is left to test
    (row,) = env["rows"]
    assert row["tested_tasks"] == 0 and row["excluded_flaky"] == 10 and row["test"] is None
    assert row["verdict"] == "inconclusive" and code == 0
    code, out, _ = _invoke(db, "gate", "--baseline", "b", "--candidate", "c",
                           "--sequential", "-f", "json")
    (row,) = json.loads(out)["rows"]
    assert row["test"] == "betting e-process (anytime-valid)" and row["e_value"] >= 1
    assert row["verdict"] == "inconclusive"  # a drop, not significant, sequential


def test_usage_and_data_errors_exit_two(db: Path, tmp_path: Path) -> None:
    code, _, err = _invoke(db, "gate", "--baseline", "nobody", "--candidate", "cand")
    assert code == 2 and "nobody" in err and "Traceback" not in err
    code, _, err = _invoke(db, "gate", "--candidate", "cand")
    assert code == 2 and "--baseline" in err
    code, _, err = _invoke(db, "gate", "--baseline", "base", "--candidate", "cand",
                           "--max-drop", "3")
    assert code == 2 and "max_drop" in err
    code, _, err = _invoke(db, "gate", "--baseline", "base", "--candidate", "cand",
                           "--baseline-db", str(tmp_path / "missing.duckdb"))
    assert code == 2 and "no such file" in err
    other = tmp_path / "o.duckdb"
    f = _write(tmp_path / "o.jsonl", "lonely", "elsewhere", {"z1": [1], "z2": [0]})
    assert runner.invoke(app, ["--db", str(other), "ingest", str(f)]).exit_code == 0
    code, _, err = _invoke(db, "gate", "--baseline", "lonely", "--candidate", "cand",
                           "--baseline-db", str(other))
    assert code == 2 and "share no task" in err


def test_baseline_db_reads_the_baseline_from_another_store(db: Path, tmp_path: Path) -> None:
    main = tmp_path / "main.duckdb"
    web_base = {f"w{i:02d}": [1] for i in range(30)}
    f = _write(tmp_path / "m.jsonl", "base", "web", web_base)
    assert runner.invoke(app, ["--db", str(main), "ingest", str(f)]).exit_code == 0
    code, out, _ = _invoke(db, "gate", "--baseline", "base", "--candidate", "cand",
                           "--baseline-db", str(main), "-f", "json")
    env = json.loads(out)
    assert code == 1 and [r["group"] for r in env["rows"]] == ["web"]
    assert env["groups_not_compared"] == ["code"]
    assert main.exists()  # opened read-only, left as it was


def test_baseline_db_naming_the_db_itself_is_the_gate_without_it(db: Path) -> None:
    """``--baseline-db X --db X`` (any spelling of X) reads both sides from the one store:
    the same verdict, exit code and JSON as without ``--baseline-db``. It once failed with
    "damaged (Scalar Function evalatlas_model already exists)": a second read-only
    connection to a file the process has open shares the first one's catalog."""
    args = ["gate", "--baseline", "base", "--candidate", "cand", "-f", "json"]
    code, out, err = _invoke(db, *args)
    assert code == 1 and json.loads(out)["verdict"] == "regression"
    spelled = db.parent / ".." / db.parent.name / db.name
    for other in (db, spelled):
        again = _invoke(db, *args, "--baseline-db", str(other))
        assert again == (code, out, err)
        assert "damaged" not in again[2]


def test_plan_json_and_table(db: Path) -> None:
    code, out, _ = _invoke(db, "gate", "plan", "--baseline", "base", "--drop", "0.05",
                           "--format", "json")
    assert code == 0
    env = json.loads(out)
    assert env["schema"] == "evalatlas.gate_plan/1"
    assert {"tasks_needed", "attempts_per_task", "drop", "power", "alpha"} <= set(env)
    assert env["drop"] == 0.05 and env["power"] == 0.8 and env["alpha"] == 0.05
    by_k = {r["attempts_per_task"]: r["tasks_needed"] for r in env["rows"]}
    assert by_k[1] > by_k[3] > by_k[10] > 0
    with ea.open(db, read_only=True) as store:
        assert ea.gate_plan(store, "base", drop=0.05).meta["tasks_needed"] == \
            env["tasks_needed"]
    code, out, _ = _invoke(db, "gate", "plan", "--baseline", "base")
    assert code == 0 and "tasks x" in " ".join(out.split())


def test_real_swebench_verified_fixture(fixtures: Path, tmp_path: Path) -> None:
    """Gemini 3 Pro (74.2%) as baseline, Claude 4.5 Sonnet (70.6%) as candidate on the 500
    shared instances: the one-sided McNemar p from the instances' own outcomes."""
    db = tmp_path / "v.duckdb"
    verified = fixtures / "swebench-verified"
    assert runner.invoke(app, ["--db", str(db), "ingest", str(verified / GEMINI),
                               str(verified / SONNET)]).exit_code == 0
    a = json.loads((verified / GEMINI / "per_instance_details.json").read_text())
    b = json.loads((verified / SONNET / "per_instance_details.json").read_text())
    base_only = sum(a[k]["resolved"] and not b[k]["resolved"] for k in a)
    cand_only = sum(b[k]["resolved"] and not a[k]["resolved"] for k in a)
    code, out, _ = _invoke(db, "gate", "--baseline", "Gemini 3 Pro Preview (2025-11-18)",
                           "--candidate", "Claude 4.5 Sonnet (20250929)", "-f", "json")
    (row,) = json.loads(out)["rows"]
    assert row["shared_tasks"] == 500 and row["diff"] == pytest.approx(-0.036)
    assert row["test"] == "McNemar exact (one-sided)"
    assert (row["discordant_baseline_only"], row["discordant_candidate_only"]) == (
        base_only, cand_only)
    p = stats.binomtest(base_only, base_only + cand_only, 0.5, alternative="greater").pvalue
    assert row["p_value"] == pytest.approx(p, rel=1e-12)
    assert code == (1 if p < 0.05 else 0)
    assert 0 < row["mde"] < 0.2 and row["diff_ci_low"] < -0.036 < row["diff_ci_high"]


def test_hostile_task_ids_cannot_inject(tmp_path: Path) -> None:
    """A task id carrying a terminal escape, a newline with a workflow command and XML
    markup: shown as text in every format, never obeyed."""
    evil = "t\x1b]0;pwned\x07\n::error::fake <x/>&"
    files = [_write(tmp_path / "a.jsonl", "b", "x", {evil: [1], "ok": [1]}),
             _write(tmp_path / "b.jsonl", "c", "x", {evil: [0], "ok": [1]})]
    db = tmp_path / "s.duckdb"
    assert runner.invoke(app, ["--db", str(db), "ingest", *map(str, files)]).exit_code == 0
    _, gh, _ = _invoke(db, "gate", "--baseline", "b", "--candidate", "c", "-f", "github")
    assert "\x1b" not in gh and "\x07" not in gh
    assert not any(line.startswith("::error::fake") for line in gh.splitlines())
    assert all(line.startswith(("::notice", "::warning", "::error title=")) for line in
               gh.splitlines())
    _, xml, _ = _invoke(db, "gate", "--baseline", "b", "--candidate", "c", "-f", "junit")
    root = ET.fromstring(xml.encode())  # still well-formed
    assert "<x/>" in root.find(".//system-out").text  # markup kept as text
    _, md, _ = _invoke(db, "gate", "--baseline", "b", "--candidate", "c", "-f", "markdown")
    assert "\x1b" not in md and "<x/>" not in md
    res = runner.invoke(app, ["--db", str(db), "gate", "--baseline", "b", "--candidate",
                              "c"])
    assert "\x1b" not in res.stdout
