"""Rerankers: score how well each document answers a query.

Two kinds satisfy :class:`Reranker`:

* :class:`~hindsight.inference.tokenized.CrossEncoder` reads (query, document) pairs as word pieces
  (an operator-mounted ms-marco-MiniLM or bge-reranker ONNX directory);
* :class:`PairNetworkReranker`, the offline default, is the small network that ships in ``nanoranker``:
  it reads, for each pair, ``[USE(query), hash(query), USE(document), hash(document)]`` (512 + 64 + 512
  + 64 = 1152 floats) and outputs a relevance in (0, 1). ``hash`` is a 64-bucket signed hashing of the
  lower-cased text's character 1- to 6-grams (MurmurHash3, L2-normalised), the feature scikit-learn's
  ``HashingVectorizer(analyzer="char", ngram_range=(1, 6), n_features=64)`` computes; it is
  re-implemented here over numpy so that no scikit-learn is needed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import onnxruntime as ort

from hindsight.inference.models import file_sha256, session_options
from hindsight.inference.tokenized import Scored

log = logging.getLogger(__name__)

HASH_FEATURES = 64
NGRAM_SIZES = range(1, 7)
_RUNS_OF_SPACE = re.compile(r"\s\s+")
_MASK = np.uint64(0xFFFFFFFF)
_C1, _C2 = np.uint64(0xCC9E2D51), np.uint64(0x1B873593)
_F1, _F2 = np.uint64(0x85EBCA6B), np.uint64(0xC2B2AE35)


class Reranker(Protocol):
    """A loaded reranker. ``score`` is blocking: callers run it off the event loop."""

    @property
    def name(self) -> str:
        """The name requests use to pick this reranker."""
        ...

    @property
    def max_length(self) -> int:
        """Longest pair in tokens, 0 when the model does not say."""
        ...

    @property
    def content_hash(self) -> str:
        """SHA-256 of the model's files."""
        ...

    def vectors_from(self, query: str) -> str:
        """The embedding model whose vectors (query first, then documents) ``score`` needs; "" for none."""
        ...

    def score(self, query: str, documents: Sequence[str], vectors: np.ndarray | None = None) -> Scored:
        """One score per document, in order; higher is more relevant."""
        ...


def _rotate_left(values: np.ndarray, bits: int) -> np.ndarray:
    return ((values << np.uint64(bits)) | (values >> np.uint64(32 - bits))) & _MASK


def murmur3_32(rows: np.ndarray) -> np.ndarray:
    """MurmurHash3 (x86, 32-bit, seed 0) of each row of an ``(n, length)`` uint8 array, as signed int32.

    All keys in one call have the same byte length, so the 4-byte blocks are processed column by column
    for every key at once; the products are kept in uint64 and masked back to 32 bits.
    """
    count, length = rows.shape
    data = rows.astype(np.uint64)
    state = np.zeros(count, dtype=np.uint64)
    whole = length - length % 4
    for start in range(0, whole, 4):
        block = data[:, start].copy()
        for offset in (1, 2, 3):
            block |= data[:, start + offset] << np.uint64(8 * offset)
        block = _rotate_left((block * _C1) & _MASK, 15) * _C2 & _MASK
        state = _rotate_left(state ^ block, 13)
        state = (state * np.uint64(5) + np.uint64(0xE6546B64)) & _MASK
    if length % 4:
        tail = np.zeros(count, dtype=np.uint64)
        for offset in reversed(range(length % 4)):
            tail = tail << np.uint64(8) | data[:, whole + offset]
        tail = _rotate_left((tail * _C1) & _MASK, 15) * _C2 & _MASK
        state ^= tail
    state ^= np.uint64(length)
    state ^= state >> np.uint64(16)
    state = (state * _F1) & _MASK
    state ^= state >> np.uint64(13)
    state = (state * _F2) & _MASK
    state ^= state >> np.uint64(16)
    return state.astype(np.uint32).view(np.int32)


