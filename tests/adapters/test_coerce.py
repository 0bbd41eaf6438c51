"""The one coercion rule (adapters/coerce.py), value by value."""

from __future__ import annotations

import pytest

from evalatlas.adapters import coerce
from evalatlas.adapters.coerce import Coerced, Fields, Refused
from evalatlas.errors import InputError

MISSING = "missing"
REFUSED = "refused"

# (rule, value, strings, expected): expected is a value, MISSING (None with a note) or
# REFUSED
CASES = [
    ("number", None, False, None),
    ("number", 3, False, 3.0),
    ("number", 0.25, False, 0.25),
    ("number", True, False, REFUSED),          # booleans are not numbers
    ("number", False, True, REFUSED),
    ("number", float("nan"), False, MISSING),  # not finite is missing
    ("number", float("inf"), False, MISSING),
    ("number", "NaN", False, MISSING),
    ("number", "inf", False, MISSING),
    ("number", "-Infinity", True, MISSING),
    ("number", "1e999", False, MISSING),
    ("number", "0.7", False, REFUSED),         # numeric strings only where documented
    ("number", "0.7", True, 0.7),
    ("number", " 5 ", True, 5.0),
    ("number", "", True, REFUSED),
    ("number", "abc", True, REFUSED),
    ("number", [1], True, REFUSED),
    ("number", {"v": 1}, True, REFUSED),
    ("amount", -0.5, False, MISSING),          # a negative cost is missing
    ("amount", 0.0, False, 0.0),
    ("count", 5, False, 5),
    ("count", 2.0, False, 2),
    ("count", 2.5, False, REFUSED),
    ("count", -100, False, MISSING),           # negative counts are missing
    ("count", "91", False, REFUSED),
    ("count", "91", True, 91),
    ("count", "-3", True, MISSING),
    ("count", "NaN", False, MISSING),
    ("count", True, False, REFUSED),
    ("boolean", True, False, True),
    ("boolean", None, False, None),
    ("boolean", "true", False, REFUSED),
    ("boolean", "False", True, False),
    ("boolean", "yes", True, REFUSED),
    ("boolean", 1, False, REFUSED),
    ("text", "x", False, "x"),
    ("text", 5, False, REFUSED),
    ("identifier", "a-1", False, "a-1"),
    ("identifier", 17, False, "17"),
    ("identifier", True, False, REFUSED),
    ("identifier", 1.5, False, REFUSED),
    ("identifier", {"id": 1}, False, REFUSED),
    ("identifier", "", False, REFUSED),
]


@pytest.mark.parametrize(("rule", "value", "strings", "expected"), CASES,
                         ids=[f"{r}-{v!r}-{s}" for r, v, s, _ in CASES])
def test_the_rule(rule, value, strings, expected):
    fn = getattr(coerce, rule)
    kw = {"strings": strings} if rule in ("number", "amount", "count", "boolean") else {}
    if expected == REFUSED:
        with pytest.raises(Refused) as info:
            fn(value, **kw)
        assert info.value.reason and "Error" not in info.value.reason
        return
    got = fn(value, **kw)
    assert isinstance(got, Coerced)
    if expected == MISSING:
        assert got.value is None and got.note and got.note.endswith("missing")
    else:
        assert got.value == expected and type(got.value) is type(expected)
        assert got.note is None


def test_fields_strict_quarantines_with_location_lenient_notes():
    f = Fields("runs/x.json", "#3")
    with pytest.raises(InputError) as info:
        f.number("1.0", "reward")
    p = info.value.problem
    assert (p.file, p.record, p.field) == ("runs/x.json", "#3", "reward")
    assert p.reason == "the string '1.0': this format writes a number here, not a string"
    lenient = Fields("meta.json", strict=False)
    assert lenient.count([1], "dataset_size") is None
    assert lenient.count(-3, "n") is None
    assert lenient.number("NaN", "score") is None
    assert lenient.attach({"a": 1}) == {"a": 1, "coercion_notes": {
        "dataset_size": "a list is not a number; missing",
        "n": "negative count (-3); missing",
        "score": "the string 'NaN' is not a finite number; missing"}}
    assert Fields("f").attach({}) == {}  # no notes, no key
