"""Every script in benchmarks/ still starts: it imports, and the ones with options print
their ``--help`` (the 100M-episode generator imported a function renamed in the package
and failed at its first line, and nothing noticed until a scale run needed it).

Cheap on purpose: one process, each script loaded as a module (its ``main`` is not run
on import) and ``main()`` called with ``--help``, which argparse answers before any
work."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(p for p in BENCH.glob("*.py"))


def test_the_scripts_are_all_found():
    names = {p.name for p in SCRIPTS}
    assert {"bench_adapters.py", "gen_episodes_parquet.py", "synth.py"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_script_imports_and_answers_help(script: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(BENCH))  # the scripts import their siblings
    spec = importlib.util.spec_from_file_location(f"_bench_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = script.read_text(encoding="utf-8")
    if '__name__ == "__main__"' not in text:
        return  # a helper module (synth, measure): importing it is its test
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"
    if "argparse" not in text:
        return  # no options: --help would run the benchmark itself
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as done:
        module.main()
    assert done.value.code == 0
    assert "usage:" in capsys.readouterr().out
