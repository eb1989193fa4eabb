"""What the client sends and gets back: frozen dataclasses, no protobuf.

The enums (source, trust, role, layer) and the time range are the service's own domain types, so a value
means the same on both sides; so are the records the edge builds with the same fields (flags, warnings,
forget and invalidate results, shared memories: :mod:`hindsight.runtime.results`). Metadata differs from
the service's: a caller may leave source and trust unset, and the service then derives them from the turn's
role.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from hindsight.runtime.records import LayerName as Layer
from hindsight.runtime.records import QueryAnalysis, Role, Source, TimeRange, Trust
from hindsight.runtime.results import ForgetResult, SecurityFlag, SecurityWarning, SharedMemory
from hindsight.runtime.results import InvalidateResult as InvalidateResult

__all__ = [
    "CloseSessionResult",
    "CompressResult",
    "DebugListing",
    "Entity",
    "EntityList",
    "EntityPage",
    "Episode",
    "ForgetResult",
    "Layer",
    "LayerReport",
    "Lesson",
    "Memory",
    "PurgeResult",
    "QueryAnalysis",
    "RecallResult",
    "Record",
    "RecordMeta",
    "ReflectResult",
    "RelatedEntity",
    "Relation",
    "RetainResult",
    "Role",
    "SecurityFlag",
    "SecurityWarning",
    "ShareResult",
    "SharedMemory",
    "Source",
    "TimeRange",
    "Trust",
    "Turn",
    "TurnFilter",
    "TurnPage",
    "UpdateResult",
]


@dataclass(frozen=True)
class RecordMeta:
    """Provenance, source, trust, time, tags and importance; None and empty mean "the service decides"."""

    source_turn_ids: tuple[str, ...] = ()
    source: Source | None = None
    trust: Trust | None = None
    time: datetime | None = None
    """When the content happened (not when it was stored)."""
    tags: tuple[str, ...] = ()
    importance: float = 0.0
    """0 to 1; 0 means the layer's default."""
    agent: str = ""
    """The agent that wrote it; the edge records the caller's token name (only the mesh or an operator may
    name another agent)."""


@dataclass(frozen=True)
class Turn:
    """One conversation turn. Give it an ``id`` to make retaining it idempotent (and retried on failure)."""

    text: str
    session_id: str = "default"
    id: str = ""
    role: Role = Role.USER
    speaker: str = ""
    meta: RecordMeta = field(default_factory=RecordMeta)


@dataclass(frozen=True)
class RetainResult:
    """What a retain stored."""

    turn_ids: tuple[str, ...]
    duplicate_count: int
    """Turns already stored under the same id, left unchanged."""
    indexed: bool
    """False: stored and keyword-searchable, but recall by meaning sees them later."""


@dataclass(frozen=True)
class Memory:
    """One recalled memory."""

    id: str
    layer: Layer | None
    """The layer that ranked it best."""
    text: str
    score: float
    meta: RecordMeta
    speaker: str = ""
    layers: tuple[Layer, ...] = ()
    kind: str = "turn"
    supersedes: tuple[str, ...] = ()
    superseded_by: str = ""
    flags: tuple[SecurityFlag, ...] = ()
    """Cautions found at recall; empty when nothing was found."""
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    """When it stopped holding (superseded or invalidated); None: it still holds."""
    outdated_note: str = ""
    """Why it did not hold at the moment asked about ("outdated since ..., now: ..."); empty when it held."""
    bank_id: str = ""
    """The bank it belongs to (one of the banks of a recall over several)."""

    @property
    def outdated(self) -> bool:
        """It did not hold at the moment the recall asked about (now, ``as_of`` or the query's time)."""
        return bool(self.outdated_note)


@dataclass(frozen=True)
class LayerReport:
    """How one layer answered a recall."""

    layer: Layer | None
    ok: bool
    error: str
    elapsed_ms: float
    candidate_count: int


@dataclass(frozen=True)
class RecallResult:
    """Fused memories, best first, the assembled context and how each layer answered."""

    memories: tuple[Memory, ...]
    partial: bool
    """True when a layer failed or missed the deadline (the answer is still usable)."""
    layer_reports: tuple[LayerReport, ...]
    context: str
    context_ids: tuple[str, ...]
    context_tokens: int
    analysis: QueryAnalysis
    elapsed_ms: float
    warnings: tuple[SecurityWarning, ...] = ()
    """Held-back records related to the query (detected attacks), not part of ``memories``."""


