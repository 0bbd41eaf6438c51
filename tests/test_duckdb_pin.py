"""DuckDB is pinned to the one release the DuckLake extension packages on PyPI are built for.

``duckdb-extension-ducklake`` and ``duckdb-extension-postgres-scanner`` (extra ``[lake]``)
ship one extension file each, for one DuckDB version; an extension built for another version
does not load. So the installed DuckDB, the pin in pyproject and the packages' directories
must agree, and the files must load with no ``INSTALL`` (there is no network).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import duckdb
import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def pinned(requirement_prefix: str, requirements: list[str]) -> str:
    """The version after ``==`` of the one requirement named ``requirement_prefix``."""
    (req,) = [r for r in requirements if r.split("==")[0].strip() == requirement_prefix]
    return req.split("==")[1].strip()


def test_installed_duckdb_is_the_pinned_one():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    version = pinned("duckdb", project["dependencies"])
    assert duckdb.__version__ == version
    lake = project["optional-dependencies"]["lake"]
    assert pinned("duckdb-extension-ducklake", lake) == version
    assert pinned("duckdb-extension-postgres-scanner", lake) == version


@pytest.mark.parametrize("package, extension", [
    ("duckdb_extension_ducklake", "ducklake"),
    ("duckdb_extension_postgres_scanner", "postgres_scanner"),
])
def test_lake_extensions_load_from_their_packages(package, extension, tmp_path):
    module = pytest.importorskip(package, reason="extra [lake] not installed")
    path = (Path(module.__file__).parent / "extensions" / f"v{duckdb.__version__}"
            / f"{extension}.duckdb_extension")
    assert path.is_file(), path
    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "extension_directory": str(tmp_path / "none")})
    con.load_extension(str(path))
    loaded = con.execute("SELECT loaded FROM duckdb_extensions() WHERE extension_name = ?",
                         [extension]).fetchone()
    assert loaded == (True,)
    if extension == "ducklake":  # a real lake round trip on a local DuckDB-file catalog
        con.execute(f"ATTACH 'ducklake:{tmp_path}/c.ducklake' AS lk "
                    f"(DATA_PATH '{tmp_path}/data')")
        con.execute("CREATE TABLE lk.t AS SELECT 42 AS x")
        assert con.execute("SELECT x FROM lk.t").fetchall() == [(42,)]

