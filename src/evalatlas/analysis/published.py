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
        note: str | None
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
        row = {
            "experiment": m.get("experiment_name") or m["experiment_id"],
            "experiment_id": m["experiment_id"], "agent": m.get("agent_name"),
            "source": m.get("source"), "board": m.get("name"), "score": score,
            "metric": m.get("metric"),
            "reducer": m.get("reducer"), "published": m.get("value"),
            "published_stderr": m.get("stderr"), "n_published": m.get("n"),
            "evalatlas": value, "n_evalatlas": n, "agrees": agrees, "note": note,
        }
        if row not in rows:  # the same number listed twice by the source is one check
            rows.append(row)
    return rows


def disagreement_note(rows: list[dict[str, Any]]) -> str | None:
    """A sentence for the summary when any published number differs from the data."""
    bad = [r for r in rows if r["agrees"] is False]
    if not bad:
        return None
    names = ", ".join(sorted({f"{r['experiment']} {r['score']} {r['metric']}" for r in bad}))
    return (f"{len(bad)} number(s) published by the source differ from evalatlas's "
            f"recomputation from the episodes (see 'published'): {names}")


_SPREAD = {"stderr", "std", "var", "ci_low", "ci_high", "ci"}
"""Published metrics that describe spread, not the headline number."""


def headlines(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """experiment_id -> the source's headline number: its first published metric that is
    not a spread (stderr, std, ...) and lies in [0, 1] (a rate, comparable with the
    success rate), from :func:`published_rows`. Keys: source, board, score, metric,
    reducer, value, recomputed, agrees (the source's number vs evalatlas's recomputation
    of it), note."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        v = r.get("published")
        if r["experiment_id"] in out or r.get("metric") in _SPREAD or v is None \
                or not 0.0 <= float(v) <= 1.0:
            continue
        out[r["experiment_id"]] = {
            "source": r.get("source"), "board": r.get("board"), "score": r.get("score"),
            "metric": r.get("metric"), "reducer": r.get("reducer"), "value": float(v),
            "recomputed": r.get("evalatlas"), "agrees": r.get("agrees"),
            "note": r.get("note")}
    return out


def headline_reason(headline: dict[str, Any], rate: float | None, *, epochs: int | None,
                    experiments: int = 1, mean_reward: float | None = None,
                    tolerance: float = 0.0005) -> str | None:
    """Why the source's headline differs from evalatlas's per-attempt success rate, in a
    few words; None when they agree (to ``tolerance``, a leaderboard's rounding).

    The reasons, in order: the row pools several experiments; the source's number is a
    mean score (equal to evalatlas's mean reward); the source reduced each sample's
    epochs (Inspect ``max``: any success; ``mean``/``median``/...: per sample first); the
    source's number does not match its own data (the recomputation note).
    """
    value = headline.get("value")
    if value is None or rate is None or rate != rate or abs(value - rate) <= tolerance:
        return None
    source = str(headline.get("source") or "source").split(" ")[0]
    source = {"inspect": "Inspect", "eee": "EEE"}.get(source, source)
    if experiments > 1:
        return (f"{source}: one of {experiments} experiments; evalatlas: all "
                f"{experiments} pooled")
    reducer, what = headline.get("reducer"), None
    if reducer in (None, "mean") and mean_reward is not None \
            and abs(value - mean_reward) <= tolerance:
        return (f"{source}: mean score; evalatlas: share of attempts with a score > 0 "
                "(its mean reward equals the source's number)")
    if epochs and epochs > 1 and reducer:
        what = {"max": f"max over {epochs} epochs, i.e. any success",
                "min": f"min over {epochs} epochs, i.e. every epoch succeeds",
                "mean": f"mean over {epochs} epochs per sample, then over samples",
                "median": f"median over {epochs} epochs per sample",
                "mode": f"most common of {epochs} epochs per sample"}.get(
                    reducer, f"{reducer} over {epochs} epochs per sample")
    if what:
        return f"{source}: {what}; evalatlas: per attempt"
    if headline.get("agrees") is False:
        rec = headline.get("recomputed")
        return (f"the source's own per-sample data give {100 * rec:.1f}%"
                if rec is not None and 0 <= rec <= 1 else
                f"{source}'s number differs from its own data: {headline.get('note')}")
    if headline.get("metric") not in (None, "accuracy", "score", "mean", "pass_rate",
                                      "success_rate"):
        return f"{source}: {headline['metric']}; evalatlas: success rate per attempt"
    return f"{source}: {headline.get('note') or 'computed differently'}"
