"""store/summary_scan.py: the summary's two scans give exactly what the per-query
functions (summary_totals, rewards_by_group, task_outcome_counts, cost_totals,
group_experiments) give, on the demo and real fixtures, for every grouping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evalatlas as ea
from evalatlas.stats.bounded import ratio_sums
from evalatlas.stats.standard_errors import cluster_sums
from evalatlas.store.catalog import cost_totals, group_experiments
from evalatlas.store.db import StoreConnection
from evalatlas.store.outcomes import task_outcome_counts
from evalatlas.store.queries import error_counts, rewards_by_group, summary_totals
from evalatlas.store.summary_scan import summary_scan

REPO = Path(__file__).resolve().parents[2]
GROUPINGS = [["agent"], ["_agent_in_benchmark"], ["benchmark"], ["model"], ["status"],
             ["task"], ["experiment"], ["agent", "model"]]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, fixtures: Path) -> list[StoreConnection]:
    """The demo and three real fixture folders (several agents, benchmarks, models)."""
    out = []
    for name, src in (("demo", REPO / "examples"),
                      ("verified", fixtures / "swebench-verified"),
                      ("terminal", fixtures / "terminal-bench"),
                      ("frameworks", fixtures / "frameworks")):
        store = ea.open(tmp_path_factory.mktemp(name) / "s.duckdb")
        store.ingest(src)
        out.append(store)
    yield out
    for store in out:
        store.close()


def _tasks(store: StoreConnection) -> list[Any]:
    """Task ids in the scan's numbering (task_id order)."""
    return [r["task_id"] for r in store.query(
        "SELECT DISTINCT task_id FROM episodes ORDER BY task_id")]


