"""Settings of the inference layer."""

from __future__ import annotations

from dataclasses import dataclass, fields

from hindsight.runtime.settings import SettingsError, env

DEFAULT_MODEL = "use-multilingual-v3"


@dataclass(frozen=True)
class InferenceSettings:
    """Which model to serve and how to batch calls to it."""

    model_path: str = env(
        "HINDSIGHT_EMBED_MODEL_PATH",
        "",
        "ONNX file of the multilingual USE model; empty: the one packaged in nanoranker.",
    )
    model_name: str = env(
        "HINDSIGHT_EMBED_MODEL",
        DEFAULT_MODEL,
        "Name the embedding model is served under; requests with an empty model use it.",
    )
    threads: int = env("HINDSIGHT_ONNX_THREADS", 2, "Intra-op threads ONNX Runtime may use per inference.")
    max_batch_size: int = env("HINDSIGHT_EMBED_MAX_BATCH", 32, "Most texts embedded in one model run.")
    max_batch_wait_ms: float = env(
        "HINDSIGHT_EMBED_BATCH_WAIT_MS",
        3.0,
        "How long the first text of a batch waits for others to join it.",
    )
    max_texts: int = env("HINDSIGHT_EMBED_MAX_TEXTS", 256, "Most texts one Embed request may carry.")
    max_chars: int = env(
        "HINDSIGHT_EMBED_MAX_CHARS", 4096, "Longer texts are cut to this many characters before embedding."
    )

    def __post_init__(self) -> None:
        minimums = {"threads": 1, "max_batch_size": 1, "max_batch_wait_ms": 0, "max_texts": 1, "max_chars": 1}
        for field in fields(self):
            name = field.metadata["env"]
            if field.name in minimums and getattr(self, field.name) < minimums[field.name]:
                raise SettingsError(f"{name} must be at least {minimums[field.name]}")
        if not self.model_name.strip():
            raise SettingsError("HINDSIGHT_EMBED_MODEL must not be empty")
