"""The episodic store: turns, episodes, the outbox and access statistics in PostgreSQL (psycopg 3 async).

The layer's one store interface. Keyword search and the keyword tables it keeps have their own store,
:mod:`hindsight.episodic.keyword`, which this one calls inside its own transactions. Tables sit in the
layer's own schema (created by the migrations in ``migrations/``); every statement names them
schema-qualified, so no connection state is assumed.

Every write that another layer must see adds its outbox entries in the same transaction as the
record, for each target layer this deployment has (an address is configured): either all of it is
committed or none of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from hindsight.episodic.dead_letters import DeadLetterStore
from hindsight.episodic.keyword import KeywordStore, TurnTerms, analyse_turns
from hindsight.episodic.lineage import WRITTEN, Lineage
from hindsight.episodic.models import (
    Episode,
    EpisodeFilter,
    Outcome,
    PurgedCopies,
    PurgeResult,
    PurgeScope,
    ScoredEpisode,
    TurnFilter,
)
from hindsight.episodic.paging import PageKey
from hindsight.episodic.quarantine import (
    APPROVE,
    APPROVED,
    REJECTED,
    AuditEntry,
    HeldTurn,
    QuarantineStore,
    ReviewResult,
    Screening,
)
from hindsight.episodic.rows import (
    TURN_COLUMNS,
    TURN_COLUMNS_OF_T,
    Decay,
    ScoredTurn,
    and_,
    decay_factor,
    record_conditions,
    turn_conditions,
    turn_from_row,
)
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.shares import (
    Copy,
    SharedCopies,
    SharedRecord,
    ShareWrite,
    episode_copy,
    turn_copy,
)
from hindsight.episodic.tokens import TokenStore
from hindsight.runtime.database import store_errors
from hindsight.runtime.errors import FailedPrecondition, NotFound
from hindsight.runtime.migrations import load_migrations, migrate
from hindsight.runtime.records import RecordMeta, Source, Turn
from hindsight.runtime.text import search_terms
from hindsight.runtime.tsearch import tsquery_literal, tsvector_literal

log = logging.getLogger(__name__)

SEMANTIC = "semantic"
WORKING = "working"
REFLECT = "reflect"
SYNC = "sync"
"""Outbox operation: make the target's copy of one record match its current state here."""
DELETE = "delete"
"""Outbox operation: delete what the target derived from some ids, a session or a whole bank."""
TURN = "turn"
EPISODE = "episode"
TRANSIENT = "transient"
"""How a delivery failed: the target was down, slow or busy (retried for as long as it takes)."""
REFUSED = "refused"
"""How a delivery failed: the target will not take the entry as it is (dead-lettered after a few tries)."""

_EPISODE_COLUMN_NAMES = (
    "id, session_id, situation, action, outcome, lesson, task_type, tools, result, source, trust, tags, "
    "importance, source_turn_ids, occurred_at, recorded_at, schema_version, agent"
).split(", ")
_EPISODE_COLUMNS = sql.SQL(", ").join(map(sql.Identifier, _EPISODE_COLUMN_NAMES))
_EPISODE_COLUMNS_OF_E = sql.SQL(", ").join(sql.Identifier("e", name) for name in _EPISODE_COLUMN_NAMES)


@dataclass(frozen=True)
class RecordResult:
    """How many turns of a request were new and how many were already stored, and their outbox entries."""

    recorded: int
    duplicates: int
    outbox_ids: tuple[int, ...] = ()
    quarantined: int = 0
    """Of the recorded, how many were held back for review."""


@dataclass(frozen=True)
class OutboxEntry:
    """One piece of work for another layer."""

    id: int
    bank_id: str
    target: str
    operation: str
    record_kind: str
    record_id: str
    payload: dict[str, Any]
    attempts: int
    created_at: datetime | None = None
    """When the entry was written (its delivery lag is measured from here)."""


@dataclass(frozen=True)
class OutboxCounts:
    """Entries waiting and delivered, by target layer."""

    pending: dict[str, int]
    delivered: dict[str, int]
    dead_letters: dict[str, int] = field(default_factory=dict)
    """Entries moved to the dead-letter list, by target layer."""


@dataclass(frozen=True)
class SyncState:
    """The current state of records named by sync entries: the live ones (the rest are gone or archived)."""

    turns: dict[str, Turn] = field(default_factory=dict)
    episodes: dict[str, Episode] = field(default_factory=dict)


@dataclass(frozen=True)
class SegmentWrite:
    """Episodes made from a session's finished segments, and the last turn they cover (the watermark)."""

    episodes: list[Episode]
    method: str
    through: PageKey


@dataclass(frozen=True)
class StoredAccess:
    """A record's access statistics as stored: freshness is as of ``freshness_at``."""

    id: str
    layer: str
    hit_count: int
    last_hit: datetime
    freshness: float
    freshness_at: datetime


@dataclass(frozen=True)
class AccessHit:
    """Accesses to one record gathered since the last flush."""

    bank_id: str
    layer: str
    id: str
    hits: int
    last_hit: datetime


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
        self, bank_id: str, turn_ids: Sequence[str], episode_ids: Sequence[str]
    ) -> SyncState:
        """The live turns and episodes among these ids."""
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


def _episode_from_row(row: DictRow) -> Episode:
    meta = RecordMeta.from_fields(row, time=row["occurred_at"])
    return Episode(
        id=row["id"],
        session_id=row["session_id"],
        situation=row["situation"],
        action=row["action"],
        outcome=row["outcome"],
        lesson=row["lesson"],
        task_type=row["task_type"],
        tools=tuple(row["tools"]),
        result=Outcome(row["result"]),
        meta=meta,
        recorded_at=row["recorded_at"],
    )


def _entry_from_row(row: DictRow) -> OutboxEntry:
    return OutboxEntry(
        id=int(row["id"]),
        bank_id=row["bank_id"],
        target=row["target"],
        operation=row["operation"],
        record_kind=row["record_kind"],
        record_id=row["record_id"],
        payload=dict(row["payload"] or {}),
        attempts=int(row["attempts"]),
        created_at=row.get("created_at"),
    )


def _turn_params(bank_id: str, turn: Turn, terms: TurnTerms) -> dict[str, Any]:
    meta = turn.meta
    return {
        "bank_id": bank_id,
        "id": turn.id,
        "session_id": turn.session_id,
        "role": turn.role.value,
        "speaker": turn.speaker,
        "text": turn.text,
        **meta.to_fields(),
        "occurred_at": meta.time,
        **terms.params(),
    }


def episode_terms(episode: Episode) -> str:
    """The indexed terms of an episode (plain terms, as its queries are analysed)."""
    return tsvector_literal(episode.text_parts())


def _episode_params(bank_id: str, episode: Episode) -> dict[str, Any]:
    return {
        "bank_id": bank_id,
        "id": episode.id,
        "session_id": episode.session_id,
        "situation": episode.situation,
        "action": episode.action,
        "outcome": episode.outcome,
        "lesson": episode.lesson,
        "task_type": episode.task_type,
        "tools": list(episode.tools),
        "result": episode.result.value,
        **episode.meta.to_fields(),
        "occurred_at": episode.meta.time,
        "search_terms": episode_terms(episode),
    }


def _episode_update_params(bank_id: str, episode: Episode) -> dict[str, Any]:
    """An episode's columns for an update in place, its dedup key included."""
    return {**_episode_params(bank_id, episode), "dedup_key": dedup_key(episode)}


