"""Published metrics next to evalatlas's own: the source's numbers, recomputed and checked.

Inputs: the rows of :func:`evalatlas.store.published.published_metrics` and, per
(experiment, score), the per-task values of :func:`evalatlas.store.published.score_values`.
Each row is recomputed with :func:`evalatlas.metrics.published.recompute_published`;
a disagreement is flagged with the reason the data shows (fewer samples than the
source scored, errors, a non-mean reducer). The published value is kept exactly as the
source wrote it: evalatlas never replaces the episodes' numbers with it, nor the reverse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalatlas.metrics.published import recompute_published

Values = Mapping[str, Sequence[float | None]]


def published_rows(
    published: list[dict[str, Any]],
    values_of: Callable[[str, str], Values],
) -> list[dict[str, Any]]:
    """One row per published metric: experiment, source, score, metric, reducer,
    ``published`` (as written), ``n_published``, ``evalatlas`` (recomputed from the
    episodes), ``n_evalatlas`` (tasks with a value), ``agrees`` (None when either side
    is missing) and ``note``. ``values_of(experiment_id, score)`` gives the per-task
    values."""
    cache: dict[tuple[str, str], Values] = {}
    rows = []
    for m in published:
        score = m.get("score")
        if not score or not m.get("episodes"):
            value = n = agrees = None
            note = ("the source's file holds no per-sample results" if not m.get("episodes")
                    else "not tied to a per-episode score")
        else:
            key = (m["experiment_id"], score)
            if key not in cache:
                cache[key] = values_of(*key)
            check = recompute_published(m, cache[key])
            value, n, agrees, note = check.value, check.n, check.agrees, check.note
            # a source that rounds (a leaderboard's 52.8%) says so with params.tolerance
            tol = (m.get("params") or {}).get("tolerance")
            if agrees is False and isinstance(tol, int | float) and value is not None \
                    and abs(value - float(m["value"])) <= tol:
                agrees, note = True, f"equal to the source's rounding ({tol:g})"
        rows.append({
            "experiment": m.get("experiment_name") or m["experiment_id"],
            "experiment_id": m["experiment_id"], "agent": m.get("agent_name"),
            "source": m.get("source"), "score": score, "metric": m.get("metric"),
            "reducer": m.get("reducer"), "published": m.get("value"),
            "published_stderr": m.get("stderr"), "n_published": m.get("n"),
            "evalatlas": value, "n_evalatlas": n, "agrees": agrees, "note": note,
        })
    return rows


def disagreement_note(rows: list[dict[str, Any]]) -> str | None:
    """A sentence for the summary when any published number differs from the data."""
    bad = [r for r in rows if r["agrees"] is False]
    if not bad:
        return None
    names = ", ".join(sorted({f"{r['experiment']} {r['score']} {r['metric']}" for r in bad}))
    return (f"{len(bad)} number(s) published by the source differ from evalatlas's "
            f"recomputation from the episodes (see 'published'): {names}")
