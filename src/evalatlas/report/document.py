"""The HTML report as one object: its data and views, rendered to HTML, JSON or images.

``ea.build_report(store)`` returns a :class:`Report`; ``evalatlas report`` writes its
``to_html()`` (or, with ``--format json``, exactly its ``to_dict()``) and, with
``--static DIR``, its :meth:`Report.write_static` images.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalatlas.report.build import ReportOptions, build_report_data
from evalatlas.report.specs import all_views, chart_rows, view_rows, with_values
from evalatlas.results import ResultViews
from evalatlas.store.db import StoreConnection

if TYPE_CHECKING:
    import pandas as pd

VIEW_KEYS = ("id", "section", "kind", "title", "description", "columns", "notes")
"""What ``to_dict()`` keeps of each view, besides its spec (rows inlined) and rows."""


@dataclass(repr=False)
class Report(ResultViews):
    """``data``: everything the report shows, JSON-ready (``evalatlas.report/1``: title,
    generated, confidence, alpha, group_by, notes, sections, tiers, speedups,
    frameworks); ``views``: the charts and tables drawn from it (Vega-Lite specs).

    As a result (:class:`evalatlas.results.Result`): ``rows`` are its views (id,
    section, kind, title), ``meta`` the report-level values, ``notes`` its notes."""

    data: dict[str, Any]
    views: list[dict[str, Any]] = field(default_factory=list)

    @property
    def schema(self) -> str:
        return str(self.data["schema"])

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One row per view (chart or table): id, section, kind, title."""
        return [{k: v.get(k) for k in ("id", "section", "kind", "title")} for v in self.views]

    @property
    def meta(self) -> dict[str, Any]:
        """The report-level values of ``data`` (title, generated, confidence ...)."""
        return {k: v for k, v in self.data.items()
                if k != "schema" and not isinstance(v, dict | list)}

    @property
    def notes(self) -> list[str]:
        return [str(n) for n in self.data.get("notes") or []]

    def to_pandas(self) -> pd.DataFrame:
        """The views (:attr:`rows`) as a DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["id", "section", "kind", "title"])

    def __repr__(self) -> str:
        notes = len(self.notes)
        return (f"<Report {self.schema} {str(self.data.get('title', ''))[:60]!r}: "
                f"{len(self.views)} views" + (f", {notes} note{'s' * (notes != 1)}>"
                                              if notes else ">"))

    def to_dict(self) -> dict[str, Any]:
        """The report's specs and data (``evalatlas report --format json``): every view
        with its Vega-Lite spec, the rows inlined, and its rows."""
        views = []
        for v in self.views:
            rows = view_rows(v, self.data)
            views.append({k: v.get(k) for k in VIEW_KEYS} | {
                "spec": with_values(v["spec"], chart_rows(v, self.data))
                if v.get("spec") else None,
                "rows": rows})
        return {"schema": self.data["schema"], "data": self.data, "views": views}

    def to_html(self) -> str:
        """One self-contained HTML page that opens offline (charts included). Raises
        :class:`evalatlas.EvalAtlasError` when the chart runtime cannot be found."""
        from evalatlas.report.html import render_html

        return render_html(self.data, self.views)

    def write_static(self, directory: str | Path, *, scale: float = 2.0) -> list[Path]:
        """An SVG and a PNG per chart in ``directory``; returns the files written. Needs
        ``evalatlas[report]`` (vl-convert)."""
        from evalatlas.report.static import write_static

        return write_static(self.data, self.views, Path(directory), scale=scale)


def report_of(store: StoreConnection, opts: ReportOptions | None = None) -> Report:
    """Gather the report of ``store`` (:func:`~evalatlas.report.build.build_report_data`)
    and its views."""
    data = build_report_data(store, opts)
    return Report(data=data, views=all_views(data))
