"""Why agents fail: the investigator's findings summarised (``evalatlas failures``,
``ea.failures``). Rows in, a typed result out; no SQL.

Three questions, each a pure function:

- :func:`category_shares`: per group (agent by default), the share of *investigated
  failed* episodes in each category of the taxonomy, with an interval clustered by task
  (attempts of one task are not independent), and how many failures were not
  investigated (they are not in the denominator, and the result says so);
- :func:`group_root_causes`: the most frequent root causes, near-duplicate sentences
  grouped (token Jaccard similarity);
- :func:`suspect_tasks`: tasks the investigator calls infeasible, and which of them are
  *suspect*: infeasible in a majority of at least :data:`SUSPECT_MIN_EPISODES` episodes
  with a feasibility verdict, those verdicts coming from at least
  :data:`SUSPECT_MIN_AGENTS` different agents.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from evalatlas.analysis.results import TableResult
from evalatlas.stats.bounded import bounded_mean_interval
from evalatlas.stats.validation import check_confidence

TAXONOMY: dict[str, str] = {
    "wrong_answer": "the agent finished and gave an answer or artefact, but it is wrong",
    "incomplete": "the agent stopped before finishing (gave up, partial work, no final "
                  "answer) without hitting a limit",
    "tool_misuse": "the agent called tools wrongly: bad arguments, wrong tool, ignored "
                   "tool errors, misread tool output",
    "environment_error": "the environment, harness or infrastructure failed (crash, "
                         "network, missing dependency), not the agent's reasoning",
    "timeout_or_limit": "a time, step, token or cost limit ended the episode",
    "hallucinated_success": "the agent claimed success or invented results that the "
                            "record contradicts",
    "task_broken": "the task is ambiguous, impossible or mis-specified, or its grading is "
                   "wrong: a capable agent could not succeed as specified",
    "other": "none of the above fits",
}
"""The failure taxonomy, fixed and documented (docs/investigate.md): name -> definition,
in display order. The investigator's prompt is given these definitions
(:mod:`evalatlas.judge.investigator`), so changing one changes the prompt version."""

CATEGORIES = tuple(TAXONOMY)

SUSPECT_MIN_EPISODES = 3
SUSPECT_MIN_AGENTS = 2
DUPLICATE_JACCARD = 0.5
"""Two root-cause sentences are near-duplicates when the Jaccard similarity of their
content-word sets is at least this."""

_STOP_WORDS = (
    "a an the of to in on at for from by with and or but not no is are was were be been "
    "being it its this that these those as into than then so did does do has have had "
    "agent agents task tasks episode")
_STOP = frozenset(_STOP_WORDS.split())


def _words(sentence: str) -> frozenset[str]:
    """Content words of a sentence: lower-cased alphanumeric tokens minus stop words,
    with a plural ``s`` dropped (``tests`` ~ ``test``)."""
    out = set()
    for w in re.findall(r"[a-z0-9]+", sentence.lower()):
        if w in _STOP:
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a & b| / |a | b|`` (1.0 for two empty sets: both say nothing)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def group_root_causes(causes: Iterable[str | None], *, threshold: float = DUPLICATE_JACCARD,
                      categories: Iterable[str | None] | None = None,
                      ) -> list[dict[str, Any]]:
    """Root-cause sentences grouped into near-duplicates, most frequent group first.

    Distinct sentences (blanks collapsed, case kept) are taken most frequent first (ties
    alphabetically); each joins the first existing group whose representative's content
    words have Jaccard similarity >= ``threshold`` with its own (:func:`jaccard`), else it
    starts a group and represents it. Greedy single-pass clustering: deterministic, and a
    group never chains away from its representative. Returns ``cause`` (the
    representative), ``count`` (sentences in the group), ``variants`` (distinct
    sentences) and ``category`` (the most frequent category among them, when
    ``categories`` is given, aligned with ``causes``). None entries are skipped.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    cats = list(categories) if categories is not None else None
    counts: Counter[str] = Counter()
    cat_of: dict[str, Counter[str]] = defaultdict(Counter)
    for i, c in enumerate(causes):
        if c is None or not c.strip():
            continue
        s = " ".join(c.split())
        counts[s] += 1
        cat = cats[i] if cats is not None else None
        if cat:
            cat_of[s][cat] += 1
    groups: list[dict[str, Any]] = []
    for s, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        w = _words(s)
        for g in groups:
            if jaccard(g["_words"], w) >= threshold:
                g["count"] += n
                g["variants"] += 1
                g["_cats"].update(cat_of[s])
                break
        else:
            groups.append({"cause": s, "count": n, "variants": 1, "_words": w,
                           "_cats": Counter(cat_of[s])})
    groups.sort(key=lambda g: (-g["count"], g["cause"]))
    out = []
    for g in groups:
        top = sorted(g["_cats"].items(), key=lambda kv: (-kv[1], kv[0]))
        row = {"cause": g["cause"], "count": g["count"], "variants": g["variants"]}
        if cats is not None:
            row["category"] = top[0][0] if top else None
        out.append(row)
    return out


