"""Escaping agent-produced text for Markdown, and strict-JSON values."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalatlas.text import csv_cell, csv_line, json_safe, json_text_safe, md_escape, terminal_safe


def test_md_escape_neutralises_tables_links_html_and_newlines() -> None:
    hostile = "a | b\n# heading <script>alert(1)</script> [x](http://evil) *bold* `code`"
    out = md_escape(hostile)
    assert "\n" not in out and "<script>" not in out
    assert out == ("a \\| b # heading &lt;script&gt;alert(1)&lt;/script&gt; \\[x\\](http://evil)"
                   " \\*bold\\* \\`code\\`")


def test_json_safe_maps_non_finite_numbers() -> None:
    assert json_safe({"a": math.nan, "b": [math.inf, -math.inf, 1.5]}) == {
        "a": None, "b": ["inf", "-inf", 1.5]}


# --- terminal and CSV safety (hostile agent text) -------------------------------------

HOSTILE_TERMINAL = {
    "ansi colour": ("\x1b[31mRED\x1b[0m", "\\x1b[31mRED\\x1b[0m"),
    "osc 8 hyperlink": ("\x1b]8;;http://evil\x07click\x1b]8;;\x07",
                        "\\x1b]8;;http://evil\\x07click\\x1b]8;;\\x07"),
    "osc 52 clipboard": ("\x1b]52;c;ZWNobyBwd25lZA==\x07", "\\x1b]52;c;ZWNobyBwd25lZA==\\x07"),
    "window title": ("\x1b]0;pwned\x1b\\", "\\x1b]0;pwned\\x1b\\"),
    "8-bit csi": ("\x9b2J", "\\x9b2J"),
    "bare cr": ("safe\rEVIL", "safe\\x0dEVIL"),
    "crlf": ("line1\r\nline2", "line1\nline2"),
    "backspace": ("abc\x08\x08\x08xyz", "abc\\x08\\x08\\x08xyz"),
    "nul and del": ("a\x00b\x7fc", "a\\x00b\\x7fc"),
    "bidi override": ("user\u202etxt.exe", "user\\u202etxt.exe"),
    "tab and newline kept": ("a\tb\nc", "a\tb\nc"),
}


@pytest.mark.parametrize("case", HOSTILE_TERMINAL)
def test_terminal_safe(case: str) -> None:
    raw, shown = HOSTILE_TERMINAL[case]
    out = terminal_safe(raw)
    assert out == shown
    assert not any((ord(c) < 32 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f for c in out)


CSV_CELLS = {
    "=HYPERLINK(\"http://evil\",\"x\")": "'=HYPERLINK(\"http://evil\",\"x\")",
    "+cmd|' /C calc'!A0": "'+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0": "'-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0": "'@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1": "'\t=1+1",
    "\r=1+1": "'\r=1+1",
    "\uff1d1+1": "'\uff1d1+1",
    "-0.5": "-0.5",
    "+3": "+3",
    "-1e-09": "-1e-09",
    "-inf": "-inf",
    "-": "'-",
    "a=b": "a=b",
    "\x1b[31mred": "\\x1b[31mred",
}


@pytest.mark.parametrize("raw", CSV_CELLS)
def test_csv_cell_neutralises_formulas_but_not_negative_numbers(raw: str) -> None:
    assert csv_cell(raw) == CSV_CELLS[raw]


def test_csv_line_quotes_cr_lf_and_reads_back_as_one_row() -> None:
    cells = ["a\rb", "c\nd", 'say "hi"', "x,y", -1.5, None, "=1+1"]
    line = csv_line(cells)
    assert line == '"a\rb","c\nd","say ""hi""","x,y",-1.5,,\'=1+1\n'
    rows = list(csv.reader(io.StringIO(line + csv_line(["next"]), newline="")))
    assert rows == [["a\rb", "c\nd", 'say "hi"', "x,y", "-1.5", "", "'=1+1"], ["next"]]


