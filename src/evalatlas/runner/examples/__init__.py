"""Offline example frameworks: ``bm25`` (extractive BM25 baseline) and ``echo`` (tests)."""
