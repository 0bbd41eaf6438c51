"""Lazy command registration and global options anywhere, for the root ``evalatlas`` group.

Why: importing every command module (and with them duckdb, pyarrow, numpy, pydantic)
made ``evalatlas --version`` cost over a second. The commands, their modules and their
one-line help are a static table here (:data:`COMMANDS`); ``--help`` shows stubs built
from it, and running a command imports its module and calls its ``register`` on a scratch
app to get the real command. A test checks the table against what the modules register
(it replaced a reader that parsed the modules' source at run time).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperGroup


def _no_flag_metavar() -> None:
    """Help shows no ``<bool>`` beside a flag (``--force <bool>`` reads as if it took a
    value): typer 0.29 prints every parameter's type; a flag has none to type."""
    from typer.core import TyperOption

    if getattr(TyperOption.display_type_rich, "_evalatlas", False):
        return
    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        return shown(self, ctx)

    display_type_rich._evalatlas = True  # type: ignore[attr-defined]  # marks it patched
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]  # typer has no hook


_no_flag_metavar()

_PACKAGE = "evalatlas.cli"


@dataclass(frozen=True)
class CommandInfo:
    """A command of the root group: its name, the module whose ``register(app)`` adds
    it, and its one-line help (the first paragraph of the help the module gives)."""

    name: str
    module: str
    help: str


def _c(name: str, module: str, help: str) -> CommandInfo:
    return CommandInfo(name, f"{_PACKAGE}.{module}", help)


COMMANDS: dict[str, CommandInfo] = {c.name: c for c in (
    _c('agents', 'agents',
       'List agents with ids, episodes, tasks and benchmarks: the names other '
       'commands take.'),
    _c('atlas', 'atlas',
       'Agent x task matrix: item response theory, drift, cheap evaluation.'),
    _c('codequality', 'codequality',
       'SLOC, comment ratio, cyclomatic complexity, maintainability index, '
       'Halstead, imports, classes, functions and type-annotation coverage, '
       'per file and in total.'),
    _c('compare', 'compare',
       'Success rate and mean score of each side on the tasks both ran, the '
       'difference with its interval and test (McNemar or Wilcoxon; Holm-'
       'adjusted for more than two), cost, and a plain sentence.'),
    _c('compare-frameworks', 'compare_frameworks',
       'Compare agent frameworks: summary, scorecard, latency, profile '
       'metrics, code quality, per-question results, correctness intervals and'
       ' paired differences.'),
    _c('export', 'export',
       'Export the store (seed JSONL, Parquet, Every Eval Ever).'),
    _c('failures', 'failures',
       'Why agents fail: per agent, the share of investigated failures in each'
       ' category (with intervals), the top root causes, and the tasks judged '
       'infeasible (suspect when most of >= 3 episodes by >= 2 agents say so).'
       ' Fill findings with `investigate`.'),
    _c('formats', 'formats',
       'List the input formats, in the order detection tries them, each with '
       'an example.'),
    _c('gate', 'gate',
       'Fail a CI build only when the candidate is really worse than the '
       'baseline (paired one-sided tests, Holm across benchmarks, minimum '
       'detectable drop); `gate plan` sizes a suite.'),
    _c('ingest', 'ingest',
       'Ingest evaluation outputs into the store (idempotent, transactional, '
       'streaming).'),
    _c('investigate', 'investigate',
       'Ask an LLM why failed episodes failed and whether their tasks are '
       "feasible; store the answers as the episodes' findings. Harness "
       'outcomes are never changed.'),
    _c('judge', 'judge',
       'Judge stored episodes this judge has not scored. Verdicts become named'
       " scores (judge.correctness ...); a harness's reward is never changed, "
       "and an episode without one gets the judge's outcome, marked "
       'outcome_source judge:<model>. Failures change nothing.'),
    _c('judge-rubric', 'judge',
       'Grade one agent output against a rubric with one or more LLM judges.'),
    _c('lake', 'lake',
       'A DuckLake store: what it holds, and compaction.'),
    _c('price', 'price',
       'Cost of INPUT/OUTPUT/cache tokens for MODEL, with the price source.'),
    _c('quarantine', 'quarantine',
       'List input that was rejected during ingest, newest batch first.'),
    _c('report', 'report',
       'Leaderboard, intervals, paired comparisons, cost vs accuracy, agent x '
       'task heatmap, per-task drill-down (and tiers, speedups, framework '
       'scorecards where the data has them) in one HTML file that opens '
       'offline.'),
    _c('run', 'run',
       "Run a framework over a scenario's questions (timeouts, repeats, "
       'judge), resumably.'),
    _c('schema', 'schema',
       'Print (or write) the JSON Schema of the records.'),
    _c('serve', 'serve',
       'Serve the store over HTTP: submissions, leaderboard, matrix, atlas and '
       'report.'),
    _c('speedups', 'speedups',
       'Speedup, advantage (levels 1-4, bootstrap interval over tasks), beat-'
       'oracle share, success, pass@k, cost and trajectory length per '
       'agent:model (FC-Eval seed).'),
    _c('submit', 'serve',
       'Upload result files to an `evalatlas serve` and print its answers (JSON'
       ' lines).'),
    _c('summary', 'summary',
       'Success rate with a Wilson interval, errors, tokens, cost and time per'
       ' group.'),
    _c('tokens', 'serve',
       'API tokens of `evalatlas serve`: add, list, revoke.'),
    _c('tiers', 'tiers',
       'Per tier: runs, pass rate [CI], impl rate, median composite, grade, '
       'cost, cost of pass and uplift [CI] against the baseline; then cross-'
       'tier variance and cost delta.'),
)}
"""Every command of the root group. A static table: ``--help`` lists these without
importing a command module; ``tests/cli/test_main.py`` checks that it is exactly what the
modules' ``register`` functions add, with the same help, so a new command module (or a
changed help line) fails that test until its row is here."""


