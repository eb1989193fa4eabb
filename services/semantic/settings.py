"""Settings of the semantic layer: where Qdrant is and which inference service makes the vectors."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.runtime.settings import env


@dataclass(frozen=True)
class SemanticSettings:
    """How the semantic layer reaches Qdrant and the inference layer."""

    qdrant_url: str = env(
        "QDRANT_URL",
        "",
        "Qdrant server URL (e.g. http://qdrant:6333); empty keeps the vectors in process at"
        " HINDSIGHT_QDRANT_PATH (see HINDSIGHT_QDRANT_BACKEND).",
    )
    qdrant_api_key: str = env("QDRANT_API_KEY", "", "API key for the Qdrant server, if it requires one.")
    qdrant_path: str = env(
        "HINDSIGHT_QDRANT_PATH",
        "",
        "Directory of the in-process vector store; empty uses a scratch directory removed on exit"
        " (tests only).",
    )
    qdrant_backend: str = env(
        "HINDSIGHT_QDRANT_BACKEND",
        "edge",
        "In-process engine when QDRANT_URL is empty: 'edge' (Qdrant Edge: payload indexes, cost per"
        " bank) or 'local' (qdrant-client local mode: scans every point; the previous default, kept"
        " for comparison).",
    )
    qdrant_timeout: int = env("HINDSIGHT_QDRANT_TIMEOUT", 10, "Seconds a Qdrant server request may take.")
    collection_prefix: str = env(
        "HINDSIGHT_SEMANTIC_COLLECTION_PREFIX",
        "hs",
        "Prefix of the collection name; the rest names the embedding model.",
    )
    inference_addr: str = env("HINDSIGHT_INFERENCE_ADDR", "", "Address (host:port) of the inference layer.")
    internal_token: str = env(
        "HINDSIGHT_INTERNAL_TOKEN", "", "Token this service presents when calling the inference layer."
    )
    embedding_model: str = env(
        "HINDSIGHT_SEMANTIC_MODEL",
        "",
        "Embedding model to ask the inference layer for; empty means its default. use-minilm-blend finds "
        "English better, at a cost in write and recall time (docs/inference.md).",
    )
    inference_timeout: float = env(
        "HINDSIGHT_INFERENCE_TIMEOUT",
        30.0,
        "Seconds one embedding call may take (capped by the caller's deadline).",
    )
    startup_timeout: float = env(
        "HINDSIGHT_SEMANTIC_STARTUP_TIMEOUT",
        30.0,
        "Seconds to wait on start for the inference layer to answer ModelInfo.",
    )
    expansion_hops: int = env(
        "HINDSIGHT_SEMANTIC_EXPANSION_HOPS",
        0,
        "Relations a search follows from the entities its query names to facts about related ones (0 to 2).",
    )
    dedup_threshold: float = env(
        "HINDSIGHT_SEMANTIC_DEDUP",
        0.95,
        "Cosine at which a new fact, preference, rule or entity summary merges into a current one"
        " of its kind.",
    )
    extract_facts: bool = env(
        "HINDSIGHT_SEMANTIC_EXTRACT", True, "Extract facts and entities from retained turns."
    )
    corrections: bool = env(
        "HINDSIGHT_SEMANTIC_CORRECTIONS",
        True,
        "A turn that corrects or restates an earlier statement (same subject, new value) supersedes it;"
        " recall ranks the old one below its correction and keeps it as history.",
    )
    corrections_by_meaning: bool = env(
        "HINDSIGHT_SEMANTIC_CORRECTIONS_BY_MEANING",
        True,
        "With HINDSIGHT_SEMANTIC_CORRECTIONS: a turn also supersedes the earlier turns that answer the same"
        " question with another value, found by meaning (no 'my X is Y' needed; docs/retrieval.md).",
    )
    corrections_llm: bool = env(
        "HINDSIGHT_SEMANTIC_CORRECTIONS_LLM",
        False,
        "When an LLM is configured (LLM_API_BASE): let it judge whether a retained turn answers the same"
        " question as its nearest earlier turns with a new, current value (two calls at most per turn, in"
        " the write path); off, or when it fails, the rules decide.",
    )
    speakers: str = env(
        "HINDSIGHT_SEMANTIC_SPEAKERS",
        "auto",
        "Whose statements a bank holds, for corrections: 'person' (one person: every user turn is theirs),"
        " 'auto' (named speakers are distinct people, unnamed ones are one person) or 'pooled' (several"
        " people; an unnamed speaker is one person only inside a session). Per bank:"
        " HINDSIGHT_SEMANTIC_BANK_SPEAKERS.",
    )
    bank_speakers: str = env(
        "HINDSIGHT_SEMANTIC_BANK_SPEAKERS",
        "",
        "Per-bank override of HINDSIGHT_SEMANTIC_SPEAKERS: 'pattern=mode' pairs, comma-separated, bank ids"
        " matched as shell patterns, first match wins (e.g. 'team-*=pooled,alice=person').",
    )
    entity_pages: bool = env(
        "HINDSIGHT_SEMANTIC_PAGES",
        True,
        "Keep entity pages: read each retained turn for the people, places and things it mentions"
        " (its speaker, names, relatives) and count them on the entity's page (docs/semantic.md).",
    )
    defences: bool = env(
        "HINDSIGHT_DEFENCES",
        True,
        "Poisoning defences ('on' or 'off'; the edge reads the same switch): facts from tools and outside"
        " sources keep low trust and the 'uncorroborated' tag until an independent source states them, and"
        " never supersede a trusted value (docs/security.md).",
    )
    llm_extract_timeout: float = env(
        "HINDSIGHT_SEMANTIC_LLM_TIMEOUT",
        20.0,
        "Seconds the LLM fact extraction of one Upsert may take before the rules take over.",
    )
