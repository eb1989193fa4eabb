"""Settings of the reflect layer: its PostgreSQL schema and where the episodic layer is."""

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

    def __post_init__(self) -> None:
        if not SCHEMA_NAME.match(self.schema):
            raise SettingsError("HINDSIGHT_REFLECT_SCHEMA must be a lower-case identifier (a-z, 0-9, _)")
        if self.max_episodes < 1:
            raise SettingsError("HINDSIGHT_REFLECT_MAX_EPISODES must be at least 1")
        if self.pool_min_size < 0 or self.pool_max_size < max(1, self.pool_min_size):
            raise SettingsError("HINDSIGHT_REFLECT_POOL_MAX must be at least 1 and at least the minimum")
        if self.connect_timeout_seconds <= 0 or self.acquire_timeout_seconds <= 0:
            raise SettingsError("HINDSIGHT_REFLECT_*_TIMEOUT_SECONDS must be positive")
