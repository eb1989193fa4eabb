"""Embedding models: a small protocol, the multilingual USE model, and a registry of loaded models by name.

A new model is one class that satisfies :class:`Embedder` plus one line in :func:`load_models`; the
servicer, the batching and the model info need no change.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import onnxruntime as ort
import onnxruntime_extensions

from hindsight.inference.settings import InferenceSettings
from hindsight.runtime.errors import InvalidArgument

log = logging.getLogger(__name__)

USE_RESOURCE = "resources/universal-sentence-encoder-multilingual.onnx"
"""Where the USE model lies inside the installed ``nanoranker`` package."""


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
        """SHA-256 (hex) of the model file: a new hash means stored vectors must be rebuilt."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text."""
        ...


def packaged_use_path() -> Path:
    """The USE ONNX file inside the installed ``nanoranker`` package, found without importing it.

    Importing ``nanoranker`` would load its own models, which this service does not want.
    """
    spec = importlib.util.find_spec("nanoranker")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the nanoranker package that ships the USE model is not installed")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / USE_RESOURCE
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"nanoranker is installed but has no {USE_RESOURCE}")


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


class UseMultilingual:
    """Google's Universal Sentence Encoder, multilingual v3 (int8 ONNX, 512-d).

    Its SentencePiece tokenizer is an op inside the graph (from onnxruntime-extensions), so the graph
    takes raw strings; there is no token limit to report.
    """

    def __init__(self, name: str, path: Path, threads: int) -> None:
        options = ort.SessionOptions()
        options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
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
        self._dimension = width if isinstance(width, int) else len(self.embed(["dimension probe"])[0])
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

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        batch = np.array(list(texts), dtype=object)
        (vectors,) = self._session.run([self._output], {self._input: batch})
        return l2_normalise(vectors)


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


def load_models(settings: InferenceSettings) -> ModelRegistry:
    """Load every configured model (blocking: seconds of file reading and graph building)."""
    path = Path(settings.model_path) if settings.model_path else packaged_use_path()
    if not path.is_file():
        raise FileNotFoundError(f"HINDSIGHT_EMBED_MODEL_PATH={str(path)!r} is not a file")
    use = UseMultilingual(settings.model_name, path, settings.threads)
    return ModelRegistry({use.name: use}, default=use.name)
