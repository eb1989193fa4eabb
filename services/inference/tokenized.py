"""Models that read word pieces: a ``tokenizer.json`` in front of an ONNX graph with BERT/XLM-R inputs.

Two uses share the tokenizer handling: bi-encoders (text -> token vectors -> mean or CLS pooling ->
L2-normalised embedding) and cross-encoders ((query, document) pair -> logits -> relevance score).
A model directory holds ``tokenizer.json``, the graph (``model.onnx``, ``onnx/model.onnx`` or the only
``*.onnx``) and optionally ``hindsight.json`` ({"pooling", "max_length", "query_prefix",
"passage_prefix"}); without it, sentence-transformers' ``1_Pooling/config.json`` and
``sentence_bert_config.json`` are read, and e5-style models get their "query: "/"passage: " prefixes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from hindsight.inference.models import Embedded, file_sha256, l2_normalise, session_options

log = logging.getLogger(__name__)

Pooling = Literal["mean", "cls"]
DEFAULT_MAX_TOKENS = 512
PAIR_CHUNK = 32
"""Pairs per cross-encoder graph run: bounds memory for a long candidate list."""
LENGTH_CHUNK = 16
"""Texts per bi-encoder graph run: the batch is sorted by token count and run in chunks, each padded only
to its own longest text (a transformer's cost grows with the padded length of every row)."""
_INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


@dataclass(frozen=True)
class TextModelConfig:
    """How a tokenizer model's outputs become one vector, and what it expects in front of its inputs."""

    pooling: Pooling = "mean"
    max_length: int = DEFAULT_MAX_TOKENS
    query_prefix: str = ""
    passage_prefix: str = ""
    keep_end: bool = False
    """A text over ``max_length`` keeps its last tokens (a conversation's latest words), not its first."""

    def fingerprint(self) -> bytes:
        """The settings that change the vectors, for the content hash."""
        parts: list[object] = [self.pooling, self.max_length, self.query_prefix, self.passage_prefix]
        if self.keep_end:  # only then: the hashes of stores built before the setting existed stay the same
            parts.append("keep_end")
        return json.dumps(parts, ensure_ascii=False).encode()


@dataclass(frozen=True)
class ModelFiles:
    """The files of one model directory."""

    graph: Path
    tokenizer: Path
    config: TextModelConfig


def load_tokenizer(path: Path, max_length: int, keep_end: bool = False) -> Tokenizer:
    """The tokenizer, truncating at ``max_length`` (from the front when ``keep_end``) and not padding
    (:class:`_TokenGraph` pads each run).

    Exported tokenizers often pad to a fixed length (e.g. 128): that wastes compute on short texts,
    so whatever padding the file sets is replaced.
    """
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length, direction="left" if keep_end else "right")
    return tokenizer


def pad_id_of(path: Path) -> int:
    """The id of the padding token named in the file (or [PAD] / <pad>), 0 when there is none."""
    tokenizer = Tokenizer.from_file(str(path))
    padding = tokenizer.padding or {}
    for token in (padding.get("pad_token"), "[PAD]", "<pad>"):
        if token and (found := tokenizer.token_to_id(token)) is not None:
            return int(found)
    return 0


class _TokenGraph:
    """An ONNX graph fed with whichever of input_ids, attention_mask and token_type_ids it declares."""

    def __init__(self, path: Path, threads: int, pad_id: int = 0) -> None:
        self.pad_id = pad_id
        self.session = ort.InferenceSession(
            str(path), session_options(threads), providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name: _INT_TYPES.get(i.type, np.int64) for i in self.session.get_inputs()}
        if "input_ids" not in self.inputs:
            raise ValueError(f"{path}: the graph has no input_ids input; found {sorted(self.inputs)}")
        outputs = self.session.get_outputs()
        names = [o.name for o in outputs]
        self.output = next((n for n in ("last_hidden_state", "logits") if n in names), names[0])

    def run(self, encodings: Sequence[Encoding]) -> tuple[np.ndarray, np.ndarray]:
        """(first output, attention mask) for a batch of encodings, padded to the longest of them."""
        width = max(len(e.ids) for e in encodings)
        columns = {
            "input_ids": np.full((len(encodings), width), self.pad_id, dtype=np.int64),
            "attention_mask": np.zeros((len(encodings), width), dtype=np.int64),
            "token_type_ids": np.zeros((len(encodings), width), dtype=np.int64),
        }
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            columns["input_ids"][row, :length] = encoding.ids
            columns["attention_mask"][row, :length] = encoding.attention_mask
            columns["token_type_ids"][row, :length] = encoding.type_ids
        feed = {name: columns[name].astype(dtype, copy=False) for name, dtype in self.inputs.items()}
        (output,) = self.session.run([self.output], feed)
        return np.asarray(output, dtype=np.float32), columns["attention_mask"].astype(np.float32)


