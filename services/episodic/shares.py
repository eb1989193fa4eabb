"""Sharing: copies of one bank's records written into another (a team bank), each linked to what it was drawn
from, so that forgetting follows the copy.

A copy is an ordinary turn or episode of the bank it is written to: found, indexed, reflected on and purged
there like any other record, written by the sharing agent. Its id depends only on the source bank, the
record and the target bank, so sharing a record again finds its one copy. Its link (the ``shared_copies``
table: ids, banks and agents, never text) names the source bank and every id there whose purge must take
the copy: the record's own and what it stands on (a turn's or an episode's source turns; a fact's or a
lesson's source turns and episodes, which the edge reads from their layers).

The lineage rule: a purge in the source bank (by ids, a session or the whole bank) purges each copy linked
to what it took, in the same transaction, as the copy's own bank would purge it (every version, and what was
derived from it there, through the outbox), unless that bank re-stated the copy. A copied turn that was
updated in its bank (a newer version of it exists) is the team's own statement now: it stays, with its
history, and its link is dropped. Whatever else the team bank holds of the same content is its own record
and is never touched (a lesson or a fact that its own records also support lives on, as after any purge).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow

from hindsight.episodic.models import Episode
from hindsight.runtime.records import Source, Turn, content_id
from hindsight.runtime.trust import UNTRUSTED_SOURCES, capped_trust, corroborated

TURN = "turn"
EPISODE = "episode"


@dataclass(frozen=True)
class Copy:
    """A record of a source bank as the copy to write in the target bank, with its lineage."""

    source_id: str
    source_kind: str
    """What was shared: ``turn``, ``episode``, ``fact`` or ``lesson``."""
    lineage_ids: tuple[str, ...]
    """Ids in the source bank whose purge takes the copy: the record's own and those it stands on."""
    source_agent: str = ""
    turn: Turn | None = None
    episode: Episode | None = None

    @property
    def id(self) -> str:
        return self.turn.id if self.turn is not None else self.episode.id if self.episode else ""

    @property
    def kind(self) -> str:
        return TURN if self.turn is not None else EPISODE


@dataclass(frozen=True)
class SharedRecord:
    """One copy, as the share reports it."""

    source_id: str
    id: str
    kind: str
    source_kind: str


@dataclass(frozen=True)
class ShareWrite:
    """What a share wrote: its copies (in the order asked), or the ids it could not find (nothing written)."""

    shared: tuple[SharedRecord, ...] = ()
    unknown: tuple[str, ...] = ()
    stored: int = 0
    """Copies new in the target bank."""
    outbox_ids: tuple[int, ...] = ()
    """The copies' syncs to the semantic layer, claimed for the call to deliver (with ``index_now``)."""


def copy_id(source_bank_id: str, source_id: str, bank_id: str) -> str:
    """The id of the copy of ``source_id`` (of ``source_bank_id``) in ``bank_id``: the same every time."""
    return content_id("shared", source_bank_id, source_id, bank_id)


def turn_copy(turn: Turn, source_bank_id: str, bank_id: str, agent: str) -> Copy:
    """A turn's copy: its text, role, speaker, session, time, tags, source and trust, written by ``agent``.
    It names no source turns (those are the source bank's ids); its link does."""
    copied = replace(
        turn,
        id=copy_id(source_bank_id, turn.id, bank_id),
        meta=replace(turn.meta, agent=agent, source_turn_ids=()),
    )
    lineage = tuple(dict.fromkeys((turn.id, *turn.meta.source_turn_ids)))
    return Copy(turn.id, TURN, lineage, turn.meta.agent, turn=copied)


def episode_copy(
    episode: Episode, turn_sources: Iterable[Source], source_bank_id: str, bank_id: str, agent: str
) -> Copy:
    """An episode's copy, written by ``agent``. The copy stands on no turn of its bank, so reflection there
    would take its own source for who reported it: when its turns (``turn_sources``) came only from tools or
    outside content, the copy says so (with the trust that allows), so sharing never vouches for it."""
    sources = list(turn_sources)
    source, trust = episode.meta.source, episode.meta.trust
    if sources and not corroborated(sources):
        source = next(s for s in sources if s in UNTRUSTED_SOURCES)
        trust = capped_trust(source, trust)
    copied = replace(
        episode,
        id=copy_id(source_bank_id, episode.id, bank_id),
        recorded_at=None,
        meta=replace(episode.meta, agent=agent, source_turn_ids=(), source=source, trust=trust),
    )
    lineage = tuple(dict.fromkeys((episode.id, *episode.meta.source_turn_ids)))
    return Copy(episode.id, EPISODE, lineage, episode.meta.agent, episode=copied)


