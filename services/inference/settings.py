"""Settings of the inference layer."""

from __future__ import annotations

from dataclasses import dataclass, fields

from hindsight.runtime.settings import SettingsError, env

DEFAULT_MODEL = "use-multilingual-v3"
MINILM_MODEL = "minilm-l6-v2"
BLEND_MODEL = "use-minilm-blend"
DEFAULT_RERANKER = "bi-encoder"
PAIR_NETWORK_RERANKER = "nanoranker-v2"
PACKAGED_MODELS = (DEFAULT_MODEL, MINILM_MODEL, BLEND_MODEL)
PACKAGED_RERANKERS = (DEFAULT_RERANKER, PAIR_NETWORK_RERANKER)


def parse_named_dirs(pairs: tuple[str, ...], variable: str) -> dict[str, str]:
    """``("name=/path", ...)`` as a dict; a malformed pair or a repeated name names the variable."""
    named: dict[str, str] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not name or not path:
            raise SettingsError(f"{variable}: {pair!r} is not name=/path/to/model-directory")
        if name in named:
            raise SettingsError(f"{variable}: model name {name!r} is given twice")
        named[name] = path
    return named


@dataclass(frozen=True)
class InferenceSettings:
    """Which models to serve and how to batch calls to them."""

    model_path: str = env(
        "HINDSIGHT_EMBED_MODEL_PATH",
        "",
        "ONNX file of the multilingual USE model; empty: the one packaged in nanoranker.",
    )
    model_name: str = env(
        "HINDSIGHT_EMBED_MODEL",
        DEFAULT_MODEL,
        "Name of the default embedding model: requests with an empty model use it.",
    )
    packaged_models: tuple[str, ...] = env(
        "HINDSIGHT_EMBED_PACKAGED",
        PACKAGED_MODELS,
        f"Packaged embedding models to load, comma-separated, from: {', '.join(PACKAGED_MODELS)}.",
    )
    blend_english_weight: float = env(
        "HINDSIGHT_EMBED_BLEND_WEIGHT",
        0.5,
        f"MiniLM's share of the {BLEND_MODEL} cosine between two Latin-script texts (USE has the rest; "
        "other scripts are read by USE alone).",
    )
    model_dirs: tuple[str, ...] = env(
        "HINDSIGHT_EMBED_MODEL_DIRS",
        (),
        "More embedding models as name=/dir pairs, comma-separated; each directory holds tokenizer.json "
        "and an ONNX model (BERT/XLM-R inputs; pooling from hindsight.json or 1_Pooling/config.json).",
    )
    reranker_name: str = env(
        "HINDSIGHT_RERANKER",
        DEFAULT_RERANKER,
        "Name of the default reranker (requests with an empty model use it); empty: there is no default.",
    )
    packaged_rerankers: tuple[str, ...] = env(
        "HINDSIGHT_RERANK_PACKAGED",
        (DEFAULT_RERANKER,),
        f"Packaged rerankers to load, comma-separated, from: {', '.join(PACKAGED_RERANKERS)} "
        "(both read the USE model's vectors).",
    )
    reranker_dirs: tuple[str, ...] = env(
        "HINDSIGHT_RERANK_MODEL_DIRS",
        (),
        "Cross-encoder rerankers as name=/dir pairs, comma-separated; each directory holds tokenizer.json "
        "and an ONNX model that maps (query, document) pairs to logits.",
    )
    threads: int = env("HINDSIGHT_ONNX_THREADS", 1, "Intra-op threads ONNX Runtime may use per graph run.")
    parallel_runs: int = env(
        "HINDSIGHT_ONNX_RUNS",
        2,
        "Graph runs that may proceed at once (one worker thread each); a batch that finds several free is "
        "split between them. Cores used: about runs x threads.",
    )
    max_batch_size: int = env("HINDSIGHT_EMBED_MAX_BATCH", 32, "Most texts embedded in one model run.")
    max_batch_wait_ms: float = env(
        "HINDSIGHT_EMBED_BATCH_WAIT_MS",
        0.5,
        "How long a text that finds the model idle waits for others to join it (texts that queued during a "
        "run go in the next one at once).",
    )
    max_texts: int = env("HINDSIGHT_EMBED_MAX_TEXTS", 256, "Most texts one Embed request may carry.")
    max_documents: int = env("HINDSIGHT_RERANK_MAX_DOCS", 256, "Most documents one Rerank request may carry.")
    cache_entries: int = env(
        "HINDSIGHT_EMBED_CACHE",
        10_000,
        "Vectors kept per model for texts seen recently (recall reranks the same memories often); 0: none.",
    )
    max_chars: int = env(
        "HINDSIGHT_EMBED_MAX_CHARS", 4096, "Longer texts are cut to this many characters before embedding."
    )

    def __post_init__(self) -> None:
        minimums = {
            "threads": 1,
            "parallel_runs": 1,
            "max_batch_size": 1,
            "max_batch_wait_ms": 0,
            "max_texts": 1,
            "max_documents": 1,
            "max_chars": 1,
        }
        for field in fields(self):
            name = field.metadata["env"]
            if field.name in minimums and getattr(self, field.name) < minimums[field.name]:
                raise SettingsError(f"{name} must be at least {minimums[field.name]}")
        if not self.model_name.strip():
            raise SettingsError("HINDSIGHT_EMBED_MODEL must not be empty")
        unknown = sorted(set(self.packaged_models) - set(PACKAGED_MODELS))
        if unknown:
            raise SettingsError(
                f"HINDSIGHT_EMBED_PACKAGED: unknown model {unknown[0]!r}; "
                f"choose from {', '.join(PACKAGED_MODELS)}"
            )
        if not 0.0 <= self.blend_english_weight <= 1.0:
            raise SettingsError("HINDSIGHT_EMBED_BLEND_WEIGHT must lie between 0 and 1")
        both = {DEFAULT_MODEL, MINILM_MODEL}
        if BLEND_MODEL in self.packaged_models and not both <= set(self.packaged_models):
            raise SettingsError(
                f"HINDSIGHT_EMBED_PACKAGED: {BLEND_MODEL} reads {DEFAULT_MODEL} and {MINILM_MODEL}: load both"
            )
        embedders = set(self.packaged_models) | set(self.embedding_dirs)
        if self.model_name not in embedders:
            raise SettingsError(
                f"HINDSIGHT_EMBED_MODEL={self.model_name!r} is not loaded; "
                f"loaded: {', '.join(sorted(embedders))}"
            )
        unknown = sorted(set(self.packaged_rerankers) - set(PACKAGED_RERANKERS))
        if unknown:
            raise SettingsError(
                f"HINDSIGHT_RERANK_PACKAGED: unknown reranker {unknown[0]!r}; "
                f"choose from {', '.join(PACKAGED_RERANKERS)}"
            )
        if self.packaged_rerankers and DEFAULT_MODEL not in self.packaged_models:
            raise SettingsError(
                f"HINDSIGHT_RERANK_PACKAGED: the packaged rerankers read USE vectors: keep {DEFAULT_MODEL} "
                "in HINDSIGHT_EMBED_PACKAGED, or set HINDSIGHT_RERANK_PACKAGED to nothing"
            )
        rerankers = set(self.packaged_rerankers) | set(self.cross_encoder_dirs)
        if self.reranker_name and self.reranker_name not in rerankers:
            raise SettingsError(
                f"HINDSIGHT_RERANKER={self.reranker_name!r} is not loaded; "
                f"loaded: {', '.join(sorted(rerankers)) or 'none'}"
            )

    @property
    def embedding_dirs(self) -> dict[str, str]:
        """Extra embedding models by name (from ``HINDSIGHT_EMBED_MODEL_DIRS``)."""
        return parse_named_dirs(self.model_dirs, "HINDSIGHT_EMBED_MODEL_DIRS")

    @property
    def cross_encoder_dirs(self) -> dict[str, str]:
        """Cross-encoder rerankers by name (from ``HINDSIGHT_RERANK_MODEL_DIRS``)."""
        return parse_named_dirs(self.reranker_dirs, "HINDSIGHT_RERANK_MODEL_DIRS")
