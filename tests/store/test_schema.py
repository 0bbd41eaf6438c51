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
