"""Values written into statements as literals: the same as bound parameters, and an
episodes-only JSONL ingest that binds none (so DuckDB's client does not import pandas)."""

from __future__ import annotations

import datetime as _dt
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from evalatlas.store import literals

VALUES: list[literals.Value] = [
    "plain", "it's", "o''clock", "", "naïve ☃ 𝄞", "a\nb\tc", "?", "\\x", "x" * 10_000,
    0, -1, 2**62, -(2**63), None, ["a", "b's", ""], [],
    0.1, 0.30000000000000004, 1e-300, 5e-324, 1.7976931348623157e308, -0.0, 2.5e-06,
    float("inf"), float("-inf"), float("nan"), True, False,
    _dt.datetime(2026, 11, 27, 23, 30, 1, 123456), _dt.datetime(1, 1, 1), _dt.date(2026, 2, 28),
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_literal_is_what_the_parameter_was(value: literals.Value) -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (s VARCHAR, i BIGINT, d DOUBLE, l VARCHAR[], b BOOLEAN, "
                "ts TIMESTAMP, day DATE)")
    column, typ = (("l", "VARCHAR[]") if isinstance(value, list)
                   else ("d", "DOUBLE") if isinstance(value, float)
                   else ("b", "BOOLEAN") if isinstance(value, bool)
                   else ("i", "BIGINT") if isinstance(value, int)
                   else ("ts", "TIMESTAMP") if isinstance(value, _dt.datetime)
                   else ("day", "DATE") if isinstance(value, _dt.date) else ("s", "VARCHAR"))
    bound = con.execute(f"SELECT ?::{typ}", [value]).fetchall()
    literals.execute(con, f"INSERT INTO t ({column}) VALUES (?)", [value])
    got = con.execute(f"SELECT {column} FROM t").fetchall()
    assert repr(got) == repr(bound)  # repr: -0.0 and nan compared too
    same = f"SELECT count(*) FROM t WHERE {column} IS NOT DISTINCT FROM ?"
    assert literals.execute(con, same, [value]).fetchall() == [(1,)]


@pytest.mark.parametrize("value", ["a\0b", "a\udcffb",
                                   _dt.datetime(2026, 1, 2, 3, 4, tzinfo=_dt.UTC)],
                         ids=["nul", "surrogate", "aware datetime"])
def test_what_a_literal_cannot_carry_is_bound(value: object) -> None:
    """The same outcome as before: a NUL is stored, a lone surrogate refused, an aware
    datetime converted by the binding."""
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t (s {'VARCHAR' if isinstance(value, str) else 'TIMESTAMPTZ'})")
    try:
        con.execute("INSERT INTO t VALUES (?)", [value])
    except Exception as exc:
        with pytest.raises(type(exc)):
            literals.execute(con, "INSERT INTO t VALUES (?)", [value])
    else:
        literals.execute(con, "INSERT INTO t VALUES (?)", [value])
        assert con.execute("SELECT s FROM t").fetchall() == [(value,), (value,)]


def test_placeholders_must_match() -> None:
    with pytest.raises(ValueError, match="2 placeholders for 1 values"):
        literals.execute(duckdb.connect(), "SELECT ?, ?", [1])


def test_an_episodes_only_ingest_binds_no_parameter(tmp_path: Path) -> None:
    """Binding any value makes duckdb's client import pandas (~0.3 s of CPU, ~100 MB):
    an ingest of episodes by the fast path (costs completed from prices; an experiment
    record among them, which the exact path writes), into a new store and again into
    it, does without (any attempt to import it is noted, and refused). (A chunk the
    fast path declines still does: ``Committer.earlier_lines`` builds an Arrow table.)"""
    line = ('{"experiment_id": "e", "trajectory_id": "t%d", "task_id": "k", '
            '"usage": {"prompt_tokens": 10, "completion_tokens": 2, "model": "gpt-4o"}, '
            '"success": true, "reward": 1.0, "extra": {"h": "x"}}\n')
    src = tmp_path / "e.jsonl"
    experiment = ('{"experiment_id": "e", "experiment_name": "a", "benchmark_name": "b", '
                  '"benchmark_subset": {"name": "b", "n_tasks": 2}, '
                  '"agent": {"name": "a", "llm_model": "gpt-4o", "config": {"n": 1.5}}}\n')
    src.write_text("".join(line % i for i in range(150)) + experiment
                   + "".join(line % i for i in range(150, 300)))
    script = textwrap.dedent(f"""
        import sys
        tried = []
        class Refuse:
            def find_spec(self, name, path=None, target=None):
                if name == "pandas" or name.startswith("pandas."):
                    tried.append(name)
                    raise ImportError("refused: " + name)
        sys.meta_path.insert(0, Refuse())
        from pathlib import Path
        from evalatlas.store.db import StoreConnection
        from evalatlas.store.ingest import ingest_paths
        for _ in range(2):
            with StoreConnection({str(tmp_path / "s.duckdb")!r}) as store:
                rep = ingest_paths(store, [Path({str(src)!r})], fast_min_bytes=0,
                                   force=True)
                assert (rep.episodes, rep.experiments, rep.rejected,
                        rep.fast_path_chunks) == (300, 1, 0, 1), rep
        print(tried)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
