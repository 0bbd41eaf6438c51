"""The look every Vega-Lite view of the report shares: schema id, colours and the
``config`` block (a module of its own, so that the view modules, ``specs`` and
``failures``, import it without importing each other)."""

from __future__ import annotations

SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.json"
"""Only an identifier: nothing is fetched from it (the runtime is inline)."""
LABEL_LIMIT = 170
"""Pixels an axis label may take before Vega cuts it with an ellipsis (full text in the
tooltip and the table)."""

INK = "#1f2328"
ACCENT = "#1f5fa8"
GOOD = "#1a7f37"
BAD = "#b42318"
MUTED = "#8c959f"
MISSING = "#c3c8ce"
"""Missing cells: a neutral grey, unlike both ends (red, green) and the cream middle."""
NOT_SIG = "#e6e8eb"

CONFIG = {
    "font": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
    "background": "#ffffff",
    "view": {"stroke": None},
    "axis": {"labelColor": INK, "titleColor": INK, "labelFontSize": 11,
             "titleFontSize": 12, "gridColor": "#eaecef", "domainColor": MUTED,
             "tickColor": MUTED, "labelLimit": LABEL_LIMIT},
    "legend": {"labelColor": INK, "titleColor": INK, "labelFontSize": 11,
               "titleFontSize": 12, "orient": "bottom", "direction": "horizontal",
               "labelLimit": LABEL_LIMIT},
    "title": {"color": INK},
}
