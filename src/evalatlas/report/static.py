"""Static images of the report's charts (``evalatlas report --static DIR``).

Each chart is rendered offline by vl-convert (the same Vega-Lite spec the page draws,
with its rows inlined) to ``<view id>.svg`` and ``<view id>.png``; file names are the
view ids, which are built from fixed words and section numbers only, never from data.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from evalatlas.report.runtime import RuntimeUnavailable
from evalatlas.report.specs import chart_rows, with_values
from evalatlas.safe_write import make_folder, write_bytes, write_text

STATIC_WIDTH = 720
"""Pixel width of a static chart (the page's charts fit their container instead)."""

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def static_spec(view: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The view's spec with its rows inlined and a fixed width (no container to fit)."""
    spec = with_values(view["spec"], chart_rows(view, data))
    spec = copy.deepcopy(spec)
    if spec.get("width") == "container":
        spec["width"] = STATIC_WIDTH
        spec["autosize"] = {"type": "fit-x", "contains": "padding"}
    return spec


def write_static(data: dict[str, Any], views: list[dict[str, Any]], directory: Path,
                 *, scale: float = 2.0) -> list[Path]:
    """Write an SVG and a PNG per chart; returns the files written."""
    try:
        import vl_convert as vlc
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise RuntimeUnavailable("--static needs vl-convert-python: "
                                 "pip install 'evalatlas[report]'") from exc
    make_folder(directory)
    written = []
    for v in views:
        if not v.get("spec"):
            continue
        if not _SAFE_NAME.match(v["id"]):
            raise ValueError(f"unsafe view id {v['id']!r}")
        spec = static_spec(v, data)
        svg = directory / f"{v['id']}.svg"
        write_text(svg, vlc.vegalite_to_svg(spec))  # each file whole or not at all
        png = directory / f"{v['id']}.png"
        write_bytes(png, vlc.vegalite_to_png(spec, scale=scale))
        written += [svg, png]
    return written
