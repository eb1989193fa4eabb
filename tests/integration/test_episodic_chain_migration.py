"""The lineage migration on stored data: update chains written before it are followed by a purge after it."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.models import PurgeScope
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.records import RecordMeta, Turn

T0 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)


async def test_chains_stored_before_the_migration_are_purged_whole(
    episodic_settings: EpisodicSettings,
) -> None:
    store = await PostgresEpisodicStore.open(episodic_settings)
    try:
        memory = EpisodicMemory(store, episodic_settings)
        await memory.record_turns("b", [Turn("keep", "s", "unrelated", meta=RecordMeta(time=T0))])
        await memory.record_turns("b", [Turn("v1", "s", "first version", meta=RecordMeta(time=T0))])
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(episodic_settings.database_url, autocommit=True) as conn:
        # an update chain v1 -> v2 -> v3 as the code before the migration stored it (no chain ids), and
        # the migration not yet applied
        turns = sql.Identifier(episodic_settings.schema, "turns")
        for old, new in (("v1", "v2"), ("v2", "v3")):
            await conn.execute(
                sql.SQL(
                    "INSERT INTO {t} SELECT (jsonb_populate_record(NULL::{t}, to_jsonb(o) || %s::jsonb)).* "
                    "FROM {t} o WHERE o.bank_id = 'b' AND o.id = %s"
                ).format(t=turns),
                (Jsonb({"id": new, "text": f"version {new}", "source_turn_ids": [old]}), old),
            )
            await conn.execute(
                sql.SQL("UPDATE {t} SET archived_at = now(), superseded_by = %s WHERE id = %s").format(
                    t=turns
                ),
                (new, old),
            )
        await conn.execute(
            sql.SQL("UPDATE {t} SET chain_id = NULL").format(t=turns)
        )  # as before 0007: no chain known
        await conn.execute(
            sql.SQL("DELETE FROM {m} WHERE version = 7").format(
                m=sql.Identifier(episodic_settings.schema, "schema_migrations")
            )
        )
    store = await PostgresEpisodicStore.open(episodic_settings)  # 0007 runs again: the backfill
    try:
        memory = EpisodicMemory(store, episodic_settings)
        result = await memory.purge("b", PurgeScope(ids=("v3",)))
        assert result.turns == 3 and set(result.ids) == {"v1", "v2", "v3"}
        assert [turn.id for turn in await memory.get_turns("b", ["v1", "v2", "v3", "keep"])] == ["keep"]
    finally:
        await store.close()
