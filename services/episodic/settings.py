"""Settings of the episodic layer."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.runtime.migrations import SCHEMA_NAME
from hindsight.runtime.settings import SettingsError, env


@dataclass(frozen=True)
class EpisodicSettings:
    """Which PostgreSQL database and schema hold the episodic tables, and how many connections to use."""

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

    def __post_init__(self) -> None:
        if not SCHEMA_NAME.match(self.schema):
            raise SettingsError("HINDSIGHT_EPISODIC_SCHEMA must be a lower-case identifier (a-z, 0-9, _)")
        if self.pool_min_size < 0:
            raise SettingsError("HINDSIGHT_EPISODIC_POOL_MIN must not be negative")
        if self.pool_max_size < max(1, self.pool_min_size):
            raise SettingsError("HINDSIGHT_EPISODIC_POOL_MAX must be at least 1 and at least the minimum")
        if self.connect_timeout_seconds <= 0 or self.acquire_timeout_seconds <= 0:
            raise SettingsError("HINDSIGHT_EPISODIC_*_TIMEOUT_SECONDS must be positive")
