"""Row building keeps every field of the record contract: a record with every field set
(:func:`conftest.contract_record`, generated from :mod:`evalatlas.records.spec`) comes
out with each value in the column :data:`evalatlas.store.schema.FLATTENED` names.

A field added to a model and to the tables but not to the row builder fails here."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalatlas.records import spec
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement
from evalatlas.store import rows, schema

CASES = {
    "experiments": (spec.EXPERIMENT, ExperimentRecord, rows.experiment_row,
                    schema.EXPERIMENT_COLUMNS),
    "episodes": (spec.EPISODE, EpisodeRecord, rows.episode_row, schema.EPISODE_COLUMNS),
    "measurements": (spec.MEASUREMENT, Measurement, rows.measurement_row,
                     schema.MEASUREMENT_COLUMNS),
}


def _cell(value: Any, column_type: str) -> Any:
    return json.loads(value) if column_type == "JSON" and value is not None else value


@pytest.mark.parametrize("table", list(CASES))
def test_every_field_lands_in_its_column(table: str, full_record) -> None:
    rspec, model, build, columns = CASES[table]
    record = model.model_validate(full_record(rspec))
    dumped = record.model_dump(mode="json")
    types = schema.declared_types(table)
    row = dict(zip(columns, build(record, "in.jsonl", 7), strict=True))
    flat = schema.FLATTENED[table]
    seen = set()
    for f in rspec.fields:
        for sub in (f.record.fields if f.record and f.json_type == "object" else ()):
            column = flat.get(f"{f.name}.{sub.name}")
            if column is not None:
                seen.add(column)
                assert row[column] == dumped[f.name][sub.name], (table, column)
        if f.name in row:
            seen.add(f.name)
            assert _cell(row[f.name], types[f.name]) == dumped[f.name], (table, f.name)
    assert seen | set(schema.STORE_COLUMNS[table]) == set(columns)
    assert (row["source_file"], row["ingest_batch"]) == ("in.jsonl", 7)


def test_row_problem_names_the_record_field_of_a_flattened_column() -> None:
    rec = EpisodeRecord(experiment_id="e", task_id="t", trajectory_id="x", reward=1.0,
                        usage={"model": "gpt\ud800"})
    field, reason = rows.row_problem("episodes", rows.episode_row(rec, None, 1))
    assert field == "usage.model" and "lone surrogate" in reason


def test_json_text_is_compact_json_of_the_same_value_and_refuses_what_json_dumps_refuses(
) -> None:
    values = [{"a": 1, "b": [1.5, None, "é\u2028\x01"], "c": {"d": -0.0}},
              {"n": 123456789012345678901234567890, "f": 1e16, "g": 1e-7},
              {"usage": None}, [1, 2], {1: "int key"}]
    for v in values:
        text = rows.json_text(v)
        assert json.loads(text) == json.loads(json.dumps(v))
        assert ": " not in text  # the compact form
    for bad in ({"a": float("nan")}, {"a": [float("inf")]}, {"a": {"b": -float("inf")}}):
        with pytest.raises(ValueError, match="JSON compliant"):
            rows.json_text(bad)
    # what msgspec cannot encode is json.dumps's text, judged when the row is checked
    assert rows.json_text({"a": "\ud800"}) == '{"a": "\ud800"}'
    assert rows.json_text({None: 1}) == '{"null": 1}'


def test_json_text_runs_json_dumps_only_where_it_could_refuse() -> None:
    """msgspec writes a null for None and for NaN alike; json_text checks a text holding
    a null by json.dumps (which refuses NaN and infinities) unless the value is plain
    JSON with finite floats (rows._plain_finite), where json.dumps cannot refuse: the
    same texts and the same refusals either way, without the second encoding."""
    import math

    nan, inf = float("nan"), math.inf
    plain = [None, {"a": None}, {"a": [None, 1.5, {"b": None}], "c": True},
             [None, "x", -0.0, 2**70], {"deep": [[[[None]]]]}]
    for v in plain:
        assert rows._plain_finite(v)
        assert json.loads(rows.json_text(v)) == json.loads(json.dumps(v, allow_nan=False))
    # not plain: json.dumps decides (NaN and infinities anywhere are refused; a tuple or
    # an int key is encoded by both as before)
    for bad in (nan, {"a": None, "b": nan}, [None, [inf]], {"a": {"b": [None, -inf]}},
                {"a": (None, nan)}):
        assert not rows._plain_finite(bad)
        with pytest.raises(ValueError, match="JSON compliant"):
            json.dumps(bad, allow_nan=False)
        with pytest.raises(ValueError, match="JSON compliant"):
            rows.json_text(bad)
    for odd in ({1: None}, {"a": (None, 1)}):
        assert not rows._plain_finite(odd)
        assert json.loads(rows.json_text(odd)) == json.loads(json.dumps(odd))
    deep: Any = None
    for _ in range(rows._MAX_WALK + 5):
        deep = {"x": deep}
    assert not rows._plain_finite(deep)  # json.dumps decides past the walk's depth
    assert json.loads(rows.json_text(deep)) == json.loads(json.dumps(deep))


def test_checked_row_is_the_records_row(full_record) -> None:
    """An episode handed over as its checked fields (:func:`checked_episode`, what an
    adapter gives the ingest inside ``handing_over_rows``) makes the row its validated
    record makes: every field set (but the two only validation builds), with and
    without the derivations (total tokens, cost source, success, outcome source)."""
    from evalatlas.records.strict import checked_episode

    data = {**full_record(spec.EPISODE), "verifier": None, "findings": None}
    derived = {**data, "success": None, "outcome_source": None,
               "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_cost_usd": 0.5},
               "judge_usage": {"prompt_tokens": 1, "completion_tokens": 2,
                               "cost_source": "computed: book"},
               "scores": {"a": float("nan"), "b": 2, "c": None}}
    minimal = {k: data[k] for k in spec.EPISODE.required}
    for one in (data, derived, minimal, {**minimal, "reward": None}):
        checked = checked_episode(json.loads(json.dumps(one, allow_nan=True)))
        assert checked is not None, one
        record = EpisodeRecord.model_validate(one)
        assert rows.checked_row(checked, "in.jsonl", 7) == rows.episode_row(
            record, "in.jsonl", 7)
