"""Text safety for output: strict-JSON values and Markdown escaping of agent-produced text.

Shared by the CLI renderer and the reports (both must escape what agents wrote).
"""

from __future__ import annotations

import math
from typing import Any


def json_safe(value: Any) -> Any:
    """Make a value strict-JSON: NaN -> null, ±infinity -> "inf"/"-inf", recursively."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return json_safe(value.item())
    return value


_MD_SPECIAL = str.maketrans({
    "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;", "`": "\\`", "*": "\\*", "_": "\\_",
    "[": "\\[", "]": "\\]", "\n": " ", "\r": " ",
})


def md_escape(text: str) -> str:
    """Escape agent-produced text for a Markdown table cell (no HTML, no links, one line)."""
    return str(text).translate(_MD_SPECIAL)
