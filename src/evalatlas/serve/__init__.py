"""``evalatlas serve``: the store behind a small HTTP API (FastAPI on uvicorn).

Submissions arrive over HTTP, are spooled to disk (:mod:`.spool`), and are ingested one
at a time, each in one transaction, by the single writer (:mod:`.writer`); reads
(leaderboard, compare, matrix, atlas, report) run in threads on cursors of the same
DuckDB instance and call the same API functions as the CLI (:mod:`.routes`). Tokens
(:mod:`.auth`), limits and the rate limiter (:mod:`.limits`), Prometheus counters
(:mod:`.metrics`) and the JSON access log (:mod:`.accesslog`) are small modules of their
own; :mod:`.app` assembles them, :mod:`.run` runs uvicorn with the shutdown this service
needs, and :mod:`.client` is ``ea.Client`` and ``evalatlas submit``.

Needs ``pip install 'evalatlas[serve]'``; see docs/serve.md.
"""