def content_hash(files: ModelFiles) -> str:
    """SHA-256 over the graph, the tokenizer and the pooling settings: any of them changes the vectors."""
    digest = hashlib.sha256()
    for part in (file_sha256(files.graph), file_sha256(files.tokenizer)):
        digest.update(part.encode())
    digest.update(files.config.fingerprint())
    return digest.hexdigest()


class TokenizerEmbedder:
    """A bi-encoder: word pieces in, token vectors out, pooled and L2-normalised."""

    def __init__(self, name: str, files: ModelFiles, threads: int) -> None:
        self._name = name
        self._files = files
        self._tokenizer = load_tokenizer(files.tokenizer, files.config.max_length, files.config.keep_end)
        self._graph = _TokenGraph(files.graph, threads, pad_id_of(files.tokenizer))
        self._hash = content_hash(files)
        self._dimension = int(self.embed(["dimension probe"]).vectors.shape[1])
        log.info(
            "model loaded",
            extra={
                "model": name,
                "path": str(files.graph),
                "dimension": self._dimension,
                "pooling": files.config.pooling,
                "max_length": files.config.max_length,
                "threads": threads,
            },
        )

    def reading_the_end(self, max_length: int) -> TokenizerEmbedder:
        """The same model (one graph, loaded once) reading at most a text's last ``max_length`` tokens."""
        config = replace(self._config, max_length=max_length, keep_end=True)
        files = replace(self._files, config=config)
        tail = copy.copy(self)
        tail._files = files
        tail._tokenizer = load_tokenizer(files.tokenizer, max_length, keep_end=True)
        tail._hash = content_hash(files)
        return tail

    @property
    def _config(self) -> TextModelConfig:
        return self._files.config

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_length(self) -> int:
        return self._config.max_length

    @property
    def content_hash(self) -> str:
        return self._hash

    @property
    def query_prefix(self) -> str:
        return self._config.query_prefix

    @property
    def passage_prefix(self) -> str:
        return self._config.passage_prefix

    def embed(self, texts: Sequence[str]) -> Embedded:
        if not texts:
            return Embedded(np.zeros((0, self._dimension), dtype=np.float32), np.zeros(0, dtype=bool))
        encodings = self._tokenizer.encode_batch(list(texts))
        truncated = np.array([bool(e.overflowing) for e in encodings], dtype=bool)
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        rows: list[np.ndarray] = [np.empty(0)] * len(encodings)
        for start in range(0, len(order), LENGTH_CHUNK):
            chunk = order[start : start + LENGTH_CHUNK]
            pooled = self._pool(*self._graph.run([encodings[i] for i in chunk]))
            for index, row in zip(chunk, pooled, strict=True):
                rows[index] = row
        return Embedded(l2_normalise(np.stack(rows)), truncated)

    def _pool(self, output: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if output.ndim == 2:  # the graph pools by itself (e.g. a "sentence_embedding" output)
            return output
        if self._config.pooling == "cls":
            return output[:, 0, :]
        weights = mask[:, :, None]
        return (output * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


@dataclass(frozen=True)
class Scored:
    """One relevance score per document, and which pairs were cut to the model's limit."""

    scores: np.ndarray
    truncated: np.ndarray


class CrossEncoder:
    """A cross-encoder reranker: (query, document) pairs in, one logit (or two classes) out per pair."""

    def vectors_from(self, query: str) -> str:
        """Reads raw text: needs no vectors from an embedding model."""
        return ""

    def __init__(self, name: str, files: ModelFiles, threads: int) -> None:
        self._name = name
        self._max_length = files.config.max_length
        self._tokenizer = load_tokenizer(files.tokenizer, files.config.max_length)
        self._graph = _TokenGraph(files.graph, threads, pad_id_of(files.tokenizer))
        self._hash = content_hash(files)
        log.info("reranker loaded", extra={"model": name, "path": str(files.graph), "threads": threads})

    @property
    def name(self) -> str:
        return self._name

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def content_hash(self) -> str:
        return self._hash

    def score(self, query: str, documents: Sequence[str], vectors: np.ndarray | None = None) -> Scored:
        """Sigmoid of the logit (or the probability of the relevant class) for every document."""
        scores: list[np.ndarray] = []
        truncated: list[bool] = []
        for start in range(0, len(documents), PAIR_CHUNK):
            pairs = [(query, document) for document in documents[start : start + PAIR_CHUNK]]
            encodings = self._tokenizer.encode_batch(pairs)
            truncated.extend(bool(e.overflowing) for e in encodings)
            logits, _ = self._graph.run(encodings)
            scores.append(relevance(logits))
        if not scores:
            return Scored(np.zeros(0, dtype=np.float32), np.zeros(0, dtype=bool))
        return Scored(np.concatenate(scores), np.array(truncated, dtype=bool))


def relevance(logits: np.ndarray) -> np.ndarray:
    """One score in (0, 1) per row: sigmoid of a single logit, softmax of the last of several classes."""
    logits = np.asarray(logits, dtype=np.float64).reshape(len(logits), -1)
    if logits.shape[1] == 1:
        return (1.0 / (1.0 + np.exp(-logits[:, 0]))).astype(np.float32)
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (shifted[:, -1] / shifted.sum(axis=1)).astype(np.float32)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def _graph_file(directory: Path) -> Path:
    for candidate in (directory / "model.onnx", directory / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    found = sorted(directory.glob("*.onnx")) or sorted(directory.glob("onnx/*.onnx"))
    if len(found) != 1:
        raise FileNotFoundError(
            f"{directory}: expected model.onnx (or exactly one *.onnx), found {[p.name for p in found]}"
        )
    return found[0]


def read_model_dir(directory: Path) -> ModelFiles:
    """Find the graph, the tokenizer and the pooling settings of a model directory."""
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a model directory")
    tokenizer = directory / "tokenizer.json"
    if not tokenizer.is_file():
        raise FileNotFoundError(f"{directory} has no tokenizer.json")
    ours = _read_json(directory / "hindsight.json")
    pooling_config = _read_json(directory / "1_Pooling" / "config.json")
    sbert = _read_json(directory / "sentence_bert_config.json")
    pooling: Pooling = "cls" if pooling_config.get("pooling_mode_cls_token") else "mean"
    pooling = ours.get("pooling", pooling)
    if pooling not in ("mean", "cls"):
        raise ValueError(f"{directory}/hindsight.json: pooling must be 'mean' or 'cls', not {pooling!r}")
    truncation = _read_json(tokenizer).get("truncation") or {}
    max_length = int(
        ours.get("max_length")
        or sbert.get("max_seq_length")
        or truncation.get("max_length")
        or DEFAULT_MAX_TOKENS
    )
    e5 = "e5" in directory.name.lower()
    config = TextModelConfig(
        pooling=pooling,
        max_length=max_length,
        query_prefix=str(ours.get("query_prefix", "query: " if e5 else "")),
        passage_prefix=str(ours.get("passage_prefix", "passage: " if e5 else "")),
    )
    return ModelFiles(_graph_file(directory), tokenizer, config)


def load_model_dir(name: str, directory: Path, threads: int) -> TokenizerEmbedder:
    """An embedding model from a directory (see the module docstring for its layout)."""
    return TokenizerEmbedder(name, read_model_dir(directory), threads)


def load_cross_encoder_dir(name: str, directory: Path, threads: int) -> CrossEncoder:
    """A cross-encoder reranker from a directory of the same layout."""
    return CrossEncoder(name, read_model_dir(directory), threads)
