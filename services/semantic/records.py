"""Domain types of the semantic layer: records, hits and the identity of the model that embeds them."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from datetime import datetime

from hindsight.runtime.records import RecordMeta


class RecordKind(enum.Enum):
    """What a semantic record is."""

    TURN = "turn"
    FACT = "fact"
    PREFERENCE = "preference"
    RULE = "rule"
    EPISODE = "episode"
    ENTITY = "entity"


DISTILLED = frozenset({RecordKind.FACT, RecordKind.PREFERENCE, RecordKind.RULE, RecordKind.ENTITY})
"""Kinds learned from other records: these merge with near-duplicates and may supersede each other.

Turns and episodes mirror the episodic layer's records one to one (same ids), so they never merge."""


@dataclass(frozen=True)
class SemanticRecord:
    """A record searchable by meaning.

    ``subject``/``attribute``/``value`` are set on facts; two current facts with the same subject and
    attribute but different values conflict unless the attribute may hold several values at once.
    ``valid_to`` and ``superseded_by`` are set only by the layer, when a newer record replaces this one.
    """

    id: str
    text: str
    kind: RecordKind = RecordKind.TURN
    speaker: str = ""
    session_id: str = ""
    meta: RecordMeta = field(default_factory=RecordMeta)
    subject: str = ""
    attribute: str = ""
    value: str = ""
    source_episode_ids: tuple[str, ...] = ()
    confidence: float = 0.0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str = ""
    supersedes: tuple[str, ...] = ()
    """Ids of the records this one replaced, newest first (its chain of earlier values), set by the layer:
    a search hit carries its history, so a caller can rank what it replaced below it."""
    merged_ids: tuple[str, ...] = ()
    """Ids of the records merged into this one: a set, so a merge delivered twice counts once."""
    cold: bool = False
    entities: tuple[str, ...] = ()
    """Keys of the entities the record names besides its speaker (set by the layer: its entity pages)."""
    lineage: tuple[str, ...] = ()
    """The turns whose text a derived record stands on (a fact drawn from a turn: that turn only, not the
    versions it cites); it dies with the last of them. Empty: the provenance (:func:`lineage_of`)."""
    replies_to: str = ""
    """For a turn: the id of the turn just before it in its session, when another speaker said it; its
    words are read into this turn's vector (:func:`.engine.embedding_text`). Only the id is stored."""
    replies_to_text: str = ""
    """``"speaker: text"`` of that turn, as sent for embedding; never stored (a purge of that turn
    re-embeds this one alone)."""

    @property
    def current(self) -> bool:
        """Not superseded."""
        return not self.superseded_by and self.valid_to is None

    @property
    def mention_count(self) -> int:
        """How many records this one stands for, itself included."""
        return 1 + len(self.merged_ids)


def lineage_of(record: SemanticRecord) -> tuple[str, ...]:
    """The turns a record stands on: a turn itself only (never the versions its provenance cites), else its
    lineage, else its provenance. A record standing on no turn dies only by its own id or session."""
    if record.kind is RecordKind.TURN:
        return (record.id,)
    return record.lineage or record.meta.source_turn_ids


@dataclass(frozen=True)
class ScoredRecord:
    """A record with its cosine similarity to a query; ``expanded_via`` when found through the graph."""

    record: SemanticRecord
    score: float
    expanded_via: tuple[str, ...] = ()
    similarity: float = 0.0
    """The cosine similarity as found, kept when rewrites' lists are merged (``score`` is rescaled)."""
    bank_id: str = ""
    """Its bank, in a search over several banks (empty in a search of one)."""


class Resolution(enum.Enum):
    """How a queued conflict is settled."""

    ACCEPT = "accept"
    REJECT = "reject"


@dataclass(frozen=True)
class ReviewItem:
    """A conflict that time and trust could not settle: ``candidate`` contradicts ``current``."""

    id: str
    candidate: SemanticRecord
    current: SemanticRecord
    reason: str
    created_at: datetime

    @property
    def lineage(self) -> tuple[str, ...]:
        """The turns the candidate stands on: the item dies with the last of them."""
        return lineage_of(self.candidate)


