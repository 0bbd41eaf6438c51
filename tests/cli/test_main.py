"""The root command: global options anywhere, lazy command registration, cheap start-up."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

import evalatlas
from evalatlas.cli import lazy
from evalatlas.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()
HEAVY = ("duckdb", "numpy", "pyarrow", "pandas", "pydantic", "scipy")


def _json(args: list[str], **kw) -> dict:
    r = runner.invoke(app, args, **kw)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_db_option_before_or_after_the_subcommand(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    r = runner.invoke(app, ["ingest", str(EXAMPLES), "--db", db])
    assert r.exit_code == 0, r.output
    assert "3 experiments, 180 episodes" in r.output and Path(db).exists()
    before = _json(["--db", db, "summary", "-f", "json"])
    after = _json(["summary", "-f", "json", "--db", db])
    equals_form = _json(["summary", f"--db={db}", "--format", "json"])
    assert before == after == equals_form
    assert {row["agent"] for row in after["rows"]} == {"planner-sonnet", "react-gpt-4o",
                                                       "tiny-mini"}
    # nested groups too, and global options on both sides of the command name
    out = tmp_path / "eps.jsonl"
    r = runner.invoke(app, ["export", "jsonl", str(out), "--db", db])
    assert r.exit_code == 0, r.output
    assert sum(1 for _ in out.open()) == 3 + 180  # experiment records, then episodes


def test_hoisting_leaves_subcommand_options_and_double_dash_alone() -> None:
    group = typer.main.get_command(app)
    ctx = group.make_context("evalatlas", ["--help"], resilient_parsing=True)
    hoist = group.hoist_global_options
    assert hoist(ctx, ["summary", "--by", "model", "--db", "x"]) == \
        ["--db", "x", "summary", "--by", "model"]
    assert hoist(ctx, ["--db", "a", "summary", "--db=b"]) == \
        ["--db", "a", "--db=b", "summary"]
    assert hoist(ctx, ["codequality", "--", "--db", "x"]) == ["codequality", "--", "--db", "x"]
    assert hoist(ctx, ["no-such-command", "--db", "x"]) == ["no-such-command", "--db", "x"]


def test_version_after_the_subcommand_and_unknown_command() -> None:
    r = runner.invoke(app, ["summary", "--version"])
    assert r.exit_code == 0 and r.stdout.startswith("evalatlas ")
    r = runner.invoke(app, ["sumary"])
    assert r.exit_code == 2 and "No such command" in r.output


def test_the_command_table_is_what_the_modules_register() -> None:
    """The static table (issue 22.7: it replaced a reader of the modules' source) has
    exactly the commands, modules and one-line help that importing every module of
    evalatlas.cli with a ``register`` gives: a new command module fails here until its
    row is in the table."""
    import evalatlas.cli as pkg

    eager = typer.Typer()
    owner: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"evalatlas.cli.{info.name}")
        if not callable(getattr(module, "register", None)):
            continue
        scratch = typer.Typer()
        module.register(scratch)
        for name in typer.main.get_group(scratch).commands:
            owner[name] = module.__name__
        module.register(eager)
    group = typer.main.get_group(eager)
    assert set(group.commands) == set(lazy.COMMANDS)
    assert {"summary", "compare", "ingest", "tiers", "export", "price"} <= set(owner)
    for name, cmd in group.commands.items():
        first = " ".join((cmd.help or "").strip().split("\n\n")[0].split())
        assert lazy.COMMANDS[name] == lazy.CommandInfo(name, owner[name], first), name
    assert lazy.manifest() == (lazy.COMMANDS, ())


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\n"
                          "print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_version_and_help_import_no_command_module_nor_heavy_library() -> None:
    for argv in (["--version"], ["--help"]):
        code = ("import sys\nfrom evalatlas.cli.main import main\nsys.argv = ['evalatlas', "
                + ", ".join(repr(a) for a in argv) + "]\ntry:\n    main()\n"
                "except SystemExit:\n    pass")
        mods = _modules_after(code)
        assert not [m for m in mods if m.split(".")[0] in HEAVY], argv
        assert "evalatlas.cli.summary" not in mods and "evalatlas.store" not in mods, argv


def test_import_evalatlas_is_cheap_and_lazy() -> None:
    mods = _modules_after("import evalatlas\nassert evalatlas.__version__")
    assert not [m for m in mods if m.split(".")[0] in HEAVY]
    mods = _modules_after("import evalatlas\nevalatlas.EpisodeRecord")
    assert "evalatlas.records" in mods


# Makes ``import pandas`` fail as it does where pandas is not installed (it is no core
# dependency).
_NO_PANDAS = ("import sys\nclass _NoPandas:\n    def find_spec(self, name, path=None, target=None):"
              "\n        if name.split('.')[0] == 'pandas':\n"
              "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
              "sys.meta_path.insert(0, _NoPandas())\n")


def test_ingest_of_small_inputs_does_not_need_pandas(tmp_path: Path) -> None:
    """Ingest works where pandas cannot be imported. (That pandas is merely absent from
    ``sys.modules`` after an ingest no longer holds where it is installed: duckdb 1.5 imports
    it itself when it binds a query parameter, duckdb/duckdb#18658.)"""
    code = (_NO_PANDAS + "from evalatlas.cli.main import main\n"
            f"sys.argv = ['evalatlas', '--db', {str(tmp_path / 's.duckdb')!r}, 'ingest', "
            f"{str(EXAMPLES)!r}]\ntry:\n    main()\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code")
    mods = _modules_after(code)
    assert "pandas" not in mods and "evalatlas.store.ingest" in mods
    r = runner.invoke(app, ["--db", str(tmp_path / "s.duckdb"), "summary", "-f", "json"])
    assert sum(row["episodes"] for row in json.loads(r.stdout)["rows"]) == 180


def test_the_exit_freeze_waits_for_the_interpreters_exit() -> None:
    """main() leaves the garbage collector alone while its process goes on (the freeze
    of :func:`evalatlas.cli.main._freeze_at_exit` runs at exit), and the process still
    exits cleanly with its output."""
    code = ("import gc, sys\nfrom evalatlas.cli.main import main\n"
            "sys.argv = ['evalatlas', '--version']\ntry:\n    main()\n"
            "except SystemExit:\n    pass\nprint('frozen', gc.get_freeze_count())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.splitlines()[-1] == "frozen 0"
    assert out.stdout.startswith("evalatlas ") and not out.stderr


def test_an_interrupt_through_exec_still_exits_130(tmp_path: Path) -> None:
    """A KeyboardInterrupt that left code run by ``exec`` of a string (as ``dataclasses``
    runs while a module is imported) and was handled by the CLI's guard ends ``python
    -m`` with 130, not by SIGINT (CPython noted it as unhandled; the guard clears that)."""
    (tmp_path / "interrupt_probe.py").write_text(
        "import os, signal, sys\n"
        "import typer\n"
        "from evalatlas import interrupts\n"
        "from evalatlas.cli import guard\n"
        "from evalatlas.cli.common import err_console\n"  # imported before, as in a command
        "with interrupts.handled():\n"
        "    try:\n"
        "        exec('import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\n'\n"
        "             'for _ in range(10 ** 8): pass')\n"
        "    except KeyboardInterrupt:\n"
        "        try:\n"
        "            guard._interrupted()\n"
        "        except typer.Exit as e:\n"
        "            sys.exit(e.exit_code)\n")
    src = str(Path(evalatlas.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), src])}
    out = subprocess.run([sys.executable, "-m", "interrupt_probe"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 130, (out.returncode, out.stderr)
    assert out.stderr.startswith("interrupted (Ctrl-C)")
