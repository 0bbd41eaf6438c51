"""An offline retrieval baseline: BM25 (``bm25s``) over character chunks, extractive answers.

No LLM and no API key. Documents are cut into character chunks as the upstream harness
does (``chunk_size`` 500, each new chunk starting ``chunk_overlap`` 50 characters before
the previous end; values from the scenario's ``config`` when present), indexed with
``bm25s`` (Lucene BM25, English stop words). A query retrieves ``top_k`` chunks (the mode's
``top_k``, else the config's, else 3); the answer is the ``answer_sentences`` sentences of
those chunks that share the most content words with the question, in retrieval order.
Sources are the retrieved chunks' documents, deduplicated in order (as upstream).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from evalatlas.extras import require
from evalatlas.runner.protocol import Answer, QueryContext

if TYPE_CHECKING:
    import bm25s


def _bm25s() -> Any:
    return require("bm25s", "bench", "the bm25 example framework")

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = ("a an and are as at be by can do does for from how i in is it its of on or "
               "should that the this to was what when where which who why will with")
_STOP = frozenset(_STOP_WORDS.split(" "))
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def chunk_text(text: str, size: int = 500, overlap: int = 50) -> list[str]:
    """Character chunks of ``size``, each starting ``overlap`` before the previous end."""
    if size <= 0:
        raise ValueError("chunk size must be positive")
    step = max(1, size - max(0, overlap))
    chunks, start = [], 0
    while start < len(text):
        chunks.append(text[start : start + size])
        if start + size >= len(text):
            break
        start += step
    return chunks


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


class BM25Framework:
    """BM25 retrieval + extractive answer; a baseline any LLM framework should beat."""

    name = "bm25"
    llm_model = None

    def __init__(self, answer_sentences: int = 2) -> None:
        self.answer_sentences = answer_sentences
        self.chunk_size, self.chunk_overlap, self.top_k = 500, 50, 3
        self.chunks: list[tuple[str, str]] = []
        self.retriever: bm25s.BM25 | None = None

    def configure(self, mode: str, mode_config: dict[str, Any], scenario: Any) -> None:
        cfg = getattr(scenario, "config", {}) or {}
        self.chunk_size = int(cfg.get("chunk_size", self.chunk_size))
        self.chunk_overlap = int(cfg.get("chunk_overlap", self.chunk_overlap))
        self.top_k = int(mode_config.get("top_k", cfg.get("top_k", self.top_k)))

    async def ingest(self, documents: list[Any]) -> None:
        self.chunks = [(d.source, c) for d in documents
                       for c in chunk_text(d.text, self.chunk_size, self.chunk_overlap)]
        if not self.chunks:
            self.retriever = None
            return
        bm25s = _bm25s()
        tokens = bm25s.tokenize([c for _, c in self.chunks], stopwords="en",
                                show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)

    def retrieve(self, question: str) -> list[tuple[str, str]]:
        """The top-k (source, chunk) pairs for ``question``, best first."""
        if self.retriever is None:
            return []
        k = min(self.top_k, len(self.chunks))
        bm25s = _bm25s()
        q = bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not q.vocab:
            return []
        idx, scores = self.retriever.retrieve(q, k=k, show_progress=False)
        return [self.chunks[int(i)] for i, s in zip(idx[0], scores[0], strict=True) if s > 0]

    async def query(self, question: str, ctx: QueryContext) -> Answer:
        hits = self.retrieve(question)
        ctx.trace_tool("bm25_search", query=question, k=self.top_k)
        want = _content_words(question)
        candidates: list[tuple[int, int, str]] = []
        seen: set[str] = set()
        for rank, (_, chunk) in enumerate(hits):
            for sent in _SENTENCE.split(chunk):
                s = sent.strip(" #*-|\t")
                if len(s) < 20 or s in seen:
                    continue
                seen.add(s)
                candidates.append((len(want & _content_words(s)), -rank, s))
        best = sorted(candidates, key=lambda c: (c[0], c[1]), reverse=True)
        picked = [c[2] for c in best[: self.answer_sentences] if c[0] > 0]
        sources = list(dict.fromkeys(src for src, _ in hits))
        return Answer(
            text=" ".join(picked) if picked else "I could not find this in the documents.",
            sources=sources,
            metadata={"contexts": [{"source": s, "text": c} for s, c in hits]},
        )
