"""Lexical judge: SQuAD exact match and token F1, worked examples."""

from __future__ import annotations

import pytest

from evalatlas.metrics.lexical import exact_match, lexical_scores, normalize, token_f1


def test_normalize() -> None:
    assert normalize("The  Cat, sat!") == "cat sat"


def test_worked_examples() -> None:
    assert exact_match("The Cat!", "cat") == 1.0
    assert exact_match("a dog", "cat") == 0.0
    # pred {cat, sat}, ref {cat, sat, down}: P = 1, R = 2/3, F1 = 0.8
    assert token_f1("the cat sat", "a cat sat down") == pytest.approx(0.8)
    # multiset overlap: pred [x, x, y], ref [x, y, y]: overlap 2, P = R = 2/3
    assert token_f1("x x y", "x y y") == pytest.approx(2 / 3)
    assert token_f1("nothing shared", "cat") == 0.0
    assert token_f1("", "") == 1.0


def test_missing_stays_missing() -> None:
    assert lexical_scores(None, "x") == {"exact_match": None, "token_f1": None}
    assert token_f1("x", None) is None
