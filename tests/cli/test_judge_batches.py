"""`evalatlas judge` stores judged episodes in batches as they finish, also when interrupted."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from fake_openai import FakeOpenAI, answer_verdict

from evalatlas.cli.main import app
from evalatlas.cli.run import make_judge
from evalatlas.judge.episodes import judge_rows, select_unjudged
from evalatlas.store.db import StoreConnection


@pytest.fixture
def unjudged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "s.duckdb"
    res = CliRunner().invoke(app, ["--db", str(db), "run", "offline_qa", "--framework", "bm25",
                                   "--output-dir", str(tmp_path / "runs"),
                                   "--skip-code-quality"])
    assert res.exit_code == 0, res.output
    return db


def _judged(store: StoreConnection) -> int:
    return store.query("SELECT count(*) AS n FROM episodes WHERE TRY_CAST("
                       "scores->>'$.correctness' AS DOUBLE) IS NOT NULL")[0]["n"]


def test_batches_and_interruption(tmp_path: Path, unjudged: Path) -> None:
    class Stop(Exception):
        pass

    done = []

    def on_done() -> None:
        done.append(1)
        if len(done) == 5:
            raise Stop

    with FakeOpenAI(responder=lambda r: answer_verdict(4, 4, 4)) as srv:
        async def go() -> None:
            judge = make_judge("jm", srv.base_url, tmp_path / "cache", 1)
            try:
                with StoreConnection(unjudged) as store:
                    rows = select_unjudged(store, None, False, None)
                    assert len(rows) == 6
                    await judge_rows(store, rows, judge, {}, flush_every=2, on_done=on_done)
            finally:
                await judge.aclose()

        with pytest.raises(Stop):
            asyncio.run(go())
    with StoreConnection(unjudged, read_only=True) as store:
        # 4 flushed in two batches of 2; the 5th was flushed on the way out
        assert _judged(store) == 5
        batches = store.query("SELECT n_episodes FROM ingest_batches "
                              "WHERE list_contains(sources, 'evalatlas judge') ORDER BY batch_id")
    assert [b["n_episodes"] for b in batches] == [2, 2, 1]
