"""The report's plain-language summary: what to decide, and what not to trust.

A pure function of the report data (:func:`evalatlas.report.build.build_report_data`):
it restates numbers the sections below already show, in sentences, and computes
nothing new. Per benchmark (never across benchmarks: their agents share no task):

- the best agent (rank 1, then the highest success rate) with its success and interval,
  and which others it is *significantly* better than (the leaderboard's rank rule:
  Holm-adjusted paired test where compared, else non-overlapping intervals), or that it
  is not separated from the next ones;
- the cheapest agent on the cost-accuracy frontier (no other agent is cheaper and at
  least as successful), with its cost per episode and success;
- trust warnings: runs whose source says they did not finish (``run_status``
  ``incomplete``, with its note), and numbers the source published that evalatlas's
  recomputation does not reproduce (``published`` rows with ``agrees`` false).
"""

from __future__ import annotations

from typing import Any

from evalatlas.report.names import display_name

NAMES = 5
"""Names listed in one sentence; the rest are counted."""


def _pct(x: Any) -> str:
    return f"{100 * x:.1f}%" if isinstance(x, float | int) else "-"


def _usd(x: Any) -> str:
    if not isinstance(x, float | int):
        return "-"
    return f"${x:.2f}" if abs(x) >= 1 else f"${x:.4f}" if abs(x) >= 0.01 else f"${x:.3g}"


def _names(names: list[str], count: int) -> str:
    shown = names[:NAMES]
    more = count - len(shown)
    text = ", ".join(shown)
    return text + (f" and {more:,} more" if more > 0 else "")


def _sections(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-benchmark sections (the pooled "All benchmarks" one has no ranks)."""
    secs = data.get("sections") or []
    per = [s for s in secs if s.get("benchmark") is not None]
    return per or secs[:1]


def _value(x: Any) -> str:
    if isinstance(x, float | int) and not isinstance(x, bool):
        return _pct(x) if 0 <= x <= 1 else f"{x:.4g}"
    return "-" if x is None else str(x)


def decision_summary(data: dict[str, Any]) -> list[dict[str, str]]:
    """Sentences for the top of the page: ``[{"kind": "best"|"cost"|"warning"|"info",
    "benchmark": name or "", "text": sentence}]`` (see the module docstring)."""
    out: list[dict[str, str]] = []
    conf = f"{round(100 * data.get('confidence', 0.95))}%"
    for s in _sections(data):
        board = [b for b in s.get("leaderboard") or []
                 if isinstance(b["summary"].get("success_rate"), float | int)]
        bench = s.get("title") or ""
        if not board:
            continue
        best = min(board, key=lambda b: (b.get("rank") or 1,
                                         -b["summary"]["success_rate"], b["name"]))
        sm = best["summary"]
        lo, hi = sm.get("success_rate_ci_low"), sm.get("success_rate_ci_high")
        head = (f"{bench}: best is {best['name']} at {_pct(sm['success_rate'])} success"
                + (f" ({conf} interval {_pct(lo)} to {_pct(hi)})"
                   if isinstance(lo, float | int) and isinstance(hi, float | int) else ""))
        n_others = len(board) - 1
        better = best.get("better_than_count", 0)
        tied = _names(best.get("tied_with") or [], best.get("tied_count", 0))
        if n_others == 0:
            text = head + "; it is the only one."
        elif better == n_others:
            text = head + (f"; significantly better than every other ({n_others:,}: "
                           f"{_names(best.get('better_than') or [], better)}).")
        elif better:
            text = head + (f"; significantly better than {better:,} of {n_others:,} "
                           f"others ({_names(best.get('better_than') or [], better)}), "
                           f"not separated from {tied}.")
        else:
            text = head + ("; not significantly better than any other: it cannot be told "
                           f"apart from {tied}.")
        out.append({"kind": "best", "benchmark": bench, "text": text})
        frontier = [b for b in board if b.get("pareto")
                    and isinstance(b.get("cost_per_episode"), float | int)]
        if frontier:
            frontier.sort(key=lambda b: (b["cost_per_episode"], b["name"]))
            cheap = frontier[0]
            line = _names([b["name"] for b in frontier], len(frontier))
            out.append({"kind": "cost", "benchmark": bench, "text": (
                f"{bench}: cheapest on the cost-accuracy frontier is {cheap['name']} at "
                f"{_usd(cheap['cost_per_episode'])} per episode "
                f"({_pct(cheap['summary']['success_rate'])} success)"
                + ("." if cheap is not best else "; it is also the best.")
                + (f" The frontier, cheapest first: {line}." if len(frontier) > 1 else ""))})
        for b in board:
            if b["summary"].get("run_status") == "incomplete":
                note = b["summary"].get("run_status_note") or "incomplete"
                out.append({"kind": "warning", "benchmark": bench,
                            "text": f"{bench}: {b['name']} did not finish ({note}); its "
                                    "numbers cover only what ran."})
    for r in data.get("published") or []:
        if r.get("agrees") is False:
            what = f"{r.get('score') or ''} {r.get('metric') or ''}".strip() or "headline"
            # a source with several boards (SWE-bench Verified and bash-only) gives one
            # line per board: the board is named so the lines do not read as duplicates
            board_name = (r.get("board") if "leaderboard" in str(r.get("source") or "")
                          else None)
            out.append({"kind": "warning", "benchmark": "", "text": (
                f"{display_name(r.get('experiment') or 'an experiment')}"
                + (f" ({board_name} board)" if board_name else "") + ": the source "
                f"published {what} {_value(r.get('published'))}, evalatlas recomputes "
                f"{_value(r.get('evalatlas'))}"
                + (f" ({r['note']})" if r.get("note") else "") + ".")})
    if not out:
        out.append({"kind": "info", "benchmark": "",
                    "text": "No agent has a success rate to compare yet."})
    return out
