"""The common shape of every table result: rows + metadata, ``to_dict()`` and
``to_pandas()`` (:class:`TableResult`).

``to_dict()`` is exactly the CLI's ``--format json`` envelope (``{"schema": ..., <meta>,
"rows": [...], "notes": [...]}``, strict JSON: NaN as null, infinity as "inf";
credentials in any string redacted), so a script can move between the CLI and the API
without re-learning field names. The CLI prints ``to_dict()`` and nothing else
(:func:`evalatlas.cli.render.render_result`), so every sentence a command shows with its
table is a note here, not something the CLI adds.

Why in ``records/``: the envelopes are evalatlas's output contract (``schema`` names
like ``evalatlas.summary/1`` are a public interface), and the domains below the analyses
(formats in ``adapters``, prices in ``pricing``, code quality in ``codequality``) return
them too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from evalatlas.records.redact import redact_strings, redact_text
from evalatlas.results import ResultViews
from evalatlas.text import json_safe

if TYPE_CHECKING:
    import pandas as pd


@dataclass(repr=False)
class TableResult(ResultViews):
    """Rows (one dict per group/pair/tier ...) with the values a command reports about them.

    ``rows`` keys are documented by each result class; ``meta`` holds the run-level values
    (parameters used, totals); ``notes`` are sentences a reader needs (what was left out).
    Implements :class:`evalatlas.results.Result`: ``repr()`` is one short line, Jupyter
    shows the first rows (``_repr_html_``).
    """

    SCHEMA: ClassVar[str] = "evalatlas.result/1"

    rows: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def schema(self) -> str:
        return self.SCHEMA

    def to_dict(self) -> dict[str, Any]:
        """The JSON envelope (strict JSON values) the CLI prints with ``--format json``.

        String values are passed through :func:`~evalatlas.records.redact.redact_strings`
        (an agent name or a note may quote a credential): the envelope is meant to be
        written out and shared, and the CLI prints it unchanged."""
        env: dict[str, Any] = {"schema": redact_text(self.schema),
                               **json_safe(dict(self.meta), redact_text),
                               "rows": [json_safe(r, redact_text) for r in self.rows]}
        if self.notes:
            env["notes"] = redact_strings(list(self.notes))
        return env

    def to_pandas(self) -> pd.DataFrame:
        """One DataFrame row per result row (nested values such as pass@k stay dicts)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A subclass is decorated with @dataclass after this runs; the decorator adds its
        # own __repr__ (every row, 10k+ characters) only when the class has none of its
        # own, so give each subclass the short one here.
        super().__init_subclass__(**kwargs)
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = ResultViews.__repr__  # type: ignore[method-assign]  # on purpose: before @dataclass adds its own
