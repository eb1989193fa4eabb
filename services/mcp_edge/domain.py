"""The edge's domain types: what a recall asks, what each layer answered, and what comes back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.runtime.records import LayerName, QueryAnalysis, RecordMeta, TimeRange
from hindsight.runtime.results import ForgetResult as ForgetResult
from hindsight.runtime.results import SecurityFlag, SecurityWarning

Flag = SecurityFlag
"""A caution attached to a recalled memory (the client's ``SecurityFlag``: one declaration for both)."""
RecallWarning = SecurityWarning
"""A held-back record related to a recall's query (the client's ``SecurityWarning``)."""

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
    confidence: float = 1.0
    """Belief in the record, 0 to 1 (lessons and facts carry one; turns are what was said)."""
    supersedes: tuple[str, ...] = ()
    """Ids of the earlier statements this record corrected or replaced (the semantic layer's chain)."""
    channel: str = ""
    """A list built at the edge from a layer's candidates (``entity``: those about an entity the query
    names) rather than the layer's own search; fusion weighs it by the channel's weight."""
    statement: tuple[str, ...] = ()
    """(owner, attribute, value) the layer keyed the record by (semantic facts and turns), or empty."""
    similarity: float = 0.0
    """The semantic layer's cosine similarity to the query as found (0: not known), for relevance."""
    valid_from: datetime | None = None
    """Since when it holds, as the semantic layer keeps it (None: not known there)."""
    valid_to: datetime | None = None
    """When it stopped holding (superseded or invalidated), as the semantic layer keeps it; None: holds."""
    successor: str = ""
    """The semantic layer's record that superseded it, whether or not this recall found that record."""
    replies_to: str = ""
    """The turn a reply's vector reads with it (the semantic layer's ``replies_to``): a reply found by
    meaning may be found by that turn's words, so the two are not independent evidence."""
    bank_id: str = ""
    """Its bank, in a recall over several banks (where ``id`` is then keyed by bank: see
    :func:`hindsight.mcp_edge.banks.keyed`); empty in a recall of one bank."""


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
    confidence: float = 1.0
    session_id: str = ""
    supersedes: tuple[str, ...] = ()
    """Ids of the earlier statements it corrected or replaced, newest first."""
    superseded_by: str = ""
    """The memory of this recall that replaced it (it then ranks below that one)."""
    statement: tuple[str, ...] = ()
    """(owner, attribute, value) its layer keyed it by, or empty (see :class:`Candidate`)."""
    flags: tuple[Flag, ...] = ()
    """Cautions found at recall (:mod:`hindsight.mcp_edge.consensus`); empty when nothing was found."""
    valid_from: datetime | None = None
    """Since when it holds, when known (:mod:`hindsight.mcp_edge.validity`)."""
    valid_to: datetime | None = None
    """When it stopped holding (superseded or invalidated); None: it still holds, as far as is known."""
    outdated: str = ""
    """Why it did not hold at the moment the recall asked about (now, ``as_of`` or the query's time), as
    the context shows it (``outdated since 2026-04-10, now: ...``); empty when it held then."""
    bank_id: str = ""
    """The bank it belongs to (the recall's bank, or one of its ``bank_ids``)."""

    @property
    def layer(self) -> LayerName:
        """The layer that ranked it best."""
        return self.layers[0]

    @property
    def spoken(self) -> str:
        """Its text as said, ``"speaker: text"`` when the speaker is known: what a model reads of it
        (questions name people; a turn's text rarely names its own speaker)."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


@dataclass(frozen=True)
class RecallQuery:
    """A validated recall request."""

    bank_id: str
    query: str
    top_k: int = 10
    layers: tuple[LayerName, ...] = ALL_LAYERS
    time_range: TimeRange = field(default_factory=TimeRange)
    session_id: str = ""
    min_score: float = 0.0
    """Memories scoring below this (0 to 1, after rerank) are dropped."""
    tags: tuple[str, ...] = ()
    """Only memories carrying all of these tags."""
    token_budget: int = 0
    """Most tokens of the assembled context; 0 means the setting."""
    order: str = ""
    """Order of the assembled context (see :data:`CONTEXT_ORDERS`); empty means the setting."""
    reference_time: datetime | None = None
    """"Now" for the query's time expressions and for recency; None means the current time."""
    time_zone: str = ""
    """IANA zone the query's time words are read in; empty means the setting (HINDSIGHT_TIME_ZONE)."""
    as_of: datetime | None = None
    """Recall the state at this moment: only what was said by then, with what held then; None: now."""
    bank_ids: tuple[str, ...] = ()
    """A recall over several banks (``bank_id`` then empty): every one granted, fused into one ranking."""
    bank_weights: Mapping[str, float] = field(default_factory=dict)
    """With ``bank_ids``: a factor on the fused score of each named bank's memories (others count 1)."""
    group_by_bank: bool = False
    """With ``bank_ids``: the context has one part per bank, the layer sections inside."""
    agent: str = ""
    """Only memories this agent wrote (their ``meta.agent``); empty: every agent's."""

    @property
    def banks(self) -> tuple[str, ...]:
        """Every bank the recall reads, in the order asked."""
        return self.bank_ids or (self.bank_id,)


CONTEXT_ORDERS = ("score", "importance", "time_asc", "time_desc", "mix")
"""How the assembled context orders the chosen memories within each layer's section."""


@dataclass(frozen=True)
class AssembledContext:
    """The memories that fit a token budget, as prompt text under one marker per layer."""

    text: str = ""
    ids: tuple[str, ...] = ()
    tokens: int = 0


@dataclass(frozen=True)
class RecallResult:
    """Fused memories, best first, and how every layer answered."""

    memories: tuple[RecalledMemory, ...]
    outcomes: tuple[LayerOutcome, ...]
    context: AssembledContext = field(default_factory=AssembledContext)
    analysis: QueryAnalysis = field(default_factory=QueryAnalysis)
    elapsed_ms: float = 0.0
    warnings: tuple[RecallWarning, ...] = ()
    """Held-back records related to the query (detected attacks), never part of ``memories``."""

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
    """False when recall by meaning will see these turns only later."""
    screened: tuple[Screened, ...] = ()
    """What write-time screening did to turns of the retain (turns not listed passed unchanged)."""


@dataclass(frozen=True)
class Screened:
    """What write-time screening did to one turn: quarantine, redact or flag, and why."""

    turn_id: str
    kind: str
    """instruction, tool_imperative, secret, ..."""
    reason: str
    action: str
    """quarantine (held for review, not recalled), redact (stored with the secret replaced) or flag (stored,
    marked)."""


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


@dataclass(frozen=True)
class PurgeResult:
    """What a purge deleted for good."""

    turn_count: int
    episode_count: int
    unindexed_count: int
    working_removed_count: int
    lesson_count: int
    shared_copy_count: int = 0
    """Copies of the purged memories removed from the banks they were shared into."""
