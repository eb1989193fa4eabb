"""Settings of the episodic layer."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.runtime.migrations import SCHEMA_NAME
from hindsight.runtime.settings import SettingsError, env


@dataclass(frozen=True)
class EpisodicSettings:
    """Where the episodic tables live, which layers the outbox delivers to, and the tuning of search,
    segmentation and access statistics."""

    database_url: str = env(
        "DATABASE_URL",
        "postgresql://postgres@127.0.0.1:5432/hindsight",
        "PostgreSQL holding the episodic tables.",
    )
    schema: str = env(
        "HINDSIGHT_EPISODIC_SCHEMA",
        "episodic",
        "PostgreSQL schema of this layer's tables; created and migrated on start.",
    )
    pool_min_size: int = env("HINDSIGHT_EPISODIC_POOL_MIN", 1, "Connections kept open to PostgreSQL.")
    pool_max_size: int = env("HINDSIGHT_EPISODIC_POOL_MAX", 10, "Most connections open to PostgreSQL.")
    connect_timeout_seconds: float = env(
        "HINDSIGHT_EPISODIC_CONNECT_TIMEOUT_SECONDS",
        30.0,
        "How long start-up waits for PostgreSQL before failing.",
    )
    acquire_timeout_seconds: float = env(
        "HINDSIGHT_EPISODIC_ACQUIRE_TIMEOUT_SECONDS",
        5.0,
        "How long a request waits for a free connection before UNAVAILABLE.",
    )
    semantic_addr: str = env(
        "HINDSIGHT_SEMANTIC_ADDR",
        "",
        "Semantic layer (host:port): the outbox indexes turns and episodes there.",
    )
    working_addr: str = env(
        "HINDSIGHT_WORKING_ADDR", "", "Working layer (host:port): the outbox removes purged turns there."
    )
    reflect_addr: str = env(
        "HINDSIGHT_REFLECT_ADDR",
        "",
        "Reflect layer (host:port): the outbox removes lessons of purged records.",
    )
    inference_addr: str = env(
        "HINDSIGHT_INFERENCE_ADDR",
        "",
        "Inference layer (host:port): segmentation compares turns by embedding; lexically without it.",
    )
    internal_token: str = env(
        "HINDSIGHT_INTERNAL_TOKEN", "", "Token this service presents when calling other layers."
    )
    outbox_batch: int = env("HINDSIGHT_EPISODIC_OUTBOX_BATCH", 200, "Outbox entries delivered per round.")
    outbox_timeout_seconds: float = env(
        "HINDSIGHT_EPISODIC_OUTBOX_TIMEOUT_SECONDS", 10.0, "Seconds one delivery call may take."
    )
    outbox_backoff_seconds: float = env(
        "HINDSIGHT_EPISODIC_OUTBOX_BACKOFF_SECONDS",
        0.5,
        "First wait before a failed delivery is retried; doubles with every failure (with jitter).",
    )
    outbox_max_backoff_seconds: float = env(
        "HINDSIGHT_EPISODIC_OUTBOX_MAX_BACKOFF_SECONDS", 60.0, "Longest wait between two delivery attempts."
    )
    outbox_lease_seconds: float = env(
        "HINDSIGHT_EPISODIC_OUTBOX_LEASE_SECONDS",
        60.0,
        "A claimed entry not delivered within this long (its replica died) is delivered again.",
    )
    outbox_poll_seconds: float = env(
        "HINDSIGHT_EPISODIC_OUTBOX_POLL_SECONDS",
        5.0,
        "Longest idle wait of the deliverer (entries written by other replicas are found this soon).",
    )
    outbox_max_attempts: int = env(
        "HINDSIGHT_EPISODIC_OUTBOX_MAX_ATTEMPTS",
        5,
        "Attempts an outbox entry a layer refuses (malformed, too large) gets before it moves to the "
        "dead-letter list; a layer that is down or busy never sends an entry there.",
    )
    outbox_batch_bytes: int = env(
        "HINDSIGHT_EPISODIC_OUTBOX_BATCH_BYTES",
        4 * 1024 * 1024,
        "Largest delivery request, in bytes (serialized); kept under HINDSIGHT_MAX_REQUEST_BYTES.",
    )
    reply_context: bool = env(
        "HINDSIGHT_EPISODIC_REPLY_CONTEXT",
        True,
        "Send each turn to semantic memory with the turn just before it in its session when another speaker "
        "said it, to be read into its vector (a reply is found by what it answers; docs/retrieval.md).",
    )
    half_life_days: float = env(
        "HINDSIGHT_EPISODIC_HALF_LIFE_DAYS", 7.0, "Keyword scores of records this old count half as much."
    )
    decay_floor: float = env(
        "HINDSIGHT_EPISODIC_DECAY_FLOOR",
        0.5,
        "Share of the keyword score that never decays (0: all of it decays; 1: no time decay).",
    )
    segment_gap_minutes: float = env(
        "HINDSIGHT_EPISODIC_SEGMENT_GAP_MINUTES",
        30.0,
        "A pause this long between turns starts a new episode.",
    )
    segment_embedding_threshold: float = env(
        "HINDSIGHT_EPISODIC_SEGMENT_EMBEDDING_THRESHOLD",
        0.3,
        "Cosine similarity of neighbouring turns (by embedding) below which the topic shifted.",
    )
    segment_lexical_threshold: float = env(
        "HINDSIGHT_EPISODIC_SEGMENT_LEXICAL_THRESHOLD",
        0.05,
        "Cosine similarity of neighbouring turns (by shared words) below which the topic shifted.",
    )
    segment_min_turns: int = env(
        "HINDSIGHT_EPISODIC_SEGMENT_MIN_TURNS", 2, "Fewest turns in an episode made by topic shift alone."
    )
    segment_max_turns: int = env("HINDSIGHT_EPISODIC_SEGMENT_MAX_TURNS", 40, "Most turns in one episode.")
    segment_max_read: int = env(
        "HINDSIGHT_EPISODIC_SEGMENT_MAX_READ", 1000, "Most unsegmented turns one SegmentSession call reads."
    )
    dedup_similarity: float = env(
        "HINDSIGHT_EPISODIC_DEDUP_SIMILARITY",
        0.8,
        "Word overlap (Jaccard) of situation and action at which a new episode merges into a stored one.",
    )
    llm_max_tokens: int = env(
        "HINDSIGHT_EPISODIC_LLM_MAX_TOKENS", 800, "Completion tokens one LLM episode extraction may use."
    )
    access_flush_seconds: float = env(
        "HINDSIGHT_EPISODIC_ACCESS_FLUSH_SECONDS", 1.0, "Recorded accesses are written at least this often."
    )
    access_batch: int = env(
        "HINDSIGHT_EPISODIC_ACCESS_BATCH", 500, "Pending accesses that trigger a write at once."
    )
    access_buffer: int = env(
        "HINDSIGHT_EPISODIC_ACCESS_BUFFER",
        100_000,
        "Records whose accesses wait unwritten at most (while PostgreSQL is down); accesses of further "
        "records are dropped, counted and logged.",
    )
    freshness_gain: float = env(
        "HINDSIGHT_EPISODIC_FRESHNESS_GAIN", 0.2, "Freshness a record gains each time recall returns it."
    )
    freshness_decay_per_day: float = env(
        "HINDSIGHT_EPISODIC_FRESHNESS_DECAY_PER_DAY", 0.02, "Freshness a record loses per day not recalled."
    )
    freshness_stale_below: float = env(
        "HINDSIGHT_EPISODIC_FRESHNESS_STALE_BELOW",
        0.2,
        "Records under this freshness are stale: candidates for archiving by maintenance.",
    )
    freshness_hot_above: float = env(
        "HINDSIGHT_EPISODIC_FRESHNESS_HOT_ABOVE", 0.8, "Records over this freshness are hot (often recalled)."
    )

    def __post_init__(self) -> None:
        if not SCHEMA_NAME.fullmatch(self.schema):
            raise SettingsError("HINDSIGHT_EPISODIC_SCHEMA must be a lower-case identifier (a-z, 0-9, _)")
        if self.pool_min_size < 0:
            raise SettingsError("HINDSIGHT_EPISODIC_POOL_MIN must not be negative")
        if self.pool_max_size < max(1, self.pool_min_size):
            raise SettingsError("HINDSIGHT_EPISODIC_POOL_MAX must be at least 1 and at least the minimum")
        if self.connect_timeout_seconds <= 0 or self.acquire_timeout_seconds <= 0:
            raise SettingsError("HINDSIGHT_EPISODIC_*_TIMEOUT_SECONDS must be positive")
        if self.outbox_batch < 1 or self.outbox_timeout_seconds <= 0 or self.outbox_lease_seconds <= 0:
            raise SettingsError(
                "HINDSIGHT_EPISODIC_OUTBOX_BATCH, _TIMEOUT_SECONDS and _LEASE_SECONDS must be positive"
            )
        if (
            not 0 < self.outbox_backoff_seconds <= self.outbox_max_backoff_seconds
            or self.outbox_poll_seconds <= 0
        ):
            raise SettingsError(
                "HINDSIGHT_EPISODIC_OUTBOX_BACKOFF_SECONDS must be positive and at most _MAX_BACKOFF_SECONDS"
            )
        if self.outbox_max_attempts < 1 or self.outbox_batch_bytes < 1024:
            raise SettingsError(
                "HINDSIGHT_EPISODIC_OUTBOX_MAX_ATTEMPTS must be positive, _BATCH_BYTES at least 1024"
            )
        if self.half_life_days <= 0 or not 0 <= self.decay_floor <= 1:
            raise SettingsError("HINDSIGHT_EPISODIC_HALF_LIFE_DAYS must be positive, _DECAY_FLOOR in [0, 1]")
        if self.segment_gap_minutes <= 0 or not 1 <= self.segment_min_turns <= self.segment_max_turns:
            raise SettingsError(
                "HINDSIGHT_EPISODIC_SEGMENT_GAP_MINUTES must be positive, 1 <= _MIN_TURNS <= _MAX_TURNS"
            )
        if self.segment_max_read < self.segment_max_turns or not 0 < self.dedup_similarity <= 1:
            raise SettingsError(
                "HINDSIGHT_EPISODIC_SEGMENT_MAX_READ must be at least _MAX_TURNS, _DEDUP_SIMILARITY in (0, 1]"
            )
        if self.access_flush_seconds <= 0 or self.access_batch < 1 or self.access_buffer < 1:
            raise SettingsError(
                "HINDSIGHT_EPISODIC_ACCESS_FLUSH_SECONDS, _BATCH and _BUFFER must be positive"
            )
        if not 0 <= self.freshness_stale_below <= self.freshness_hot_above <= 1 or self.freshness_gain < 0:
            raise SettingsError(
                "HINDSIGHT_EPISODIC_FRESHNESS_*: 0 <= STALE_BELOW <= HOT_ABOVE <= 1 and GAIN not negative"
            )
        if self.freshness_decay_per_day < 0:
            raise SettingsError("HINDSIGHT_EPISODIC_FRESHNESS_DECAY_PER_DAY must not be negative")