def category_shares(rows: Sequence[dict[str, Any]], *, confidence: float = 0.95
                    ) -> list[dict[str, Any]]:
    """One row per (group, category) over the failed episodes of ``rows``.

    ``rows``: episodes with ``group_name``, ``task_id``, ``benchmark``, ``failed`` and
    ``failure_category`` (None when not investigated). For each group: ``failures``
    (failed episodes), ``investigated`` (failed episodes with a category), and per
    category ``episodes`` (its count), ``share = episodes / investigated`` and its
    ``ci_low``/``ci_high``: the bounded interval of the mean of the 0/1 indicator,
    clustered by task (:func:`evalatlas.stats.bounded.bounded_mean_interval`; Wilson on
    the effective sample size), or None with ``interval_reason``. The share of a group
    with no investigated failure is None, never 0.
    """
    check_confidence(confidence)
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("failed"):
            by_group[r["group_name"]].append(r)
    out = []
    for group in sorted(by_group):
        failed = by_group[group]
        inv = [r for r in failed if r.get("failure_category")]
        clusters = [f"{r.get('benchmark')}\x1f{r['task_id']}" for r in inv]
        for cat in CATEGORIES:
            hits = [1.0 if r["failure_category"] == cat else 0.0 for r in inv]
            row: dict[str, Any] = {"group": group, "category": cat,
                                   "failures": len(failed), "investigated": len(inv),
                                   "not_investigated": len(failed) - len(inv),
                                   "episodes": int(sum(hits))}
            if inv:
                iv = bounded_mean_interval(hits, clusters=clusters, confidence=confidence)
                row.update(share=iv.estimate, ci_low=iv.low, ci_high=iv.high,
                           interval_reason=iv.reason)
            else:
                row.update(share=None, ci_low=None, ci_high=None,
                           interval_reason="no investigated failure")
            out.append(row)
    return out


def task_verdicts(rows: Sequence[dict[str, Any]], *,
                  min_episodes: int = SUSPECT_MIN_EPISODES,
                  min_agents: int = SUSPECT_MIN_AGENTS, max_evidence: int = 3
                  ) -> list[dict[str, Any]]:
    """The investigator's feasibility verdicts per task, for every task with at least one.

    Per (benchmark, task): ``judged`` (episodes with a feasibility verdict, true or
    false), ``infeasible`` (verdict false), ``agents`` (distinct agents whose episodes got
    an infeasible verdict) and ``suspect``: ``judged >= min_episodes`` and
    ``infeasible > judged / 2`` and ``len(agents) >= min_agents``, so one agent's failures
    alone never make a task suspect. ``evidence``: up to ``max_evidence`` quotes with the
    root cause from the infeasible episodes. Order: suspect first, then most infeasible.
    """
    tasks: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("feasible") is not None:
            tasks[(r.get("benchmark") or "(unknown)", r["task_id"])].append(r)
    out: list[dict[str, Any]] = []
    for (bench, task), eps in tasks.items():
        bad = [r for r in eps if r["feasible"] is False]
        agents = sorted({r["agent"] for r in bad})
        judged = len(eps)
        suspect = (judged >= min_episodes and 2 * len(bad) > judged
                   and len(agents) >= min_agents)
        evidence = [{"agent": r["agent"], "trajectory_id": r.get("trajectory_id"),
                     "evidence": r.get("evidence"), "root_cause": r.get("failure_root_cause")}
                    for r in bad[:max_evidence]]
        out.append({"benchmark": bench, "task_id": task, "judged": judged,
                    "infeasible": len(bad), "agents": agents, "suspect": suspect,
                    "evidence": evidence})
    out.sort(key=lambda t: (not t["suspect"], -t["infeasible"], t["benchmark"], t["task_id"]))
    return out


