"""Domain types of the semantic layer: records, hits and the identity of the model that embeds them."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from hindsight.runtime.records import RecordMeta


class RecordKind(enum.Enum):
    """What a semantic record is."""

    TURN = "turn"
    FACT = "fact"
    PREFERENCE = "preference"
    RULE = "rule"
    EPISODE = "episode"


@dataclass(frozen=True)
class SemanticRecord:
    """A record searchable by meaning."""

    id: str
    text: str
    kind: RecordKind = RecordKind.TURN
    speaker: str = ""
    session_id: str = ""
    meta: RecordMeta = field(default_factory=RecordMeta)


@dataclass(frozen=True)
class ScoredRecord:
    """A record with its cosine similarity to a query."""

    record: SemanticRecord
    score: float


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
