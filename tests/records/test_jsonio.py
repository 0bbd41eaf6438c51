"""records/jsonio.py: the msgspec-first JSON read gives json.loads's values on every
fixture document and the exact parser's errors (same wording, same field) on hostile
ones; one open per file, absent files told apart from unreadable ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalatlas.errors import InputError
from evalatlas.records.jsonio import (
    ABSENT,
    NonFiniteJSONError,
    _loads_exact,
    loads_strict,
    read_json_file,
    read_json_file_if_present,
)
from evalatlas.records.limits import ReadLimits, using


def test_every_fixture_json_file_reads_as_the_exact_parser_reads_it(fixtures: Path) -> None:
    files = sorted(fixtures.rglob("*.json"))
    assert len(files) > 100
    read = 0
    for path in files:
        try:
            want = _loads_exact(path.read_bytes().decode("utf-8"))
        except ValueError:  # NaN in a fixture: refused either way
            with pytest.raises(InputError):
                read_json_file(path)
            continue
        got = read_json_file(path)
        assert got == want, path
        assert type(got) is type(want)
        read += 1
    assert read > 100


HOSTILE = [
    b'{"reward": NaN}', b'{"a": {"b": [1, Infinity]}}', b'{"a": -Infinity}',
    b'{"a": 1e999}', b'{"a": "\\ud800"}', b'{"a": 1,}', b'[1 2]', b'{"a": 1} x',
    b"\xef\xbb\xbf{}", b'{"a": "\xff"}', b"[" * 5000 + b"]" * 5000,
    b'{"a": 1' + b"0" * 5000 + b"}",
]


@pytest.mark.parametrize("raw", HOSTILE, ids=range(len(HOSTILE)))
def test_refused_documents_get_the_exact_parsers_decision(raw: bytes, tmp_path: Path) -> None:
    def outcome(fn, arg):  # type: ignore[no-untyped-def]
        try:
            return ("ok", fn(arg))
        except NonFiniteJSONError as exc:
            return ("nonfinite", str(exc), exc.field)
        except (ValueError, RecursionError) as exc:
            return (type(exc).__name__, str(exc))

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:
        assert outcome(loads_strict, text) == outcome(_loads_exact, text)
    path = tmp_path / "x.json"
    path.write_bytes(raw)
    try:
        got = ("ok", repr(read_json_file(path)))
    except InputError as exc:
        got = ("refused", exc.problem.file)
    exact = outcome(_loads_exact, text) if text is not None else ("refused",)
    if exact[0] == "ok":  # a lone surrogate: read, and refused when stored (row_problem)
        assert got == ("ok", repr(exact[1]))
    else:
        assert got == ("refused", str(path))
    if raw.startswith(b'{"reward": NaN'):
        with pytest.raises(InputError) as err:
            read_json_file(path)
        assert err.value.problem.field == "reward"
        assert "non-finite number NaN" in err.value.problem.reason


def test_valid_documents_decode_to_json_loads_values() -> None:
    for text in ['{"a": 1, "a": 2}', '{"x": -0.0, "y": 1.0000000000000002, "z": 1e-400}',
                 '{"n": 123456789012345678901234567890}', '"\\u0000\\u00e9"', "true",
                 '{"s": "\u2028é"}']:
        assert loads_strict(text) == json.loads(text)
        assert repr(loads_strict(text)) == repr(json.loads(text))


def test_absent_unreadable_directory_and_oversized(tmp_path: Path) -> None:
    assert read_json_file_if_present(tmp_path / "none.json") is ABSENT
    (tmp_path / "dangling.json").symlink_to(tmp_path / "gone")
    assert read_json_file_if_present(tmp_path / "dangling.json") is ABSENT
    with pytest.raises(InputError, match="cannot read"):
        read_json_file(tmp_path / "none.json")
    (tmp_path / "d.json").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        read_json_file_if_present(tmp_path / "d.json")
    (tmp_path / "e.json").write_bytes(b"  \n")
    with pytest.raises(InputError, match="empty file"):
        read_json_file(tmp_path / "e.json")
    (tmp_path / "big.json").write_bytes(b'{"a": "' + b"x" * 2000 + b'"}')
    with using(ReadLimits(max_record_bytes=1000)), \
            pytest.raises(InputError, match="over the 1,000-byte limit"):
        read_json_file(tmp_path / "big.json")


def test_loads_like_python_reads_as_json_loads_and_restores_the_collector() -> None:
    import gc
    import math

    from evalatlas.records.jsonio import loads_like_python

    for raw in (b'{"a": [1, 2.5, "x"], "b": null}', b'{"s": NaN, "t": -Infinity}',
                b"\xef\xbb\xbf[1]", '{"u": "\u00e9"}'):
        got, want = loads_like_python(raw), json.loads(raw)
        assert repr(got) == repr(want)
    assert math.isnan(loads_like_python(b"[NaN]")[0])
    assert gc.isenabled()
    with pytest.raises(json.JSONDecodeError):
        loads_like_python(b"{broken")
    assert gc.isenabled()
    gc.disable()
    try:
        loads_like_python(b"[1]")
        assert not gc.isenabled()  # a caller's pause is left as it was
    finally:
        gc.enable()
