"""Domain types shared by every layer (turns and their metadata) and their protobuf conversions.

Services work on these dataclasses; protobuf messages appear only in servicers and clients.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from google.protobuf.timestamp_pb2 import Timestamp

from hindsight.contracts.common.v1 import common_pb2
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.validation import check_text

SCHEMA_VERSION = 1
"""Version of the record schema written by this code."""


class Source(enum.Enum):
    """Who produced a piece of content."""

    USER = "user"
    AGENT = "agent"
    TOOL = "tool"
    EXTERNAL = "external"


class Trust(enum.IntEnum):
    """How far a record may be believed; ordered."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3


class Role(enum.Enum):
    """Speaker role of a turn."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class LayerName(enum.Enum):
    """The layers a recall can ask (the edge's and the client's one name for each)."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    REFLECT = "reflect"


DEFAULT_TRUST = {
    Source.USER: Trust.HIGH,
    Source.AGENT: Trust.MEDIUM,
    Source.TOOL: Trust.MEDIUM,
    Source.EXTERNAL: Trust.LOW,
}
"""Trust a record gets from its source when the caller does not say: outside content starts low."""

DEFAULT_SOURCE = {
    Role.USER: Source.USER,
    Role.ASSISTANT: Source.AGENT,
    Role.TOOL: Source.TOOL,
    Role.SYSTEM: Source.AGENT,
}

_SOURCE_TO_PB = {
    Source.USER: common_pb2.SOURCE_USER,
    Source.AGENT: common_pb2.SOURCE_AGENT,
    Source.TOOL: common_pb2.SOURCE_TOOL,
    Source.EXTERNAL: common_pb2.SOURCE_EXTERNAL,
}
_SOURCE_FROM_PB = {v: k for k, v in _SOURCE_TO_PB.items()}
_TRUST_TO_PB = {
    Trust.LOW: common_pb2.TRUST_LOW,
    Trust.MEDIUM: common_pb2.TRUST_MEDIUM,
    Trust.HIGH: common_pb2.TRUST_HIGH,
}
_TRUST_FROM_PB = {v: k for k, v in _TRUST_TO_PB.items()}
_ROLE_TO_PB = {
    Role.USER: common_pb2.ROLE_USER,
    Role.ASSISTANT: common_pb2.ROLE_ASSISTANT,
    Role.TOOL: common_pb2.ROLE_TOOL,
    Role.SYSTEM: common_pb2.ROLE_SYSTEM,
}
_ROLE_FROM_PB = {v: k for k, v in _ROLE_TO_PB.items()}


def source_from_pb(value: common_pb2.Source, field_name: str) -> Source:
    """A protobuf Source as the domain enum; unspecified or unknown is INVALID_ARGUMENT naming the field."""
    if value not in _SOURCE_FROM_PB:
        raise InvalidArgument(field_name, "is not a known source")
    return _SOURCE_FROM_PB[value]