def suspect_tasks(rows: Sequence[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    """The tasks of :func:`task_verdicts` the investigator called infeasible at least
    once (suspect or not), most infeasible first."""
    return [t for t in task_verdicts(rows, **kw) if t["infeasible"]]


def item_verdict_rows(items: Sequence[dict[str, Any]], verdicts: Sequence[dict[str, Any]]
                      ) -> list[dict[str, Any]]:
    """Atlas item rows (``benchmark``, ``task_id``, ``flags`` ...) with the investigator's
    verdict beside the difficulty: ``investigated`` (episodes with a feasibility
    verdict), ``infeasible``, ``suspect``; flag ``suspect`` for a suspect task and
    ``suspect_all_fail`` when, besides, no agent solved it in the fit (``no_success``):
    the atlas calls it maximally hard, the investigator says it is broken."""
    by_task = {(v["benchmark"], v["task_id"]): v for v in verdicts}
    out = []
    for row in items:
        v = by_task.get((row.get("benchmark"), row.get("task_id")))
        new = dict(row)
        new["investigated"] = v["judged"] if v else 0
        new["infeasible"] = v["infeasible"] if v else 0
        new["suspect"] = bool(v and v["suspect"])
        flags = list(row.get("flags") or [])
        if new["suspect"]:
            flags.append("suspect")
            if "no_success" in flags:
                flags.append("suspect_all_fail")
        new["flags"] = flags
        out.append(new)
    return out


@dataclass
class FailuresResult(TableResult):
    """``evalatlas failures`` / ``ea.failures``: why agents fail.

    ``rows`` (:func:`category_shares`): ``group``, ``category``, ``failures``,
    ``investigated``, ``not_investigated``, ``episodes``, ``share``, ``ci_low``,
    ``ci_high``, ``interval_reason``. ``meta``: ``by``, ``confidence``, ``categories``,
    ``investigated_episodes`` (episodes with findings, failed or not),
    ``root_causes`` (per group, the top groups of :func:`group_root_causes`),
    ``suspect_tasks``, ``infeasible_tasks`` and ``task_verdicts`` (:func:`task_verdicts`:
    the suspect tasks, those with an infeasible verdict, all with a verdict),
    ``suspect_rule``."""

    SCHEMA: ClassVar[str] = "evalatlas.failures/1"

    @property
    def suspect(self) -> list[tuple[str, str]]:
        """(benchmark, task_id) of the suspect tasks."""
        return [(t["benchmark"], t["task_id"]) for t in self.meta.get("suspect_tasks", [])]


def failures_result(rows: Sequence[dict[str, Any]], *, by: str = "agent",
                    confidence: float = 0.95, top: int = 5) -> FailuresResult:
    """The :class:`FailuresResult` of episode rows (the store's ``findings_rows``)."""
    shares = category_shares(rows, confidence=confidence)
    causes: dict[str, list[dict[str, Any]]] = {}
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("failed") and r.get("failure_category"):
            by_group[r["group_name"]].append(r)
    for group in sorted(by_group):
        eps = by_group[group]
        causes[group] = group_root_causes([r.get("failure_root_cause") for r in eps],
                                          categories=[r["failure_category"] for r in eps])[:top]
    verdicts = task_verdicts(rows)
    tasks = [t for t in verdicts if t["infeasible"]]
    notes = []
    groups = {r["group"]: r for r in shares}
    missing = sum(r["not_investigated"] for r in groups.values())
    if not groups:
        notes.append("No failed episode in the selection.")
    elif missing:
        notes.append(f"{missing} failed episode(s) have no failure category (not "
                     "investigated, the investigator's answer was unusable, or findings "
                     "from the harness without one); shares are over categorised failures "
                     "only. `evalatlas investigate` fills them (`--reinvestigate` for "
                     "findings that came without a category).")
    if groups:
        notes.append("Intervals are clustered by task (attempts of a task are not "
                     f"independent), {confidence:.0%} confidence.")
    suspect = [t for t in tasks if t["suspect"]]
    if suspect:
        notes.append(f"{len(suspect)} suspect task(s): judged infeasible in a majority of "
                     f">= {SUSPECT_MIN_EPISODES} episodes by >= {SUSPECT_MIN_AGENTS} agents; "
                     "`atlas fit --exclude-infeasible` leaves them out.")
    meta = {"by": by, "confidence": confidence, "categories": list(CATEGORIES),
            "investigated_episodes": sum(1 for r in rows if r.get("investigated")),
            "root_causes": [{"group": g, "causes": c} for g, c in causes.items()],
            "suspect_tasks": suspect, "infeasible_tasks": tasks, "task_verdicts": verdicts,
            "suspect_rule": {"min_episodes": SUSPECT_MIN_EPISODES,
                             "min_agents": SUSPECT_MIN_AGENTS, "majority": True}}
    return FailuresResult(rows=shares, meta=meta, notes=notes)