class SharedCopies:
    """The links of copies to their sources, on one schema's tables; everything runs on the caller's
    connection, inside its transaction (under the lineage locks it holds)."""

    def __init__(self, schema: str) -> None:
        self._table = sql.Identifier(schema, "shared_copies")
        self._turns = sql.Identifier(schema, "turns")
        self._outbox = sql.Identifier(schema, "outbox")

    async def link(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        source_bank_id: str,
        copies: Sequence[Copy],
        agent: str,
    ) -> None:
        """Link each copy to its source (a copy linked already keeps its first link)."""
        if not copies:
            return
        statement = sql.SQL(
            "INSERT INTO {table} (bank_id, id, kind, source_bank_id, source_id, source_kind, lineage_ids, "
            "source_agent, agent) VALUES (%(bank_id)s, %(id)s, %(kind)s, %(source_bank_id)s, %(source_id)s, "
            "%(source_kind)s, %(lineage_ids)s, %(source_agent)s, %(agent)s) "
            "ON CONFLICT (bank_id, id) DO NOTHING"
        ).format(table=self._table)
        params = [
            {
                "bank_id": bank_id,
                "id": copy.id,
                "kind": copy.kind,
                "source_bank_id": source_bank_id,
                "source_id": copy.source_id,
                "source_kind": copy.source_kind,
                "lineage_ids": list(copy.lineage_ids),
                "source_agent": copy.source_agent,
                "agent": agent,
            }
            for copy in sorted(copies, key=lambda c: c.id)
        ]
        async with conn.cursor() as cursor:
            await cursor.executemany(statement, params)

    async def linked_to(
        self, conn: AsyncConnection[DictRow], source_bank_id: str, ids: Iterable[str], whole_bank: bool
    ) -> dict[str, list[str]]:
        """The copies (ids by bank) drawn from any of ``ids`` of the source bank, or from anything in it."""
        params: list[str | list[str]]
        if whole_bank:
            where, params = sql.SQL("source_bank_id = %s"), [source_bank_id]
        else:
            wanted = sorted(set(ids))
            if not wanted:
                return {}
            where = sql.SQL("source_bank_id = %s AND lineage_ids && %s::text[]")
            params = [source_bank_id, wanted]
        statement = sql.SQL("SELECT bank_id, id FROM {table} WHERE {where} ORDER BY bank_id, id").format(
            table=self._table, where=where
        )
        found: dict[str, list[str]] = {}
        for row in await (await conn.execute(statement, params)).fetchall():
            found.setdefault(row["bank_id"], []).append(row["id"])
        return found

    async def restated(self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[str]) -> set[str]:
        """Which of these copies their bank re-stated: copied turns with a newer version there."""
        if not ids:
            return set()
        statement = sql.SQL(
            "SELECT DISTINCT chain_id FROM {turns} WHERE bank_id = %s AND chain_id = ANY(%s)"
        ).format(turns=self._turns)
        rows = await (await conn.execute(statement, (bank_id, list(ids)))).fetchall()
        return {row["chain_id"] for row in rows}

    async def unlink(
        self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[str], whole_bank: bool = False
    ) -> None:
        """Forget the links of these copies (purged, or re-stated), or of every copy the bank held."""
        if whole_bank:
            await conn.execute(sql.SQL("DELETE FROM {} WHERE bank_id = %s").format(self._table), (bank_id,))
        elif ids:
            await conn.execute(
                sql.SQL("DELETE FROM {} WHERE bank_id = %s AND id = ANY(%s)").format(self._table),
                (bank_id, sorted(set(ids))),
            )

    async def claim_syncs(
        self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[str], until: datetime
    ) -> list[int]:
        """Hold the semantic syncs of these new records for the call to deliver (as a claimed write's)."""
        if not ids:
            return []
        statement = sql.SQL(
            "UPDATE {outbox} SET next_attempt_at = %s WHERE bank_id = %s AND record_id = ANY(%s) "
            "AND target = 'semantic' AND operation = 'sync' RETURNING id"
        ).format(outbox=self._outbox)
        rows = await (await conn.execute(statement, (until, bank_id, list(ids)))).fetchall()
        return [int(row["id"]) for row in rows]
