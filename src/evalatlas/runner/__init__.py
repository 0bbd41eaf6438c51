"""Run frameworks over scenarios: protocols, timeouts, concurrency, resume.

``protocol`` (Python framework protocol, ``Answer``, ``QueryContext``),
``subprocess_framework`` (JSON over stdin/stdout), ``loading`` (``--framework``),
``engine`` (``run_scenario``), ``episodes`` (records and reward), ``examples`` (offline
frameworks). See docs/runner-and-judges.md.
"""
