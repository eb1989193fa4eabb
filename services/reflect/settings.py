"""Settings of the reflect layer: its store, the layers it calls, the lesson life cycle and the triggers.

The LLM it may use is configured by the shared ``LLM_*`` settings (``hindsight.runtime.llm``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.runtime.migrations import SCHEMA_NAME
from hindsight.runtime.settings import SettingsError, env


@dataclass(frozen=True)
class ReflectSettings:
    """Where lessons are kept and where the episodes they come from are read."""

    database_url: str = env(
        "DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/hindsight", "PostgreSQL holding the lessons."
    )
    schema: str = env(
        "HINDSIGHT_REFLECT_SCHEMA", "reflect", "PostgreSQL schema of this layer's tables; migrated on start."
    )
    episodic_addr: str = env("HINDSIGHT_EPISODIC_ADDR", "", "Address (host:port) of the episodic layer.")
    internal_token: str = env(
        "HINDSIGHT_INTERNAL_TOKEN", "", "Token this service presents when calling the episodic layer."
    )
    episodic_timeout: float = env(
        "HINDSIGHT_REFLECT_EPISODIC_TIMEOUT", 10.0, "Seconds one ListEpisodes page may take."
    )
    max_episodes: int = env(
        "HINDSIGHT_REFLECT_MAX_EPISODES", 5000, "Most episodes one reflection reads (the newest ones)."
    )
    pool_min_size: int = env("HINDSIGHT_REFLECT_POOL_MIN", 1, "Connections kept open to PostgreSQL.")
    pool_max_size: int = env("HINDSIGHT_REFLECT_POOL_MAX", 5, "Most connections open to PostgreSQL.")
    connect_timeout_seconds: float = env(
        "HINDSIGHT_REFLECT_CONNECT_TIMEOUT_SECONDS", 30.0, "How long start-up waits for PostgreSQL."
    )
    acquire_timeout_seconds: float = env(
        "HINDSIGHT_REFLECT_ACQUIRE_TIMEOUT_SECONDS", 5.0, "How long a request waits for a free connection."
    )
    defences: bool = env(
        "HINDSIGHT_DEFENCES",
        True,
        "Poisoning defences ('on' or 'off'; the edge reads the same switch): no lesson is drawn from episodes"
        " that only tools and outside sources reported (docs/security.md).",
    )
    inference_addr: str = env(
        "HINDSIGHT_INFERENCE_ADDR", "", "Address (host:port) of the inference layer; merging needs its Embed."
    )
    semantic_addr: str = env(
        "HINDSIGHT_SEMANTIC_ADDR",
        "",
        "Address (host:port) of the semantic layer; maintenance moves cold records.",
    )
    cold_after_days: float = env(
        "HINDSIGHT_REFLECT_COLD_AFTER_DAYS",
        180.0,
        "Days a semantic record goes unwritten before maintenance may move it to the cold tier (0: never).",
    )
    cold_below_importance: float = env(
        "HINDSIGHT_REFLECT_COLD_BELOW_IMPORTANCE",
        0.5,
        "Only semantic records less important than this go cold.",
    )
    inference_timeout: float = env(
        "HINDSIGHT_REFLECT_INFERENCE_TIMEOUT", 30.0, "Seconds one Embed call may take during maintenance."
    )
    decay_factor: float = env(
        "HINDSIGHT_REFLECT_DECAY_FACTOR",
        0.9,
        "A lesson's weight is multiplied by this per decay period unused.",
    )
    decay_after_days: float = env(
        "HINDSIGHT_REFLECT_DECAY_AFTER_DAYS", 30.0, "Length of a decay period: days without being recalled."
    )
    archive_after_days: float = env(
        "HINDSIGHT_REFLECT_ARCHIVE_AFTER_DAYS", 90.0, "Days unused after which a weak lesson is archived."
    )
    archive_below_weight: float = env(
        "HINDSIGHT_REFLECT_ARCHIVE_BELOW",
        0.3,
        "Archive an unused lesson when confidence x weight is below this.",
    )
    merge_similarity: float = env(
        "HINDSIGHT_REFLECT_MERGE_SIMILARITY", 0.95, "Cosine similarity at which two lessons are one (merged)."
    )
    merge_max_lessons: int = env(
        "HINDSIGHT_REFLECT_MERGE_MAX_LESSONS", 5000, "Most current lessons of a bank compared for merging."
    )
    llm_budget_per_hour: int = env(
        "HINDSIGHT_REFLECT_LLM_BUDGET_PER_HOUR", 20, "LLM reflections a bank may use per hour; then rules."
    )
    llm_max_episodes: int = env(
        "HINDSIGHT_REFLECT_LLM_MAX_EPISODES", 20, "Newest episodes shown to the LLM in one reflection."
    )
    llm_max_lessons: int = env(
        "HINDSIGHT_REFLECT_LLM_MAX_LESSONS", 4, "Most lessons one LLM reflection writes."
    )
    llm_max_tokens: int = env(
        "HINDSIGHT_REFLECT_LLM_MAX_TOKENS", 1200, "Completion tokens of one reflection."
    )
    llm_attempts: int = env(
        "HINDSIGHT_REFLECT_LLM_ATTEMPTS",
        2,
        "Reflections asked of the LLM before its answers count as invalid.",
    )
    idle_after_seconds: float = env(
        "HINDSIGHT_REFLECT_IDLE_SECONDS", 1800.0, "A session without new episodes this long is reflected on."
    )
    important_at: float = env(
        "HINDSIGHT_REFLECT_IMPORTANT_AT", 0.8, "An episode at least this important triggers a reflection."
    )
    scan_interval_seconds: float = env(
        "HINDSIGHT_REFLECT_SCAN_SECONDS",
        300.0,
        "How often idle and important sessions are looked for; 0: never.",
    )
    maintain_interval_seconds: float = env(
        "HINDSIGHT_REFLECT_MAINTAIN_SECONDS",
        86400.0,
        "How often every bank is maintained; 0: only on demand.",
    )
    match_pool: int = env(
        "HINDSIGHT_REFLECT_MATCH_POOL",
        200,
        "Current lessons (most confident first) a search compares with the query by meaning, beside the "
        "keyword hits; 0: keyword hits only.",
    )
    match_min: float = env(
        "HINDSIGHT_REFLECT_MATCH_MIN",
        0.05,
        "Lowest calibrated relevance (0..1) a lesson search returns; the edge's floor then decides.",
    )

    def __post_init__(self) -> None:
        if not SCHEMA_NAME.fullmatch(self.schema):
            raise SettingsError("HINDSIGHT_REFLECT_SCHEMA must be a lower-case identifier (a-z, 0-9, _)")
        if self.max_episodes < 1:
            raise SettingsError("HINDSIGHT_REFLECT_MAX_EPISODES must be at least 1")
        if self.pool_min_size < 0 or self.pool_max_size < max(1, self.pool_min_size):
            raise SettingsError("HINDSIGHT_REFLECT_POOL_MAX must be at least 1 and at least the minimum")
        if self.connect_timeout_seconds <= 0 or self.acquire_timeout_seconds <= 0:
            raise SettingsError("HINDSIGHT_REFLECT_*_TIMEOUT_SECONDS must be positive")
        if not 0 < self.decay_factor <= 1 or self.decay_after_days <= 0 or self.archive_after_days <= 0:
            raise SettingsError("HINDSIGHT_REFLECT_DECAY_FACTOR must be in (0, 1]; the day counts positive")
        if not 0 <= self.archive_below_weight <= 1 or not 0 < self.merge_similarity <= 1:
            raise SettingsError("HINDSIGHT_REFLECT_ARCHIVE_BELOW and _MERGE_SIMILARITY must be within 0..1")
        if self.llm_budget_per_hour < 0 or min(self.llm_max_episodes, self.llm_max_lessons) < 1:
            raise SettingsError("HINDSIGHT_REFLECT_LLM_* must be positive (the budget may be 0: no LLM)")
        if self.llm_attempts < 1 or self.scan_interval_seconds < 0 or self.maintain_interval_seconds < 0:
            raise SettingsError("HINDSIGHT_REFLECT_LLM_ATTEMPTS >= 1; intervals must not be negative")
        if self.match_pool < 0 or not 0 <= self.match_min <= 1:
            raise SettingsError("HINDSIGHT_REFLECT_MATCH_POOL must not be negative; _MATCH_MIN within 0..1")