def _by_name(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Rows by display names, then keys (two agents both named "pydantic_ai" come in
    any order from summary_totals, which sorts by name only)."""
    return sorted(rows, key=lambda row: [str(row[f"{c}{i}"]) for c in "gk"
                                         for i in range(n)])


def _same_rows(old: list[dict[str, Any]], new: list[dict[str, Any]], what: object) -> None:
    """Equal rows; floats to 1e-12 relative (the scan sums per-unit partial sums: float
    sums in another order)."""
    assert [sorted(r) for r in old] == [sorted(r) for r in new], what
    for a, b in zip(old, new, strict=True):
        for col, v in a.items():
            if isinstance(v, float) and not isinstance(b[col], int | type(None)):
                assert b[col] == pytest.approx(v, rel=1e-12, abs=0), (what, col)
            else:
                assert (type(v), v) == (type(b[col]), b[col]), (what, col)


def _keyed(arrays: dict[str, Any], n_keys: int, tasks: list[Any]) -> dict[str, Any]:
    """The scan's arrays in the per-query functions' terms: group numbers as key
    columns (``k``, or ``k0``.. for several keys), task numbers as task ids."""
    out = {c: v for c, v in arrays.items() if c not in ("g", "group_keys")}
    keys = [k if isinstance(k, tuple) else (k,) for k in arrays["group_keys"]]
    names = ["k"] if n_keys == 1 and not isinstance(arrays["group_keys"][0], tuple) else [
        f"k{i}" for i in range(n_keys)]
    for i, name in enumerate(names):
        out[name] = np.asarray([keys[g][i] for g in arrays["g"]], dtype=object)
    out["task"] = np.asarray([tasks[t] for t in arrays["task"]], dtype=object)
    return out


def _sorted(old: dict[str, Any], new: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """Both sides' rows in one order (the scan returns its rows in no order)."""
    def order(arrays: dict[str, Any]) -> np.ndarray:
        cols = [c for c in ("k", "k0", "k1", "agent_k", "task") if c in arrays]
        return np.lexsort([np.asarray([str(v) for v in arrays[c]]) for c in reversed(cols)])
    return tuple({c: np.asarray(v)[order(a)] for c, v in a.items()} for a in (old, new))


def _group_of(old: dict[str, Any], new: dict[str, Any], g: int, col: str) -> np.ndarray:
    """Column ``col`` of the per-query arrays ``old`` at the rows of the scan's group
    number ``g`` (its key in ``new['group_keys']``)."""
    key = new["group_keys"][g]
    key = key if isinstance(key, tuple) else (key,)
    names = [f"k{i}" for i in range(len(key))]
    mine = np.ones(len(old[col]), dtype=bool)
    for name, k in zip(names, key, strict=True):
        mine &= np.asarray([v == k for v in old[name]], dtype=bool)
    return np.asarray(old[col], dtype=float)[mine]


def _same_arrays(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert set(old) == set(new)
    for col in old:
        a, b = np.asarray(old[col]), np.asarray(new[col])
        assert a.shape == b.shape, col
        if a.dtype.kind == "f":
            assert np.allclose(a, b, rtol=1e-12, atol=0), col
        else:
            assert list(a) == list(b), col


def _kinds_by_group(rows: list[dict[str, Any]], n: int) -> dict[tuple, list[tuple]]:
    """Error rows as group -> [(kind, episodes)] in row order (the order within a group
    is fixed: most first, then by kind; rows of two groups may tie)."""
    out: dict[tuple, list[tuple]] = {}
    for r in rows:
        out.setdefault(tuple(r[f"k{i}"] for i in range(n)), []).append((r["kind"], int(r["n"])))
    return out


def test_the_error_kinds_from_the_units_scan_equal_error_counts(
        stores: list[StoreConnection]) -> None:
    seen = 0
    for store in stores:
        for by in GROUPINGS:
            old = error_counts(store, by)
            new = summary_scan(store, by).errors
            assert _kinds_by_group(new, len(by)) == _kinds_by_group(old, len(by)), by
            assert [r["n"] for r in new] == sorted((r["n"] for r in new), reverse=True)
            seen += len(old)
    assert seen > 20  # the fixtures hold errors of several kinds


@pytest.mark.parametrize("outcome", ["any", "harness", "judge"])
def test_scan_equals_the_per_query_functions(stores: list[StoreConnection], outcome: str) -> None:
    forms = {True: 0, False: 0}
    for store in stores:
        tasks = _tasks(store)
        for by in GROUPINGS:
            scan = summary_scan(store, by, outcome=outcome)
            old = summary_totals(store, by, outcome=outcome)
            assert [r[f"g{i}"] for r in old for i in range(len(by))] == [
                r[f"g{i}"] for r in scan.totals for i in range(len(by))]
            _same_rows(_by_name(old, len(by)), _by_name(scan.totals, len(by)), (by, outcome))
            assert old, by
            rewards = rewards_by_group(store, by, outcome=outcome)
            new = dict(scan.rewards)
            group_lo, group_hi = new.pop("group_lo"), new.pop("group_hi")
            summed = "sums" in new  # each group one agent's: per-group sums, no cells
            forms[summed] += 1
            # the scan reads each group's reward range, not each task's: the least and
            # largest of the per-task ranges
            for i in range(len(new["group_keys"])):
                if (new["sums"]["clusters"][i] > 0 if summed
                        else (np.asarray(new["g"]) == i).any()):
                    assert (group_lo[i], group_hi[i]) == (
                        np.min(_group_of(rewards, new, i, "lo")),
                        np.max(_group_of(rewards, new, i, "hi"))), (by, i)
                else:  # no known reward in the group
                    assert np.isnan(group_lo[i]) and np.isnan(group_hi[i]), (by, i)
            old_rewards = {c: v for c, v in rewards.items() if c not in ("lo", "hi")}
            if summed:
                g = _numbers_of(old_rewards, new["group_keys"])
                _same_sums(cluster_sums(old_rewards["n"], old_rewards["s"], old_rewards["q"],
                                        groups=g, n_groups=len(new["group_keys"]))._asdict(),
                           new["sums"], (by, outcome))
            else:
                _same_arrays(*_sorted(old_rewards, _keyed(new, len(by), tasks)))
            assert scan.members == group_experiments(store, by)
            if len(by) == 1 and summed:
                counts, _ = task_outcome_counts(store, by[0], outcome=outcome)
                keys = scan.outcomes["group_keys"]
                g = _numbers_of(counts, keys)
                n, c = np.asarray(counts["n"]), np.asarray(counts["c"])
                assert (n > 0).all()
                # one agent per group: the table of distinct (group, attempts, successes)
                table, w = np.unique(np.stack([g, n, c]), axis=1, return_counts=True)
                assert [a.tolist() for a in scan.outcomes["table"]] == [
                    *table.tolist(), w.tolist()], by
                costs = cost_totals(store, by[0], outcome=outcome)
                g = _numbers_of(costs, scan.costs["group_keys"])
                n_groups = len(scan.costs["group_keys"])
                assert scan.costs["cells"].tolist() == np.bincount(
                    g, minlength=n_groups).tolist(), by
                for name, (a, b) in (("per_episode", ("cost", "n")),
                                     ("per_success", ("cost_o", "s"))):
                    _same_sums(ratio_sums(costs[a], costs[b], groups=g,
                                          n_groups=n_groups)._asdict(),
                               scan.costs[name], (by, outcome, name))
            elif len(by) == 1:
                counts, _ = task_outcome_counts(store, by[0], outcome=outcome)
                # agents come as numbers in agent-key order: one number per agent
                new = _keyed(scan.outcomes, 1, tasks)
                new["agent_k"] = np.asarray([f"{a:09d}" for a in new["agent_k"]], dtype=object)
                counts, new = _sorted(counts, new)
                pairs = sorted(set(zip(np.asarray(counts["agent_k"], dtype=str).tolist(),
                                       new["agent_k"].astype(int).tolist(), strict=True)))
                assert len({a for a, _ in pairs}) == len({n for _, n in pairs}) == len(pairs)
                assert [n for _, n in pairs] == sorted(n for _, n in pairs)
                agent_of = {n: a for a, n in pairs}
                new["agent_k"] = np.asarray([agent_of[int(a)] for a in new["agent_k"]],
                                            dtype=object)
                _same_arrays(counts, new)
                _same_arrays(*_sorted(cost_totals(store, by[0], outcome=outcome),
                                      _keyed(scan.costs, 1, tasks)))
    # both forms are checked: groups of one agent (sums) and of several (cells)
    assert forms[True] and forms[False], forms


def _numbers_of(arrays: dict[str, Any], group_keys: list[Any]) -> np.ndarray:
    """The scan's group number of each row of per-query arrays (key columns ``k`` or
    ``k0``..)."""
    number = {k if isinstance(k, tuple) else (k,): i for i, k in enumerate(group_keys)}
    names = ["k"] if "k" in arrays else sorted(c for c in arrays if c[:1] == "k"
                                               and c[1:].isdigit())
    rows = zip(*(arrays[c] for c in names), strict=True)
    return np.asarray([number[tuple(r)] for r in rows], dtype=np.int64)


def _same_sums(old: dict[str, Any], new: dict[str, Any], what: object) -> None:
    """Per-group sums equal: counts exactly, sums to 1e-12 relative (another order);
    the squared deviations to 1e-9 of the group's sum of squares (computed from means
    that are themselves sums in another order)."""
    assert set(old) == set(new), what
    for name in old:
        a, b = np.asarray(old[name], dtype=float), np.asarray(new[name], dtype=float)
        assert a.shape == b.shape, (what, name)
        if name == "spread":
            scale = np.asarray(old.get("squares", np.zeros_like(a)), dtype=float)
            assert (np.isnan(a) == np.isnan(b)).all(), (what, name)  # NaN: no ratio
            known = ~np.isnan(a)
            assert np.all(np.abs(a[known] - b[known]) <= 1e-9 * np.maximum(
                1.0, np.abs(scale[known]) + np.abs(a[known]))), (what, name)
        else:
            assert np.allclose(a, b, rtol=1e-12, atol=0), (what, name, a, b)


def test_an_experiment_selection_keeps_only_its_episodes(stores: list[StoreConnection]) -> None:
    store = stores[1]
    ids = [r["experiment_id"] for r in store.query(
        "SELECT experiment_id FROM experiments ORDER BY experiment_id LIMIT 2")]
    scan = summary_scan(store, ["agent"], experiment=ids)
    assert [r["k0"] for r in scan.totals] == [r["k0"] for r in summary_totals(
        store, ["agent"], experiment=ids)]
    assert sum(r["episodes"] for r in scan.totals) == store.query(
        "SELECT count(*) AS n FROM episodes WHERE experiment_id IN (?, ?)", ids)[0]["n"]
    assert _kinds_by_group(scan.errors, 1) == _kinds_by_group(
        error_counts(store, ["agent"], experiment=ids), 1)
    empty = summary_scan(store, ["agent"], experiment=[])
    assert empty.totals == [] and empty.errors == []


def test_no_temporary_table_is_left_behind(stores: list[StoreConnection]) -> None:
    store = stores[0]
    summary_scan(store, ["agent"])
    assert not store.query("SELECT table_name FROM duckdb_tables() WHERE temporary")


def test_the_judges_parts_over_the_episodes_with_judge_usage_equal_the_one_pass_totals(
        tmp_path: Path) -> None:
    """The scan sums the judge's usage over the episodes that have some (a filtered
    second scan; the four aggregates over NULLs were a quarter of the totals' time at
    100M episodes): the same totals as summary_totals's one pass, for every grouping and
    a selection, with judge usage that is an object with or without cost, prompt +
    completion tokens only, not an object, or absent."""
    store = ea.open(tmp_path / "judged.duckdb")
    store.ingest(REPO / "examples")
    ids = [r["trajectory_id"] for r in store.query(
        "SELECT DISTINCT trajectory_id FROM episodes ORDER BY trajectory_id")]
    usages = ['{"total_tokens": 120, "total_cost_usd": 0.25}', '{"prompt_tokens": 7, '
              '"completion_tokens": 5}', '[1, 2]', '3', '{"total_cost_usd": 1.5}', None]
    for i, tid in enumerate(ids[: len(ids) // 2]):
        store.con.execute("UPDATE episodes SET judge_usage = ? WHERE trajectory_id = ?",
                          [usages[i % len(usages)], tid])
    some = [r["experiment_id"] for r in store.query(
        "SELECT experiment_id FROM experiments ORDER BY experiment_id LIMIT 2")]
    for by in GROUPINGS:
        for selection in (None, some):
            old = summary_totals(store, by, experiment=selection)
            new = summary_scan(store, by, experiment=selection).totals
            _same_rows(_by_name(old, len(by)), _by_name(new, len(by)), (by, selection))
            assert any(r["judge_usage_episodes"] for r in new), by
            assert any(r["judge_cost_unknown_episodes"] for r in new), by
    store.close()


def test_shape_leaves_out_only_cells_without_a_known_value() -> None:
    """_shape's helpers: a NULL count is 0 in the fetched buffer, and a column without
    the rows to drop equals the boolean-mask copy (few rows: slices; many: a mask),
    or is the array itself when nothing is dropped (10M cells at 100M: no copy)."""
    from evalatlas.store.summary_scan import _dropping, _plain

    counts = np.ma.masked_array(np.array([3, 7, 2], dtype=np.int32), mask=[False, True, False])
    plain = _plain(counts)
    assert plain.tolist() == [3, 0, 2] and not isinstance(plain, np.ma.MaskedArray)
    rng = np.random.default_rng(5)
    values = rng.random(50_000)
    for n_drop in (0, 1, 40, 20_000):
        drop = np.sort(rng.choice(values.size, n_drop, replace=False))
        keep = np.ones(values.size, dtype=bool)
        keep[drop] = False
        got = _dropping(drop)(values)
        assert np.array_equal(got, values[keep]), n_drop
        assert (got is values) == (n_drop == 0)
    last = _dropping(np.array([values.size - 1]))(values)
    assert np.array_equal(last, values[:-1])


def test_cells_of_groups_of_several_agents_come_in_one_order(
        stores: list[StoreConnection]) -> None:
    """The statistics sum the cells in the order they are fetched, and DuckDB's grouping
    sets come in an order that varies between runs: two summaries ``--by benchmark`` of
    one store differed in the last digits of an interval. The cells come sorted (level,
    group, agent, task), so the sums, and the JSON, are the same every run."""
    seen = 0
    for store in stores:
        scan = summary_scan(store, ["benchmark"])
        if "table" in scan.outcomes:
            continue  # every benchmark one agent's: the sums never leave the store
        g, a, t = (np.asarray(scan.outcomes[c], dtype=np.int64) for c in ("g", "agent_k", "task"))
        order = np.lexsort((t, a, g))
        assert (order == np.arange(g.size)).all()
        seen += 1
    assert seen  # the demo's benchmark holds three agents
