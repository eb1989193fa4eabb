"""Domain types of the reflect layer: the episodes it reads and the lessons it writes."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hindsight.runtime.records import RecordMeta, Source

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Method(enum.Enum):
    """How a lesson was drawn."""

    RULES = "rules"
    LLM = "llm"


class Result(enum.Enum):
    """How a task ended."""

    UNKNOWN = "unknown"
    SUCCESS = "success"
    FAILURE = "failure"


@dataclass(frozen=True)
class Episode:
    """One finished task as the episodic layer reports it."""

    id: str
    situation: str = ""
    action: str = ""
    outcome: str = ""
    lesson: str = ""
    task_type: str = ""
    result: Result = Result.UNKNOWN
    session_id: str = ""
    tools: tuple[str, ...] = ()
    meta: RecordMeta = field(default_factory=RecordMeta)
    recorded_at: datetime | None = None
    turn_sources: tuple[Source, ...] = ()
    """Sources of the turns it was segmented from (read when the defences are on); empty: unknown."""

    @property
    def sources(self) -> tuple[Source, ...]:
        """Who produced what it reports: its turns' sources when known, else its own source."""
        return self.turn_sources or (self.meta.source,)

    @property
    def moment(self) -> datetime:
        """When it happened: its own time, else when it was recorded."""
        return self.meta.time or self.recorded_at or _EPOCH


@dataclass(frozen=True)
class Lesson:
    """What to do next time in a similar situation, and how far to believe it."""

    id: str
    situation: str
    action: str
    outcome: str
    lesson: str
    confidence: float
    source_episode_ids: tuple[str, ...]
    meta: RecordMeta = field(default_factory=RecordMeta)
    hit_count: int = 0
    last_hit_at: datetime | None = None
    method: Method = Method.RULES
    topic: str = ""
    """The task it is about (task type or situation, normalised)."""
    action_key: str = ""
    """The action it recommends or warns against (normalised)."""
    stance: int = 0
    """+1: do ``action_key``; -1: avoid it; 0: neither."""
    weight: float = 1.0
    """Freshness: falls while recall never returns the lesson."""
    archived_at: datetime | None = None
    superseded_by: str = ""
    merged_into: str = ""
    created_at: datetime | None = None


@dataclass(frozen=True)
class ScoredLesson:
    """A lesson with its keyword relevance weighted by confidence."""

    lesson: Lesson
    score: float
    bank_id: str = ""
    """Its bank, in a search over several banks (empty in a search of one)."""


@dataclass(frozen=True)
class LessonPage:
    """One page of a bank's lessons and the token of the next (empty on the last)."""

    lessons: list[Lesson]
    next_page_token: str


@dataclass(frozen=True)
class Reflection:
    """What one reflection wrote and how many episodes it read."""

    lessons: list[Lesson]
    episodes_read: int
    method: Method = Method.RULES
    superseded_ids: tuple[str, ...] = ()


@dataclass
class Maintenance:
    """What one maintenance run changed in a bank."""

    decayed_ids: list[str] = field(default_factory=list)
    archived_ids: list[str] = field(default_factory=list)
    merged_ids: list[str] = field(default_factory=list)
    reflected_session_ids: list[str] = field(default_factory=list)
    lessons_checked: int = 0
    skipped: list[str] = field(default_factory=list)
    cold_count: int = 0
    open_conflicts: list[str] = field(default_factory=list)
    """The audit: contradictory current facts the semantic layer holds for review."""
