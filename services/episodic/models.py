"""Episodes: what happened in one task, the unit reflection learns from; with their protobuf conversions."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import RecordMeta, Source, TimeRange, Trust, from_timestamp, to_timestamp

MAX_ID_CHARS = 256
MAX_FIELD_CHARS = 100_000
MAX_TASK_TYPE_CHARS = 200
"""A task type is a short label ("deploy", "booking") kept in an index with the bank, which bounds it."""
MAX_TOOLS = 100


class Outcome(enum.Enum):
    """How a task ended."""

    UNSPECIFIED = "unspecified"
    SUCCESS = "success"
    FAILURE = "failure"


_OUTCOME_TO_PB = {
    Outcome.UNSPECIFIED: episodic_pb2.OUTCOME_UNSPECIFIED,
    Outcome.SUCCESS: episodic_pb2.OUTCOME_SUCCESS,
    Outcome.FAILURE: episodic_pb2.OUTCOME_FAILURE,
}
_OUTCOME_FROM_PB = {v: k for k, v in _OUTCOME_TO_PB.items()}


@dataclass(frozen=True)
class Episode:
    """One task: the situation, what was done, how it went, and any lesson already drawn."""

    id: str
    session_id: str = ""
    situation: str = ""
    action: str = ""
    outcome: str = ""
    lesson: str = ""
    task_type: str = ""
    tools: tuple[str, ...] = ()
    result: Outcome = Outcome.UNSPECIFIED
    meta: RecordMeta = field(default_factory=RecordMeta)
    recorded_at: datetime | None = None

    def text_parts(self) -> tuple[str, ...]:
        """The words an episode is found by."""
        return (self.situation, self.action, self.outcome, self.lesson, self.task_type, *self.tools)

    @classmethod
    def from_pb(cls, message: episodic_pb2.Episode, field_name: str = "episode") -> Episode:
        """Convert and validate; the id may be empty (the service generates one)."""
        if len(message.id) > MAX_ID_CHARS:
            raise InvalidArgument(f"{field_name}.id", f"must be at most {MAX_ID_CHARS} characters")
        if len(message.session_id) > MAX_ID_CHARS:
            raise InvalidArgument(f"{field_name}.session_id", f"must be at most {MAX_ID_CHARS} characters")
        if not message.situation.strip() and not message.action.strip():
            raise InvalidArgument(f"{field_name}.situation", "situation or action must not be empty")
        if len(message.task_type) > MAX_TASK_TYPE_CHARS:  # a label, indexed with the bank
            raise InvalidArgument(
                f"{field_name}.task_type", f"must be at most {MAX_TASK_TYPE_CHARS} characters"
            )
        for name in ("situation", "action", "outcome", "lesson"):
            if len(getattr(message, name)) > MAX_FIELD_CHARS:
                raise InvalidArgument(f"{field_name}.{name}", f"must be at most {MAX_FIELD_CHARS} characters")
        tools = tuple(dict.fromkeys(tool.strip() for tool in message.tools if tool.strip()))
        if len(tools) > MAX_TOOLS:
            raise InvalidArgument(f"{field_name}.tools", f"must hold at most {MAX_TOOLS} tools")
        if message.result not in _OUTCOME_FROM_PB:
            raise InvalidArgument(f"{field_name}.result", "is not a known outcome")
        meta = RecordMeta.from_pb(message.meta, f"{field_name}.meta", default_source=Source.AGENT)
        return cls(
            id=message.id,
            session_id=message.session_id,
            situation=message.situation,
            action=message.action,
            outcome=message.outcome,
            lesson=message.lesson,
            task_type=message.task_type.strip(),
            tools=tools,
            result=_OUTCOME_FROM_PB[message.result],
            meta=meta,
            recorded_at=from_timestamp(message.recorded_at) if message.HasField("recorded_at") else None,
        )

    def to_pb(self) -> episodic_pb2.Episode:
        """Convert to protobuf."""
        return episodic_pb2.Episode(
            id=self.id,
            session_id=self.session_id,
            situation=self.situation,
            action=self.action,
            outcome=self.outcome,
            lesson=self.lesson,
            task_type=self.task_type,
            tools=list(self.tools),
            result=_OUTCOME_TO_PB[self.result],
            meta=self.meta.to_pb(),
            recorded_at=to_timestamp(self.recorded_at),
        )


@dataclass(frozen=True)
class TurnFilter:
    """Which turns an operation applies to; empty fields do not filter."""

    session_id: str = ""
    tags: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    min_trust: Trust | None = None
    time_range: TimeRange = field(default_factory=TimeRange)
    include_archived: bool = False
    agent: str = ""
    """Only turns this agent wrote."""

    def is_empty(self) -> bool:
        """Whether it lets every live turn through (forgetting by such a filter would forget everything)."""
        return not (
            self.session_id
            or self.agent
            or self.tags
            or self.sources
            or self.min_trust is not None
            or self.time_range.start
            or self.time_range.end
        )


@dataclass(frozen=True)
class EpisodeFilter:
    """Which episodes a search may return; empty fields do not filter."""

    tags: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    """Any of these tools (the candidate pre-filter, with the task type)."""
    task_type: str = ""
    result: Outcome = Outcome.UNSPECIFIED
    sources: tuple[Source, ...] = ()
    min_trust: Trust | None = None
    time_range: TimeRange = field(default_factory=TimeRange)


@dataclass(frozen=True)
class ScoredEpisode:
    """An episode found by search, with keyword relevance times time decay."""

    episode: Episode
    score: float


@dataclass(frozen=True)
class AccessStats:
    """How often recall returned one record, when last, and how fresh it is now."""

    id: str
    layer: str
    hit_count: int
    last_hit: datetime
    freshness: float
    stale: bool
    """Under the stale threshold: a candidate for archiving."""
    hot: bool
    """Over the hot threshold: often recalled lately."""


@dataclass(frozen=True)
class PurgeScope:
    """What a purge deletes: ids (of turns or episodes), one session, or the whole bank."""

    ids: tuple[str, ...] = ()
    session_id: str = ""
    whole_bank: bool = False


@dataclass(frozen=True)
class PurgedCopies:
    """What a purge took from a bank holding copies of purged records (see :mod:`.shares`)."""

    bank_id: str
    ids: tuple[str, ...]
    """Every id purged there (each version of a copied turn)."""
    outbox_ids: tuple[int, ...] = ()
    """Syncs queued there for the semantic layer (as :attr:`PurgeResult.outbox_ids`)."""


@dataclass(frozen=True)
class PurgeResult:
    """What a purge deleted here, and how many deletes it queued for the other layers."""

    turns: int
    episodes: int
    outbox: int
    ids: tuple[str, ...] = ()
    """Every id deleted: turns (each version, held-back ones too) and episodes that died with them."""
    outbox_ids: tuple[int, ...] = ()
    """Syncs queued for the semantic layer of the episodes that lived on (their new text)."""
    copies: tuple[PurgedCopies, ...] = ()
    """Copies of the purged records purged from the banks they were shared into, bank by bank."""
