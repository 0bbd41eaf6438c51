"""The Every Eval Ever vocabulary the API shows before an export runs.

Apart from :mod:`evalatlas.exports.eee` because :class:`evalatlas.api.Store` names it
(``EEE_RELATIONSHIPS``) at import, and ``evalatlas ingest`` imports the API: the export
module (numpy, the statistics) cost every such process 0.040 s (session 21).
"""

from __future__ import annotations

RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")
"""EEE's ``evaluator_relationship`` values (``export_eee``'s ``relationship``)."""
