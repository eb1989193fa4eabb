"""Buffers that fill while a store is down are bounded: what does not fit is dropped, counted and logged.

The access-statistics buffer of episodic memory is driven against a real PostgreSQL store that has been
closed (every write fails, as while PostgreSQL is down), then against a reopened one. The edge's access
notes are sent to a real episodic layer that answers RecordAccess only after a long wait.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator

import pytest

from hindsight.episodic.access import AccessRecorder
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.mcp_edge.access_notes import MAX_ACCESS_NOTES_IN_FLIGHT
from hindsight.mcp_edge.domain import LayerName, RecalledMemory
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.testing import serving
from tests.integration.misbehave import Misbehave

BUFFER = 10


async def test_the_access_buffer_keeps_at_most_its_bound_while_postgres_is_down_and_counts_the_rest(
    episodic_settings: EpisodicSettings, unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    # a long flush interval: the drops of this test fall in one logging interval
    settings = dataclasses.replace(
        episodic_settings, access_buffer=BUFFER, access_batch=1000, access_flush_seconds=3600
    )
    down = await PostgresEpisodicStore.open(settings)
    await down.close()
    recorder = AccessRecorder(down, settings)
    with caplog.at_level(logging.WARNING, logger="hindsight.episodic.access"):
        queued = [
            recorder.record("bank", [(f"r{n}", "episodic") for n in range(k, k + 10)]) for k in (0, 10, 20)
        ]
        with pytest.raises(Exception):  # noqa: B017 - whatever the closed pool raises
            await recorder.flush()
        recorder.record("bank", [("r0", "episodic")])  # a record already buffered still counts
    assert queued == [10, 0, 0]
    assert recorder.buffered == BUFFER and recorder.dropped == 20
    warnings = [r for r in caplog.records if r.getMessage().startswith("access statistics dropped")]
    # the first drops are logged at once; those after wait for the next interval's line
    assert len(warnings) == 1 and getattr(warnings[0], "dropped", None) == 10

    store = await PostgresEpisodicStore.open(settings)
    try:
        recorder.store = store
        assert await recorder.flush() == BUFFER
        stats = {s.id: s.hit_count for s in await recorder.stats("bank", [f"r{n}" for n in range(30)])}
    finally:
        await store.close()
    assert stats == {f"r{n}": 2 if n == 0 else 1 for n in range(BUFFER)}
    assert recorder.buffered == 0


@pytest.fixture
async def frozen_episodic(episodic_settings: EpisodicSettings) -> AsyncIterator[str]:
    """A real episodic layer whose RecordAccess answers only after a minute."""
    watcher = Misbehave(slow=("RecordAccess",), delay=60.0)
    async with serving(lambda: open_episodic(episodic_settings), interceptors=[watcher]) as server:
        yield f"127.0.0.1:{server.port}"


async def test_the_edges_access_notes_in_flight_are_bounded_and_the_rest_counted(
    frozen_episodic: str, unique_name: str
) -> None:
    nowhere = [f"127.0.0.1:{port}" for port in free_ports(3)]
    settings = EdgeSettings(
        working_addr=nowhere[0],
        episodic_addr=frozen_episodic,
        semantic_addr=nowhere[1],
        reflect_addr=nowhere[2],
        mcp_port=0,
        write_timeout=2.0,
    )
    memory = RecalledMemory(id="m1", text="t", score=1.0, meta=RecordMeta(), layers=(LayerName.EPISODIC,))
    async with open_engine(settings) as engine:
        extra = 5
        for _ in range(MAX_ACCESS_NOTES_IN_FLIGHT + extra):
            engine._note_access(unique_name, [memory])
        in_flight = len(engine._background)
        dropped = engine.access_notes_dropped
    assert in_flight == MAX_ACCESS_NOTES_IN_FLIGHT and dropped == extra
