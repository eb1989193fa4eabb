"""Domain types of the reflect layer: the episodes it reads and the lessons it writes."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hindsight.runtime.records import RecordMeta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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


@dataclass(frozen=True)
class ScoredLesson:
    """A lesson with its keyword relevance weighted by confidence."""

    lesson: Lesson
    score: float


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
