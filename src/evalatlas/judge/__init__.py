"""LLM judges (answer, code review, rubric) and the lexical judge.

``client`` (OpenAI-compatible calls, validation, retries, cache), ``answer``,
``code_review``, ``rubric``, ``lexical``. A judge that fails yields missing scores
(None/NaN) with the reason recorded, never 0. See docs/runner-and-judges.md.
"""
