"""One check that a ``compare`` row's sentence agrees with the numbers printed beside it
(issue 10 item 3), shared by the random-scenario test (tests/analysis) and the CLI
acceptance test on the demo, the fixtures and the hostile set (tests/cli)."""

from __future__ import annotations

from typing import Any


def _pts(x: float) -> str:
    return f"{round(100 * x, 1) + 0.0:.1f}"


def assert_verdict_agrees(row: dict[str, Any], alpha: float = 0.05) -> None:
    """The verdict never contradicts the interval without saying why:

    - "cannot be compared" only when there is no test (fewer than 2 pairs / no p-value);
    - a claimed difference names the better side first and uses the p-value it says it
      uses (Holm-adjusted where there is one), below ``alpha``; if the printed interval
      includes 0 the sentence says why;
    - "no detectable difference" uses a p-value at or above ``alpha`` (or a zero
      difference); if the printed interval excludes 0 the sentence says why;
    - the printed interval is the row's interval (signs swapped when B is named first);
      no ``-0.0``.
    """
    s, lo, hi = row["sentence"], row["diff_ci_low"], row["diff_ci_high"]
    assert "-0.0 " not in s and "-0.0)" not in s and "-0.0;" not in s, s
    assert (lo is None) == (hi is None), row
    if "cannot be compared" in s:
        assert row["p"] is None or row["pairs"] < 2 or row["diff"] is None, s
        return
    assert row["p"] is not None and row["pairs"] >= 2, s
    p_used = row["p_holm"] if row.get("p_holm") is not None else row["p"]
    if row.get("p_holm") is not None:
        assert "after Holm adjustment for" in s, s
    claims = " more often than " in s
    if claims:
        assert p_used < alpha and row["diff"] != 0, s
        first = row["a"] if row["diff"] > 0 else row["b"]
        assert s.startswith(f"{first} passes "), s
        if lo is not None:
            shown = (lo, hi) if row["diff"] > 0 else (-hi, -lo)
            assert f"CI {_pts(shown[0])} to {_pts(shown[1])} points" in s, s
            if lo <= 0 <= hi:
                assert "includes 0 because" in s, s
        else:
            assert "includes 0" not in s, s
    else:
        assert s.startswith("no detectable difference"), s
        assert p_used >= alpha or row["diff"] == 0, s
        if lo is not None:
            assert f"CI {_pts(lo)} to {_pts(hi)} points" in s, s
            if lo > 0 or hi < 0:  # explained: by the interval, or by Holm (issue 21.7)
                assert "excludes 0, but" in s or (
                    "on its own this pair would be significant" in s and row["p"] < alpha), s
    if lo is not None:
        assert -1 - 1e-12 <= lo <= hi <= 1 + 1e-12, row
