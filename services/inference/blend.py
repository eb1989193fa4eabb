"""One vector that reads English with two models: the multilingual USE and the English MiniLM, side by side.

USE alone is weak on English conversation (R@10 0.33 on LoCoMo where MiniLM reaches 0.50) but it is the
only packaged model that reads Chinese. The blend keeps one vector per text, so the semantic layer, its
collections and its reindex need nothing new: a Latin-script text becomes
``[sqrt(1 - w) * use ; sqrt(w) * minilm]`` and any other text ``[use ; 0]``. Both halves are unit length,
so the vector is too, and the cosine of two English texts is ``(1 - w) * cos_use + w * cos_minilm``; of two
Chinese texts it is USE's cosine alone (MiniLM reads CJK characters as unknown pieces: its half would only
add noise). A text in one script against one in the other keeps ``sqrt(1 - w)`` of USE's cosine.

A query is read by MiniLM up to its last :data:`QUERY_TOKENS` word pieces: an agent's query is often the
conversation so far, whose latest words say what is asked, and MiniLM's cost grows with every token (a
150-token dialogue costs ~40 ms on one core; USE reads it whole in ~1 ms). The engine marks queries with
:data:`QUERY_MARK`, the blend's query prefix, which the blend removes before either model reads the text.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np

from hindsight.inference.models import Embedded, Embedder
from hindsight.inference.rerank import mostly_latin

QUERY_TOKENS = 64
"""Word pieces of a query MiniLM reads, from its end (on MADial's dialogue queries, 32 to 256 gave R@10
0.744 to 0.768 for the vector channel alone, with no trend; 64: 0.766)."""
QUERY_MARK = "\u2063"
"""The blend's query prefix (an invisible separator): tells a query from a stored text in a shared batch."""


class BlendedEmbedder:
    """USE and MiniLM in one vector, MiniLM's half used only for Latin-script texts (module docstring)."""

    query_prefix = QUERY_MARK
    passage_prefix = ""

    def __init__(
        self,
        name: str,
        multilingual: Embedder,
        english: Embedder,
        english_weight: float,
        english_queries: Embedder | None = None,
    ) -> None:
        if not 0.0 <= english_weight <= 1.0:
            raise ValueError(f"english_weight must lie in [0, 1], got {english_weight}")
        self._name = name
        self._multilingual = multilingual
        self._english = english
        self._english_queries = english_queries or english
        self._weight = english_weight
        hashes = (multilingual.content_hash, english.content_hash, self._english_queries.content_hash)
        parts = ":".join([*hashes, f"{english_weight:.4f}"])
        self._hash = hashlib.sha256(parts.encode()).hexdigest()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._multilingual.dimension + self._english.dimension

    @property
    def max_length(self) -> int:
        return self._english.max_length

    @property
    def content_hash(self) -> str:
        """Both models' hashes and the weight: a change to any of them changes every stored vector."""
        return self._hash

    def embed(self, texts: Sequence[str]) -> Embedded:
        queries = np.array([text.startswith(QUERY_MARK) for text in texts], dtype=bool)
        texts = [text.removeprefix(QUERY_MARK) for text in texts]
        latin = np.array([mostly_latin(text) for text in texts], dtype=bool)
        multilingual = self._multilingual.embed(texts)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        width = self._multilingual.dimension
        vectors[:, :width] = multilingual.vectors
        truncated = multilingual.truncated.copy()
        for reader, asked in ((self._english, False), (self._english_queries, True)):
            rows = np.flatnonzero(latin & (queries == asked))
            if not len(rows):
                continue
            english = reader.embed([texts[int(row)] for row in rows])
            vectors[rows, :width] *= math.sqrt(1.0 - self._weight)
            vectors[rows, width:] = english.vectors * math.sqrt(self._weight)
            if not asked:  # a query read from its end is not reported as cut: that is how queries are read
                truncated[rows] |= english.truncated
        return Embedded(vectors, truncated)
