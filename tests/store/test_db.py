"""The store connection's SQL functions (``store/db.py``)."""

from __future__ import annotations

from pathlib import Path

import evalatlas as ea
from evalatlas.pricing.names import normalise_model_name
from evalatlas.store.db import MODEL_KEY_SQL, StoreConnection

# long spellings (> 12 bytes: DuckDB keeps such strings out of line, where duckdb 1.5.5's
# Arrow UDFs read them after they were freed, duckdb/duckdb#20606)
SPELLINGS = ["anthropic/claude-sonnet-4-20250514", "openai/neulab/claude-sonnet-4-20250514",
             "openai/gpt-5-2025-08-07", "google/gemini-2.5-pro-preview-06-05",
             "moonshotai/kimi-k2-instruct-0905", "openai/gpt-oss-120b", None]


def test_model_key_groups_every_spelling_once_with_intact_names():
    want: dict[str | None, int] = {}
    n = 28_000
    for i in range(n):
        name = SPELLINGS[i % len(SPELLINGS)]
        key = normalise_model_name(name) if name is not None else None
        want[key] = want.get(key, 0) + 1
    assert want["claude-sonnet-4-20250514"] == 2 * n // len(SPELLINGS)
    with StoreConnection(":memory:") as store:
        store.con.execute(
            "CREATE TEMP TABLE m AS SELECT list_extract(?, (i % ?)::INTEGER + 1) AS llm_model, "
            "i AS task FROM range(?) r(i)", [SPELLINGS, len(SPELLINGS), n])
        for _ in range(5):  # the freed-buffer failure showed in 9 of 10 runs
            rows = store.query(f"SELECT {MODEL_KEY_SQL}(llm_model) AS k, task, count(*) AS c "
                               "FROM m GROUP BY k, task ORDER BY k, task")
            got: dict[str | None, int] = {}
            for r in rows:
                got[r["k"]] = got.get(r["k"], 0) + r["c"]
            assert got == want


def test_summary_by_model_keys_are_intact_run_after_run(fixtures: Path, tmp_path: Path):
    """The real case: SWE-bench Pro's 11,575 episodes of 11 model spellings. With the Arrow
    UDF on duckdb 1.5.5, 9 of 10 in-process runs returned keys such as
    ``\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00onnet-4-5`` (or failed with a KeyError)."""
    db = tmp_path / "s.duckdb"
    with ea.open(db) as store:
        store.ingest(fixtures / "swebench-pro")
    with ea.open(db, read_only=True) as store:
        want = {normalise_model_name(m) for m in store.episodes()["llm_model"].dropna()}
        for _ in range(5):
            models = [r["model"] for r in ea.summary(store, "model").rows]
            assert set(models) == want, models
