"""LLM-judge stored episodes (``evalatlas judge``, ``ea.judge_episodes``); a harness outcome
is never changed.

Selects completed episodes this judge model has not scored (all of them with
``--rejudge``), asks the answer judge, and upserts the episodes with named scores
(``judge.<model>.correctness`` ..., and ``judge.correctness`` ... from the first judge),
the judge model, rubric hash, reasoning and the judge's own usage. The reward
``(correctness - 1) / 4`` is set only where the harness reported no outcome, and the
episode then says ``outcome_source = "judge:<model>"`` (:func:`apply_verdict`).
Episodes written by ``evalatlas run`` also get their ``episode_record.json`` rewritten, so
a later re-ingest or resume keeps the scores. The judge sees source text when
``--scenario`` supplies the documents, else names only.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalatlas.judge.answer import CRITERIA, SYSTEM_PROMPT, SourceText, judge_answer
from evalatlas.judge.client import JudgeClient
from evalatlas.metrics.outcomes import reward_from_correctness
from evalatlas.records.evallog import EPISODE_FILE, EPISODES_DIR, record_json
from evalatlas.records.jsonio import atomic_write_text
from evalatlas.records.models import EpisodeRecord
from evalatlas.store.db import StoreConnection
from evalatlas.store.judging import unjudged_episodes
from evalatlas.store.rows import episode_from_row, episode_row

RUBRIC_HASH = hashlib.sha256(
    (SYSTEM_PROMPT + "\x1f" + ",".join(CRITERIA)).encode("utf-8")).hexdigest()[:16]
"""Identifies the answer judge's rubric (its system prompt and criteria) in each record."""


def judge_slug(model: str) -> str:
    """A score-name-safe form of a judge model name (``openai/gpt-4o`` -> ``openai-gpt-4o``)."""
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", model).strip("-") or "judge"


def judge_score_names(model: str) -> dict[str, str]:
    """criterion -> the per-judge score name, e.g. ``judge.gpt-4o.correctness``."""
    return {c: f"judge.{judge_slug(model)}.{c}" for c in CRITERIA}


def select_unjudged(store: StoreConnection, experiments: list[str] | None, rejudge: bool,
                    limit: int | None, judge_model: str | None = None) -> list[dict[str, Any]]:
    """Completed episodes this judge has not scored yet (all of them with ``rejudge``).

    "Scored" means ``judge.<model>.correctness`` is present (``judge.correctness`` when
    no model is given), so a failed call is retried next time and another judge model
    judges every episode again, adding its own scores.
    """
    name = None if rejudge else (judge_score_names(judge_model)["correctness"]
                                 if judge_model else "judge.correctness")
    return unjudged_episodes(store, experiments, name, limit)