def test_json_text_safe_escapes_c1_and_bidi_and_stays_json() -> None:
    text = json.dumps({"a": "\x9b2J \u202e \x1b"}, ensure_ascii=False)
    safe = json_text_safe(text)
    assert "\x9b" not in safe and "\u202e" not in safe and "\x1b" not in safe
    assert json.loads(safe) == {"a": "\x9b2J \u202e \x1b"}


def test_markdown_table_is_the_one_renderer() -> None:
    from evalatlas.text import markdown_table

    assert markdown_table(["a|b", "c"], [["x*", "1"]]) == [
        "| a\\|b | c |", "| --- | --- |", "| x\\* | 1 |"]
    # escape=False keeps the caller's own Markdown in cells; headers are always escaped
    assert markdown_table(["h_1"], [["**bold**"]], escape=False)[2] == "| **bold** |"
    assert markdown_table(["h_1"], [])[0] == "| h\\_1 |"


def test_json_indented_is_json_dumps_indented_byte_for_byte(fixtures: Path) -> None:
    """The fast indented JSON (C encoder + msgspec's formatter) writes exactly what
    ``json.dumps(indent=2, ensure_ascii=False)`` writes: empty and nested containers,
    floats in every notation, big integers, escapes, non-ASCII and line separators, and
    a real envelope (the summary of the Terminal-Bench fixture)."""
    import evalatlas as ea
    from evalatlas.cli.render import render_result
    from evalatlas.text import json_indented

    awkward: list[Any] = [
        {}, [], "", 0, -1, 10**30, -(10**30), 0.0, -0.0, 1e16, 1e-05, 5e-324, 0.1 + 0.2,
        1.7976931348623157e308, 123456789.0, True, False, None, [[]], [{}], {"": {"": []}},
        {"a": [], "b": {}, "c": [1, {"d": None}]}, "q\"uote\\back/slash",
        "tab\tnl\ncr\r\x00\x1b[31m\x7f\u0085\u2028\u2029\u202e é 漢 😀 \ud800",
        {"k\n\"é": ["x", 1.5, {"nested": {"deeper": [1, 2, [3, [4]]]}}]},
    ]
    for value in [*awkward, awkward, {"rows": awkward}]:
        assert json_indented(value) == json.dumps(value, indent=2, allow_nan=False,
                                                  ensure_ascii=False), value
    with pytest.raises(ValueError):
        json_indented(float("nan"))
    store = ea.open(":memory:")
    store.ingest(fixtures / "terminal-bench")
    env = ea.summary(store).to_dict()
    assert json_indented(env) == json.dumps(env, indent=2, allow_nan=False,
                                            ensure_ascii=False)
    assert render_result(ea.summary(store), [], "json") == json_indented(env) + "\n"


def test_json_safe_with_a_string_hook_is_json_safe_then_the_hook() -> None:
    """json_safe(value, strings) == the hook applied to every string value of
    json_safe(value) (keys left alone): a result envelope is made safe and redacted in
    one walk (TableResult.to_dict; issue 23: a summary holds ~370,000 values)."""
    import numpy as np

    from evalatlas.records.redact import redact_strings, redact_text
    from evalatlas.text import json_safe

    class Name(str):
        pass

    value = {"a": 1.5, "nan": float("nan"), "inf": float("inf"), "-inf": -float("inf"),
             1: "key not str", "np": [np.float64(2.5), np.int64(3), np.bool_(True),
                                      np.float64("nan"), np.str_("s")],
             "t": ("x", (None, False, 0)), "sub": Name("sk-abcdefghijklmnopqrstuvwx"),
             "nested": {"p": {"1": {"value": 0.25, "note": "api_key=hunter2hunter2"}}},
             "token": "Bearer abcdefghijklmnop", "n": None, "b": True}
    got = json_safe(value, redact_text)
    want = redact_strings(json_safe(value))
    assert got == want and list(got) == list(want)
    assert json.dumps(got, allow_nan=False) == json.dumps(want, allow_nan=False)
    assert got["nan"] is None and got["inf"] == "inf" and got["np"][3] is None
    assert "hunter2" not in json.dumps(got) and "abcdefghijklmnopqrstuvwx" not in json.dumps(got)
    assert json_safe(value) == json_safe(value, None)