def _episode_conditions(alias: str, where: EpisodeFilter, params: dict[str, Any]) -> list[sql.Composable]:
    """SQL conditions for an episode filter: the task type and tools pre-filter candidates before ranking."""

    def col(name: str) -> sql.Composable:
        return sql.Identifier(alias, name)

    conditions: list[sql.Composable] = [sql.SQL("{} IS NULL").format(col("archived_at"))]
    if where.task_type:
        params["f_task_type"] = where.task_type
        conditions.append(sql.SQL("{} = %(f_task_type)s").format(col("task_type")))
    if where.tools:
        params["f_tools"] = list(where.tools)
        conditions.append(sql.SQL("{} && %(f_tools)s::text[]").format(col("tools")))
    if where.result is not Outcome.UNSPECIFIED:
        params["f_result"] = where.result.value
        conditions.append(sql.SQL("{} = %(f_result)s").format(col("result")))
    conditions += record_conditions(col, where.tags, where.sources, where.min_trust, where.time_range, params)
    return conditions


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """Overlap of two term sets: shared over all."""
    left, right = set(a), set(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def dedup_terms(episode: Episode) -> set[str]:
    """What two episodes must share to be the same: the terms of situation and action."""
    return set(search_terms(f"{episode.situation} {episode.action}"))


MAX_DEDUP_KEY_CHARS = 512
"""Longer keys are stored as their digest: a btree index entry must stay under a third of a page."""


def dedup_key(episode: Episode) -> str:
    """The normalised situation and action: equal keys are certainly the same episode (a long one as its
    SHA-256, which keeps equal keys equal and fits the index)."""
    key = " ".join(sorted(dedup_terms(episode)))
    if len(key) <= MAX_DEDUP_KEY_CHARS:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


class PostgresEpisodicStore:
    """:class:`EpisodicStore` on PostgreSQL."""

    def __init__(
        self, pool: AsyncConnectionPool[AsyncConnection[DictRow]], settings: EpisodicSettings
    ) -> None:
        self._pool = pool
        self._acquire_timeout = settings.acquire_timeout_seconds
        schema = settings.schema
        self._schema = schema
        self._turns = sql.Identifier(schema, "turns")
        self._episodes = sql.Identifier(schema, "episodes")
        self._banks = sql.Identifier(schema, "banks")
        self._sessions = sql.Identifier(schema, "sessions")
        self._outbox = sql.Identifier(schema, "outbox")
        self._delivered = sql.Identifier(schema, "outbox_delivered")
        self._access = sql.Identifier(schema, "access_stats")
        self.keywords = KeywordStore(schema, self._connection)
        """Keyword search and the keyword tables, kept up by this store's writes."""
        self.quarantine = QuarantineStore(schema, self._connection)
        """The review queue and the audit log."""
        self.lineage = Lineage(schema)
        """Version chains, what episodes stand on, and tombstones of purged ids."""
        self.dead_letters = DeadLetterStore(schema, self._connection, self.quarantine)
        """Outbox entries a target refused for good (see :mod:`hindsight.episodic.dead_letters`)."""
        self.tokens = TokenStore(schema, self._connection, self.quarantine)
        """Managed client tokens (see :mod:`hindsight.episodic.tokens`)."""
        self.shares = SharedCopies(schema)
        """Links of copies shared into a bank to their sources (see :mod:`hindsight.episodic.shares`)."""
        addresses = {
            SEMANTIC: settings.semantic_addr,
            WORKING: settings.working_addr,
            REFLECT: settings.reflect_addr,
        }
        self.targets = frozenset(name for name, address in addresses.items() if address)

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

    async def reanalyse(self) -> int:
        """Re-index turns of an older analysis; returns how many (see :meth:`KeywordStore.reanalyse`)."""
        return await self.keywords.reanalyse()

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[DictRow]]:
        async with (
            store_errors("episodic store"),
            self._pool.connection(timeout=self._acquire_timeout) as conn,
        ):
            yield conn

    # ----- outbox entries, written inside the caller's transaction ---------------------------------------
    async def _enqueue(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        rows: Sequence[tuple[str, str, str, str, dict[str, Any]]],
        due: datetime | None = None,
    ) -> list[int]:
        """Insert (target, operation, kind, record id, payload) entries for the configured targets."""
        wanted = [row for row in rows if row[0] in self.targets]
        if not wanted:
            return []
        statement = sql.SQL(
            "INSERT INTO {outbox} (bank_id, target, operation, record_kind, record_id, payload, "
            "next_attempt_at) "
            "SELECT %(bank_id)s::text, t, o, k, r, p, coalesce(%(due)s::timestamptz, now()) "
            "FROM unnest(%(targets)s::text[], %(operations)s::text[], %(kinds)s::text[], %(ids)s::text[], "
            "%(payloads)s::jsonb[]) AS u(t, o, k, r, p) RETURNING id"
        ).format(outbox=self._outbox)
        params = {
            "bank_id": bank_id,
            "due": due,
            "targets": [row[0] for row in wanted],
            "operations": [row[1] for row in wanted],
            "kinds": [row[2] for row in wanted],
            "ids": [row[3] for row in wanted],
            "payloads": [Jsonb(row[4]) for row in wanted],
        }
        rows_out = await (await conn.execute(statement, params)).fetchall()
        return [int(row["id"]) for row in rows_out]

    async def _sync_turns(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        turn_ids: Sequence[str],
        due: datetime | None = None,
    ) -> list[int]:
        return await self._enqueue(
            conn, bank_id, [(SEMANTIC, SYNC, TURN, turn_id, {}) for turn_id in turn_ids], due
        )

    async def _note_bank_and_sessions(
        self, conn: AsyncConnection[DictRow], bank_id: str, turns: Sequence[Turn]
    ) -> None:
        await conn.execute(
            sql.SQL("INSERT INTO {banks} (bank_id) VALUES (%s) ON CONFLICT DO NOTHING").format(
                banks=self._banks
            ),
            (bank_id,),
        )
        spans: dict[str, list[datetime]] = {}
        for turn in turns:
            if turn.meta.time is not None:
                spans.setdefault(turn.session_id, []).append(turn.meta.time)
        if not spans:
            return
        await conn.execute(
            sql.SQL(
                "INSERT INTO {sessions} AS s (bank_id, session_id, first_at, last_at) "
                "SELECT %(bank_id)s, u.session_id, u.first_at, u.last_at "
                "FROM unnest(%(sessions)s::text[], %(firsts)s::timestamptz[], %(lasts)s::timestamptz[]) "
                "AS u(session_id, first_at, last_at) "
                "ON CONFLICT (bank_id, session_id) DO UPDATE SET first_at = least(s.first_at, "
                "excluded.first_at), last_at = greatest(s.last_at, excluded.last_at)"
            ).format(sessions=self._sessions),
            {
                "bank_id": bank_id,
                "sessions": list(spans),
                "firsts": [min(times) for times in spans.values()],
                "lasts": [max(times) for times in spans.values()],
            },
        )

    # ----- turns ---------------------------------------------------------------------------------------
    async def _insert_turns(
        self, conn: AsyncConnection[DictRow], bank_id: str, params: Sequence[dict[str, Any]]
    ) -> list[str]:
        """Insert turn rows (ids already stored are skipped); the ids inserted."""
        if not params:
            return []
        statement = sql.SQL(
            "INSERT INTO {turns} (bank_id, id, session_id, role, speaker, text, source, trust, occurred_at, "
            "tags, importance, source_turn_ids, schema_version, search_terms, term_count, analyzer, agent) "
            "VALUES (%(bank_id)s, %(id)s, %(session_id)s, %(role)s, %(speaker)s, %(text)s, %(source)s, "
            "%(trust)s, coalesce(%(occurred_at)s::timestamptz, now()), %(tags)s, %(importance)s, "
            "%(source_turn_ids)s, %(schema_version)s, %(search_terms)s::tsvector, %(term_count)s, "
            "%(analyzer)s, %(agent)s) "
            "ON CONFLICT (bank_id, id) DO NOTHING RETURNING id"
        ).format(turns=self._turns)
        recorded: list[str] = []
        async with conn.cursor() as cursor:
            await cursor.executemany(statement, params, returning=True)
            while True:
                row = await cursor.fetchone()
                if row is not None:
                    recorded.append(row["id"])
                if not cursor.nextset():
                    break
        return recorded

    async def record_turns(
        self,
        bank_id: str,
        turns: Sequence[Turn],
        claim_until: datetime | None,
        held: Mapping[str, Screening] | None = None,
        actor: str = "",
    ) -> RecordResult:
        held = held or {}
        ordered = sorted(turns, key=lambda turn: turn.id)  # one lock order for concurrent writers
        analysed = await analyse_turns([(turn.speaker, turn.text) for turn in ordered])
        ordinary = [
            (turn, terms) for turn, terms in zip(ordered, analysed, strict=True) if turn.id not in held
        ]
        holding = [
            (turn, terms, held[turn.id])
            for turn, terms in zip(ordered, analysed, strict=True)
            if turn.id in held
        ]
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            await self.lineage.refuse_purged(conn, bank_id, [turn.id for turn in ordered], "turns")
            queued = await self.quarantine.held_ids(conn, bank_id, [turn.id for turn, _ in ordinary])
            params = [_turn_params(bank_id, turn, terms) for turn, terms in ordinary if turn.id not in queued]
            recorded = await self._insert_turns(conn, bank_id, params)
            await self.keywords.index(conn, bank_id, recorded)  # right after the turns: the lock order
            quarantined = await self.quarantine.hold(conn, bank_id, holding, actor)
            fresh = set(recorded)
            if fresh or quarantined:
                await self._note_bank_and_sessions(
                    conn, bank_id, [turn for turn in turns if turn.id in fresh]
                )
            outbox = await self._sync_turns(conn, bank_id, recorded, claim_until)
        stored = len(recorded) + len(quarantined)
        return RecordResult(stored, len(turns) - stored, tuple(outbox), len(quarantined))

    # ----- the review queue and the audit log ---------------------------------------------------------
    async def search_quarantined(self, bank_id: str, lexemes: Sequence[str], limit: int) -> list[ScoredTurn]:
        return await self.quarantine.search(bank_id, tsquery_literal(lexemes), limit)

    async def list_quarantined(
        self, bank_id: str, status: str, after: PageKey | None, limit: int
    ) -> tuple[list[HeldTurn], int]:
        return await self.quarantine.page(bank_id, status, after, limit)

    async def review(
        self,
        bank_id: str,
        turn_ids: Sequence[str],
        decision: str,
        reviewer: str,
        note: str,
        claim_until: datetime | None = None,
    ) -> ReviewResult:
        """An approved turn moves into turns, keyword-indexed and queued for the other layers, as if it had
        just been retained; a rejected one stays in the queue. One audit entry per turn decided."""
        wanted = list(dict.fromkeys(turn_ids))
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            pending = await self.quarantine.take_pending(conn, bank_id, wanted)
            found = [held.turn.id for held in pending]
            outbox: list[int] = []
            if decision == APPROVE and pending:
                analysed = await analyse_turns([(held.turn.speaker, held.turn.text) for held in pending])
                params = [
                    _turn_params(bank_id, held.turn, terms)
                    for held, terms in zip(pending, analysed, strict=True)
                ]
                recorded = await self._insert_turns(conn, bank_id, params)
                await self.keywords.index(conn, bank_id, recorded)
                fresh = set(recorded)
                await self._note_bank_and_sessions(
                    conn, bank_id, [h.turn for h in pending if h.turn.id in fresh]
                )
                outbox = await self._sync_turns(conn, bank_id, recorded, claim_until)
            await self.quarantine.mark(
                conn, bank_id, found, APPROVED if decision == APPROVE else REJECTED, reviewer
            )
            await self.quarantine.write_audit(
                conn,
                [
                    AuditEntry(
                        action=decision,
                        actor=reviewer,
                        bank_id=bank_id,
                        target=held.turn.id,
                        reason=note or held.screening.reason,
                        details={"kind": held.screening.kind, "screened_for": held.screening.reason},
                    )
                    for held in pending
                ],
            )
        count = len(found)
        return ReviewResult(
            approved=count if decision == APPROVE else 0,
            rejected=0 if decision == APPROVE else count,
            not_pending=tuple(turn_id for turn_id in wanted if turn_id not in set(found)),
            outbox_ids=tuple(outbox),
        )

    async def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        return await self.quarantine.append_audit(entries)

    async def list_audit(
        self, bank_id: str, action: str, since: datetime | None, before: PageKey | None, limit: int
    ) -> list[AuditEntry]:
        return await self.quarantine.list_audit(bank_id, action, since, before, limit)

    async def search_turns(
        self, bank_id: str, lexemes: Sequence[str], where: TurnFilter, decay: Decay, limit: int
    ) -> list[ScoredTurn]:
        """Okapi BM25 over the bank's live turns times the time decay (see :meth:`KeywordStore.search`)."""
        return await self.keywords.search(bank_id, lexemes, where, decay, limit)

    async def list_turns(
        self, bank_id: str, where: TurnFilter, after: PageKey | None, newest_first: bool, limit: int
    ) -> list[Turn]:
        params: dict[str, Any] = {"bank_id": bank_id, "limit": limit}
        conditions = [sql.SQL("t.bank_id = %(bank_id)s"), *turn_conditions("t", where, params)]
        if after is not None:
            params["at"], params["after_id"] = after.occurred_at, after.id
            op = "<" if newest_first else ">"
            conditions.append(sql.SQL(f"(t.occurred_at, t.id) {op} (%(at)s, %(after_id)s)"))
        order = sql.SQL("t.occurred_at DESC, t.id DESC" if newest_first else "t.occurred_at, t.id")
        statement = sql.SQL(
            "SELECT {columns} FROM {turns} t WHERE {where} ORDER BY {order} LIMIT %(limit)s"
        ).format(columns=TURN_COLUMNS_OF_T, turns=self._turns, where=and_(conditions), order=order)
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [turn_from_row(row) for row in rows]

    async def get_turn(self, bank_id: str, turn_id: str) -> Turn:
        statement = sql.SQL("SELECT {columns} FROM {turns} WHERE bank_id = %s AND id = %s").format(
            columns=TURN_COLUMNS, turns=self._turns
        )
        async with self._connection() as conn:
            row = await (await conn.execute(statement, (bank_id, turn_id))).fetchone()
        if row is None:
            raise NotFound(f"turn {turn_id!r} is not in bank {bank_id!r}")
        return turn_from_row(row)

    async def get_turns(self, bank_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        statement = sql.SQL("SELECT {columns} FROM {turns} WHERE bank_id = %s AND id = ANY(%s)").format(
            columns=TURN_COLUMNS, turns=self._turns
        )
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, (bank_id, list(turn_ids)))).fetchall()
        found = {turn.id: turn for turn in map(turn_from_row, rows)}
        return [found[turn_id] for turn_id in dict.fromkeys(turn_ids) if turn_id in found]

    async def update_turn(
        self, bank_id: str, old_id: str, new: Turn, claim_until: datetime | None = None
    ) -> tuple[Turn, tuple[int, ...]]:
        lock = sql.SQL(
            "SELECT archived_at, term_count, coalesce(chain_id, id) AS chain FROM {turns} "
            "WHERE bank_id = %s AND id = %s FOR UPDATE"
        ).format(turns=self._turns)
        insert = sql.SQL(
            "INSERT INTO {turns} (bank_id, id, session_id, role, speaker, text, source, trust, occurred_at, "
            "tags, importance, source_turn_ids, schema_version, search_terms, term_count, analyzer, "
            "chain_id, agent) VALUES (%(bank_id)s, %(id)s, %(session_id)s, %(role)s, %(speaker)s, %(text)s, "
            "%(source)s, %(trust)s, coalesce(%(occurred_at)s::timestamptz, now()), %(tags)s, %(importance)s, "
            "%(source_turn_ids)s, %(schema_version)s, %(search_terms)s::tsvector, %(term_count)s, "
            "%(analyzer)s, %(chain_id)s, %(agent)s) RETURNING {columns}"
        ).format(turns=self._turns, columns=TURN_COLUMNS)
        supersede = sql.SQL(
            "UPDATE {turns} SET archived_at = now(), superseded_by = %s WHERE bank_id = %s AND id = %s"
        ).format(turns=self._turns)
        (analysed,) = await analyse_turns([(new.speaker, new.text)])
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            old = await (await conn.execute(lock, (bank_id, old_id))).fetchone()
            if old is None:
                raise NotFound(f"turn {old_id!r} is not in bank {bank_id!r}")
            if old["archived_at"] is not None:
                raise FailedPrecondition(
                    f"turn {old_id!r} is archived (forgotten or superseded); restore it first"
                )
            # The new version joins the old one's chain: a purge of any version deletes them all.
            values = {**_turn_params(bank_id, new, analysed), "chain_id": old["chain"]}
            row = await (await conn.execute(insert, values)).fetchone()
            await conn.execute(supersede, (new.id, bank_id, old_id))
            await self.keywords.unindex(conn, bank_id, [old_id], old["term_count"])
            await self.keywords.index(conn, bank_id, [new.id])
            outbox = await self._sync_turns(conn, bank_id, [old_id, new.id], claim_until)
        if row is None:
            raise RuntimeError(f"turn {new.id!r} was not inserted")
        return turn_from_row(row), tuple(outbox)

    async def restore_turns(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        statement = sql.SQL(
            "UPDATE {turns} SET archived_at = NULL, superseded_by = NULL "
            "WHERE bank_id = %s AND id = ANY(%s) AND archived_at IS NOT NULL RETURNING id"
        ).format(turns=self._turns)
        async with self._connection() as conn, conn.transaction():
            rows = await (await conn.execute(statement, (bank_id, list(turn_ids)))).fetchall()
            restored = [row["id"] for row in rows]
            await self.keywords.index(conn, bank_id, restored)
            await self._sync_turns(conn, bank_id, restored)
            await self._enqueue(conn, bank_id, [(REFLECT, SYNC, TURN, i, {}) for i in restored])
        return len(restored)

    async def forget_turns(self, bank_id: str, turn_ids: Sequence[str], where: TurnFilter | None) -> int:
        params: dict[str, Any] = {"bank_id": bank_id, "ids": list(turn_ids)}
        chosen: list[sql.Composable] = [sql.SQL("t.id = ANY(%(ids)s)")]
        if where is not None:
            chosen.append(sql.SQL("({})").format(and_(turn_conditions("t", where, params))))
        statement = sql.SQL(
            "UPDATE {turns} t SET archived_at = now() WHERE t.bank_id = %(bank_id)s "
            "AND t.archived_at IS NULL AND ({chosen}) RETURNING t.id, t.term_count"
        ).format(turns=self._turns, chosen=sql.SQL(" OR ").join(chosen))
        async with self._connection() as conn, conn.transaction():
            rows = await (await conn.execute(statement, params)).fetchall()
            forgotten = [row["id"] for row in rows]
            await self.keywords.unindex(conn, bank_id, forgotten, sum(row["term_count"] for row in rows))
            if forgotten:
                await self._sync_turns(conn, bank_id, forgotten)
                await self._enqueue(conn, bank_id, [(WORKING, DELETE, "", "", {"ids": forgotten})])
                # Reflection hides the lessons standing only on archived turns (a restore shows them again).
                await self._enqueue(conn, bank_id, [(REFLECT, SYNC, TURN, i, {}) for i in forgotten])
        return len(forgotten)

    async def purge(
        self, bank_id: str, scope: PurgeScope, claim_until: datetime | None = None
    ) -> PurgeResult:
        """Turns (every version of each one chosen), held-back turns, the episodes named or of the session,
        their access statistics and their pending outbox entries all go in one transaction, which also
        leaves tombstones of the ids and queues the deletes for the other layers. An episode that stood on
        purged turns dies with the last of them and otherwise loses them from its provenance (see
        :mod:`hindsight.episodic.lineage`). The copies shared from what it took into other banks go in the
        same transaction (see :mod:`hindsight.episodic.shares`)."""
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id, exclusive=True)
            result = await self._purge_locked(conn, bank_id, scope, claim_until)
            copies = await self._purge_copies(conn, bank_id, scope, result, claim_until)
        return replace(result, copies=copies)

    async def _purge_copies(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        scope: PurgeScope,
        result: PurgeResult,
        claim_until: datetime | None,
    ) -> tuple[PurgedCopies, ...]:
        """Purge, bank by bank, the copies shared from what a purge took (and the copies of those), in its
        transaction; a copy its bank re-stated stays, unlinked."""
        await self.shares.unlink(conn, bank_id, result.ids, scope.whole_bank)  # copies held here
        taken: list[PurgedCopies] = []
        pending = [(bank_id, {*scope.ids, *result.ids}, scope.whole_bank)]
        while pending:
            source, gone, whole = pending.pop(0)
            linked = await self.shares.linked_to(conn, source, gone, whole)
            for target in sorted(linked):
                await self.lineage.lock(conn, target, exclusive=True)
                kept = await self.shares.restated(conn, target, linked[target])
                await self.shares.unlink(conn, target, sorted(kept))
                doomed = tuple(i for i in linked[target] if i not in kept)
                if not doomed:
                    continue
                purged = await self._purge_locked(conn, target, PurgeScope(ids=doomed), claim_until)
                await self.shares.unlink(conn, target, [*doomed, *purged.ids])
                taken.append(PurgedCopies(target, purged.ids, purged.outbox_ids))
                pending.append((target, set(purged.ids), False))
        return tuple(taken)

    async def _purge_locked(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        scope: PurgeScope,
        claim_until: datetime | None,
    ) -> PurgeResult:
        """One bank's purge, in the caller's transaction, under the bank's exclusive lineage lock."""
        params: dict[str, Any] = {"bank_id": bank_id, "ids": list(scope.ids), "session_id": scope.session_id}
        if scope.whole_bank:
            chosen = episode_where = sql.SQL("bank_id = %(bank_id)s")
        elif scope.session_id:
            chosen = sql.SQL("bank_id = %(bank_id)s AND session_id = %(session_id)s")
            episode_where = chosen
        else:
            chosen = sql.SQL("bank_id = %(bank_id)s AND id = ANY(%(ids)s)")
            episode_where = chosen
        if scope.whole_bank:
            rows = await (
                await conn.execute(
                    sql.SQL(
                        "DELETE FROM {turns} WHERE bank_id = %(bank_id)s "
                        "RETURNING id, term_count, archived_at IS NULL AS live"
                    ).format(turns=self._turns),
                    params,
                )
            ).fetchall()
        else:
            rows = await self.lineage.delete_chains(conn, chosen, params)
        turn_ids = [row["id"] for row in rows]
        live = [row for row in rows if row["live"]]
        await self.keywords.unindex(
            conn, bank_id, [row["id"] for row in live], sum(row["term_count"] for row in live)
        )
        # Held-back turns: those named, those of the session, and any version purged above.
        params["turn_ids"] = turn_ids
        params["held_ids"] = sorted({*scope.ids, *turn_ids})
        held_where = (
            chosen
            if scope.whole_bank
            else sql.SQL("bank_id = %(bank_id)s AND (id = ANY(%(held_ids)s) OR {})").format(
                sql.SQL("session_id = %(session_id)s") if scope.session_id else sql.SQL("false")
            )
        )
        held_ids = [
            row["id"]
            for row in await (
                await conn.execute(
                    sql.SQL("SELECT id FROM {table} WHERE {where}").format(
                        table=self.quarantine.table, where=held_where
                    ),
                    params,
                )
            ).fetchall()
        ]
        held = await self.quarantine.purge(conn, bank_id, held_where, params)
        rows = await (
            await conn.execute(
                sql.SQL("DELETE FROM {episodes} WHERE {where} RETURNING id").format(
                    episodes=self._episodes, where=episode_where
                ),
                params,
            )
        ).fetchall()
        episode_ids = [row["id"] for row in rows]
        settled = await self.lineage.settle_episodes(
            conn, bank_id, turn_ids, _episode_from_row, _episode_update_params
        )
        episode_ids += settled.deleted
        purged_turns = sorted({*turn_ids, *held_ids})
        gone = [*purged_turns, *episode_ids]
        await self.lineage.tombstone(conn, bank_id, TURN, purged_turns)
        await self.lineage.tombstone(conn, bank_id, EPISODE, episode_ids)
        await self.dead_letters.forget(conn, bank_id, gone, scope.whole_bank)
        if scope.whole_bank:
            for table in (self._outbox, self._access, self._sessions, self._delivered, self._banks):
                await conn.execute(sql.SQL("DELETE FROM {} WHERE bank_id = %s").format(table), (bank_id,))
        else:
            # Pending work about the purged records would index them again, or hold their content.
            await conn.execute(
                sql.SQL("DELETE FROM {outbox} WHERE bank_id = %s AND record_id = ANY(%s)").format(
                    outbox=self._outbox
                ),
                (bank_id, gone),
            )
            await conn.execute(
                sql.SQL("DELETE FROM {access} WHERE bank_id = %s AND id = ANY(%s)").format(
                    access=self._access
                ),
                (bank_id, gone),
            )
            if scope.session_id:
                await conn.execute(
                    sql.SQL("DELETE FROM {sessions} WHERE bank_id = %s AND session_id = %s").format(
                        sessions=self._sessions
                    ),
                    (bank_id, scope.session_id),
                )
        # First the new text of the episodes that live on (their provenance no longer cites the
        # purged ids, so the deletes after cannot take them): claimed, for the call to deliver.
        synced = await self._enqueue(
            conn, bank_id, [(SEMANTIC, SYNC, EPISODE, i, {}) for i in settled.changed], claim_until
        )
        queued: list[int] = []
        if gone or scope.session_id or scope.whole_bank:
            payload = {
                "ids": [] if scope.whole_bank else gone,
                "session_id": scope.session_id,
                "whole_bank": scope.whole_bank,
            }
            # Working memory takes new turns straight from the edge, not through this outbox, so its
            # delete, delivered late, goes by the purged turns' ids ("by_ids"): by session or bank it
            # would also drop the turns retained there since.
            by_ids = payload | {"ids": purged_turns, "by_ids": True}
            queued = await self._enqueue(
                conn,
                bank_id,
                [
                    (target, DELETE, "", "", by_ids if target == WORKING else payload)
                    for target in (SEMANTIC, WORKING, REFLECT)
                ],
            )
        log.info(
            "purged",
            extra={
                "bank_id": bank_id,
                "turns": len(turn_ids),
                "held": held,
                "episodes": len(episode_ids),
                "episodes_kept": len(settled.changed),
                "outbox": len(queued),
            },
        )
        named = () if scope.whole_bank else tuple(gone)  # a whole bank is deleted by its name, not its ids
        return PurgeResult(len(turn_ids) + held, len(episode_ids), len(queued), named, tuple(synced))

    # ----- episodes ------------------------------------------------------------------------------------
    async def _insert_episode(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        episode: Episode,
        method: str,
        span: tuple[datetime | None, datetime | None],
    ) -> DictRow | None:
        insert = sql.SQL(
            "INSERT INTO {episodes} (bank_id, id, session_id, situation, action, outcome, lesson, task_type, "
            "tools, result, source, trust, tags, importance, source_turn_ids, occurred_at, schema_version, "
            "search_terms, started_at, ended_at, method, dedup_key, agent) VALUES (%(bank_id)s, %(id)s, "
            "%(session_id)s, %(situation)s, %(action)s, %(outcome)s, %(lesson)s, %(task_type)s, %(tools)s, "
            "%(result)s, %(source)s, %(trust)s, %(tags)s, %(importance)s, %(source_turn_ids)s, "
            "coalesce(%(occurred_at)s::timestamptz, now()), %(schema_version)s, %(search_terms)s::tsvector, "
            "%(started_at)s, %(ended_at)s, %(method)s, %(dedup_key)s, %(agent)s) "
            "ON CONFLICT (bank_id, id) DO NOTHING RETURNING {columns}"
        ).format(episodes=self._episodes, columns=_EPISODE_COLUMNS)
        params = {
            **_episode_params(bank_id, episode),
            "started_at": span[0],
            "ended_at": span[1],
            "method": method,
            "dedup_key": dedup_key(episode),
        }
        row = await (await conn.execute(insert, params)).fetchone()
        if row is not None:
            await conn.execute(
                sql.SQL("INSERT INTO {banks} (bank_id) VALUES (%s) ON CONFLICT DO NOTHING").format(
                    banks=self._banks
                ),
                (bank_id,),
            )
            await self._enqueue(conn, bank_id, [(SEMANTIC, SYNC, EPISODE, episode.id, {})])
        return row

    async def write_episode(self, bank_id: str, episode: Episode, method: str = "written") -> Episode:
        select = sql.SQL("SELECT {columns} FROM {episodes} WHERE bank_id = %s AND id = %s").format(
            columns=_EPISODE_COLUMNS, episodes=self._episodes
        )
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            await self.lineage.refuse_purged(conn, bank_id, [episode.id], "episode.id")
            episode = await self._without_purged_sources(conn, bank_id, episode)
            span = (episode.meta.time, episode.meta.time)
            row = await self._insert_episode(conn, bank_id, episode, method, span)
            if row is None:  # the id is already stored: writing it again is a no-op
                row = await (await conn.execute(select, (bank_id, episode.id))).fetchone()
        if row is None:
            raise RuntimeError(f"episode {episode.id!r} neither inserted nor found")
        return _episode_from_row(row)

    async def share(
        self,
        bank_id: str,
        source_bank_id: str,
        ids: Sequence[str],
        copies: Sequence[Copy],
        agent: str,
        claim_until: datetime | None = None,
    ) -> ShareWrite:
        """Under both banks' lineage locks (so that no purge of a source slips in between): the live turns
        and episodes named, copied, and the copies given, each written once and linked to its sources."""
        wanted = list(dict.fromkeys(ids))
        async with self._connection() as conn, conn.transaction():
            for bank in sorted({bank_id, source_bank_id}):  # one lock order for concurrent shares
                await self.lineage.lock(conn, bank)
            turns, episodes = await self._shareable(conn, source_bank_id, wanted)
            unknown = tuple(i for i in wanted if i not in turns and i not in episodes)
            if unknown:
                return ShareWrite(unknown=unknown)
            sources = await self._turn_sources(conn, source_bank_id, episodes.values())
            made = [
                turn_copy(turns[i], source_bank_id, bank_id, agent)
                if i in turns
                else episode_copy(
                    episodes[i],
                    [sources[t] for t in episodes[i].meta.source_turn_ids if t in sources],
                    source_bank_id,
                    bank_id,
                    agent,
                )
                for i in wanted
            ] + list(copies)
            lineage = [i for copy in copies for i in copy.lineage_ids]
            await self.lineage.refuse_purged(conn, source_bank_id, lineage, "ids")
            await self.lineage.refuse_purged(conn, bank_id, [copy.id for copy in made], "ids")
            new_turns = sorted((c.turn for c in made if c.turn is not None), key=lambda turn: turn.id)
            analysed = await analyse_turns([(turn.speaker, turn.text) for turn in new_turns])
            params = [_turn_params(bank_id, t, terms) for t, terms in zip(new_turns, analysed, strict=True)]
            recorded = await self._insert_turns(conn, bank_id, params)
            await self.keywords.index(conn, bank_id, recorded)
            fresh = set(recorded)
            if fresh:
                await self._note_bank_and_sessions(conn, bank_id, [t for t in new_turns if t.id in fresh])
            outbox = await self._sync_turns(conn, bank_id, recorded, claim_until)
            written: list[str] = []
            for copy in made:
                if copy.episode is not None:
                    moment = copy.episode.meta.time
                    span = (moment, moment)
                    if await self._insert_episode(conn, bank_id, copy.episode, WRITTEN, span) is not None:
                        written.append(copy.episode.id)
            if claim_until is not None:
                outbox += await self.shares.claim_syncs(conn, bank_id, written, claim_until)
            await self.shares.link(conn, bank_id, source_bank_id, made, agent)
        shared = tuple(SharedRecord(c.source_id, c.id, c.kind, c.source_kind) for c in made)
        log.info(
            "shared",
            extra={"bank_id": bank_id, "source_bank_id": source_bank_id, "copies": len(made)},
        )
        return ShareWrite(shared, (), len(recorded) + len(written), tuple(outbox))

    async def _shareable(
        self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[str]
    ) -> tuple[dict[str, Turn], dict[str, Episode]]:
        """The live turns and the live episodes (standing on a live turn, or on none) among ``ids``."""
        if not ids:
            return {}, {}
        turn_rows = await (
            await conn.execute(
                sql.SQL(
                    "SELECT {columns} FROM {turns} WHERE bank_id = %s AND id = ANY(%s) "
                    "AND archived_at IS NULL"
                ).format(columns=TURN_COLUMNS, turns=self._turns),
                (bank_id, list(ids)),
            )
        ).fetchall()
        turns = {turn.id: turn for turn in map(turn_from_row, turn_rows)}
        episode_rows = await (
            await conn.execute(
                sql.SQL(
                    "SELECT {columns} FROM {episodes} e WHERE e.bank_id = %(bank_id)s "
                    "AND e.id = ANY(%(ids)s) AND e.archived_at IS NULL AND {live}"
                ).format(
                    columns=_EPISODE_COLUMNS_OF_E,
                    episodes=self._episodes,
                    live=self.lineage.sources_live("e"),
                ),
                {"bank_id": bank_id, "ids": [i for i in ids if i not in turns]},
            )
        ).fetchall()
        episodes = {episode.id: episode for episode in map(_episode_from_row, episode_rows)}
        return turns, episodes

    async def _turn_sources(
        self, conn: AsyncConnection[DictRow], bank_id: str, episodes: Iterable[Episode]
    ) -> dict[str, Source]:
        """Who produced each stored turn the episodes stand on."""
        wanted = sorted({t for episode in episodes for t in episode.meta.source_turn_ids})
        if not wanted:
            return {}
        rows = await (
            await conn.execute(
                sql.SQL("SELECT id, source FROM {turns} WHERE bank_id = %s AND id = ANY(%s)").format(
                    turns=self._turns
                ),
                (bank_id, wanted),
            )
        ).fetchall()
        return {row["id"]: Source(row["source"]) for row in rows}

    async def _without_purged_sources(
        self, conn: AsyncConnection[DictRow], bank_id: str, episode: Episode
    ) -> Episode:
        """The episode citing only the turns that were not purged; refused when it cites only purged ones
        (it would bring back a record of what was erased)."""
        cited = episode.meta.source_turn_ids
        purged = await self.lineage.purged_among(conn, bank_id, cited)
        if not purged:
            return episode
        left = tuple(turn_id for turn_id in cited if turn_id not in purged)
        if not left:
            raise FailedPrecondition(
                f"episode.meta.source_turn_ids: every turn it cites was purged from bank {bank_id!r}"
            )
        return replace(episode, meta=replace(episode.meta, source_turn_ids=left))

    async def list_episodes(
        self, bank_id: str, session_id: str, before: PageKey | None, limit: int
    ) -> list[Episode]:
        conditions = [
            sql.SQL("e.bank_id = %(bank_id)s"),
            sql.SQL("e.archived_at IS NULL"),
            self.lineage.sources_live("e"),
        ]
        if session_id:
            conditions.append(sql.SQL("e.session_id = %(session_id)s"))
        if before is not None:
            conditions.append(sql.SQL("(e.occurred_at, e.id) < (%(at)s, %(id)s)"))
        statement = sql.SQL(
            "SELECT {columns} FROM {episodes} e WHERE {where} ORDER BY e.occurred_at DESC, e.id DESC "
            "LIMIT %(limit)s"
        ).format(
            columns=_EPISODE_COLUMNS_OF_E, episodes=self._episodes, where=sql.SQL(" AND ").join(conditions)
        )
        params = {
            "bank_id": bank_id,
            "session_id": session_id,
            "limit": limit,
            "at": before.occurred_at if before else None,
            "id": before.id if before else None,
        }
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [_episode_from_row(row) for row in rows]

    async def search_episodes(
        self, bank_id: str, lexemes: Sequence[str], where: EpisodeFilter, decay: Decay, limit: int
    ) -> list[ScoredEpisode]:
        """The filters (task type and tools first: they are indexed) narrow the candidates, which are then
        ranked by ``ts_rank`` (normalised by length) times the time decay."""
        params: dict[str, Any] = {"bank_id": bank_id, "limit": limit}
        conditions = [
            sql.SQL("e.bank_id = %(bank_id)s"),
            *_episode_conditions("e", where, params),
            self.lineage.sources_live("e"),
        ]
        factor = decay_factor(sql.Identifier("e", "occurred_at"), decay, params)
        query = tsquery_literal(lexemes)
        if lexemes and query is None:
            return []
        if query is not None:
            params["query"] = query
            conditions.append(sql.SQL("e.search_terms @@ %(query)s::tsquery"))
            rank: sql.Composable = sql.SQL("ts_rank(e.search_terms, %(query)s::tsquery, 1) * {}").format(
                factor
            )
        else:
            rank = factor
        statement = sql.SQL(
            "SELECT {columns}, {rank} AS score FROM {episodes} e WHERE {where} "
            "ORDER BY score DESC, e.occurred_at DESC, e.id LIMIT %(limit)s"
        ).format(columns=_EPISODE_COLUMNS_OF_E, rank=rank, episodes=self._episodes, where=and_(conditions))
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [ScoredEpisode(_episode_from_row(row), float(row["score"])) for row in rows]

    # ----- segmentation --------------------------------------------------------------------------------
    async def unsegmented_turns(self, bank_id: str, session_id: str, limit: int) -> list[Turn]:
        statement = sql.SQL(
            "SELECT {columns} FROM {turns} t LEFT JOIN {sessions} s "
            "  ON s.bank_id = t.bank_id AND s.session_id = t.session_id "
            "WHERE t.bank_id = %(bank_id)s AND t.session_id = %(session_id)s AND t.archived_at IS NULL "
            "  AND (s.segmented_at IS NULL OR (t.occurred_at, t.id) > (s.segmented_at, s.segmented_id)) "
            "ORDER BY t.occurred_at, t.id LIMIT %(limit)s"
        ).format(columns=TURN_COLUMNS_OF_T, turns=self._turns, sessions=self._sessions)
        async with self._connection() as conn:
            rows = await (
                await conn.execute(statement, {"bank_id": bank_id, "session_id": session_id, "limit": limit})
            ).fetchall()
        return [turn_from_row(row) for row in rows]

    async def save_segments(
        self, bank_id: str, session_id: str, write: SegmentWrite, overlap: float
    ) -> list[Episode]:
        """Under a per-session lock, so two calls never make the same episode twice. Each episode first
        looks for a stored one it repeats (same key, or its situation and action overlap at least
        ``overlap``): found, the stored one absorbs it (provenance, tags and tools united, the time span
        widened, counted once more); otherwise it is inserted."""
        lock = sql.SQL("SELECT pg_advisory_xact_lock(hashtext(%s))")
        mark = sql.SQL(
            "INSERT INTO {sessions} AS s (bank_id, session_id, first_at, last_at, segmented_at, "
            "segmented_id) "
            "VALUES (%(bank_id)s, %(session_id)s, %(at)s, %(at)s, %(at)s, %(id)s) "
            "ON CONFLICT (bank_id, session_id) DO UPDATE SET segmented_at = excluded.segmented_at, "
            "segmented_id = excluded.segmented_id "
            "WHERE s.segmented_at IS NULL "
            "OR (s.segmented_at, s.segmented_id) < (excluded.segmented_at, excluded.segmented_id) "
            "RETURNING 1"
        ).format(sessions=self._sessions)
        saved: list[Episode] = []
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            cited = [turn_id for episode in write.episodes for turn_id in episode.meta.source_turn_ids]
            if await self.lineage.purged_among(conn, bank_id, cited):
                return []  # turns were purged since they were read: the next segmentation reads again
            await conn.execute(lock, (f"hindsight.episodic.segment.{bank_id}\x1f{session_id}",))
            watermark = {
                "bank_id": bank_id,
                "session_id": session_id,
                "at": write.through.occurred_at,
                "id": write.through.id,
            }
            moved = await (await conn.execute(mark, watermark)).fetchone()
            if moved is None:
                return []  # another call segmented these turns already
            for episode in write.episodes:
                saved.append(await self._merge_or_insert(conn, bank_id, episode, write.method, overlap))
        return saved

    async def _merge_or_insert(
        self, conn: AsyncConnection[DictRow], bank_id: str, episode: Episode, method: str, overlap: float
    ) -> Episode:
        key = dedup_key(episode)
        terms = dedup_terms(episode)
        query = tsquery_literal(sorted(terms))
        candidates = sql.SQL(
            "SELECT {columns}, dedup_key FROM {episodes} WHERE bank_id = %(bank_id)s AND archived_at IS NULL "
            "AND (dedup_key = %(key)s OR (%(query)s::tsquery IS NOT NULL AND search_terms @@ "
            "%(query)s::tsquery)) "
            "ORDER BY (dedup_key = %(key)s) DESC, occurred_at DESC LIMIT 20 FOR UPDATE"
        ).format(columns=_EPISODE_COLUMNS, episodes=self._episodes)
        rows = await (
            await conn.execute(candidates, {"bank_id": bank_id, "key": key, "query": query})
        ).fetchall()
        for row in rows:
            stored = _episode_from_row(row)
            if row["dedup_key"] == key or jaccard(terms, dedup_terms(stored)) >= overlap:
                return await self._absorb(conn, bank_id, stored, episode)
        span = (episode.meta.time, episode.meta.time)
        inserted = await self._insert_episode(conn, bank_id, episode, method, span)
        if inserted is None:  # the same segment was stored before (its id derives from its first turn)
            select = sql.SQL("SELECT {columns} FROM {episodes} WHERE bank_id = %s AND id = %s").format(
                columns=_EPISODE_COLUMNS, episodes=self._episodes
            )
            inserted = await (await conn.execute(select, (bank_id, episode.id))).fetchone()
            if inserted is None:
                raise RuntimeError(f"episode {episode.id!r} neither inserted nor found")
        return _episode_from_row(inserted)

    async def _absorb(
        self, conn: AsyncConnection[DictRow], bank_id: str, stored: Episode, new: Episode
    ) -> Episode:
        merged_turns = tuple(dict.fromkeys((*stored.meta.source_turn_ids, *new.meta.source_turn_ids)))
        times = [t for t in (stored.meta.time, new.meta.time) if t is not None]
        merged = Episode(
            id=stored.id,
            session_id=stored.session_id,
            situation=stored.situation,
            action=stored.action,
            outcome=new.outcome or stored.outcome,
            lesson=new.lesson or stored.lesson,
            task_type=stored.task_type or new.task_type,
            tools=tuple(dict.fromkeys((*stored.tools, *new.tools))),
            result=new.result if new.result is not Outcome.UNSPECIFIED else stored.result,
            meta=RecordMeta(
                source_turn_ids=merged_turns,
                source=stored.meta.source,
                trust=min(stored.meta.trust, new.meta.trust),
                time=max(times) if times else None,
                tags=tuple(dict.fromkeys((*stored.meta.tags, *new.meta.tags))),
                importance=max(stored.meta.importance, new.meta.importance),
                schema_version=stored.meta.schema_version,
                agent=stored.meta.agent,
            ),
            recorded_at=stored.recorded_at,
        )
        update = sql.SQL(
            "UPDATE {episodes} SET outcome = %(outcome)s, lesson = %(lesson)s, task_type = %(task_type)s, "
            "tools = %(tools)s, result = %(result)s, trust = %(trust)s, tags = %(tags)s, "
            "importance = %(importance)s, source_turn_ids = %(source_turn_ids)s, "
            "occurred_at = coalesce(%(occurred_at)s::timestamptz, occurred_at), "
            "search_terms = %(search_terms)s::tsvector, "
            "ended_at = greatest(ended_at, %(occurred_at)s::timestamptz), "
            "merged_count = merged_count + 1 WHERE bank_id = %(bank_id)s AND id = %(id)s RETURNING {columns}"
        ).format(episodes=self._episodes, columns=_EPISODE_COLUMNS)
        row = await (await conn.execute(update, _episode_params(bank_id, merged))).fetchone()
        if row is None:
            raise RuntimeError(f"episode {stored.id!r} vanished while merging")
        await self._enqueue(conn, bank_id, [(SEMANTIC, SYNC, EPISODE, stored.id, {})])
        log.info(
            "merged a repeated episode",
            extra={"bank_id": bank_id, "episode_id": stored.id, "into_from": new.id},
        )
        return _episode_from_row(row)

    # ----- access statistics ---------------------------------------------------------------------------
    async def add_access(self, hits: Sequence[AccessHit], gain: float, decay_per_day: float) -> None:
        """Freshness is kept as (value, as of): a hit first decays the value to the hit time, then adds
        ``gain`` (capped at 1). A first hit starts from ``gain``."""
        if not hits:
            return
        statement = sql.SQL(
            "INSERT INTO {access} AS a (bank_id, layer, id, hit_count, last_hit, freshness, freshness_at) "
            "SELECT u.bank_id, u.layer, u.id, u.hits, u.last_hit, least(1.0, %(gain)s * u.hits), u.last_hit "
            "FROM unnest(%(banks)s::text[], %(layers)s::text[], %(ids)s::text[], %(hits)s::bigint[], "
            "%(times)s::timestamptz[]) AS u(bank_id, layer, id, hits, last_hit) "
            "ON CONFLICT (bank_id, layer, id) DO UPDATE SET hit_count = a.hit_count + excluded.hit_count, "
            "last_hit = greatest(a.last_hit, excluded.last_hit), "
            "freshness = least(1.0, greatest(0.0, a.freshness - %(decay)s * greatest(0.0, "
            "  extract(epoch FROM (excluded.last_hit - a.freshness_at)) / 86400.0)) "
            "  + %(gain)s * excluded.hit_count), "
            "freshness_at = greatest(a.freshness_at, excluded.last_hit)"
        ).format(access=self._access)
        ordered = sorted(
            hits, key=lambda hit: (hit.bank_id, hit.layer, hit.id)
        )  # one lock order: no deadlocks
        params = {
            "gain": gain,
            "decay": decay_per_day,
            "banks": [hit.bank_id for hit in ordered],
            "layers": [hit.layer for hit in ordered],
            "ids": [hit.id for hit in ordered],
            "hits": [hit.hits for hit in ordered],
            "times": [hit.last_hit for hit in ordered],
        }
        async with self._connection() as conn:
            await conn.execute(statement, params)

    async def access_stats(self, bank_id: str, ids: Sequence[str]) -> list[StoredAccess]:
        statement = sql.SQL(
            "SELECT id, layer, hit_count, last_hit, freshness, freshness_at FROM {access} "
            "WHERE bank_id = %s AND id = ANY(%s) ORDER BY id, layer"
        ).format(access=self._access)
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, (bank_id, list(ids)))).fetchall()
        return [
            StoredAccess(
                row["id"],
                row["layer"],
                int(row["hit_count"]),
                row["last_hit"],
                float(row["freshness"]),
                row["freshness_at"],
            )
            for row in rows
        ]

    # ----- outbox delivery -----------------------------------------------------------------------------
    async def queue_working_turns(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        async with self._connection() as conn:
            queued = await self._enqueue(
                conn, bank_id, [(WORKING, SYNC, TURN, turn_id, {}) for turn_id in turn_ids]
            )
        return len(queued)

    async def claim_due(self, now: datetime, lease_until: datetime, limit: int) -> list[OutboxEntry]:
        """An entry is due when its time has come and no older entry of its bank and target holds it back.
        Each entry backs off on its own, so one failing entry does not hold back the others, except where
        order matters: nothing passes a delete (written later, it may be about the same records), a delete
        passes nothing (it waits for every older entry, claimed or backing off), and a sync waits for an
        older sync of the same record. Claims are serialised by an advisory lock (they are short), so two
        replicas never split one bank's queue."""
        statement = sql.SQL(
            "WITH due AS (SELECT o.id FROM {outbox} o WHERE o.next_attempt_at <= %(now)s "
            "  AND NOT EXISTS (SELECT 1 FROM {outbox} e WHERE e.bank_id = o.bank_id AND e.target = o.target "
            "    AND e.id < o.id AND (e.operation = %(delete)s OR (e.next_attempt_at > %(now)s "
            "      AND (o.operation = %(delete)s OR (o.record_id <> '' AND e.record_id = o.record_id))))) "
            "  ORDER BY o.id LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
            "UPDATE {outbox} o SET next_attempt_at = %(lease)s FROM due WHERE o.id = due.id RETURNING o.*"
        ).format(outbox=self._outbox)
        async with self._connection() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"hindsight.outbox.{self._schema}",)
            )
            rows = await (
                await conn.execute(
                    statement, {"now": now, "lease": lease_until, "limit": limit, "delete": DELETE}
                )
            ).fetchall()
        return sorted((_entry_from_row(row) for row in rows), key=lambda entry: entry.id)

    async def waiting_before(self, entries: Sequence[OutboxEntry]) -> bool:
        """Whether older work of the same bank and target waits that these must not overtake: a delete, an
        entry failing because the target is down or slow (these would fail too), or a sync of one of the
        same records. (A sync of other records is no reason to wait, nor one the target refused: a sync
        sends the state of its record at delivery, whatever the order.)"""
        if not entries:
            return False
        statement = sql.SQL(
            "SELECT 1 FROM {outbox} e "
            "JOIN unnest(%(banks)s::text[], %(targets)s::text[], %(firsts)s::bigint[]) AS g(bank_id, "
            "target, id) "
            "ON e.bank_id = g.bank_id AND e.target = g.target AND e.id < g.id "
            "WHERE e.operation <> %(sync)s OR (e.attempts > 0 AND e.failure <> %(refused)s) "
            "OR e.record_id = ANY(%(records)s) LIMIT 1"
        ).format(outbox=self._outbox)
        firsts: dict[tuple[str, str], int] = {}
        for entry in sorted(entries, key=lambda item: item.id):
            firsts.setdefault((entry.bank_id, entry.target), entry.id)
        params = {
            "banks": [key[0] for key in firsts],
            "targets": [key[1] for key in firsts],
            "firsts": list(firsts.values()),
            "sync": SYNC,
            "refused": REFUSED,
            "records": [entry.record_id for entry in entries if entry.record_id],
        }
        async with self._connection() as conn:
            return await (await conn.execute(statement, params)).fetchone() is not None

    async def release(self, entries: Sequence[OutboxEntry], at: datetime) -> None:
        """Hand claimed entries back to the background deliverer, due at ``at`` (attempts unchanged)."""
        if not entries:
            return
        statement = sql.SQL("UPDATE {outbox} SET next_attempt_at = %s WHERE id = ANY(%s)").format(
            outbox=self._outbox
        )
        async with self._connection() as conn:
            await conn.execute(statement, (at, [entry.id for entry in entries]))

    async def claimed(self, ids: Sequence[int]) -> list[OutboxEntry]:
        statement = sql.SQL("SELECT * FROM {outbox} WHERE id = ANY(%s) ORDER BY id").format(
            outbox=self._outbox
        )
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, (list(ids),))).fetchall()
        return [_entry_from_row(row) for row in rows]

    async def sync_state(
        self, bank_id: str, turn_ids: Sequence[str], episode_ids: Sequence[str]
    ) -> SyncState:
        turns: dict[str, Turn] = {}
        episodes: dict[str, Episode] = {}
        async with self._connection() as conn:
            if turn_ids:
                statement = sql.SQL(
                    "SELECT {columns} FROM {turns} WHERE bank_id = %s AND id = ANY(%s) AND archived_at IS "
                    "NULL"
                ).format(columns=TURN_COLUMNS, turns=self._turns)
                for row in await (await conn.execute(statement, (bank_id, list(turn_ids)))).fetchall():
                    turns[row["id"]] = turn_from_row(row)
            if episode_ids:
                statement = sql.SQL(
                    "SELECT {columns} FROM {episodes} WHERE bank_id = %s AND id = ANY(%s) AND archived_at "
                    "IS NULL"
                ).format(columns=_EPISODE_COLUMNS, episodes=self._episodes)
                for row in await (await conn.execute(statement, (bank_id, list(episode_ids)))).fetchall():
                    episodes[row["id"]] = _episode_from_row(row)
        return SyncState(turns, episodes)

    async def delivered(self, entries: Sequence[OutboxEntry]) -> None:
        if not entries:
            return
        delete = sql.SQL("DELETE FROM {outbox} WHERE id = ANY(%s) RETURNING id").format(outbox=self._outbox)
        count = sql.SQL(
            "INSERT INTO {delivered} AS d (bank_id, target, count) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[]) "
            "ON CONFLICT (bank_id, target) DO UPDATE SET count = d.count + excluded.count"
        ).format(delivered=self._delivered)
        async with self._connection() as conn, conn.transaction():
            rows = await (await conn.execute(delete, ([entry.id for entry in entries],))).fetchall()
            # Count only what this call removed (a purge may have deleted an entry meanwhile), and not the
            # deletes of a whole bank: the bank is gone, its counts with it.
            removed = {int(row["id"]) for row in rows}
            counts = Counter(
                (entry.bank_id, entry.target)
                for entry in entries
                if entry.id in removed and not entry.payload.get("whole_bank")
            )
            if counts:
                keys = sorted(counts)
                await conn.execute(
                    count, ([k[0] for k in keys], [k[1] for k in keys], [counts[k] for k in keys])
                )

    async def failed(
        self,
        entries: Sequence[OutboxEntry],
        error: str,
        retry_at: Sequence[datetime],
        failure: str = TRANSIENT,
    ) -> None:
        if not entries:
            return
        statement = sql.SQL(
            "UPDATE {outbox} o SET attempts = o.attempts + 1, last_error = %s, failure = %s, "
            "next_attempt_at = u.at FROM unnest(%s::bigint[], %s::timestamptz[]) AS u(id, at) "
            "WHERE o.id = u.id"
        ).format(outbox=self._outbox)
        async with self._connection() as conn:
            await conn.execute(
                statement, (error[:2000], failure, [entry.id for entry in entries], list(retry_at))
            )

    async def next_due(self, after: datetime | None = None) -> datetime | None:
        # Only times still to come: an entry due already but held back by an older one is freed by that
        # one's delivery or its own next attempt, never by waiting for its own time (that would spin).
        statement = sql.SQL(
            "SELECT min(next_attempt_at) AS at FROM {outbox} WHERE %(after)s::timestamptz IS NULL "
            "OR next_attempt_at > %(after)s"
        ).format(outbox=self._outbox)
        async with self._connection() as conn:
            row = await (await conn.execute(statement, {"after": after})).fetchone()
        return None if row is None else row["at"]

    async def outbox_counts(self, bank_id: str) -> OutboxCounts:
        where = sql.SQL("WHERE bank_id = %(bank_id)s") if bank_id else sql.SQL("")
        pending = sql.SQL("SELECT target, count(*) AS n FROM {outbox} {where} GROUP BY target").format(
            outbox=self._outbox, where=where
        )
        delivered = sql.SQL("SELECT target, sum(count) AS n FROM {delivered} {where} GROUP BY target").format(
            delivered=self._delivered, where=where
        )
        async with self._connection() as conn:
            waiting = await (await conn.execute(pending, {"bank_id": bank_id})).fetchall()
            done = await (await conn.execute(delivered, {"bank_id": bank_id})).fetchall()
        return OutboxCounts(
            {row["target"]: int(row["n"]) for row in waiting},
            {row["target"]: int(row["n"]) for row in done},
            await self.dead_letters.counts(bank_id),
        )

    async def ping(self) -> bool:
        try:
            async with self._pool.connection(timeout=2.0) as conn:
                await conn.execute("SELECT 1")
            return True
        except Exception:
            log.warning("episodic store did not answer", exc_info=True)
            return False

    async def close(self) -> None:
        await self.keywords.statistics_refreshed()  # a refresh under way ends on an open pool
        await self._pool.close()


def retry_times(
    entries: Sequence[OutboxEntry], now: datetime, base: float, cap: float, jitter: Sequence[float]
) -> list[datetime]:
    """When each failed entry is tried again: ``base * 2 ** attempts`` seconds (capped), times a jitter."""
    return [
        now + timedelta(seconds=min(cap, base * 2 ** min(entry.attempts, 30)) * factor)
        for entry, factor in zip(entries, jitter, strict=True)
    ]
