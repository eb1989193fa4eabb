"""The edge's domain types: what a recall asks, what each layer answered, and what comes back."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.runtime.records import RecordMeta, TimeRange


class LayerName(enum.Enum):
    """The layers a recall can ask."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    REFLECT = "reflect"


ALL_LAYERS = tuple(LayerName)


@dataclass(frozen=True)
class Candidate:
    """One layer's answer for one record, before fusion."""

    id: str
    layer: LayerName
    text: str
    layer_score: float
    meta: RecordMeta
    speaker: str = ""
    kind: str = "turn"
    session_id: str = ""
    """Its conversation, when the layer knows it: fusion lets one session's hits support each other."""


@dataclass(frozen=True)
class LayerOutcome:
    """How one layer answered a recall."""

    layer: LayerName
    ok: bool
    elapsed_ms: float
    candidates: tuple[Candidate, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class RecalledMemory:
    """A fused memory: one record, every layer that returned it, and its fused score."""

    id: str
    text: str
    score: float
    meta: RecordMeta
    layers: tuple[LayerName, ...]
    speaker: str = ""
    kind: str = "turn"

    @property
    def layer(self) -> LayerName:
        """The layer that ranked it best."""
        return self.layers[0]


@dataclass(frozen=True)
class RecallQuery:
    """A validated recall request."""

    bank_id: str
    query: str
    top_k: int = 10
    layers: tuple[LayerName, ...] = ALL_LAYERS
    time_range: TimeRange = field(default_factory=TimeRange)
    session_id: str = ""


@dataclass(frozen=True)
class RecallResult:
    """Fused memories, best first, and how every layer answered."""

    memories: tuple[RecalledMemory, ...]
    outcomes: tuple[LayerOutcome, ...]

    @property
    def partial(self) -> bool:
        """True when some layer failed or missed the deadline."""
        return any(not outcome.ok for outcome in self.outcomes)


@dataclass(frozen=True)
class RetainResult:
    """What a retain stored."""

    turn_ids: tuple[str, ...]
    duplicate_count: int
    indexed: bool


@dataclass(frozen=True)
class ForgetResult:
    """What a forget removed."""

    forgotten_count: int
    """Turns archived or deleted in episodic memory."""
    unindexed_count: int
    """Records removed from the semantic index."""
    working_removed_count: int
    """Turns removed from live working-memory windows."""


@dataclass(frozen=True)
class CloseSessionResult:
    """What closing a session did: its working memory dropped, then a reflection on it."""

    closed: bool
    """False when working memory held nothing for the session."""
    turn_count: int
    summary_count: int
    token_count: int
    reflected: bool
    reflect_error: str = ""
    lessons: tuple[reflect_pb2.Lesson, ...] = ()
    episodes_read: int = 0
