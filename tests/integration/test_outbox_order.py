"""Which outbox entries are due (on the real store): one failing entry holds back only what must keep its
order behind it, and the dead-letter list keeps, requeues and drops entries with an audit entry each."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from hindsight.episodic.dead_letters import DROP_ACTION, RETRY_ACTION
from hindsight.episodic.models import PurgeScope
from hindsight.episodic.outbox import OutboxDeliverer, Targets
from hindsight.episodic.outbox_entries import DELETE, REFUSED, SYNC, OutboxEntry
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.records import RecordMeta, Turn
from tests.integration.mesh import drop_schemas

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LATER = timedelta(hours=1)


@pytest.fixture
async def store(database_url: str, unique_name: str) -> AsyncIterator[PostgresEpisodicStore]:
    # A semantic address makes the store queue entries for it; nothing is delivered (no deliverer runs).
    settings = EpisodicSettings(database_url=database_url, schema=unique_name, semantic_addr="127.0.0.1:9")
    opened = await PostgresEpisodicStore.open(settings)
    try:
        yield opened
    finally:
        await opened.close()
        await drop_schemas(database_url, unique_name)


async def write(store: PostgresEpisodicStore, turn_id: str, minute: int = 0) -> int:
    turn = Turn(
        id=turn_id,
        session_id="s1",
        text=f"turn {turn_id}",
        meta=RecordMeta(time=T0 + timedelta(minutes=minute)),
    )
    result = await store.record_turns("b", [turn], None)
    return result.outbox_ids[0]


async def claim(store: PostgresEpisodicStore) -> list[OutboxEntry]:
    now = datetime.now(UTC)
    return await store.claim_due(now, now + LATER, 100)


def shape(entries: list[OutboxEntry]) -> list[tuple[str, str]]:
    return [(entry.operation, entry.record_id) for entry in entries]


async def test_a_failing_entry_holds_back_only_what_must_stay_behind_it(store: PostgresEpisodicStore) -> None:
    await write(store, "r1")
    [first] = await claim(store)
    await store.failed([first], "refused", [datetime.now(UTC) + LATER], REFUSED)  # backing off for long
    await write(store, "r2", 1)
    await write(store, "p1", 2)
    await store.purge("b", PurgeScope(ids=("p1",)))  # a delete written after r1 and r2
    await write(store, "r3", 3)
    # r2 goes although r1 waits; the delete waits for r1; r3 was written after the delete, so it waits too
    claimed = await claim(store)
    assert shape(claimed) == [(SYNC, "r2")]
    await store.delivered(claimed)
    assert await claim(store) == []
    # r1 is refused for good: it leaves for the dead-letter list, and the delete, then r3, go
    assert await store.dead_letters.bury([first.id], "records[0].text: too long") == 1
    claimed = await claim(store)
    assert shape(claimed) == [(DELETE, "")]
    assert await claim(store) == []  # r3 does not overtake the delete in flight
    await store.delivered(claimed)
    assert shape(await claim(store)) == [(SYNC, "r3")]


async def test_two_syncs_of_one_record_keep_their_order(store: PostgresEpisodicStore) -> None:
    await write(store, "r1")
    [first] = await claim(store)
    await store.failed([first], "unavailable", [datetime.now(UTC) + LATER])
    await store.forget_turns("b", ["r1"], None)  # archives r1: a second sync of it
    await write(store, "r2", 1)
    assert shape(await claim(store)) == [(SYNC, "r2")]


async def test_dead_letters_are_listed_queued_again_and_dropped_with_an_audit_entry(
    store: PostgresEpisodicStore,
) -> None:
    for index in range(3):
        await write(store, f"r{index}", index)
    claimed = await claim(store)
    assert await store.dead_letters.bury([entry.id for entry in claimed], "refused") == 3
    page = await store.dead_letters.page("b", 2, "")
    assert [letter.record_id for letter in page.items] == ["r0", "r1"] and page.counts == {"semantic": 3}
    rest = await store.dead_letters.page("b", 2, page.next_page_token)
    assert [letter.record_id for letter in rest.items] == ["r2"] and rest.next_page_token == ""
    assert {letter.attempts for letter in [*page.items, *rest.items]} == {1}
    assert (await store.outbox_counts("b")).dead_letters == {"semantic": 3}

    retried = await store.dead_letters.retry("b", [page.items[0].id, 999_999], "admin")
    assert (retried.count, retried.missing) == (1, [999_999])
    again = await claim(store)
    assert shape(again) == [(SYNC, "r0")] and again[0].attempts == 0

    dropped = await store.dead_letters.drop("b", [], "admin")  # every one left in the bank
    assert dropped.count == 2
    assert (await store.dead_letters.page("b", 10, "")).items == []
    audit = await store.list_audit("b", "", None, None, 10)
    assert sorted((entry.action, entry.actor) for entry in audit) == [
        (DROP_ACTION, "admin"),
        (DROP_ACTION, "admin"),
        (RETRY_ACTION, "admin"),
    ]


async def test_a_purge_takes_the_dead_letters_of_what_it_deletes(store: PostgresEpisodicStore) -> None:
    await write(store, "r1")
    await write(store, "r2", 1)
    claimed = await claim(store)
    await store.dead_letters.bury([entry.id for entry in claimed], "refused")
    await store.purge("b", PurgeScope(ids=("r1",)))
    assert [letter.record_id for letter in (await store.dead_letters.page("b", 10, "")).items] == ["r2"]
    await store.purge("b", PurgeScope(whole_bank=True))
    assert (await store.dead_letters.counts("b")) == {}


async def test_a_layer_that_is_down_never_sends_an_entry_to_the_dead_letters(
    store: PostgresEpisodicStore, database_url: str, unique_name: str
) -> None:
    settings = EpisodicSettings(
        database_url=database_url,
        schema=unique_name,
        semantic_addr=f"127.0.0.1:{free_ports(1)[0]}",  # nothing listens there
        outbox_max_attempts=1,
        outbox_timeout_seconds=2.0,
    )
    targets = Targets.from_settings(settings)
    written = await write(store, "r1")
    now = [datetime.now(UTC) + timedelta(seconds=1)]
    deliverer = OutboxDeliverer(store, targets, settings, clock=lambda: now[0])
    try:
        for _ in range(3):
            assert await deliverer.deliver_due() == 1
            now[0] += timedelta(minutes=5)  # past any back-off
    finally:
        await targets.close()
    assert await store.dead_letters.counts("b") == {}
    [entry] = await store.claimed([written])
    assert entry.attempts == 3
