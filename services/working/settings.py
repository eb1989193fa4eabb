"""Settings of the working-memory layer."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.runtime.settings import SettingsError, env


@dataclass(frozen=True)
class WorkingSettings:
    """Where session windows live, how long they last and how much of them is kept."""

    redis_url: str = env(
        "REDIS_URL", "redis://127.0.0.1:6379/0", "Redis (or Valkey) that holds the session windows."
    )
    prefix: str = env("HINDSIGHT_WORKING_PREFIX", "hs:wm", "Prefix of every key this layer writes.")
    ttl_seconds: int = env(
        "HINDSIGHT_WORKING_TTL_SECONDS",
        6 * 3600,
        "A session's window expires this long after its last write.",
    )
    max_window: int = env(
        "HINDSIGHT_WORKING_MAX_TURNS", 200, "Turns kept per session window; older turns are trimmed."
    )
    remembered_ids: int = env(
        "HINDSIGHT_WORKING_REMEMBERED_IDS",
        1000,
        "Turn ids remembered per session, so a retried append is not applied twice "
        "even after its turn was trimmed from the window.",
    )
    search_sessions: int = env(
        "HINDSIGHT_WORKING_SEARCH_SESSIONS",
        50,
        "How many of a bank's most recently active sessions SearchRecent scans.",
    )
    recency_half_life_seconds: float = env(
        "HINDSIGHT_WORKING_RECENCY_HALF_LIFE_SECONDS",
        1800.0,
        "Age at which a turn's recency boost in SearchRecent halves.",
    )

    def __post_init__(self) -> None:
        if not self.prefix.strip():
            raise SettingsError("HINDSIGHT_WORKING_PREFIX must not be empty")
        if self.ttl_seconds < 1:
            raise SettingsError("HINDSIGHT_WORKING_TTL_SECONDS must be at least 1")
        if self.max_window < 1:
            raise SettingsError("HINDSIGHT_WORKING_MAX_TURNS must be at least 1")
        if self.remembered_ids < self.max_window:
            raise SettingsError(
                "HINDSIGHT_WORKING_REMEMBERED_IDS must be at least HINDSIGHT_WORKING_MAX_TURNS"
            )
        if self.search_sessions < 1:
            raise SettingsError("HINDSIGHT_WORKING_SEARCH_SESSIONS must be at least 1")
        if self.recency_half_life_seconds <= 0:
            raise SettingsError("HINDSIGHT_WORKING_RECENCY_HALF_LIFE_SECONDS must be positive")