def manifest() -> tuple[dict[str, CommandInfo], tuple[str, ...]]:
    """(command name -> info, modules to import to learn their commands): every command
    is in :data:`COMMANDS`, so the second is empty."""
    return COMMANDS, ()


class _Stub(typer.core.TyperCommand):
    """What ``--help`` lists for a command whose module is not imported yet."""


class LazyGroup(TyperGroup):
    """A TyperGroup that imports command modules on first use and hoists global options."""

    _loaded: set[str]

    def _load_module(self, module: str) -> None:
        loaded = self.__dict__.setdefault("_loaded", set())
        if module in loaded:
            return
        loaded.add(module)
        register = getattr(importlib.import_module(module), "register", None)
        if not callable(register):
            return
        scratch = typer.Typer(rich_markup_mode=getattr(self, "rich_markup_mode", None),
                              pretty_exceptions_enable=False)
        register(scratch)
        group = typer.main.get_group(scratch)
        for name, cmd in group.commands.items():
            self.commands[name] = cmd

    def list_commands(self, ctx: Any) -> list[str]:
        names = dict.fromkeys(self.commands)
        names.update(dict.fromkeys(manifest()[0]))
        return sorted(names)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands and not isinstance(self.commands[cmd_name], _Stub):
            return self.commands[cmd_name]
        info = manifest()[0].get(cmd_name)
        if info is None:
            return None
        return _Stub(name=cmd_name, help=info.help, short_help=info.help)

    def load_command(self, cmd_name: str) -> Any:
        """The real command: import its module and register it."""
        info = manifest()[0].get(cmd_name)
        if info is not None:
            self._load_module(info.module)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, cmd, rest = super().resolve_command(ctx, args)
        if isinstance(cmd, _Stub) or cmd is None:
            real = self.load_command(name) if name else None
            if real is not None:
                cmd = real
        return name, cmd, rest

    def invoke(self, ctx: Any) -> Any:
        """Run the command with signals handled and no traceback reaching the user
        (:mod:`evalatlas.cli.guard`)."""
        from evalatlas.cli.guard import guarded

        with guarded(ctx):
            return super().invoke(ctx)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self.hoist_global_options(ctx, list(args)))

    def hoist_global_options(self, ctx: Any, args: list[str]) -> list[str]:
        """Move this group's own options found after the subcommand to before it.

        An option is left where it is when the subcommand (or one of its subcommands)
        defines the same name, and nothing after ``--`` is touched.
        """
        globals_ = {o: p for p in self.params if p.param_type_name == "option"
                    for o in (*p.opts, *p.secondary_opts)}
        i = 0
        while i < len(args):  # skip global options before the subcommand
            key = args[i].split("=", 1)[0]
            if key not in globals_:
                break
            i += 1 if ("=" in args[i] or _is_flag(globals_[key])) else 2
        if i >= len(args) or args[i].startswith("-"):
            return args
        cmd = self.load_command(args[i])
        if cmd is None:
            return args
        taken = _option_names(cmd)
        before, after, moved = args[: i + 1], [], []
        j = i + 1
        while j < len(args):
            a = args[j]
            if a == "--":
                after += args[j:]
                break
            key = a.split("=", 1)[0]
            if key in globals_ and key not in taken:
                n = 1 if ("=" in a or _is_flag(globals_[key])) else 2
                moved += args[j:j + n]
                j += n
                continue
            after.append(a)
            j += 1
        return before[:i] + moved + before[i:] + after


def _is_flag(param: Any) -> bool:
    return bool(getattr(param, "is_flag", False) or getattr(param, "count", False))


def _option_names(cmd: Any) -> set[str]:
    names = {o for p in getattr(cmd, "params", []) for o in (*getattr(p, "opts", ()),
                                                             *getattr(p, "secondary_opts", ()))}
    for sub in getattr(cmd, "commands", {}).values():
        names |= _option_names(sub)
    return names
