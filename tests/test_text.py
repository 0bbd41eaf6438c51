"""Escaping agent-produced text for Markdown, and strict-JSON values."""

from __future__ import annotations

import math

from evalatlas.text import json_safe, md_escape


def test_md_escape_neutralises_tables_links_html_and_newlines() -> None:
    hostile = "a | b\n# heading <script>alert(1)</script> [x](http://evil) *bold* `code`"
    out = md_escape(hostile)
    assert "\n" not in out and "<script>" not in out
    assert out == ("a \\| b # heading &lt;script&gt;alert(1)&lt;/script&gt; \\[x\\](http://evil)"
                   " \\*bold\\* \\`code\\`")


def test_json_safe_maps_non_finite_numbers() -> None:
    assert json_safe({"a": math.nan, "b": [math.inf, -math.inf, 1.5]}) == {
        "a": None, "b": ["inf", "-inf", 1.5]}
