"""The episodic store: turns, episodes, the outbox and access statistics in PostgreSQL (psycopg 3 async).

The layer's one store interface: :class:`EpisodicStore` says what the layer needs, and
:class:`PostgresEpisodicStore` provides it, assembled from one mixin per family of tables:

- :mod:`~hindsight.episodic.store_base`: the pool, the table names, the companion stores, and the writes
  every family makes inside its own transactions (outbox entries, banks and sessions, new turns and
  episodes); it says why the families are mixins;
- :mod:`~hindsight.episodic.turn_records`: turns, and the review queue's decisions;
- :mod:`~hindsight.episodic.episode_records`: episodes, and the segments made from a session's turns;
- :mod:`~hindsight.episodic.sharing`: copies of records shared into another bank;
- :mod:`~hindsight.episodic.purge`: deleting for good, with the copies shared from what it took;
- :mod:`~hindsight.episodic.outbox_queue`: delivery of outbox entries;
- :mod:`~hindsight.episodic.access_stats`: access statistics.

Rows and vocabulary they share sit below them: :mod:`~hindsight.episodic.rows` (turns),
:mod:`~hindsight.episodic.episode_rows` (episodes) and :mod:`~hindsight.episodic.outbox_entries` (the
outbox). Keyword search and the keyword tables have their own store, :mod:`hindsight.episodic.keyword`,
which this one calls inside its own transactions; so do the review queue
(:mod:`~hindsight.episodic.quarantine`), lineage (:mod:`~hindsight.episodic.lineage`), the dead-letter list
(:mod:`~hindsight.episodic.dead_letters`), managed tokens (:mod:`~hindsight.episodic.tokens`) and share
links (:mod:`~hindsight.episodic.shares`). Tables sit in the layer's own schema (created by the migrations
in ``migrations/``); every statement names them schema-qualified, so no connection state is assumed.

Every write that another layer must see adds its outbox entries in the same transaction as the
record, for each target layer this deployment has (an address is configured): either all of it is
committed or none of it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from psycopg import AsyncConnection
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from hindsight.episodic.access_stats import AccessHit, AccessRecords, StoredAccess
from hindsight.episodic.dead_letters import DeadLetterStore
from hindsight.episodic.episode_records import EpisodeRecords, SegmentWrite
from hindsight.episodic.models import (
    Episode,
    EpisodeFilter,
    PurgeResult,
    PurgeScope,
    ScoredEpisode,
    TurnFilter,
)
from hindsight.episodic.outbox_entries import TRANSIENT, OutboxEntry
from hindsight.episodic.outbox_queue import OutboxCounts, OutboxQueue, SyncState
from hindsight.episodic.paging import PageKey
from hindsight.episodic.purge import Purging
from hindsight.episodic.quarantine import AuditEntry, HeldTurn, ReviewResult, Screening
from hindsight.episodic.rows import Decay, ScoredTurn
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.shares import Copy, ShareWrite
from hindsight.episodic.sharing import Sharing
from hindsight.episodic.turn_records import RecordResult, TurnRecords
from hindsight.runtime.migrations import load_migrations, migrate
from hindsight.runtime.records import Turn

log = logging.getLogger(__name__)


class EpisodicStore(Protocol):
    """What episodic memory needs from its store."""

    targets: frozenset[str]
    """The layers outbox entries are written for."""
    dead_letters: DeadLetterStore
    """Outbox entries a target refused for good."""

    async def record_turns(
        self,
        bank_id: str,
        turns: Sequence[Turn],
        claim_until: datetime | None,
        held: Mapping[str, Screening] | None = None,
        actor: str = "",
    ) -> RecordResult:
        """Insert turns and their outbox entries in one transaction; ids already stored are left unchanged.

        With ``claim_until`` the new entries are held for the caller to deliver until then. Turns named in
        ``held`` go to the review queue instead (no outbox entry), with an audit entry each by ``actor``.
        """
        ...

    async def search_quarantined(self, bank_id: str, lexemes: Sequence[str], limit: int) -> list[ScoredTurn]:
        """Held-back turns (pending and rejected) matching any lexeme, best first."""
        ...

    async def list_quarantined(
        self, bank_id: str, status: str, after: PageKey | None, limit: int
    ) -> tuple[list[HeldTurn], int]:
        """A page of the review queue, oldest first, and the bank's pending count."""
        ...

    async def review(
        self,
        bank_id: str,
        turn_ids: Sequence[str],
        decision: str,
        reviewer: str,
        note: str,
        claim_until: datetime | None = None,
    ) -> ReviewResult:
        """Approve (into turns, with outbox entries) or reject pending turns, audited, in one transaction."""
        ...

    async def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        """Append audit entries; returns how many were new."""
        ...

    async def list_audit(
        self, bank_id: str, action: str, since: datetime | None, before: PageKey | None, limit: int
    ) -> list[AuditEntry]:
        """Audit entries newest first."""
        ...

    async def search_turns(
        self, bank_id: str, lexemes: Sequence[str], where: TurnFilter, decay: Decay, limit: int
    ) -> list[ScoredTurn]:
        """Turns matching any lexeme, best first by BM25 times decay; a lexeme given twice weighs twice."""
        ...

    async def list_turns(
        self, bank_id: str, where: TurnFilter, after: PageKey | None, newest_first: bool, limit: int
    ) -> list[Turn]:
        """Turns in (time, id) order (or its reverse), starting after ``after``."""
        ...

    async def update_turn(
        self, bank_id: str, old_id: str, new: Turn, claim_until: datetime | None = None
    ) -> tuple[Turn, tuple[int, ...]]:
        """Store ``new`` and archive ``old_id``, linking it to its successor; NotFound for an unknown id.

        Returns the stored turn and its outbox entries (claimed until ``claim_until`` when given)."""
        ...

    async def get_turn(self, bank_id: str, turn_id: str) -> Turn:
        """A turn, live or archived; NotFound when there is none."""
        ...

    async def get_turns(self, bank_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        """Turns by id, live or archived, in the order asked; unknown ids are left out."""
        ...

    async def restore_turns(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        """Bring archived turns back; returns how many."""
        ...

    async def forget_turns(self, bank_id: str, turn_ids: Sequence[str], where: TurnFilter | None) -> int:
        """Archive the live turns named or matching ``where``; returns how many."""
        ...

    async def purge(
        self, bank_id: str, scope: PurgeScope, claim_until: datetime | None = None
    ) -> PurgeResult:
        """Delete for good, with what dies with the turns, and queue deletes for the other layers (the
        syncs of episodes that live on claimed until ``claim_until`` when given)."""
        ...

    async def write_episode(self, bank_id: str, episode: Episode, method: str = "written") -> Episode:
        """Store an episode (its id must be set); an id already stored returns the stored episode."""
        ...

    async def share(
        self,
        bank_id: str,
        source_bank_id: str,
        ids: Sequence[str],
        copies: Sequence[Copy],
        agent: str,
        claim_until: datetime | None = None,
    ) -> ShareWrite:
        """Copy live turns and episodes of the source bank (by id) and the given copies into ``bank_id``,
        linked to their sources (see :mod:`hindsight.episodic.shares`); nothing when an id is unknown."""
        ...

    async def list_episodes(
        self, bank_id: str, session_id: str, before: PageKey | None, limit: int
    ) -> list[Episode]:
        """Live episodes newest first, starting before ``before``; only ``session_id``'s when it is set."""
        ...

    async def search_episodes(
        self, bank_id: str, lexemes: Sequence[str], where: EpisodeFilter, decay: Decay, limit: int
    ) -> list[ScoredEpisode]:
        """Live episodes passing ``where``, by keyword rank times decay (or newest first without lexemes)."""
        ...

    async def unsegmented_turns(self, bank_id: str, session_id: str, limit: int) -> list[Turn]:
        """The session's live turns after its segmentation watermark, in time order."""
        ...

    async def save_segments(
        self, bank_id: str, session_id: str, write: SegmentWrite, overlap: float
    ) -> list[Episode]:
        """Store the episodes (merging each into a stored one it repeats) and move the watermark."""
        ...

    async def add_access(self, hits: Sequence[AccessHit], gain: float, decay_per_day: float) -> None:
        """Count accesses and raise freshness (after decaying it to the hit time)."""
        ...

    async def access_stats(self, bank_id: str, ids: Sequence[str]) -> list[StoredAccess]:
        """(id, layer, hits, last hit, freshness, freshness time) of the records with statistics."""
        ...

    async def queue_working_turns(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        """Queue syncs of recorded turns to working memory, whose own append missed them; returns how many
        entries were written (none without a working layer)."""
        ...

    async def claim_due(self, now: datetime, lease_until: datetime, limit: int) -> list[OutboxEntry]:
        """Take due entries (oldest first) for delivery until ``lease_until``; other replicas skip them."""
        ...

    async def claimed(self, ids: Sequence[int]) -> list[OutboxEntry]:
        """The entries with these ids that still wait."""
        ...

    async def waiting_before(self, entries: Sequence[OutboxEntry]) -> bool:
        """Whether older work of the same bank and target waits that these must not overtake."""
        ...

    async def release(self, entries: Sequence[OutboxEntry], at: datetime) -> None:
        """Hand claimed entries back to the background deliverer, due at ``at``."""
        ...

    async def sync_state(
        self,
        bank_id: str,
        turn_ids: Sequence[str],
        episode_ids: Sequence[str],
        with_before: bool = False,
    ) -> SyncState:
        """The live turns and episodes among these ids (``with_before``: and the turn before each turn in
        its session)."""
        ...

    async def delivered(self, entries: Sequence[OutboxEntry]) -> None:
        """Remove delivered entries and count them."""
        ...

    async def failed(
        self,
        entries: Sequence[OutboxEntry],
        error: str,
        retry_at: Sequence[datetime],
        failure: str = TRANSIENT,
    ) -> None:
        """Note a failed attempt of each entry, how it failed (``TRANSIENT`` or ``REFUSED``) and when to try
        it again."""
        ...

    async def next_due(self, after: datetime | None = None) -> datetime | None:
        """When the earliest waiting entry is due (of those due after ``after``), or None when none waits."""
        ...

    async def outbox_counts(self, bank_id: str) -> OutboxCounts:
        """Entries waiting and delivered by target, of one bank or (empty) all."""
        ...

    async def ping(self) -> bool:
        """Whether the database answers; never raises."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class PostgresEpisodicStore(TurnRecords, EpisodeRecords, Sharing, Purging, OutboxQueue, AccessRecords):
    """:class:`EpisodicStore` on PostgreSQL: the families' mixins over one pool (see the module docstring)."""

    @classmethod
    async def open(cls, settings: EpisodicSettings) -> PostgresEpisodicStore:
        """Open the pool, wait for the database, and bring the schema up to date."""
        pool: AsyncConnectionPool[AsyncConnection[DictRow]] = AsyncConnectionPool(
            settings.database_url,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            kwargs={"autocommit": True, "row_factory": dict_row},
            open=False,
            name="episodic",
            connection_class=AsyncConnection[DictRow],
        )
        try:
            await pool.open(wait=True, timeout=settings.connect_timeout_seconds)
            async with pool.connection(timeout=settings.connect_timeout_seconds) as conn:
                applied = await migrate(conn, settings.schema, load_migrations("hindsight.episodic"))
            log.info("episodic schema ready", extra={"schema": settings.schema, "applied": applied})
            store = cls(pool, settings)
            await store.reanalyse()
        except BaseException:
            await pool.close()
            raise
        return store
