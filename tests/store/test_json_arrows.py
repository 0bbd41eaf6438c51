"""DuckDB's JSON arrows (``->``, ``->>``) bind more loosely than every operator on their left.

On duckdb 1.5.5 ``a AND j->>'$.k' IS NOT NULL`` parses as ``((a AND j) ->> '$.k') IS NOT NULL``
and ``'x' = j->>'$.k'`` as ``('x' = j) ->> '$.k'``: wrong results or a cast error at run time
(``compare`` failed so before the arrows in ``store/sides.py`` were parenthesised). The rule
here: the left operand of every arrow in the package's SQL directly follows ``(``, as in
``(j->>'$.k')`` or ``TRY_CAST(j->>'$.k' AS DOUBLE)``, where no operator can take it.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "evalatlas"

# an operand (column, qualified column or f-string placeholder) followed by a JSON arrow;
# ``->`` only counts before a quoted path (Python's ``-> None`` annotations never do)
ARROW = re.compile(r"([\w.{}\"]+)\s*(->>|->(?=\s*'))")


def unguarded_arrows(text: str) -> list[str]:
    """Each JSON-arrow expression in ``text`` whose left operand is not right after ``(``."""
    found = []
    for m in ARROW.finditer(text):
        before = text[:m.start(1)].rstrip()
        if not before.endswith("("):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"line {line}: {text[m.start():m.end() + 12]!r}")
    return found


def test_rule_flags_the_forms_duckdb_misparses():
    assert unguarded_arrows("x AND scores->>'$.score' IS NOT NULL")
    assert unguarded_arrows("'a' = e.extra->>'$.k'")
    assert unguarded_arrows("coalesce(a, e.extra->'$.k')")
    assert not unguarded_arrows("x AND (scores->>'$.score') IS NOT NULL")
    assert not unguarded_arrows("TRY_CAST(e.scores->>'$.\"{name}\"' AS DOUBLE)")
    assert not unguarded_arrows("def f(x) -> None:")


@pytest.mark.parametrize("sql, expected", [
    ("SELECT f AND (j->>'$.a') IS NOT NULL FROM t", [True, False]),
    ("SELECT 'x' = s AND (j->>'$.a') = '1' FROM t", [True, None]),
])
def test_parenthesised_arrows_mean_what_they_say(sql, expected):
    con = duckdb.connect()
    con.execute("""CREATE TABLE t AS SELECT * FROM (VALUES
        (1, true, 'x', '{"a": 1}'::JSON), (2, true, 'x', '{"b": 1}'::JSON)) v(i, f, s, j)""")
    got = [r[0] for r in con.execute(sql.replace(" FROM t", " FROM t ORDER BY i")).fetchall()]
    assert got == expected


def test_every_arrow_in_the_package_is_parenthesised():
    bad = {str(p.relative_to(SRC)): found for p in sorted(SRC.rglob("*.py"))
           if (found := unguarded_arrows(p.read_text(encoding="utf-8")))}
    assert not bad, f"JSON arrows DuckDB may bind to the wrong operand: {bad}"
