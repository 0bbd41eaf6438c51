"""The DuckLake store (store/lake.py) on a local catalog file and on PostgreSQL: the same
tables, the same answers as a file store, snapshots, errors (issue 23)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.store.lake_helpers import cli, same, without_lake

import evalatlas as ea
from evalatlas.errors import StoreError
from evalatlas.store import lake as lake_mod
from evalatlas.store.schema import EPISODE_COLUMNS

if lake_mod._extension_file("ducklake") is None:  # evalatlas[lake] for this DuckDB
    pytest.skip("needs evalatlas[lake] (duckdb-extension-ducklake built for this DuckDB)",
                allow_module_level=True)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

DEMO_COMMANDS = [
    ("summary",), ("summary", "--by", "label:tier"), ("summary", "--by", "benchmark"),
    ("tiers",), ("agents",), ("failures",), ("quarantine",), ("speedups",),
]


def _ingest_both(tmp_path: Path, lake: str, data: Path | None, *inputs: Path) -> str:
    file_db = str(tmp_path / "file.duckdb")
    for db in (file_db, lake):
        for src in inputs:
            cli(db, "ingest", str(src), data_path=data if db == lake else None)
    return file_db


def _same_answers(file_db: str, lake: str, commands: list[tuple[str, ...]]) -> None:
    for cmd in commands:
        a = cli(file_db, *cmd, "--format", "json")
        b = cli(lake, *cmd, "--format", "json")
        assert "lake" not in a and isinstance(b["lake"]["snapshot"], int), cmd
        same(a, without_lake(b), "/".join(cmd))


def test_local_lake_has_the_store_tables_and_the_same_answers(tmp_path: Path) -> None:
    lake = f"ducklake:{tmp_path / 'atlas.ducklake'}"
    file_db = _ingest_both(tmp_path, lake, None, EXAMPLES)
    _same_answers(file_db, lake, DEMO_COMMANDS)
    with ea.open(lake, read_only=True) as store:
        cols = [r["column_name"] for r in store.query(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = 'lake' AND "
            "table_name = 'episodes' ORDER BY column_index")]
        assert cols == EPISODE_COLUMNS
        assert store.count("episodes") == 180 and store.snapshot is not None
    # DuckLake's default data path for a file catalog, beside it
    assert list((tmp_path / "atlas.ducklake.files").rglob("*.parquet"))


def test_reingest_is_skipped_and_forced_reingest_stores_each_episode_once(
        tmp_path: Path) -> None:
    lake = f"ducklake:{tmp_path / 'atlas.ducklake'}"
    file_db = _ingest_both(tmp_path, lake, None, EXAMPLES)
    again = [cli(db, "ingest", str(EXAMPLES), "--format", "json") for db in (file_db, lake)]
    assert again[0] == again[1]  # the JSONL file is unchanged: skipped on both
    assert again[1]["unchanged"] == [str(EXAMPLES / "jsonl" / "tiny-mini-toybench.jsonl")]
    cli(lake, "ingest", str(EXAMPLES), "--force")
    with ea.open(lake, read_only=True) as store:
        assert store.count("episodes") == 180
        assert store.query("SELECT count(*) AS n FROM (SELECT DISTINCT experiment_id, "
                           "trajectory_id FROM episodes)")[0]["n"] == 180


def test_snapshot_reproduces_an_earlier_answer(tmp_path: Path) -> None:
    lake = f"ducklake:{tmp_path / 'atlas.ducklake'}"
    cli(lake, "ingest", str(EXAMPLES / "jsonl"))
    first = cli(lake, "summary", "--format", "json")
    snap = first["lake"]["snapshot"]
    cli(lake, "ingest", str(EXAMPLES))
    later = cli(lake, "summary", "--format", "json")
    assert later["lake"]["snapshot"] > snap and later["rows"] != first["rows"]
    again = cli(lake, "--snapshot", str(snap), "summary", "--format", "json")
    assert again == first
    with ea.open(lake, read_only=True, snapshot=snap) as store:
        assert store.snapshot == snap
    with pytest.raises(ea.ArgumentError, match="read_only=True"):
        ea.open(lake, snapshot=snap)
    with pytest.raises(StoreError, match="no snapshot 999"):
        ea.open(lake, read_only=True, snapshot=999)
    with pytest.raises(ea.ArgumentError, match="only a lake"):
        ea.Store(str(tmp_path / "f.duckdb"), snapshot=1)


def test_missing_lake_and_missing_extra_are_one_line_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = f"ducklake:{tmp_path / 'none.ducklake'}"
    with pytest.raises(StoreError, match="does not exist"):
        ea.open(lake, read_only=True)
    assert not (tmp_path / "none.ducklake").exists()
    monkeypatch.setattr(lake_mod, "_extension_file", lambda name: None)
    with pytest.raises(StoreError, match=r"needs the extra evalatlas\[lake\]") as err:
        lake_mod.load_extensions(_NoLoad(), "file")
    assert "duckdb-extension-ducklake" in str(err.value)


class _NoLoad:
    def execute(self, sql: str) -> None:
        import duckdb

        raise duckdb.IOException(f"Extension not found ({sql})")


# --- PostgreSQL catalog -----------------------------------------------------------------


def test_postgres_lake_gives_the_file_store_answers(pg_lake: tuple[str, Path],
                                                    tmp_path: Path) -> None:
    lake, data = pg_lake
    file_db = _ingest_both(tmp_path, lake, data, EXAMPLES)
    _same_answers(file_db, lake, DEMO_COMMANDS)


def test_atomic_on_a_postgres_lake_is_one_transaction_under_the_commit_lock(
        pg_lake: tuple[str, Path]) -> None:
    """``Store.atomic()`` (a submission to ``evalatlas serve``) on a lake: the commit lock
    is held from its BEGIN to its end, the batches inside commit together, and an error
    inside leaves the snapshot before it (nothing of the batches)."""
    from evalatlas.store.ingest import ingest_paths

    lake, data = pg_lake
    with ea.open(lake, data_path=data) as store:
        lock = store.con._lock
        assert not lock.held
        with pytest.raises(RuntimeError, match="abandon"), store.atomic():
            report = ingest_paths(store, [EXAMPLES], atomic=True, batch_size=50)
            assert report.episodes == 180 and lock.held
            raise RuntimeError("abandon the submission")
        assert not lock.held and store.count("episodes") == 0
        assert store.count("ingest_batches") == 0
        with store.atomic():
            ingest_paths(store, [EXAMPLES], atomic=True, batch_size=50)
        assert not lock.held
    with ea.open(lake, read_only=True) as reader:
        assert reader.count("episodes") == 180
        batches = reader.count("ingest_batches")
        assert batches > 1  # several batches, one snapshot: they committed together
        rows = reader.query("SELECT count(*) AS n FROM lake.snapshots() "
                            "WHERE changes::VARCHAR LIKE '%inserted%'")
        assert rows[0]["n"] >= 1


def test_postgres_lake_needs_a_data_path_only_at_creation(pg_lake: tuple[str, Path],
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    lake, data = pg_lake
    monkeypatch.delenv("EVALATLAS_DATA_PATH", raising=False)
    with pytest.raises(StoreError, match="needs a data path"):
        ea.open(lake)
    ea.open(lake, data_path=data).close()
    with ea.open(lake) as store:  # remembered by the catalog
        assert store.count("episodes") == 0


def test_unreachable_postgres_names_host_and_port_without_password(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lake = f"ducklake:postgres:dbname=x host=127.0.0.1 port={port} user=u password=hunter2"
    with pytest.raises(StoreError) as err:
        ea.open(lake, data_path=tmp_path, wait=0.3)
    text = str(err.value)
    assert f"127.0.0.1:{port}" in text and "hunter2" not in text and "\n" not in text
    assert "waited 0.3 s" in text


# --- maintenance: lake info, lake compact, export lake -----------------------------------


def test_export_lake_moves_a_file_store_and_info_and_compact_report_it(
        tmp_path: Path) -> None:
    file_db = str(tmp_path / "file.duckdb")
    cli(file_db, "ingest", str(EXAMPLES))
    cli(file_db, "atlas", "fit", "--model", "1pl", "--format", "json")  # a stored fit too
    lake = f"ducklake:{tmp_path / 'moved.ducklake'}"
    out = cli(file_db, "export", "lake", lake, "--format", "json")
    counts = {r["table"]: r["rows"] for r in out["rows"]}
    assert counts["episodes"] == 180 and counts["experiments"] == 3
    assert counts["atlas_fits"] == 1
    _same_answers(file_db, lake, DEMO_COMMANDS)
    # exporting again replaces rows by key: nothing doubles
    cli(file_db, "export", "lake", lake)
    info = cli(lake, "lake", "info", "--format", "json")
    assert info["schema"] == "evalatlas.lake-info/1"
    rows = {r["table"]: r for r in info["rows"]}
    assert rows["episodes"]["rows"] == info["episodes"] == 180
    assert info["snapshots"] >= 3 and info["newest_snapshot"] == info["snapshot"]
    files_before = sum(r["data_files"] for r in info["rows"])
    done = cli(lake, "lake", "compact", "--older-than", "0", "--format", "json")
    assert done["schema"] == "evalatlas.lake-compact/1" and done["older_than_s"] == 0
    row = done["rows"][0]
    assert row["data_files_before"] == files_before
    assert row["expired_snapshots"] >= 1
    _same_answers(file_db, lake, DEMO_COMMANDS)  # compaction changes no answer
    after = cli(lake, "lake", "info", "--format", "json")
    # inlined rows (small batches live in the catalog) are now Parquet files
    assert all(r["data_files"] >= 1 for r in after["rows"] if r["rows"]), after["rows"]
    assert sum(r["data_files"] for r in after["rows"]) == row["data_files_after"]
    assert after["snapshots"] < info["snapshots"]  # expired ones are gone
    again = cli(lake, "lake", "compact", "--older-than", "0", "--format", "json")["rows"][0]
    assert again["data_files_after"] <= row["data_files_after"]


def test_lake_commands_on_a_file_store_say_so(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evalatlas.cli.main import app

    file_db = str(tmp_path / "file.duckdb")
    cli(file_db, "ingest", str(EXAMPLES / "jsonl"))
    r = CliRunner().invoke(app, ["--db", file_db, "lake", "info"])
    assert r.exit_code == 2 and "is a DuckDB file, not a lake" in r.output
    r = CliRunner().invoke(app, ["--db", file_db, "lake", "compact", "--older-than", "soon"])
    assert r.exit_code == 2 and "30m, 12h, 7d" in r.output
    with ea.open(file_db, read_only=True) as store, pytest.raises(ea.ArgumentError):
        store.export_lake(str(tmp_path / "not-a-lake.duckdb"))


FIXTURE_FOLDERS = ["cube", "eee", "formulacode", "inspect", "scylla", "swebench-java-verified",
                   "swebench-pro", "swebench-verified", "tau-bench", "terminal-bench"]
FIXTURE_COMMANDS = [("summary",), ("agents",), ("quarantine",), ("speedups",)]


@pytest.mark.parametrize("folder", FIXTURE_FOLDERS)
def test_every_fixture_folder_gives_the_same_answers_on_a_lake(
        folder: str, fixtures: Path, tmp_path: Path) -> None:
    """The real fixtures, folder by folder, into a file store and into a lake: the same
    JSON (ingest reports, then each command's rows)."""
    from typer.testing import CliRunner

    from evalatlas.cli.main import app

    lake = f"ducklake:{tmp_path / 'f.ducklake'}"
    file_db = str(tmp_path / "f.duckdb")
    reports = []
    for db in (file_db, lake):
        r = CliRunner().invoke(app, ["--db", db, "ingest", str(fixtures / folder),
                                     "--format", "json"])
        assert r.exit_code in (0, 1), r.output  # 1: some input quarantined, as on a file
        reports.append((r.exit_code, r.stdout))
    assert reports[0] == reports[1]
    for cmd in FIXTURE_COMMANDS:
        outs = [CliRunner().invoke(app, ["--db", db, *cmd, "--format", "json"])
                for db in (file_db, lake)]
        assert outs[0].exit_code == outs[1].exit_code, (cmd, outs[0].output, outs[1].output)
        if outs[0].exit_code == 0:
            same(json.loads(outs[0].stdout), without_lake(json.loads(outs[1].stdout)),
                 f"{folder}/{cmd[0]}")
        else:  # the same refusal (no measurements for speedups, say)
            assert outs[0].output.replace(file_db, "DB") == outs[1].output.replace(
                str(lake).split(":", 1)[1], "DB").replace("ducklake:DB", "DB"), cmd


def test_report_and_atlas_name_the_snapshot_read(tmp_path: Path) -> None:
    lake = f"ducklake:{tmp_path / 'atlas.ducklake'}"
    cli(lake, "ingest", str(EXAMPLES))
    snap = cli(lake, "summary", "--format", "json")["lake"]["snapshot"]
    html = tmp_path / "r.html"
    cli(lake, "--snapshot", str(snap), "report", "-o", str(html))
    assert f"at snapshot {snap} (<code>--snapshot {snap}</code>" in html.read_text()
    fit = cli(lake, "atlas", "fit", "--model", "1pl", "--format", "json")
    assert fit["lake"]["location"] == lake  # a writer (the fit is stored): no pinned snapshot


def test_unwritable_data_path_is_a_clear_error_and_keeps_the_snapshot(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evalatlas.cli.main import app

    data = tmp_path / "data"
    data.mkdir()
    lake = f"ducklake:{tmp_path / 'atlas.ducklake'}"
    cli(lake, "ingest", str(EXAMPLES / "jsonl"), data_path=data)
    before = cli(lake, "summary", "--format", "json")
    data.rename(tmp_path / "moved")
    data.write_text("not a folder")  # where the Parquet files must go (even as root)
    r = CliRunner().invoke(app, ["--db", lake, "ingest", str(EXAMPLES / "evallogs")])
    assert r.exit_code == 2, r.output
    assert "cannot write to the lake" in r.output and "keeps its snapshot" in r.output
    assert "Traceback" not in r.output
    data.unlink()
    (tmp_path / "moved").rename(data)
    after = cli(lake, "summary", "--format", "json")
    assert after["lake"]["snapshot"] == before["lake"]["snapshot"]  # nothing committed
    assert after["rows"] == before["rows"]


def test_server_gone_between_attach_and_tables_is_the_unreachable_line(
        pg_lake: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The server may stop after the lake is attached and before its tables are read (a
    stopped server mid-ingest, under load): the same one host:port line as at attach."""
    import duckdb

    lake, data = pg_lake
    ea.open(lake, data_path=data).close()

    def gone(con: object) -> bool:
        raise duckdb.IOException("connection to server at \"127.0.0.1\" failed: "
                                 "Connection refused")

    monkeypatch.setattr(lake_mod, "tables_present", gone)
    with pytest.raises(StoreError) as err:
        ea.open(lake)
    port = lake.split("port=")[1].split()[0]
    assert str(err.value).startswith("cannot reach the lake's PostgreSQL catalog at "
                                     f"127.0.0.1:{port}"), err.value
