"""Arguments of the public API that cannot be used raise ArgumentError naming them
(issue 28 point 2): paths, token counts, episode frame columns."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

import evalatlas as ea
from evalatlas.errors import ArgumentError


def _jsonl(path: Path, exp: str, n: int) -> Path:
    lines = [{"experiment_id": exp, "experiment_name": exp, "agent": {"name": f"agent-{exp}"}}]
    lines += [{"experiment_id": exp, "task_id": f"t{i}", "trajectory_id": f"{exp}-{i}",
               "reward": float(i % 2)} for i in range(n)]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def test_ingest_refuses_an_empty_path_and_non_paths(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _jsonl(tmp_path / "here.jsonl", "cwd-run", 3)  # what '' would have ingested
    monkeypatch.chdir(tmp_path)
    with ea.open(tmp_path / "s.duckdb") as store:
        for bad, message in [("", "an empty path"), ("  ", "an empty path"),
                             (None, "got NoneType None"), (123, "got int 123"),
                             (b"x.jsonl", "got bytes")]:
            with pytest.raises(ArgumentError, match=message):
                store.ingest(bad)  # type: ignore[arg-type]
        with pytest.raises(ArgumentError, match="nothing to ingest"):
            store.ingest()
        with pytest.raises(ArgumentError, match="an empty path"):
            store.ingest([""])
        assert store.is_empty()


def test_ingest_takes_a_list(tmp_path: Path) -> None:
    a = _jsonl(tmp_path / "a.jsonl", "run-a", 4)
    b = _jsonl(tmp_path / "b.jsonl", "run-b", 6)
    with ea.open(tmp_path / "s.duckdb") as store:
        report = store.ingest([a, str(b)])
        assert report.episodes == 10
        assert store.episodes().groupby("experiment_id").size().to_dict() == {
            "run-a": 4, "run-b": 6}
        c = _jsonl(tmp_path / "c.jsonl", "run-c", 2)
        assert store.ingest((os.fspath(c),)).episodes == 2


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"input_tokens": float("nan")}, "input_tokens: token counts must be whole numbers "
                                     ">= 0, got float nan"),
    ({"input_tokens": True}, "input_tokens: .* got bool True"),
    ({"input_tokens": 2.5}, "input_tokens: .* got float 2.5"),
    ({"input_tokens": "100"}, "input_tokens: .* got str '100'"),
    ({"output_tokens": -5}, "output_tokens: .* got int -5"),
    ({"cache_read": None}, "cache_read: .* got NoneType None"),
])
def test_price_refuses_token_counts_that_are_not_counts(kwargs: dict, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        ea.price("gpt-4o", **kwargs)


def test_price_still_prices_counts() -> None:
    import numpy as np

    plain = ea.price("gpt-4o", input_tokens=1000, library=False)
    assert ea.price("gpt-4o", input_tokens=np.int64(1000), library=False).to_dict() == \
        plain.to_dict()


def _frame(**cols: list) -> pd.DataFrame:
    n = len(next(iter(cols.values())))
    return pd.DataFrame({"experiment_id": ["e"] * n, "trajectory_id": [f"r{i}" for i in
                                                                      range(n)],
                         "task_id": [f"t{i}" for i in range(n)], **cols})


@pytest.mark.parametrize(("cols", "message"), [
    ({"reward": ["1.0", "0.0", None]}, "column 'reward' must hold numbers .* str '1.0'"),
    ({"reward": [1.0, "x", 0.0]}, "column 'reward' .* str 'x'"),
    ({"success": ["yes", "no", "yes"]}, r"column 'success' must hold True/False .* str 'yes'"),
    ({"success": [1, 2, 0]}, r"column 'success' .*\(2\)"),
    ({"cost_usd": [0.1, "0.2", None]}, "column 'cost_usd' .* str '0.2'"),
])
def test_summary_refuses_a_frame_column_of_the_wrong_kind(cols: dict, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        ea.summary(_frame(**cols))


def test_summary_of_a_clean_frame() -> None:
    s = ea.summary(_frame(reward=[1.0, 0.0, None, float("nan")],
                          success=[True, False, None, None]))
    (row,) = s.rows
    assert row["episodes"] == 4 and row["success_rate"] == 0.5
    (row,) = ea.summary(_frame(success=[1, 0, 1, 1])).rows
    assert row["success_rate"] == 0.75
