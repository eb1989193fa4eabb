"""An episode as large as the contract allows (four fields of 100,000 characters) is stored, found and
recognised when written again: its dedup key fits PostgreSQL's index however many words it has."""

from __future__ import annotations

import hashlib

import pytest

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.models import MAX_FIELD_CHARS, MAX_TASK_TYPE_CHARS, Episode, EpisodeFilter
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.errors import FailedPrecondition, InvalidArgument


async def test_an_episode_of_the_largest_fields_is_stored_and_deduplicated(
    episodic_settings: EpisodicSettings,
) -> None:
    filler = " ".join(f"the heron release needed the otter migration step {i}." for i in range(3000))
    text = filler[:MAX_FIELD_CHARS]
    store = await PostgresEpisodicStore.open(episodic_settings)
    try:
        memory = EpisodicMemory(store, episodic_settings)
        episode = Episode("big", "s", situation=text, action=text, outcome=text, lesson=text)
        stored = await memory.write_episode("b", episode)
        assert stored.id == "big" and len(stored.situation) == MAX_FIELD_CHARS
        again = await memory.write_episode("b", Episode("big-2", "s", situation=text, action=text))
        assert again.id == "big-2"  # written explicitly: kept as its own record
        hits = await memory.search_episodes("b", "heron otter migration", EpisodeFilter(), 5)
        assert {hit.episode.id for hit in hits} == {"big", "big-2"}
    finally:
        await store.close()


def incompressible(length: int) -> str:
    """Text that PostgreSQL cannot compress below its index row limit."""
    return "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(length // 64 + 1))[:length]


def test_a_task_type_longer_than_a_label_is_refused_naming_the_field() -> None:
    message = episodic_pb2.Episode(situation="deploy", task_type="x" * (MAX_TASK_TYPE_CHARS + 1))
    with pytest.raises(InvalidArgument, match=r"episode\.task_type"):
        Episode.from_pb(message)


async def test_a_statement_over_a_postgres_limit_is_not_reported_as_retryable(
    episodic_settings: EpisodicSettings,
) -> None:
    store = await PostgresEpisodicStore.open(episodic_settings)
    try:  # an index row over PostgreSQL's limit fails the same way every time: callers must not retry it
        with pytest.raises(FailedPrecondition, match="limit exceeded"):
            async with store._connection() as conn:
                await conn.execute("CREATE TEMP TABLE wide (value text PRIMARY KEY)")
                await conn.execute("INSERT INTO wide VALUES (%s)", [incompressible(40_000)])
    finally:
        await store.close()