@dataclass(frozen=True)
class Episode:
    """What happened in one task: the unit reflection learns from."""

    situation: str
    action: str
    outcome: str
    lesson: str = ""
    task_type: str = ""
    tools: tuple[str, ...] = ()
    success: bool | None = None
    """True, False, or None when not known."""
    session_id: str = ""
    id: str = ""
    meta: RecordMeta = field(default_factory=RecordMeta)
    recorded_at: datetime | None = None


@dataclass(frozen=True)
class Lesson:
    """A lesson drawn from finished work."""

    id: str
    situation: str
    action: str
    outcome: str
    lesson: str
    confidence: float
    source_episode_ids: tuple[str, ...] = ()
    meta: RecordMeta = field(default_factory=RecordMeta)
    hit_count: int = 0
    weight: float = 0.0
    topic: str = ""
    superseded_by: str = ""
    merged_into: str = ""
    created_at: datetime | None = None
    archived_at: datetime | None = None


@dataclass(frozen=True)
class ReflectResult:
    """Lessons a reflection wrote and how many episodes it read."""

    lessons: tuple[Lesson, ...]
    episodes_read: int


@dataclass(frozen=True)
class TurnFilter:
    """Which turns a forget also archives (it must filter on something)."""

    session_id: str = ""
    tags: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    min_trust: Trust | None = None
    time_range: TimeRange = field(default_factory=TimeRange)


@dataclass(frozen=True)
class CompressResult:
    """What compressing a session's working memory did."""

    group_count: int
    summarised_turn_count: int
    tokens_before: int
    tokens_after: int
    summariser: str


@dataclass(frozen=True)
class CloseSessionResult:
    """What closing a session did: its working memory dropped, then a reflection on it."""

    closed: bool
    turn_count: int
    summary_count: int
    token_count: int
    reflected: bool
    reflect_error: str
    lessons: tuple[Lesson, ...]
    episodes_read: int


@dataclass(frozen=True)
class TurnPage:
    """One page of turns, newest first; pass ``next_page_token`` back for the next (empty: last page)."""

    turns: tuple[Turn, ...]
    next_page_token: str


@dataclass(frozen=True)
class UpdateResult:
    """The new version of a turn and the id it replaced (now archived)."""

    turn: Turn
    superseded_id: str
    indexed: bool


@dataclass(frozen=True)
class PurgeResult:
    """What a purge deleted for good."""

    turn_count: int
    episode_count: int
    unindexed_count: int
    working_removed_count: int
    lesson_count: int


@dataclass(frozen=True)
class ShareResult:
    """What a share copied, in the order asked; ``indexed`` tells whether the copies were searchable by
    meaning when the call returned."""

    target_bank: str
    shared: tuple[SharedMemory, ...]
    indexed: bool


@dataclass(frozen=True)
class DebugListing:
    """Everything a bank holds, archived included (admin only)."""

    turns: tuple[Turn, ...]
    episodes: tuple[Episode, ...]
    next_page_token: str


@dataclass(frozen=True)
class Relation:
    """What ``target`` is to an entity ("sister", "works_at")."""

    type: str
    target: str


@dataclass(frozen=True)
class RelatedEntity:
    """An entity mentioned in the same turns, and in how many."""

    name: str
    count: int


@dataclass(frozen=True)
class Entity:
    """Someone or something the bank's memories are about."""

    name: str
    type: str
    aliases: tuple[str, ...] = ()
    relations: tuple[Relation, ...] = ()
    mention_count: int = 0
    spoken_count: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    related: tuple[RelatedEntity, ...] = ()


@dataclass(frozen=True)
class Record:
    """A record of the semantic layer: a fact about an entity, or a turn that mentions it."""

    id: str
    kind: str
    """"turn", "fact", "preference", "rule", "episode" or "entity"."""
    text: str
    speaker: str = ""
    session_id: str = ""
    meta: RecordMeta = field(default_factory=RecordMeta)
    subject: str = ""
    attribute: str = ""
    value: str = ""
    confidence: float = 0.0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str = ""
    supersedes: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntityPage:
    """What is known about one entity: facts with their history, and a page of turns mentioning it."""

    entity: Entity
    facts: tuple[Record, ...]
    mentions: tuple[Record, ...]
    next_page_token: str


@dataclass(frozen=True)
class EntityList:
    """One page of a bank's entities, by name; pass ``next_page_token`` back for the next."""

    entities: tuple[Entity, ...]
    next_page_token: str
