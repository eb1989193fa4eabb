"""The reference baseline of ``shared/bench/README.md``: plain Okapi BM25 (``rank_bm25`` defaults).

Documents are ``"speaker: text"``; terms are lower-cased Latin words minus stop words and CJK character
unigrams + bigrams (the same analysis the episodic layer uses, :func:`hindsight.runtime.text.terms`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rank_bm25 import BM25Okapi

from hindsight.bench.datasets import Message
from hindsight.runtime.text import terms


def document(message: Message) -> str:
    """The text BM25 indexes for a message."""
    return f"{message.speaker}: {message.text}" if message.speaker else message.text


class Bm25Index:
    """BM25 over one namespace's messages."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.ids = [m.id for m in messages]
        corpus = [terms(document(m)) for m in messages]
        # rank_bm25 divides by the corpus' total length: a corpus of empty documents has no index.
        self._index = BM25Okapi(corpus) if any(corpus) else None

    def rank(self, query: str, k: int = 10) -> list[str]:
        """The ids of the ``k`` best-scoring messages, best first (ties in message order)."""
        if self._index is None or not self.ids:
            return self.ids[:k]
        scores = np.asarray(self._index.get_scores(terms(query)), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.ids[i] for i in order]
