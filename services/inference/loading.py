"""Load what the settings name: packaged models, model directories, rerankers (all blocking)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from hindsight.inference.blend import QUERY_TOKENS, BlendedEmbedder
from hindsight.inference.models import (
    Embedder,
    ModelRegistry,
    UseMultilingual,
    packaged_minilm_paths,
    packaged_reranker_path,
    packaged_use_path,
)
from hindsight.inference.rerank import BiEncoderReranker, PairNetworkReranker, Reranker
from hindsight.inference.settings import (
    BLEND_MODEL,
    DEFAULT_MODEL,
    DEFAULT_RERANKER,
    MINILM_MODEL,
    PAIR_NETWORK_RERANKER,
    InferenceSettings,
)
from hindsight.inference.tokenized import (
    ModelFiles,
    TextModelConfig,
    TokenizerEmbedder,
    load_cross_encoder_dir,
    load_model_dir,
)
from hindsight.runtime.errors import InvalidArgument

log = logging.getLogger(__name__)

MINILM_MAX_TOKENS = 256
"""all-MiniLM-L6-v2 was trained on at most 256 word pieces (sentence-transformers' max_seq_length)."""


def load_models(settings: InferenceSettings) -> ModelRegistry:
    """Load every configured embedding model (seconds of file reading and graph building)."""
    models: dict[str, Embedder] = {}
    if DEFAULT_MODEL in settings.packaged_models:
        path = Path(settings.model_path) if settings.model_path else packaged_use_path()
        if not path.is_file():
            raise FileNotFoundError(f"HINDSIGHT_EMBED_MODEL_PATH={str(path)!r} is not a file")
        models[DEFAULT_MODEL] = UseMultilingual(DEFAULT_MODEL, path, settings.threads)
    if MINILM_MODEL in settings.packaged_models:
        graph, tokenizer = packaged_minilm_paths()
        files = ModelFiles(graph, tokenizer, TextModelConfig(pooling="mean", max_length=MINILM_MAX_TOKENS))
        models[MINILM_MODEL] = TokenizerEmbedder(MINILM_MODEL, files, settings.threads)
    if BLEND_MODEL in settings.packaged_models:
        english = models[MINILM_MODEL]
        queries = english.reading_the_end(QUERY_TOKENS) if isinstance(english, TokenizerEmbedder) else None
        models[BLEND_MODEL] = BlendedEmbedder(
            BLEND_MODEL, models[DEFAULT_MODEL], english, settings.blend_english_weight, queries
        )
    for name, directory in settings.embedding_dirs.items():
        models[name] = load_model_dir(name, Path(directory), settings.threads)
    return ModelRegistry(models, default=settings.model_name)


@dataclass(frozen=True)
class RerankerRegistry:
    """Loaded rerankers by name, and which one an empty name means ("" when there is no default)."""

    rerankers: dict[str, Reranker]
    default: str

    def get(self, name: str = "") -> Reranker:
        """The reranker called ``name`` (empty: the default); an unknown name is the caller's error."""
        chosen = name or self.default
        reranker = self.rerankers.get(chosen)
        if reranker is None:
            available = ", ".join(sorted(self.rerankers)) or "none"
            what = f"unknown reranker {name!r}" if name else "no default reranker is configured"
            raise InvalidArgument("model", f"{what}; available: {available}")
        return reranker


def load_rerankers(settings: InferenceSettings) -> RerankerRegistry:
    """The packaged rerankers named in the settings and every configured cross-encoder."""
    rerankers: dict[str, Reranker] = {}
    if DEFAULT_RERANKER in settings.packaged_rerankers:
        english = MINILM_MODEL if MINILM_MODEL in settings.packaged_models else ""
        rerankers[DEFAULT_RERANKER] = BiEncoderReranker(DEFAULT_RERANKER, english, DEFAULT_MODEL)
    if PAIR_NETWORK_RERANKER in settings.packaged_rerankers:
        rerankers[PAIR_NETWORK_RERANKER] = PairNetworkReranker(
            PAIR_NETWORK_RERANKER,
            packaged_reranker_path(),
            DEFAULT_MODEL,
            settings.threads,
            settings.max_chars,
        )
    for name, directory in settings.cross_encoder_dirs.items():
        rerankers[name] = load_cross_encoder_dir(name, Path(directory), settings.threads)
    return RerankerRegistry(rerankers, settings.reranker_name)
