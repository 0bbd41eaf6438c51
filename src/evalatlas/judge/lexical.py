"""The lexical judge (no LLM): the metrics live in :mod:`evalatlas.metrics.lexical`."""

from evalatlas.metrics.lexical import exact_match, lexical_scores, normalize, token_f1

__all__ = ["exact_match", "lexical_scores", "normalize", "token_f1"]
