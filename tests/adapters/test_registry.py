"""The registry's static table is what the adapter modules define, and detection with it
imports only the modules it needs while choosing the adapter it chose before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from evalatlas.adapters import registry
from evalatlas.adapters.registry import ADAPTER_TABLE, AdapterRow, adapter_named, all_adapters


def test_the_table_lists_every_adapter_the_modules_define() -> None:
    """A new adapter module (or a changed name, kind or priority) without its row fails."""
    found = sorted(((AdapterRow(module, a.name, a.kind, a.priority), a)
                    for module, a in registry.discover()),
                   key=lambda ra: (ra[0].priority, ra[0].name))
    assert [row for row, _ in found] == list(ADAPTER_TABLE)
    assert len({row.name for row in ADAPTER_TABLE}) == len(ADAPTER_TABLE)
    assert all_adapters() == tuple(a for _, a in found)  # the same objects, same order


def test_the_table_is_in_detection_order() -> None:
    keys = [(row.priority, row.name) for row in ADAPTER_TABLE]
    assert keys == sorted(keys)


def test_adapter_named_is_the_tables_adapter() -> None:
    for row in ADAPTER_TABLE:
        a = adapter_named(row.name)
        assert (a.name, a.kind, a.priority) == (row.name, row.kind, row.priority)


def _imported_adapter_modules(code: str) -> set[str]:
    src = Path(registry.__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(m for m in sys.modules "
         "if m.startswith('evalatlas.adapters.')))"],
        capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONPATH=str(src)))
    names = {m.rsplit(".", 1)[1] for m in out.stdout.split()}
    return names & {row.module for row in ADAPTER_TABLE}


def test_detecting_a_jsonl_file_imports_only_the_adapters_tried(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"experiment_id": "e", "task_id": "t"}\n')
    code = ("from pathlib import Path\nfrom evalatlas.adapters.registry import detect\n"
            f"assert detect(Path({str(path)!r})).name == 'jsonl'")
    jsonl = ADAPTER_TABLE.index(next(r for r in ADAPTER_TABLE if r.name == "jsonl"))
    tried = {row.module for row in ADAPTER_TABLE[:jsonl + 1] if row.kind == "file"}
    assert _imported_adapter_modules(code) == tried


def test_a_named_format_imports_only_its_module() -> None:
    code = "from evalatlas.adapters.registry import adapter_named\nadapter_named('asv')"
    assert _imported_adapter_modules(code) == {"asv"}
