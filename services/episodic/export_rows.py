"""A bank's episodic records whole, for ``hindsight export`` and ``hindsight import``.

The ordinary reads leave out what a restore needs (archived turns' archive times and supersede links,
archived episodes and their life cycle), and the ordinary writes stamp their own times and audit entries.
These read and write the rows as they are, inside the record store's transactions and with its helpers
(the outbox, the keyword index, banks and sessions), so an imported turn is indexed like a recorded one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg import sql
from psycopg.rows import DictRow

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.episodic.episode_rows import EPISODE_COLUMN_NAMES, dedup_key, episode_from_row, episode_params
from hindsight.episodic.keyword import analyse_turns
from hindsight.episodic.models import Episode
from hindsight.episodic.outbox_entries import EPISODE, REFLECT, SEMANTIC, SYNC, TURN
from hindsight.episodic.paging import PageKey, decode_page_token, encode_page_token
from hindsight.episodic.quarantine import HeldTurn, Screening
from hindsight.episodic.rows import TURN_COLUMN_NAMES, turn_from_row, turn_params
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import Turn, from_timestamp, to_timestamp

if TYPE_CHECKING:
    from hindsight.episodic.store import PostgresEpisodicStore

TURNS_PAGE = "export-turns"
EPISODES_PAGE = "export-episodes"
_TURN_COLUMNS = [*TURN_COLUMN_NAMES, "archived_at", "superseded_by"]
_EPISODE_EXTRA = ("archived_at", "method", "started_at", "ended_at", "merged_count")
METHODS = frozenset({"written", "similarity", "llm"})


@dataclass(frozen=True)
class ExportedTurn:
    """A turn and its life cycle: when it was archived, and the version that superseded it."""

    turn: Turn
    archived_at: datetime | None = None
    superseded_by: str = ""

    def to_pb(self) -> episodic_pb2.ExportedTurn:
        return episodic_pb2.ExportedTurn(
            turn=self.turn.to_pb(),
            archived_at=to_timestamp(self.archived_at),
            superseded_by=self.superseded_by,
        )

    @classmethod
    def from_pb(cls, message: episodic_pb2.ExportedTurn, field_name: str) -> ExportedTurn:
        if not message.turn.id:
            raise InvalidArgument(f"{field_name}.turn.id", "is required")
        archived = from_timestamp(message.archived_at) if message.HasField("archived_at") else None
        if message.superseded_by and archived is None:
            raise InvalidArgument(f"{field_name}.archived_at", "is required for a superseded turn")
        return cls(Turn.from_pb(message.turn, f"{field_name}.turn"), archived, message.superseded_by)


@dataclass(frozen=True)
class ExportedEpisode:
    """An episode and its life cycle (recorded_at travels on the episode)."""

    episode: Episode
    archived_at: datetime | None = None
    method: str = "written"
    started_at: datetime | None = None
    ended_at: datetime | None = None
    merged_count: int = 1

    def to_pb(self) -> episodic_pb2.ExportedEpisode:
        return episodic_pb2.ExportedEpisode(
            episode=self.episode.to_pb(),
            archived_at=to_timestamp(self.archived_at),
            method=self.method,
            started_at=to_timestamp(self.started_at),
            ended_at=to_timestamp(self.ended_at),
            merged_count=self.merged_count,
        )

    @classmethod
    def from_pb(cls, message: episodic_pb2.ExportedEpisode, field_name: str) -> ExportedEpisode:
        if not message.episode.id:
            raise InvalidArgument(f"{field_name}.episode.id", "is required")
        method = message.method or "written"
        if method not in METHODS:
            raise InvalidArgument(f"{field_name}.method", f"must be one of {', '.join(sorted(METHODS))}")

        def stamp(name: str) -> datetime | None:
            return from_timestamp(getattr(message, name)) if message.HasField(name) else None

        return cls(
            Episode.from_pb(message.episode, f"{field_name}.episode"),
            stamp("archived_at"),
            method,
            stamp("started_at"),
            stamp("ended_at"),
            max(1, message.merged_count),
        )


def held_from_pb(message: common_pb2.QuarantinedTurn, field_name: str) -> HeldTurn:
    """A review-queue item as exported."""
    if not message.turn.id:
        raise InvalidArgument(f"{field_name}.turn.id", "is required")
    if message.status not in ("pending", "approved", "rejected"):
        raise InvalidArgument(f"{field_name}.status", "must be pending, approved or rejected")
    quarantined_at = from_timestamp(message.quarantined_at)  # None too for a set zero time (1970-01-01)
    if quarantined_at is None:
        raise InvalidArgument(f"{field_name}.quarantined_at", "is required")
    return HeldTurn(
        turn=Turn.from_pb(message.turn, f"{field_name}.turn"),
        screening=Screening.from_pb(message.screening, f"{field_name}.screening"),
        quarantined_at=quarantined_at,
        status=message.status,
        reviewer=message.reviewer,
        reviewed_at=from_timestamp(message.reviewed_at) if message.HasField("reviewed_at") else None,
    )


@dataclass(frozen=True)
class Imported:
    """How many records an import stored, and how many it found stored already."""

    imported: int
    duplicates: int


class EpisodicExport:
    """Whole-row reads and writes of one :class:`PostgresEpisodicStore`."""

    def __init__(self, store: PostgresEpisodicStore) -> None:
        self._store = store
        schema = store._schema
        self._turns = sql.Identifier(schema, "turns")
        self._episodes = sql.Identifier(schema, "episodes")
        self._held = sql.Identifier(schema, "quarantine")
        self._chains = sql.SQL(
            "WITH RECURSIVE chain (id, root, next) AS ("
            "  SELECT t.id, t.id, t.superseded_by FROM {turns} t WHERE t.bank_id = %(bank)s "
            "  AND t.superseded_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {turns} p "
            "    WHERE p.bank_id = t.bank_id AND p.superseded_by = t.id) "
            "  UNION ALL SELECT n.id, c.root, n.superseded_by FROM chain c "
            "  JOIN {turns} n ON n.bank_id = %(bank)s AND n.id = c.next) "
            "UPDATE {turns} t SET chain_id = chain.root FROM chain WHERE t.bank_id = %(bank)s "
            "AND t.id = chain.id AND chain.id <> chain.root AND t.chain_id IS DISTINCT FROM chain.root"
        ).format(turns=self._turns)
        """Names the first version of its chain on every later version of the bank's turns (a purge of any
        version follows the chain): imported links are set first, their chains after."""

    async def _page(
        self,
        kind: str,
        table: sql.Identifier,
        columns: Sequence[str],
        bank_id: str,
        page_size: int,
        page_token: str,
    ) -> tuple[list[DictRow], str]:
        """A page of ``table``'s rows of the bank, archived ones too, in (occurred_at, id) order; with the
        next page's token: the one keyset walk of the turns and the episodes."""
        after = decode_page_token(kind, page_token)
        statement = sql.SQL(
            "SELECT {columns} FROM {table} WHERE bank_id = %(bank)s "
            "AND (%(at)s::timestamptz IS NULL OR (occurred_at, id) > (%(at)s, %(id)s)) "
            "ORDER BY occurred_at, id LIMIT %(limit)s"
        ).format(columns=sql.SQL(", ").join(map(sql.Identifier, columns)), table=table)
        params = {
            "bank": bank_id,
            "at": after.occurred_at if after else None,
            "id": after.id if after else "",
            "limit": page_size,
        }
        async with self._store._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        following = ""
        if len(rows) == page_size:
            following = encode_page_token(kind, PageKey(rows[-1]["occurred_at"], rows[-1]["id"]))
        return rows, following

    # ----- turns ---------------------------------------------------------------------------------------
    async def turns(self, bank_id: str, page_size: int, page_token: str) -> tuple[list[ExportedTurn], str]:
        """A page of every turn, archived ones too, in time order; with the next page's token."""
        rows, following = await self._page(
            TURNS_PAGE, self._turns, _TURN_COLUMNS, bank_id, page_size, page_token
        )
        items = [ExportedTurn(turn_from_row(r), r["archived_at"], r["superseded_by"] or "") for r in rows]
        return items, following

    async def archive_imported(self, bank_id: str, items: Sequence[ExportedTurn]) -> Imported:
        """Give live turns the archive times and supersede links of ``items`` (those that carry one): an
        import's last step, once the semantic layer has indexed them as the source once had. Unindexed from
        keyword search and queued for the other layers in the same transaction."""
        store = self._store
        chosen = sorted((item for item in items if item.archived_at is not None), key=lambda i: i.turn.id)
        statement = sql.SQL(
            "UPDATE {turns} t SET archived_at = u.at, superseded_by = nullif(u.by, '') "
            "FROM unnest(%(ids)s::text[], %(ats)s::timestamptz[], %(bys)s::text[]) AS u(id, at, by) "
            "WHERE t.bank_id = %(bank)s AND t.id = u.id AND t.archived_at IS NULL "
            "RETURNING t.id, t.term_count"
        ).format(turns=self._turns)
        params = {
            "bank": bank_id,
            "ids": [item.turn.id for item in chosen],
            "ats": [item.archived_at for item in chosen],
            "bys": [item.superseded_by for item in chosen],
        }
        async with store._connection() as conn, conn.transaction():
            await store.lineage.lock(conn, bank_id)
            rows = await (await conn.execute(statement, params)).fetchall()
            archived = [row["id"] for row in rows]
            await store.keywords.unindex(conn, bank_id, archived, sum(row["term_count"] for row in rows))
            if any(item.superseded_by for item in chosen):
                await conn.execute(self._chains, {"bank": bank_id})
            await store._sync_turns(conn, bank_id, archived)
            # As a forget tells reflection (an update does not): lessons standing only on them are hidden.
            links = {item.turn.id: item.superseded_by for item in chosen}
            forgotten = [turn_id for turn_id in archived if not links.get(turn_id)]
            await store._enqueue(conn, bank_id, [(REFLECT, SYNC, TURN, i, {}) for i in forgotten])
        return Imported(len(archived), len(items) - len(archived))

    async def import_turns(self, bank_id: str, items: Sequence[ExportedTurn]) -> Imported:
        """Insert turns as they are (a stored id is skipped); the live ones are keyword-indexed and queued
        for the other layers, in the same transaction."""
        store = self._store
        ordered = sorted(items, key=lambda item: item.turn.id)  # the lock order of concurrent writers
        analysed = await analyse_turns([(item.turn.speaker, item.turn.text) for item in ordered])
        statement = sql.SQL(
            "INSERT INTO {turns} (bank_id, id, session_id, role, speaker, text, source, trust, occurred_at, "
            "tags, importance, source_turn_ids, schema_version, search_terms, term_count, analyzer, "
            "archived_at, superseded_by, agent) "
            "VALUES (%(bank_id)s, %(id)s, %(session_id)s, %(role)s, %(speaker)s, %(text)s, %(source)s, "
            "%(trust)s, coalesce(%(occurred_at)s::timestamptz, now()), %(tags)s, %(importance)s, "
            "%(source_turn_ids)s, %(schema_version)s, %(search_terms)s::tsvector, %(term_count)s, "
            "%(analyzer)s, %(archived_at)s, nullif(%(superseded_by)s, ''), %(agent)s) "
            "ON CONFLICT (bank_id, id) DO NOTHING RETURNING id"
        ).format(turns=self._turns)
        inserted: list[str] = []
        async with store._connection() as conn, conn.transaction():
            await store.lineage.lock(conn, bank_id)
            purged = await store.lineage.purged_among(conn, bank_id, [item.turn.id for item in ordered])
            for item, terms in zip(ordered, analysed, strict=True):
                if item.turn.id in purged:  # erased here: an import does not bring it back
                    continue
                params = {
                    **turn_params(bank_id, item.turn, terms),
                    "archived_at": item.archived_at,
                    "superseded_by": item.superseded_by,
                }
                row = await (await conn.execute(statement, params)).fetchone()
                if row is not None:
                    inserted.append(row["id"])
            fresh = set(inserted)
            if any(item.superseded_by for item in ordered if item.turn.id in fresh):
                await conn.execute(self._chains, {"bank": bank_id})
            live = [item.turn.id for item in ordered if item.turn.id in fresh and item.archived_at is None]
            await store.keywords.index(conn, bank_id, live)
            if fresh:
                await store._note_bank_and_sessions(
                    conn, bank_id, [item.turn for item in ordered if item.turn.id in fresh]
                )
            await store._sync_turns(conn, bank_id, live)
        return Imported(len(inserted), len(items) - len(inserted))

    # ----- episodes ------------------------------------------------------------------------------------
    async def episodes(
        self, bank_id: str, page_size: int, page_token: str
    ) -> tuple[list[ExportedEpisode], str]:
        """A page of every episode, archived ones too, in time order; with the next page's token."""
        columns = (*EPISODE_COLUMN_NAMES, *_EPISODE_EXTRA)
        rows, following = await self._page(
            EPISODES_PAGE, self._episodes, columns, bank_id, page_size, page_token
        )
        items = [
            ExportedEpisode(
                episode_from_row(row),
                row["archived_at"],
                row["method"],
                row["started_at"],
                row["ended_at"],
                int(row["merged_count"]),
            )
            for row in rows
        ]
        return items, following

    async def import_episodes(self, bank_id: str, items: Sequence[ExportedEpisode]) -> Imported:
        """Insert episodes as they are (a stored id is skipped); the live ones are queued for indexing."""
        store = self._store
        statement = sql.SQL(
            "INSERT INTO {episodes} (bank_id, id, session_id, situation, action, outcome, lesson, task_type, "
            "tools, result, source, trust, tags, importance, source_turn_ids, occurred_at, schema_version, "
            "search_terms, started_at, ended_at, method, dedup_key, merged_count, archived_at, recorded_at, "
            "agent) "
            "VALUES (%(bank_id)s, %(id)s, %(session_id)s, %(situation)s, %(action)s, %(outcome)s, "
            "%(lesson)s, %(task_type)s, %(tools)s, %(result)s, %(source)s, %(trust)s, %(tags)s, "
            "%(importance)s, %(source_turn_ids)s, coalesce(%(occurred_at)s::timestamptz, now()), "
            "%(schema_version)s, %(search_terms)s::tsvector, %(started_at)s, %(ended_at)s, %(method)s, "
            "%(dedup_key)s, %(merged_count)s, %(archived_at)s, "
            "coalesce(%(recorded_at)s::timestamptz, now()), %(agent)s) "
            "ON CONFLICT (bank_id, id) DO NOTHING RETURNING id"
        ).format(episodes=self._episodes)
        live: list[str] = []
        inserted = 0
        async with store._connection() as conn, conn.transaction():
            await store.lineage.lock(conn, bank_id)
            purged = await store.lineage.purged_among(conn, bank_id, [item.episode.id for item in items])
            for item in sorted(items, key=lambda item: item.episode.id):
                if item.episode.id in purged:
                    continue
                params: dict[str, Any] = {
                    **episode_params(bank_id, item.episode),
                    "started_at": item.started_at,
                    "ended_at": item.ended_at,
                    "method": item.method,
                    "dedup_key": dedup_key(item.episode),
                    "merged_count": item.merged_count,
                    "archived_at": item.archived_at,
                    "recorded_at": item.episode.recorded_at,
                }
                row = await (await conn.execute(statement, params)).fetchone()
                if row is None:
                    continue
                inserted += 1
                if item.archived_at is None:
                    live.append(item.episode.id)
            if inserted:
                await store._note_bank(conn, bank_id)
            await store._enqueue(conn, bank_id, [(SEMANTIC, SYNC, EPISODE, i, {}) for i in live])
        return Imported(inserted, len(items) - inserted)

    # ----- the review queue ----------------------------------------------------------------------------
    async def import_held(self, bank_id: str, items: Sequence[HeldTurn]) -> Imported:
        """Insert review-queue items as they are (a queued id is skipped), without audit entries: the
        export carries the audit log, and this is not a new decision."""
        ordered = sorted(items, key=lambda item: item.turn.id)
        analysed = await analyse_turns([(item.turn.speaker, item.turn.text) for item in ordered])
        statement = sql.SQL(
            "INSERT INTO {held} (bank_id, id, session_id, role, speaker, text, source, trust, occurred_at, "
            "tags, importance, source_turn_ids, schema_version, search_terms, kind, reason, action, "
            "quarantined_at, status, reviewer, reviewed_at, agent) "
            "VALUES (%(bank_id)s, %(id)s, %(session_id)s, %(role)s, %(speaker)s, %(text)s, %(source)s, "
            "%(trust)s, coalesce(%(occurred_at)s::timestamptz, now()), %(tags)s, %(importance)s, "
            "%(source_turn_ids)s, %(schema_version)s, %(search_terms)s::tsvector, %(kind)s, %(reason)s, "
            "%(action)s, %(quarantined_at)s, %(status)s, %(reviewer)s, %(reviewed_at)s, %(agent)s) "
            "ON CONFLICT (bank_id, id) DO NOTHING RETURNING id"
        ).format(held=self._held)
        inserted = 0
        async with self._store._connection() as conn, conn.transaction():
            await self._store.lineage.lock(conn, bank_id)
            purged = await self._store.lineage.purged_among(conn, bank_id, [item.turn.id for item in ordered])
            for item, terms in zip(ordered, analysed, strict=True):
                if item.turn.id in purged:
                    continue
                params = {
                    **turn_params(bank_id, item.turn, terms),
                    "kind": item.screening.kind,
                    "reason": item.screening.reason,
                    "action": item.screening.action,
                    "quarantined_at": item.quarantined_at,
                    "status": item.status,
                    "reviewer": item.reviewer,
                    "reviewed_at": item.reviewed_at,
                }
                if await (await conn.execute(statement, params)).fetchone() is not None:
                    inserted += 1
            if inserted:
                await self._store._note_bank(conn, bank_id)
        return Imported(inserted, len(items) - inserted)
