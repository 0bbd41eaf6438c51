"""Options every command shares (issue 21 point 7): ``--format`` names in any case, no
``<bool>`` beside a flag in any help screen."""

from __future__ import annotations

from typer.testing import CliRunner

from evalatlas.cli.lazy import manifest
from evalatlas.cli.main import app

runner = CliRunner()


def _help(*args: str) -> str:
    res = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.stdout


def test_no_bool_metavar_in_any_help() -> None:
    commands = list(manifest()[0])
    assert "agents" in commands and "ingest" in commands
    screens = {"": _help()}
    for name in commands:
        screens[name] = _help(name)
    for sub in ("fit", "items", "estimate", "next-tasks", "matrix"):
        screens[f"atlas {sub}"] = _help("atlas", sub)
    for name, text in screens.items():
        assert "<bool>" not in text, name
    assert "--force " in screens["ingest"] and "--new-agent" in screens["atlas estimate"]


def test_format_names_in_any_case() -> None:
    res = runner.invoke(app, ["formats", "--format", "JSON"])
    assert res.exit_code == 0 and '"schema"' in res.stdout
    res = runner.invoke(app, ["formats", "-f", "Markdown"])
    assert res.exit_code == 0 and res.stdout.startswith(("|", "#", "**"))
    res = runner.invoke(app, ["formats", "-f", "yaml"])
    assert res.exit_code == 2
