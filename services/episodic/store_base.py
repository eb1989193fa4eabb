"""What every family of the episodic store shares: the pool, the table names, the companion stores, and
the writes each family makes inside its own transactions (outbox entries, banks and sessions, new turns
and episodes).

The families (:mod:`~hindsight.episodic.turn_records`, :mod:`~hindsight.episodic.episode_records`,
:mod:`~hindsight.episodic.sharing`, :mod:`~hindsight.episodic.purge`,
:mod:`~hindsight.episodic.outbox_queue`, :mod:`~hindsight.episodic.access_stats`) are mixins on this base,
assembled into the one :class:`~hindsight.episodic.store.PostgresEpisodicStore`. Mixins rather than
composed parts: a record, a review, a share and a purge each write turns, episodes, outbox entries and
lineage in ONE transaction, so the families call each other's writers on the caller's connection; as
mixins they share these helpers and the pool directly, and callers keep one class with the same methods
and no forwarding layer.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from hindsight.episodic.dead_letters import DeadLetterStore
from hindsight.episodic.episode_rows import EPISODE_COLUMNS, dedup_key, episode_params
from hindsight.episodic.keyword import KeywordStore
from hindsight.episodic.lineage import Lineage
from hindsight.episodic.models import Episode
from hindsight.episodic.outbox_entries import EPISODE, REFLECT, SEMANTIC, SYNC, TURN, WORKING
from hindsight.episodic.quarantine import QuarantineStore
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.shares import SharedCopies
from hindsight.episodic.tokens import TokenStore
from hindsight.runtime.database import pool_answers, store_errors
from hindsight.runtime.records import Turn

log = logging.getLogger(__name__)


class StoreBase:
    """The pool, the tables of one schema and the companion stores, with the in-transaction writers."""

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

    # ----- outbox entries, banks and sessions (every writer below runs in the caller's transaction) ----
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

    async def _note_bank(self, conn: AsyncConnection[DictRow], bank_id: str) -> None:
        """Record that the bank holds something (a purge of the whole bank deletes the row)."""
        await conn.execute(
            sql.SQL("INSERT INTO {banks} (bank_id) VALUES (%s) ON CONFLICT DO NOTHING").format(
                banks=self._banks
            ),
            (bank_id,),
        )

    async def _note_bank_and_sessions(
        self, conn: AsyncConnection[DictRow], bank_id: str, turns: Sequence[Turn]
    ) -> None:
        await self._note_bank(conn, bank_id)
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

    # ----- new turns -----------------------------------------------------------------------------------
    async def _insert_turns(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        params: Sequence[dict[str, Any]],
        written: Sequence[str] = (),
    ) -> list[str]:
        """Insert turn rows (ids already stored are skipped); the ids inserted. ``written``: the ids in the
        order the caller wrote them (default: the order of ``params``), which numbers them (``seq``)."""
        if not params:
            return []
        numbers = sql.SQL(
            "SELECT nextval(format('%%I.%%I', %s::text, 'turns_seq')::regclass) AS n "
            "FROM generate_series(1, %s)"
        )
        rows = await (await conn.execute(numbers, (self._schema, len(params)))).fetchall()
        position = {turn_id: i for i, turn_id in enumerate(written or [p["id"] for p in params])}
        by_position = sorted(params, key=lambda p: position.get(p["id"], len(position)))
        seqs = dict(zip((p["id"] for p in by_position), sorted(int(row["n"]) for row in rows), strict=True))
        params = [{**p, "seq": seqs[p["id"]]} for p in params]
        statement = sql.SQL(
            "INSERT INTO {turns} (bank_id, id, session_id, role, speaker, text, source, trust, occurred_at, "
            "tags, importance, source_turn_ids, schema_version, search_terms, term_count, analyzer, agent, "
            "seq) VALUES (%(bank_id)s, %(id)s, %(session_id)s, %(role)s, %(speaker)s, %(text)s, %(source)s, "
            "%(trust)s, coalesce(%(occurred_at)s::timestamptz, now()), %(tags)s, %(importance)s, "
            "%(source_turn_ids)s, %(schema_version)s, %(search_terms)s::tsvector, %(term_count)s, "
            "%(analyzer)s, %(agent)s, %(seq)s) "
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

    # ----- new episodes -------------------------------------------------------------------------------
    async def _insert_episode(
        self, conn: AsyncConnection[DictRow], bank_id: str, episode: Episode, method: str
    ) -> DictRow | None:
        """Insert an episode spanning its own time, note the bank and queue its sync; None when the id is
        stored already."""
        insert = sql.SQL(
            "INSERT INTO {episodes} (bank_id, id, session_id, situation, action, outcome, lesson, task_type, "
            "tools, result, source, trust, tags, importance, source_turn_ids, occurred_at, schema_version, "
            "search_terms, started_at, ended_at, method, dedup_key, agent) VALUES (%(bank_id)s, %(id)s, "
            "%(session_id)s, %(situation)s, %(action)s, %(outcome)s, %(lesson)s, %(task_type)s, %(tools)s, "
            "%(result)s, %(source)s, %(trust)s, %(tags)s, %(importance)s, %(source_turn_ids)s, "
            "coalesce(%(occurred_at)s::timestamptz, now()), %(schema_version)s, %(search_terms)s::tsvector, "
            "%(started_at)s, %(ended_at)s, %(method)s, %(dedup_key)s, %(agent)s) "
            "ON CONFLICT (bank_id, id) DO NOTHING RETURNING {columns}"
        ).format(episodes=self._episodes, columns=EPISODE_COLUMNS)
        params = {
            **episode_params(bank_id, episode),
            "started_at": episode.meta.time,
            "ended_at": episode.meta.time,
            "method": method,
            "dedup_key": dedup_key(episode),
        }
        row = await (await conn.execute(insert, params)).fetchone()
        if row is not None:
            await self._note_bank(conn, bank_id)
            await self._enqueue(conn, bank_id, [(SEMANTIC, SYNC, EPISODE, episode.id, {})])
        return row

    # ----- the pool -----------------------------------------------------------------------------------
    async def ping(self) -> bool:
        return await pool_answers(self._pool, log, "episodic store did not answer")

    async def close(self) -> None:
        await self.keywords.statistics_refreshed()  # a refresh under way ends on an open pool
        await self._pool.close()
