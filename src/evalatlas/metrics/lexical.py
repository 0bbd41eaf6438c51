"""Lexical metrics (exact match, token F1): the no-LLM judge and sanity check.

Used by the runner's lexical scores (:mod:`evalatlas.runner.engine`), for offline use and as a
sanity check beside the LLM judge (a judge that scores 5 on an answer sharing no tokens
with the reference deserves a look). Definitions are SQuAD's
(Rajpurkar et al. 2016, official evaluation script v1.1):

- ``normalize``: lower-case, drop punctuation, drop the articles a/an/the, collapse
  whitespace;
- ``exact_match = 1.0 if normalize(prediction) == normalize(reference) else 0.0``;
- ``token_f1 = 2·P·R / (P + R)`` with ``P = overlap / |pred tokens|``,
  ``R = overlap / |ref tokens|``, ``overlap`` the multiset intersection size; 0.0 when
  there is no overlap; 1.0 when both are empty.

Missing input stays missing: no reference (or no prediction) gives ``None``, not 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize(text: str) -> str:
    """SQuAD answer normalisation."""
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str | None, reference: str | None) -> float | None:
    """1.0 when the normalised strings are equal, else 0.0; None without both inputs."""
    if prediction is None or reference is None:
        return None
    return 1.0 if normalize(prediction) == normalize(reference) else 0.0


def token_f1(prediction: str | None, reference: str | None) -> float | None:
    """SQuAD token F1 of the normalised strings; None without both inputs."""
    if prediction is None or reference is None:
        return None
    pred = normalize(prediction).split()
    ref = normalize(reference).split()
    if not pred and not ref:
        return 1.0
    overlap = sum((Counter(pred) & Counter(ref)).values())
    if overlap == 0:
        return 0.0
    p = overlap / len(pred)
    r = overlap / len(ref)
    return 2 * p * r / (p + r)


def lexical_scores(prediction: str | None, reference: str | None) -> dict[str, float | None]:
    """``{"exact_match", "token_f1"}`` for one answer."""
    return {"exact_match": exact_match(prediction, reference),
            "token_f1": token_f1(prediction, reference)}
