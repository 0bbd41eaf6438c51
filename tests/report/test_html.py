"""Page assembly: data embedded so that no string can leave its <script> element."""

from __future__ import annotations

import json
import re

from evalatlas.report.html import script_json
from evalatlas.report.runtime import wrapped_runtime


def test_script_json_escapes_everything_that_can_end_a_script() -> None:
    value = {"a": "</script><script>alert(1)</script>", "b": "<!-- & -->",
             "c": "line\u2028sep\u2029end", "d": "\"quotes' and \\ backslash"}
    text = script_json(value)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == value  # still the same JSON


def test_runtime_is_wrapped_and_inlinable() -> None:
    js = wrapped_runtime()
    assert js.count("(function(){") >= 1 and js.rstrip().endswith("}).call(window);")
    assert not re.search(r"</script|<!--", js, re.IGNORECASE)
    assert "window.vegaEmbed=" in js


def test_page_assets_cannot_end_their_elements() -> None:
    from evalatlas.report.html import _asset

    assert "</script" not in _asset("report.js").lower()
    assert "</style" not in _asset("report.css").lower()
    js = _asset("report.js")
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "document.write" not in js
