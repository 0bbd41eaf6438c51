"""SWE-Bench Pro folder: the Docent CSV and the run directories describe the same runs
under different labels; ingesting the folder gives one experiment per real run."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from evalatlas.adapters.registry import detect
from evalatlas.adapters.swebench_pro import SAME_RUN_MIN_INSTANCES, read_pro_folder
from evalatlas.api import summary
from evalatlas.records.models import EpisodeRecord, ExperimentRecord
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
PRO = FIXTURES / "swebench-pro"
HEADER = ("agent_run_id,metadata.instance_id,metadata.model_name,metadata.resolved,"
          "metadata.turns,tag,created_at\n")

# PROVENANCE.md cross-checks: CSV label -> run directory holding identical outcomes
SAME_RUN = {
    "GPT-5 - 10132025": "gpt-5-250-turns-10132025",
    "Claude 4.5 Sonnet - 10132025": "claude-45sonnet-10132025",
    "Claude 4 Sonnet - 10132025": "claude-4sonnet-10132025",
    "GPT-4o - paper": "gpt-4o-paper",
    "GPT OSS - paper": "gptoss-paper",
    "Kimi - paper": "kimi-k2-instruct-10132025",
    "Claude Opus 4.1 - paper": "claude-sonnet-4-paper",
}


def _raw_runs() -> dict[tuple[str, str], dict[str, bool]]:
    """Every run of both sources straight from the files: (source, label) -> outcomes."""
    runs: dict[tuple[str, str], dict[str, bool]] = {}
    with (PRO / "agent_runs_data.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            runs.setdefault(("csv", row["metadata.model_name"]), {})[
                row["metadata.instance_id"]] = row["metadata.resolved"] == "true"
    for f in sorted(PRO.glob("*/eval_results.json")):
        runs[("dir", f.parent.name)] = json.loads(f.read_text())
    return runs


@pytest.fixture(scope="module")
def pro_store(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("pro") / "s.duckdb"
    with StoreConnection(path) as store:
        report = ingest_paths(store, [PRO])
        assert report.rejected == 0 and report.sources == 1
        yield store


def _experiments(store: StoreConnection) -> dict[str, dict]:
    rows = store.query("SELECT experiment_id, experiment_name, llm_model, labels, extra "
                       "FROM experiments")
    return {r["experiment_name"]: {**r, "labels": json.loads(r["labels"]),
                                   "extra": json.loads(r["extra"])} for r in rows}


def test_one_experiment_per_distinct_run(pro_store: StoreConnection) -> None:
    raw = _raw_runs()
    distinct = {frozenset(v.items()) for v in raw.values()}
    assert (len(raw), len(distinct)) == (23, 16)
    exps = _experiments(pro_store)
    assert len(exps) == len(distinct)
    (n_eps,) = pro_store.con.execute("SELECT count(*) FROM episodes").fetchone()
    assert n_eps == sum(len(dict(d)) for d in distinct) == 11_575
    # the folder is claimed by the merging adapter; the CSV or a run directory alone is not
    assert detect(PRO).name == "swebench-pro"
    assert detect(PRO / "agent_runs_data.csv").name == "swebench-pro-docent"
    assert detect(PRO / "gpt-4o-paper").name == "swebench"


def test_no_unknown_model(pro_store: StoreConnection) -> None:
    exps = _experiments(pro_store)
    assert all(e["llm_model"] for e in exps.values()), exps
    rows = summary(pro_store, "model").rows
    assert "(unknown)" not in {r["model"] for r in rows} and None not in {
        r["model"] for r in rows}
    assert sum(r["experiments"] for r in rows) == 16


def test_both_original_labels_are_kept(pro_store: StoreConnection) -> None:
    exps = _experiments(pro_store)
    merged = {e["extra"]["source_labels"]["agent_runs_data.csv"]:
              e["extra"]["source_labels"]["eval_results.json"]
              for e in exps.values() if "source_labels" in e["extra"]}
    assert merged == SAME_RUN
    for e in exps.values():
        labels = e["extra"].get("source_labels")
        if labels:
            assert e["labels"]["run_dir"] == labels["eval_results.json"]
            assert e["labels"]["docent_run"] == labels["agent_runs_data.csv"]
            assert e["experiment_name"] in labels.values()
            assert e["extra"]["same_run"]["rule"] == "identical instance ids and resolved flags"
    # runs only one source has keep their one label
    assert exps["GLM-4.5 -- 10222025"]["labels"] == {"system": "GLM-4.5 -- 10222025",
                                                    "source": "docent"}
    assert "source_labels" not in exps["claude-opus-4-1-paper"]["extra"]


def test_label_disagreements_are_decided_by_the_data_and_shown(pro_store: StoreConnection) -> None:
    exps = _experiments(pro_store)
    # same run, two models named: the outcomes correlate with the other Opus 4.1 run
    opus = exps["Claude Opus 4.1 - paper"]
    assert opus["llm_model"] == "claude-opus-4-1"
    assert opus["extra"]["source_models"] == {"eval_results.json": "claude-sonnet-4",
                                              "agent_runs_data.csv": "claude-opus-4-1"}
    (note,) = opus["extra"]["source_notes"]
    assert "support claude-opus-4-1" in note and "phi 0.90" in note and "phi 0.62" in note
    # same model, two run tags: turns capped at 51 like the 'paper' runs, not at 250
    kimi = exps["Kimi - paper"]
    assert kimi["llm_model"] == "kimi-k2"
    (note,) = kimi["extra"]["source_notes"]
    assert "reach at most 51" in note and "support 'paper'" in note
    # labels that agree need no note
    assert "source_notes" not in exps["gpt-5-250-turns-10132025"]["extra"]
    # the user sees both in summary's notes, only for the experiments selected
    notes = summary(pro_store).notes
    assert sum(n.startswith("Claude Opus 4.1 - paper: the sources name the same run")
               for n in notes) == 1
    assert sum(n.startswith("Kimi - paper: the sources give the same run") for n in notes) == 1
    assert not any("the sources" in n for n in summary(pro_store, experiment=[
        "gpt-4o-paper"]).notes)


def test_numbers_match_the_per_instance_data(pro_store: StoreConnection) -> None:
    raw = _raw_runs()
    by_name = {r["experiment"]: r for r in summary(pro_store, "experiment").rows}
    stored = {r["experiment_name"]: (r["n"], r["resolved"]) for r in pro_store.query(
        "SELECT x.experiment_name, count(*) AS n, CAST(sum(e.reward) AS INTEGER) AS resolved "
        "FROM episodes e JOIN experiments x USING (experiment_id) GROUP BY 1")}
    for name, exp in _experiments(pro_store).items():
        labels = exp["extra"].get("source_labels") or {}
        sources = ([("dir", labels["eval_results.json"]), ("csv", labels["agent_runs_data.csv"])]
                   if labels else [("csv", name)] if ("csv", name) in raw else [("dir", name)])
        for key in sources:
            want = raw[key]
            assert stored[name] == (len(want), sum(want.values())), (name, key)
            assert by_name[name]["success_rate"] == sum(want.values()) / len(want)
    # PROVENANCE.md: 319 of 730, 166 of 663
    assert stored["claude-45sonnet-10132025"] == (730, 319)
    assert stored["Claude Opus 4.1 - paper"] == (663, 166)
    # merged episodes carry the CSV's turns and run ids
    (row,) = pro_store.query(
        "SELECT count(*) AS n, count(n_agent_steps) AS turns, "
        "count(json_extract_string(e.extra, '$.agent_run_id')) AS ids FROM episodes e "
        "JOIN experiments x USING (experiment_id) WHERE x.experiment_name = 'gptoss-paper'")
    assert row == {"n": 728, "turns": 728, "ids": 728}


def _snapshot(store: StoreConnection) -> tuple:
    exps = store.query("SELECT experiment_id, experiment_name, llm_model, labels, extra "
                       "FROM experiments ORDER BY experiment_id")
    eps = store.query("SELECT experiment_id, trajectory_id, task_id, reward, n_agent_steps, "
                      "extra FROM episodes ORDER BY experiment_id, trajectory_id")
    return exps, eps


def test_reingest_is_idempotent(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [PRO])
        first = _snapshot(store)
        ingest_paths(store, [PRO])
        assert _snapshot(store) == first
        # a run directory ingested alone lands on its merged experiment, adds nothing
        ingest_paths(store, [PRO / "gpt-4o-paper"])
        exps, eps = _snapshot(store)
        assert (len(exps), len(eps)) == (16, 11_575)


def _folder(tmp_path: Path, dirs: dict[str, dict[str, bool]],
            csv_runs: dict[str, dict[str, bool]]) -> Path:
    root = tmp_path / "pro"
    for name, outcomes in dirs.items():
        (root / name).mkdir(parents=True)
        (root / name / "eval_results.json").write_text(json.dumps(outcomes))
    lines = [HEADER]
    for label, outcomes in csv_runs.items():
        for i, (iid, ok) in enumerate(outcomes.items()):
            lines.append(f"{label}-{i},{iid},{label},{str(ok).lower()},10,,x\n")
    (root / "runs.csv").write_text("".join(lines))
    return root


def _outcomes(n: int, seed: int, rate: float = 0.3) -> dict[str, bool]:
    rng = random.Random(seed)
    return {f"inst-{i}": rng.random() < rate for i in range(n)}


def _read(root: Path) -> dict[str, tuple[ExperimentRecord, int]]:
    out: dict[str, list] = {}
    current = None
    for item in read_pro_folder(root):
        if isinstance(item, ExperimentRecord):
            current = item.experiment_name
            out[current] = [item, 0]
        elif isinstance(item, EpisodeRecord):
            out[current][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def test_synthetic_merge_and_model_evidence(tmp_path: Path) -> None:
    run = _outcomes(300, 1)
    near = {k: (not v) if i % 40 == 0 else v for i, (k, v) in enumerate(run.items())}
    root = _folder(tmp_path, {"gpt-4o-paper": run, "gpt-5-rerun": near},
                   {"GPT-5 - paper": run, "GPT-4o - other": _outcomes(300, 2)})
    got = _read(root)
    assert sorted(got) == ["GPT-4o - other", "GPT-5 - paper", "gpt-5-rerun"]
    exp, n = got["GPT-5 - paper"]
    assert n == 300 and exp.agent.llm_model == "gpt-5"
    assert exp.extra["source_labels"] == {"eval_results.json": "gpt-4o-paper",
                                          "runs.csv": "GPT-5 - paper"}
    assert "support gpt-5" in exp.extra["source_notes"][0]


def test_synthetic_undecided_keeps_the_directory_model(tmp_path: Path) -> None:
    run = _outcomes(300, 3)
    root = _folder(tmp_path, {"gpt-4o-paper": run}, {"GPT-5 - paper": run})
    (exp, n), = _read(root).values()
    assert n == 300 and exp.agent.llm_model == "gpt-4o"
    assert exp.experiment_name == "gpt-4o-paper"
    assert "cannot decide" in exp.extra["source_notes"][0]


def test_synthetic_too_few_instances_are_kept_apart(tmp_path: Path) -> None:
    run = _outcomes(SAME_RUN_MIN_INSTANCES - 1, 4)
    root = _folder(tmp_path, {"gpt-4o-paper": run}, {"GPT-4o - paper": run})
    got = _read(root)
    assert sorted(got) == ["GPT-4o - paper", "gpt-4o-paper"]
    for exp, _ in got.values():
        assert "kept as separate experiments" in exp.extra["source_notes"][0]


def test_folder_with_other_inputs_is_read_source_by_source(tmp_path: Path) -> None:
    run = _outcomes(300, 5)
    root = _folder(tmp_path, {"gpt-4o-paper": run}, {"GPT-4o - paper": run})
    assert detect(root).name == "swebench-pro"
    (root / "other.jsonl").write_text("")
    assert detect(root) is None


def test_runs_with_more_instances_than_the_public_set_are_flagged(
        pro_store: StoreConnection) -> None:
    """claude-opus-4-1-paper (891) and gemini-2-5-pro-preview-paper (955) hold 228 and 236
    ids outside the 730 public instances the CSV covers (PROVENANCE): more tasks than the
    names table's 731, so summary says so instead of showing full coverage."""
    result = summary(pro_store, "experiment")
    rows = {r["experiment"]: r for r in result.rows}
    assert rows["claude-opus-4-1-paper"]["tasks_beyond_benchmark"] == 891 - 731
    assert rows["gemini-2-5-pro-preview-paper"]["tasks_beyond_benchmark"] == 955 - 731
    assert rows["gptoss-paper"]["tasks_beyond_benchmark"] is None
    assert any(n.startswith("claude-opus-4-1-paper: 891 tasks, 160 more than the benchmark "
                            "has (731)") for n in result.notes)
