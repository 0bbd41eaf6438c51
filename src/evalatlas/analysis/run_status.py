"""Did the run finish? One status per experiment, from what its source says.

A crashed or cancelled run whose episodes look like a normal experiment reads as a
result; it is not one. :func:`run_status` decides, from one row of
:func:`evalatlas.store.catalog.experiment_catalog`, whether the experiment is
``complete`` or ``incomplete`` and says why, and how many samples (task attempts) were
planned. The rules (issue 21, point 4):

- Inspect AI: the log's ``status`` is ``started`` (still running, or crashed; a ``.eval``
  without ``header.json`` is rebuilt from ``_journal/`` and is always ``started``),
  ``error`` or ``cancelled``. Planned samples: the dataset's (limited) samples x epochs.
- cube-harness episodes whose ``status.json`` says they never finished: QUEUED or
  RUNNING (stored as ``incomplete``) or CANCELLED. (Other adapters' ``incomplete`` is an
  outcome, e.g. a SWE-bench instance never submitted, counted as a failure.)
- Every other source (the EvalLog contract): fewer episodes than
  ``benchmark_subset.n_tasks`` x attempts planned (the most attempts any task had).

An experiment with no episode at all (a source that published only aggregates) gets no
status: there is no run to call complete or not. Coverage against a benchmark's full size
(tasks never reported) is a separate matter (``task_coverage`` in the summary).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

CUBE = "cube-harness"
"""The framework name of cube-harness experiments (:mod:`evalatlas.adapters.cube`)."""

INSPECT_UNFINISHED = ("started", "error", "cancelled")
"""Inspect ``EvalLog.status`` values of a run that did not finish (``success`` did)."""


def run_status(row: Mapping[str, Any]) -> dict[str, Any]:
    """``{"status": "complete"|"incomplete"|None, "planned_samples": int|None,
    "observed_samples": int, "run_status_note": str|None}`` for one experiment.

    ``row``: experiment_name, framework, planned_tasks, inspect_status, inspect_epochs,
    from_journal, episodes, max_attempt, unfinished_episodes, cancelled_episodes (the
    columns of :func:`~evalatlas.store.catalog.experiment_catalog`).
    """
    episodes = int(row.get("episodes") or 0)
    out: dict[str, Any] = {"status": None, "planned_samples": None,
                           "observed_samples": episodes, "run_status_note": None}
    if episodes == 0:
        return out
    tasks = row.get("planned_tasks")
    tasks = int(tasks) if tasks else None
    inspect = row.get("inspect_status")
    if inspect is not None:
        epochs = int(row.get("inspect_epochs") or 1)
        planned = tasks * epochs if tasks else None
        out["planned_samples"] = planned
        if inspect in INSPECT_UNFINISHED:
            why = f"Inspect status {inspect}"
            if row.get("from_journal"):
                why += ", log rebuilt from _journal/"
            note = (f"incomplete: {why}, though all {planned} planned samples ran"
                    if planned is not None and episodes >= planned
                    else f"incomplete: {_of(episodes, planned)} ({why})")
            out.update(status="incomplete", run_status_note=note)
        else:
            out["status"] = "complete"
        return out
    attempts = int(row["max_attempt"]) + 1 if row.get("max_attempt") is not None else 1
    planned = tasks * attempts if tasks else None
    out["planned_samples"] = planned
    # only cube-harness's status.json says an episode never finished; other adapters'
    # "incomplete" is an outcome (SWE-bench: an instance not submitted, a failure)
    cube = row.get("framework") == CUBE
    unfinished = int(row.get("unfinished_episodes") or 0) if cube else 0
    cancelled = int(row.get("cancelled_episodes") or 0) if cube else 0
    if unfinished or cancelled:
        parts = [f"{n} {what}" for n, what in ((unfinished, "queued or running"),
                                               (cancelled, "cancelled")) if n]
        out.update(status="incomplete",
                   run_status_note=f"incomplete: {_of(episodes, planned)} (episodes "
                               f"{' and '.join(parts)})")
    elif planned is not None and episodes < planned:
        out.update(status="incomplete",
                   run_status_note=f"incomplete: {_of(episodes, planned)} ({tasks} tasks x "
                               f"{attempts} attempt{'s' if attempts > 1 else ''})")
    else:
        out["status"] = "complete"
    return out


def _of(observed: int, planned: int | None) -> str:
    if planned is None:
        return f"{observed} samples, plan unknown"
    return f"{observed} of {planned} planned samples"


def group_status(statuses: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The status of a summary row made of several experiments: incomplete when any of
    them is, with their notes; planned samples summed when every experiment's plan is
    known (None otherwise)."""
    items = list(statuses)
    known = [s for s in items if s.get("status") is not None]
    bad = [s for s in known if s["status"] == "incomplete"]
    plans = [s.get("planned_samples") for s in items if s.get("observed_samples")]
    known_plans = [p for p in plans if p is not None]
    planned = sum(known_plans) if plans and len(known_plans) == len(plans) else None
    if bad:
        status = "incomplete"
    elif known:
        status = "complete"
    else:
        status = None
    note = None
    if bad:
        note = "; ".join(s["run_status_note"] for s in bad)
        if len(items) > 1:
            note = f"{len(bad)} of {len(items)} experiments " + note
    return {"status": status, "planned_samples": planned, "run_status_note": note,
            "incomplete_experiments": len(bad)}


def incomplete_note(catalog_rows: Iterable[Mapping[str, Any]], *,
                    benchmark: Iterable[str] | None = None) -> list[str]:
    """The sentence ``summary``, ``compare`` and ``atlas`` show about runs that did not
    finish, over these rows of :func:`~evalatlas.store.catalog.experiment_catalog` (only
    the ``benchmark`` ones when given, any case); empty when every run finished."""
    benches = None if not benchmark else {b.casefold() for b in benchmark}
    bad = []
    for r in catalog_rows:
        if benches is not None and str(r.get("benchmark")).casefold() not in benches:
            continue
        st = run_status(r)
        if st["status"] == "incomplete":
            bad.append(f"{r.get('experiment_name')}: {st['run_status_note']}")
    if not bad:
        return []
    return [f"{len(bad)} experiment(s) did not finish, their numbers are over the samples "
            "that ran: " + "; ".join(bad)]
