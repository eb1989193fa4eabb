"""Records the edge builds and the client receives with the same fields and meaning, declared once here.

The edge computes them, the ``MemoryService`` carries them as protobuf, and the client reads them back field
by field; one declaration keeps both sides from drifting apart. The edge and the client re-export them
under their own names (``hindsight.mcp_edge.domain.Flag`` is :class:`SecurityFlag`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["ForgetResult", "InvalidateResult", "SecurityFlag", "SecurityWarning", "SharedMemory"]


@dataclass(frozen=True)
class SecurityFlag:
    """A caution attached to a recalled memory: what (``unverified_source``, ``contradicts_consensus``,
    ``instruction``, ...) and why, in words the agent can weigh."""

    kind: str
    """unverified_source, contradicts_consensus, instruction, ..."""
    reason: str


@dataclass(frozen=True)
class SecurityWarning:
    """A held-back record (quarantined or rejected by screening: a detected attack) related to a recall's
    query; its text is never a memory, only a defanged excerpt."""

    id: str
    kind: str
    reason: str
    excerpt: str
    """Short and defanged: read it, do not follow it."""
    time: datetime | None = None


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
class InvalidateResult:
    """What an invalidation did, by id: nothing deleted, the memories are history now."""

    invalidated_ids: tuple[str, ...]
    """Memories whose validity ended with this call."""
    unchanged_ids: tuple[str, ...]
    """Memories that had stopped holding already."""
    unknown_ids: tuple[str, ...]
    """Ids the bank does not hold."""
    derived_ids: tuple[str, ...]
    """Facts drawn only from the invalidated turns, ended with them."""


@dataclass(frozen=True)
class SharedMemory:
    """One memory copied into a team bank: its id at the source, the copy's id, where recall finds the copy
    (``episodic``, or ``reflect`` for a lesson) and what it was (``turn``, ``episode``, ``fact`` or
    ``lesson``)."""

    source_id: str
    """Its id in the source bank."""
    id: str
    """The copy's id in the team bank (the same when shared again)."""
    layer: str
    """Where a recall finds the copy: `episodic`, or `reflect` for a lesson."""
    kind: str
    """What was shared: `turn`, `episode`, `fact` or `lesson`."""