def apply_verdict(ep: EpisodeRecord, verdict: Any) -> EpisodeRecord:
    """The episode with this judge's verdict added; a harness outcome is never touched.

    - Scores ``judge.<model>.<criterion>`` (this judge's; replaced only by the same model
      with ``--rejudge``) and ``judge.<criterion>`` (the first judge's, never edited);
      ``extra["judges"][<model>]`` records model, rubric hash, reasoning, usage, error.
    - Only when the episode has no outcome (``reward`` null, no harness verdict) does a
      valid correctness fill ``reward = (correctness - 1) / 4``, ``success`` and
      ``outcome_source = "judge:<model>"``; then the unqualified criterion names (the
      framework comparison's) are filled where absent, as the runner's own judge does.
    - A failed call changes no score and no outcome; its usage is recorded as unknown
      (None), not 0, and ``extra["score_errors"]`` says why.
    """
    data = ep.model_dump(mode="json")
    model = verdict.model or "judge"
    names = judge_score_names(model)
    scores = dict(data.get("scores") or {})
    extra = dict(data.get("extra") or {})
    judges = dict(extra.get("judges") or {})
    entry: dict[str, Any] = {"model": model, "rubric_hash": RUBRIC_HASH,
                             "judged_at": _dt.datetime.now(_dt.UTC).isoformat()}
    errors = dict(extra.get("score_errors") or {})
    for name in names.values():
        errors.pop(name, None)
    if verdict.error:
        entry.update(error=verdict.error, usage=None)
        for name in names.values():
            errors[name] = verdict.error
    else:
        entry.update(reasoning=verdict.reasoning,
                     usage=verdict.usage.model_dump(mode="json") if verdict.usage else None)
        for c, name in names.items():
            scores[name] = verdict.scores.get(c)
            if scores.get(f"judge.{c}") is None:
                scores[f"judge.{c}"] = verdict.scores.get(c)
        reward = reward_from_correctness(verdict.scores.get("correctness"))
        if data.get("reward") is None and reward is not None:
            data["reward"] = reward
            data["success"] = reward > 0
            data["outcome_source"] = f"judge:{model}"
            extra.pop("reward_missing", None)
            for c in CRITERIA:
                if scores.get(c) is None:
                    scores[c] = verdict.scores.get(c)
                    extra["judge_reasoning"] = verdict.reasoning
                    extra["judge_model"] = model
        if verdict.usage is not None:
            data["judge_usage"] = verdict.usage.model_dump(mode="json")
    judges[judge_slug(model)] = entry
    extra["judges"] = judges
    if errors:
        extra["score_errors"] = errors
    else:
        extra.pop("score_errors", None)
    data["scores"] = scores
    data["extra"] = extra
    return EpisodeRecord.model_validate(data)


def episode_file(row: dict[str, Any]) -> Path | None:
    """The runner's ``episode_record.json`` of a stored episode, if it is on disk."""
    source = row.get("source_file")
    if not source:
        return None
    path = Path(source)
    if path.is_dir():  # ingested from the run directory
        path = path / EPISODES_DIR / row["trajectory_id"] / EPISODE_FILE
    return path if path.name == EPISODE_FILE and path.is_file() else None


async def judge_rows(store: StoreConnection, rows: list[dict[str, Any]], judge: JudgeClient,
                     docs: dict[str, str], *, flush_every: int = 50,
                     on_done: Callable[[], None] | None = None) -> dict[str, int]:
    """Judge ``rows`` concurrently; each judged episode is stored as it finishes.

    Store writes go in batches of ``flush_every`` (one transaction each), so an
    interrupted run keeps what it had judged; the runner's episode files are rewritten
    one by one. The judge's concurrency limit bounds the calls in flight.
    """
    counts = {"judged": 0, "failed": 0, "cached": 0}
    pending: list[tuple[EpisodeRecord, str | None]] = []

    def flush() -> None:
        if not pending:
            return
        batch = store.next_batch_id()
        store.write_batch(batch_id=batch, experiments=[],
                          episodes=[episode_row(ep, src, batch) for ep, src in pending],
                          measurements=[], problems=[], sources=["evalatlas judge"],
                          started_at=_dt.datetime.now(_dt.UTC))
        pending.clear()

    async def one(row: dict[str, Any]) -> tuple[dict[str, Any], EpisodeRecord, Any]:
        ep = episode_from_row(row)
        sources = [SourceText(s, docs.get(s)) for s in dict.fromkeys(ep.retrieved_sources or [])]
        verdict = await judge_answer(judge, ep.input_text or "", ep.expected_text,
                                     ep.output_text, sources)
        return row, ep, verdict

    try:
        for fut in asyncio.as_completed([one(r) for r in rows]):
            row, ep, verdict = await fut
            new = apply_verdict(ep, verdict)
            counts["failed" if verdict.error else "judged"] += 1
            counts["cached"] += int(verdict.cached)
            path = episode_file(row) if row.get("x_framework") == "evalatlas-runner" else None
            if path is not None:
                atomic_write_text(path, record_json(new, indent=2))
            pending.append((new, row.get("source_file")))
            if on_done is not None:
                on_done()
            if len(pending) >= flush_every:
                flush()
    finally:
        flush()  # keep what was judged, also when interrupted
    return counts