def trust_from_pb(value: common_pb2.Trust, field_name: str) -> Trust | None:
    """A protobuf Trust as the domain enum; None for unspecified, INVALID_ARGUMENT for an unknown value."""
    if value == common_pb2.TRUST_UNSPECIFIED:
        return None
    if value not in _TRUST_FROM_PB:
        raise InvalidArgument(field_name, "is not a known trust level")
    return _TRUST_FROM_PB[value]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def as_utc(moment: datetime | None) -> datetime | None:
    """``moment`` as timezone-aware UTC; a naive time is taken to be UTC already."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def to_timestamp(moment: datetime | None) -> Timestamp | None:
    """A protobuf Timestamp, or None for no time."""
    if moment is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    return stamp


def from_timestamp(stamp: Timestamp | None, field_name: str = "timestamp") -> datetime | None:
    """A timezone-aware datetime, or None when the Timestamp is unset; one out of range (negative nanos,
    before year 1 or after 9999) is refused naming ``field_name``."""
    if stamp is None or (stamp.seconds == 0 and stamp.nanos == 0):
        return None
    try:
        return stamp.ToDatetime(tzinfo=UTC)
    except (ValueError, OverflowError) as exc:
        raise InvalidArgument(field_name, f"not a valid time ({exc})") from exc


@dataclass(frozen=True)
class TimeRange:
    """Half-open [start, end); None is open."""

    start: datetime | None = None
    end: datetime | None = None

    def contains(self, moment: datetime | None) -> bool:
        """Whether ``moment`` falls in the range (an unknown time only matches an open range)."""
        if moment is None:
            return self.start is None and self.end is None
        return (self.start is None or moment >= self.start) and (self.end is None or moment < self.end)

    @classmethod
    def from_pb(cls, message: common_pb2.TimeRange | None, field_name: str = "time_range") -> TimeRange:
        """Convert, rejecting an inverted range."""
        if message is None:
            return cls()
        start = from_timestamp(message.start, f"{field_name}.start")
        result = cls(start, from_timestamp(message.end, f"{field_name}.end"))
        if result.start and result.end and result.start >= result.end:
            raise InvalidArgument(field_name, "start must be before end")
        return result

    def to_pb(self) -> common_pb2.TimeRange:
        """Convert to protobuf."""
        return common_pb2.TimeRange(start=to_timestamp(self.start), end=to_timestamp(self.end))


MAX_AGENT_CHARS = 256
"""Longest agent name a record carries (a credential's name, as the audit log's actor)."""


@dataclass(frozen=True)
class QueryAnalysis:
    """What the edge read from a recall's query, and how it used the time expression (one shape for the
    edge's result and the client's)."""

    time_expression: str = ""
    time_range: TimeRange = field(default_factory=TimeRange)
    time_use: str = ""
    """"filter", "boost" or "" (no expression, or an explicit range took precedence)."""
    entities: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    rewrites: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordMeta:
    """Provenance, source, trust, time, tags and importance: what every record carries."""

    source_turn_ids: tuple[str, ...] = ()
    source: Source = Source.AGENT
    trust: Trust = Trust.MEDIUM
    time: datetime | None = None
    tags: tuple[str, ...] = ()
    importance: float = 0.0
    schema_version: int = SCHEMA_VERSION
    agent: str = ""
    """The agent that wrote it (the writing credential's name, or what the mesh or an operator stated);
    empty when not known."""

    @classmethod
    def from_pb(
        cls, message: common_pb2.RecordMeta, field_name: str = "meta", default_source: Source = Source.AGENT
    ) -> RecordMeta:
        """Convert, filling source and trust defaults and checking importance."""
        if not 0.0 <= message.importance <= 1.0:
            raise InvalidArgument(f"{field_name}.importance", "must be between 0 and 1")
        if len(message.agent) > MAX_AGENT_CHARS or not message.agent.isprintable():
            raise InvalidArgument(
                f"{field_name}.agent", f"must be at most {MAX_AGENT_CHARS} printable characters"
            )
        source = _SOURCE_FROM_PB.get(message.source, default_source)
        trust = _TRUST_FROM_PB.get(message.trust, DEFAULT_TRUST[source])
        return cls(
            source_turn_ids=tuple(message.source_turn_ids),
            source=source,
            trust=trust,
            time=from_timestamp(message.time, f"{field_name}.time") if message.HasField("time") else None,
            tags=tuple(dict.fromkeys(t.strip() for t in message.tags if t.strip())),
            importance=message.importance,
            schema_version=message.schema_version or SCHEMA_VERSION,
            agent=message.agent,
        )

    def carries_tags(self, tags: Collection[str]) -> bool:
        """Whether the record carries every one of ``tags``, compared without case (none: always)."""
        if not tags:
            return True
        return {tag.lower() for tag in tags} <= {tag.lower() for tag in self.tags}

    def to_fields(self) -> dict[str, Any]:
        """The plain values a store keeps for this metadata: columns, a JSON object or a payload.

        The time is left out: each store keeps it in its own type (timestamptz, ISO text, epoch).
        """
        return {
            "source_turn_ids": list(self.source_turn_ids),
            "source": self.source.value,
            "trust": int(self.trust),
            "tags": list(self.tags),
            "importance": self.importance,
            "schema_version": self.schema_version,
            "agent": self.agent,
        }

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any], time: datetime | None) -> RecordMeta:
        """Inverse of :meth:`to_fields`, with the time the store kept alongside."""
        return cls(
            source_turn_ids=tuple(fields["source_turn_ids"] or ()),
            source=Source(fields["source"]),
            trust=Trust(fields["trust"]),
            time=time,
            tags=tuple(fields["tags"] or ()),
            importance=float(fields["importance"]),
            schema_version=int(fields["schema_version"]),
            agent=str(fields.get("agent") or ""),  # stores written before agents were recorded have none
        )

    def to_pb(self) -> common_pb2.RecordMeta:
        """Convert to protobuf."""
        return common_pb2.RecordMeta(
            source_turn_ids=list(self.source_turn_ids),
            source=_SOURCE_TO_PB[self.source],
            trust=_TRUST_TO_PB[self.trust],
            time=to_timestamp(self.time),
            tags=list(self.tags),
            importance=self.importance,
            schema_version=self.schema_version,
            agent=self.agent,
        )


@dataclass(frozen=True)
class Turn:
    """One conversation turn as retained."""

    id: str
    session_id: str
    text: str
    role: Role = Role.USER
    speaker: str = ""
    meta: RecordMeta = field(default_factory=RecordMeta)

    @classmethod
    def from_pb(cls, message: common_pb2.Turn, field_name: str = "turn") -> Turn:
        """Convert and validate; a turn must have an id, a session and text."""
        if not message.id:
            raise InvalidArgument(f"{field_name}.id", "is required")
        if len(message.id) > 256:
            raise InvalidArgument(f"{field_name}.id", "must be at most 256 characters")
        if not message.session_id:
            raise InvalidArgument(f"{field_name}.session_id", "is required")
        check_text(message.text, f"{field_name}.text")
        role = _ROLE_FROM_PB.get(message.role, Role.USER)
        meta = RecordMeta.from_pb(message.meta, f"{field_name}.meta", default_source=DEFAULT_SOURCE[role])
        if not meta.source_turn_ids:
            meta = replace(meta, source_turn_ids=(message.id,))
        return cls(
            id=message.id,
            session_id=message.session_id,
            text=message.text,
            role=role,
            speaker=message.speaker,
            meta=meta,
        )

    def to_pb(self) -> common_pb2.Turn:
        """Convert to protobuf."""
        return common_pb2.Turn(
            id=self.id,
            session_id=self.session_id,
            role=_ROLE_TO_PB[self.role],
            speaker=self.speaker,
            text=self.text,
            meta=self.meta.to_pb(),
        )


class TurnHit(Protocol):
    """A turn a search found: episodic memory's keyword hits and working memory's recent ones alike."""

    @property
    def turn(self) -> Turn: ...

    @property
    def score(self) -> float: ...

    @property
    def bank_id(self) -> str: ...


def scored_turns_to_pb(hits: Iterable[TurnHit]) -> list[common_pb2.ScoredTurn]:
    """A search's hits as the one message every layer's turn search answers with."""
    return [
        common_pb2.ScoredTurn(turn=hit.turn.to_pb(), score=hit.score, bank_id=hit.bank_id) for hit in hits
    ]


def role_from_name(name: str, field_name: str = "role") -> Role:
    """Parse a role name ("user", "assistant", ...), naming the field on error."""
    try:
        return Role(name.strip().lower())
    except ValueError:
        raise InvalidArgument(field_name, f"must be one of {', '.join(r.value for r in Role)}") from None


def source_from_name(name: str, field_name: str = "source") -> Source:
    """Parse a source name ("user", "agent", "tool", "external"), naming the field on error."""
    try:
        return Source(name.strip().lower())
    except ValueError:
        raise InvalidArgument(field_name, f"must be one of {', '.join(s.value for s in Source)}") from None


def content_id(*parts: str) -> str:
    """A stable id from content, for records that must not be duplicated when derived twice."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