@dataclass(frozen=True)
class Relation:
    """``type`` of the source entity is ``target`` (for example sister -> Beth)."""

    type: str
    target: str


@dataclass(frozen=True)
class Entity:
    """Someone or something the bank's memories are about."""

    name: str
    type: str = "other"
    aliases: tuple[str, ...] = ()
    relations: tuple[Relation, ...] = ()
    mention_count: int = 0
    """Turns that mention it, as their speaker or by name (its page: :mod:`hindsight.semantic.pages`)."""
    spoken_count: int = 0
    """Of those, the turns it spoke."""
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    related: tuple[tuple[str, int], ...] = ()
    """Entities mentioned in the same turns, with how many turns, most first."""


@dataclass(frozen=True)
class Contribution:
    """What one origin (a turn's mentions, one fact's entities) adds to entity pages, and the turns it
    stands on: pages are rebuilt from the contributions left, so a deleted turn is subtracted exactly."""

    origin: str
    lineage: tuple[str, ...]
    entities: tuple[Entity, ...]


@dataclass(frozen=True)
class PendingPass:
    """An LLM fact pass waiting (or retrying) in the store: the turns it reads, and how it went so far."""

    id: str
    turns: tuple[SemanticRecord, ...]
    attempts: int = 0
    due: datetime | None = None
    """When it runs next (None: given up, kept as the record of a pass that never succeeded)."""
    error: str = ""


@dataclass(frozen=True)
class SearchOptions:
    """What a search may return beyond the default (current, hot records of any kind)."""

    kinds: frozenset[RecordKind] = frozenset()
    tags: tuple[str, ...] = ()
    min_score: float = 0.0
    include_history: bool = False
    include_cold: bool = False
    valid_at: datetime | None = None
    hops: int | None = None
    """Entity-graph expansion depth (0 to 2); None is the layer's default."""
    all_tags: bool = False
    """With ``tags``: only records carrying every one of them (compared without case), not just one. The
    engine applies it to the store's hits (the store filters by any tag)."""


@dataclass(frozen=True)
class EmbeddedRecord:
    """A record with the vector that indexes it."""

    record: SemanticRecord
    vector: list[float]


@dataclass(frozen=True)
class ModelIdentity:
    """The embedding model whose vectors a collection holds: mixing two models' vectors is meaningless."""

    name: str
    dimension: int
    content_hash: str = ""

    def as_metadata(self) -> dict[str, str | int]:
        """The identity as stored in the collection's metadata."""
        return {"model": self.name, "dimension": self.dimension, "content_hash": self.content_hash}

    def describe(self) -> str:
        """``'name' (512-d, sha256 0123456789ab)`` for messages."""
        digest = f", sha256 {self.content_hash[:12]}" if self.content_hash else ""
        return f"{self.name!r} ({self.dimension}-d{digest})"


_UNSAFE = re.compile(r"[^a-z0-9_-]+")


def collection_name(prefix: str, model: ModelIdentity) -> str:
    """``<prefix>_<model>_<first 12 of the content hash>``, sanitised: a new model gets a new collection.

    When the model does not report a hash, its dimension stands in, so at least a change of shape
    never lands in an old collection.
    """
    version = model.content_hash[:12] if model.content_hash else f"d{model.dimension}"
    parts = [_clean(part) for part in (prefix, model.name, version)]
    return "_".join(part for part in parts if part)[:200]


def _clean(part: str) -> str:
    return _UNSAFE.sub("_", part.lower()).strip("_")


def alias_name(prefix: str) -> str:
    """``<prefix>_active``: the alias that names the collection in use."""
    return "_".join(part for part in (_clean(prefix), "active") if part)


def prefix_start(prefix: str) -> str:
    """How the names of this prefix's collections begin."""
    return f"{_clean(prefix)}_" if _clean(prefix) else ""
