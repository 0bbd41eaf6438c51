"""The store's tables hold the record contract: every field of every record has its
column, of a type that holds its JSON type, and no column is left unexplained.

A field added to a model (and so to :mod:`evalatlas.records.spec`) without a column, or a
column added without a field, fails here."""

from __future__ import annotations

import duckdb
import pytest

from evalatlas.records import spec
from evalatlas.store import schema

TABLES = {"experiments": spec.EXPERIMENT, "episodes": spec.EPISODE,
          "measurements": spec.MEASUREMENT}


def _duckdb_types(f: spec.FieldSpec) -> set[str]:
    """The column types that hold field ``f``'s JSON."""
    if f.json_type == "string":
        return {"VARCHAR"}
    if f.json_type == "integer":
        return {"BIGINT", "INTEGER"}
    if f.json_type == "number":
        return {"DOUBLE"}
    if f.json_type == "boolean":
        return {"BOOLEAN"}
    if f.json_type == "array" and f.items == "string":
        return {"VARCHAR[]"}
    if f.json_type == "array" and f.items == "number":
        return {"DOUBLE[]"}
    return {"JSON"}  # objects, nested records, arrays of objects


def _stored(table: str) -> dict[str, spec.FieldSpec]:
    """Column -> the contract field it holds, through :data:`schema.FLATTENED`."""
    flat = schema.FLATTENED[table]
    out: dict[str, spec.FieldSpec] = {}
    for f in TABLES[table].fields:
        subs = {} if f.record is None or f.json_type != "object" else {
            sub.name: sub for sub in f.record.fields if f"{f.name}.{sub.name}" in flat}
        for name, sub in subs.items():
            out[flat[f"{f.name}.{name}"]] = sub
        if f.record is not None and subs and set(subs) != set(f.record.names):
            # partly flattened: the whole record must be kept too
            assert f.name in schema.declared_types(table), (
                f"{table}: {f.name} is partly flattened and has no JSON column")
        if not subs or set(subs) != set(f.record.names if f.record else ()):
            out[f.name] = f
    return out


@pytest.mark.parametrize("table", list(TABLES))
def test_every_contract_field_has_a_column_and_every_column_a_field(table: str) -> None:
    stored = _stored(table)
    columns = schema.declared_types(table)
    missing = set(stored) - set(columns)
    assert not missing, f"{table}: contract fields without a column: {sorted(missing)}"
    unexplained = set(columns) - set(stored) - set(schema.STORE_COLUMNS[table])
    assert not unexplained, f"{table}: columns that hold no contract field: {unexplained}"
    assert not set(stored) & set(schema.STORE_COLUMNS[table])


@pytest.mark.parametrize("table", list(TABLES))
def test_column_types_hold_the_fields_json_types(table: str) -> None:
    columns = schema.declared_types(table)
    for column, f in _stored(table).items():
        assert columns[column] in _duckdb_types(f), (table, column, columns[column], f)


def test_a_new_field_without_a_column_is_caught() -> None:
    """The check itself: a contract that grew a field the tables lack fails it."""
    from pydantic import Field

    from evalatlas.records.models import Measurement

    class Grown(Measurement):
        warmup_s: float | None = Field(None, ge=0)

    saved = TABLES["measurements"]
    TABLES["measurements"] = spec.spec_of(Grown)
    try:
        with pytest.raises(AssertionError, match="warmup_s"):
            test_every_contract_field_has_a_column_and_every_column_a_field("measurements")
    finally:
        TABLES["measurements"] = saved


def test_column_types_read_off_the_ddl_are_the_created_tables() -> None:
    con = duckdb.connect()
    con.execute(schema.DDL)
    for table in (*TABLES, "quarantine"):
        created = {r[0]: r[1] for r in con.execute(f"DESCRIBE {table}").fetchall()}
        assert schema.declared_types(table) == created


ALL_TABLES = ("meta", "experiments", "episodes", "measurements", "quarantine",
              "ingest_batches", "files")


def test_a_file_store_declares_its_repeating_text_columns_dictionary_and_nothing_else(
) -> None:
    """:func:`schema.file_store_ddl` creates the tables of :data:`schema.DDL`, column for
    column and type for type, and declares ``USING COMPRESSION dictionary`` exactly the
    text columns :data:`schema.DICTIONARY_COLUMNS` names (every text column of a table
    it maps to None)."""
    plain, fil = duckdb.connect(), duckdb.connect()
    plain.execute(schema.DDL)
    fil.execute(schema.file_store_ddl())
    for table in ALL_TABLES:
        assert fil.execute(f"DESCRIBE {table}").fetchall() == \
            plain.execute(f"DESCRIBE {table}").fetchall()
    declared, table = set(), ""
    for line in schema.file_store_ddl().splitlines():
        if line.startswith("CREATE TABLE"):
            table = line.split()[5]
        elif "USING COMPRESSION dictionary" in line:
            declared.add((table, line.split()[0]))
    want = set()
    for table, names in schema.DICTIONARY_COLUMNS.items():
        text = [r[0] for r in plain.execute(f"DESCRIBE {table}").fetchall()
                if r[1] in ("VARCHAR", "JSON")]
        assert names is None or set(names) <= set(text), table
        want |= {(table, c) for c in (text if names is None else names)}
    assert declared == want and len(want) > 20


def test_a_dictionary_column_stores_a_value_too_long_for_a_dictionary(tmp_path) -> None:
    """DuckDB falls back to storing a value its dictionary cannot hold (larger than a
    block) uncompressed: nothing is lost, the text reads back the same after a restart."""
    db = str(tmp_path / "s.duckdb")
    con = duckdb.connect(db)
    con.execute(schema.file_store_ddl())
    long_text = "x" * 3_000_000
    long_json = '{"a": "' + "y" * 400_000 + '"}'
    con.execute("INSERT INTO experiments (experiment_id, source_file, extra) "
                "SELECT 'e' || i, CASE WHEN i = 2 THEN ? ELSE 's' END, "
                "CASE WHEN i = 3 THEN ? ELSE '{}' END FROM range(6) r(i)",
                [long_text, long_json])
    con.execute("CHECKPOINT")
    con.close()
    con = duckdb.connect(db, read_only=True)
    rows = con.execute("SELECT experiment_id, source_file, extra::VARCHAR FROM experiments "
                       "ORDER BY experiment_id").fetchall()
    assert [r[1] for r in rows] == ["s", "s", long_text, "s", "s", "s"]
    assert [r[2] for r in rows] == ["{}", "{}", "{}", long_json, "{}", "{}"]
