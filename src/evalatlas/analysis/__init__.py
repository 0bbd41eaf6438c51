"""Analysis: frames from the store (or a user's DataFrame) in, typed results out.

No SQL and no printing here: :mod:`evalatlas.store` selects and aggregates rows,
:mod:`evalatlas.metrics` and :mod:`evalatlas.stats` hold the formulas, and these modules
combine them into the results the CLI renders and the public API returns
(``ea.summary``, ``ea.compare``, ``ea.tiers``, ``ea.speedups``,
``ea.compare_frameworks``). Every result has ``to_dict()`` (the CLI's JSON) and
``to_pandas()``.
"""
