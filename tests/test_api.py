"""The public API's entry points behind the writing commands (ingest, export, run, judge):
the CLI is a thin layer over these, so they are checked here directly."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

import evalatlas as ea

sys.path.insert(0, str(Path(__file__).resolve().parent / "judge"))
from fake_openai import FakeOpenAI, answer_verdict

REPO = Path(__file__).resolve().parents[1]


def test_run_then_judge_episodes_with_progress(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen: list[tuple[int, int]] = []
    with ea.open(tmp_path / "s.duckdb") as store:
        summary = asyncio.run(ea.run("offline_qa", "bm25", store=store,
                                     output_dir=tmp_path / "runs", skip_code_quality=True))
        assert summary.done == 6 and summary.run_dir.is_dir()
        with FakeOpenAI(responder=lambda r: answer_verdict(5, 4, 4)) as srv:
            client = ea.JudgeClient(ea.JudgeConfig(model="jm", base_url=srv.base_url,
                                                   cache_dir=tmp_path / "cache"))

            async def go() -> dict[str, int]:
                try:
                    return await ea.judge_episodes(
                        store, client, limit=4,
                        on_progress=lambda done, total: seen.append((done, total)))
                finally:
                    await client.aclose()

            counts = asyncio.run(go())
            assert len(srv.requests) == 4
        assert counts == {"judged": 4, "failed": 0, "cached": 0}
        assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
        eps = store.episodes()
        # the bm25 runs had no harness outcome: correctness 5 gives reward (5 - 1) / 4 = 1
        assert sorted(eps["reward"].dropna().tolist()) == [1.0] * 4


def test_api_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ea.EvalAtlasError, match=r"not found .*bundled: .*offline_qa"):
        ea.load_scenario("no_such_scenario")
    with pytest.raises(ea.EvalAtlasError):
        ea.load_framework("no_such_module_xyz:Thing")
    with ea.open(":memory:") as store:
        assert store.is_empty()
        with pytest.raises(ValueError, match="relationship must be one of first_party"):
            store.export_eee(tmp_path, relationship="friend")
        with pytest.raises(ValueError, match="unknown_model_cost"):
            store.ingest(REPO / "examples", unknown_model_cost="free")
    assert ea.Store.EEE_RELATIONSHIPS[0] == "first_party"