def char_ngram_hash(text: str, features: int = HASH_FEATURES) -> np.ndarray:
    """Signed hashing of the character 1- to 6-grams of the lower-cased text, L2-normalised (float32)."""
    text = _RUNS_OF_SPACE.sub(" ", text.lower())
    by_length: dict[int, list[bytes]] = {}
    for size in NGRAM_SIZES:
        for start in range(len(text) - size + 1):
            gram = text[start : start + size].encode("utf-8")
            by_length.setdefault(len(gram), []).append(gram)
    vector = np.zeros(features, dtype=np.float64)
    for length, grams in by_length.items():
        rows = np.frombuffer(b"".join(grams), dtype=np.uint8).reshape(len(grams), length)
        hashes = murmur3_32(rows).astype(np.int64)
        np.add.at(vector, np.abs(hashes) % features, np.where(hashes >= 0, 1.0, -1.0))
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm > 0 else vector).astype(np.float32)


class PairNetworkReranker:
    """nanoranker's pair network over USE vectors and character hashes: the reranker that ships offline."""

    def __init__(self, name: str, path: Path, embedding_model: str, threads: int, max_chars: int) -> None:
        self._name = name
        self._embedding_model = embedding_model
        self._max_chars = max_chars
        self._session = ort.InferenceSession(
            str(path), session_options(threads), providers=["CPUExecutionProvider"]
        )
        inputs = self._session.get_inputs()
        if len(inputs) != 1 or inputs[0].shape[-1] != 2 * (512 + HASH_FEATURES):
            raise ValueError(f"{path}: expected one input of {2 * (512 + HASH_FEATURES)} features per pair")
        self._input = inputs[0].name
        self._output = self._session.get_outputs()[0].name
        self._hash = file_sha256(path)
        log.info("reranker loaded", extra={"model": name, "path": str(path), "threads": threads})

    @property
    def name(self) -> str:
        return self._name

    @property
    def max_length(self) -> int:
        return 0

    @property
    def content_hash(self) -> str:
        return self._hash

    def vectors_from(self, query: str) -> str:
        return self._embedding_model

    def score(self, query: str, documents: Sequence[str], vectors: np.ndarray | None = None) -> Scored:
        if vectors is None or len(vectors) != len(documents) + 1:
            raise ValueError("the pair network needs the query's and every document's USE vector")
        truncated = np.zeros(len(documents), dtype=bool)
        if not documents:
            return Scored(np.zeros(0, dtype=np.float32), truncated)
        side = [np.concatenate([vectors[0], char_ngram_hash(query[: self._max_chars])])]
        pairs = np.empty((len(documents), 2 * len(side[0])), dtype=np.float32)
        pairs[:, : len(side[0])] = side[0]
        for row, (document, vector) in enumerate(zip(documents, vectors[1:], strict=True)):
            pairs[row, len(side[0]) :] = np.concatenate(
                [vector, char_ngram_hash(document[: self._max_chars])]
            )
        (scores,) = self._session.run([self._output], {self._input: pairs})
        return Scored(np.asarray(scores, dtype=np.float32).reshape(-1), truncated)


def mostly_latin(text: str, share: float = 0.8) -> bool:
    """Whether at least ``share`` of the letters are Latin (an English-only model reads the text well)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return True
    return sum(c < "\u0250" for c in letters) >= share * len(letters)


class BiEncoderReranker:
    """A second opinion from the packaged bi-encoders: the head is rescored by cosine similarity.

    English (Latin-script) queries are read by the English MiniLM model, which ranks English paraphrases
    better than the multilingual model that built the semantic index; other scripts fall back to the
    multilingual model. Measured on the dev benchmarks it beats plain rank fusion, where the packaged pair
    network does not (docs/inference.md).
    """

    def __init__(self, name: str, english_model: str, multilingual_model: str) -> None:
        self._name = name
        self._english = english_model
        self._multilingual = multilingual_model

    @property
    def name(self) -> str:
        return self._name

    @property
    def max_length(self) -> int:
        return 0

    @property
    def content_hash(self) -> str:
        return ""

    def vectors_from(self, query: str) -> str:
        return self._english if self._english and mostly_latin(query) else self._multilingual

    def score(self, query: str, documents: Sequence[str], vectors: np.ndarray | None = None) -> Scored:
        if vectors is None or len(vectors) != len(documents) + 1:
            raise ValueError("the bi-encoder reranker needs the query's and every document's vector")
        scores = np.asarray(vectors[1:] @ vectors[0], dtype=np.float32).reshape(-1)
        return Scored(scores, np.zeros(len(documents), dtype=bool))
