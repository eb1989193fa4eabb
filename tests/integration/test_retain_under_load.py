"""Retains arriving together: none fails, and every turn is indexed with the terms its own text has.

Text analysis of a large write runs on a worker thread, so concurrent writes analyse at the same time;
the Snowball stemmer keeps the word it works on in itself, and one shared by every thread answered a write
INTERNAL (an ``IndexError`` inside the stemmer) or stored another turn's stems. Words no earlier test has
stemmed make each write miss the stem cache, as a fresh service's first writes do.
"""

from __future__ import annotations

import asyncio
import random
import string
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import grpc
import psycopg
import pytest
import snowballstemmer
from psycopg import sql

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.episodic.service import open_service
from hindsight.episodic.settings import EpisodicSettings
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import serving
from hindsight.runtime.text import terms
from tests.integration.mesh import drop_schemas

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WRITERS = 16
ROUNDS = 3
TURNS_PER_WRITE = 4
WORDS_PER_TURN = 120
SUFFIXES = ("ing", "ed", "ness", "ational", "fulness", "ization", "ly", "ments")


@pytest.fixture
def often_switching_threads() -> Iterator[None]:
    """Threads handed the interpreter every microsecond: what a busy host does now and then, every time."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.fixture
async def served(database_url: str) -> AsyncIterator[tuple[str, EpisodicSettings]]:
    """A real episodic service in a schema of its own (read back directly to check what was indexed)."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    settings = EpisodicSettings(database_url=database_url, schema=schema, pool_min_size=1, pool_max_size=8)
    async with serving(lambda: open_service(settings)) as server:
        yield f"127.0.0.1:{server.port}", settings
    await drop_schemas(database_url, schema)


def fresh_text(rng: random.Random) -> str:
    """Words made up for this run (so the stem cache has none of them), long enough to leave the loop."""
    words = []
    for _ in range(WORDS_PER_TURN):
        stem = "".join(rng.choice("aeiounrstlcdmp") for _ in range(rng.randint(5, 12)))
        words.append(stem + rng.choice(SUFFIXES))
    return " ".join(words)


def expected_lexemes(text: str, stemmer: snowballstemmer.stemmer) -> set[str]:
    """The terms of ``text`` stemmed by a stemmer of the test's own, one word at a time."""
    out = set()
    for term in terms(text):
        ascii_word = len(term) >= 4 and all(c in string.ascii_lowercase for c in term)
        out.add(stemmer.stemWord(term) if ascii_word else term)
    return out


def turn(turn_id: str, text: str, minute: int) -> common_pb2.Turn:
    return common_pb2.Turn(
        id=turn_id,
        session_id="s1",
        text=text,
        meta=common_pb2.RecordMeta(time=to_timestamp(T0 + timedelta(minutes=minute))),
    )


async def stored_lexemes(settings: EpisodicSettings, bank_id: str) -> dict[str, set[str]]:
    statement = sql.SQL(
        "SELECT id, tsvector_to_array(search_terms) AS lexemes FROM {turns} WHERE bank_id = %s"
    ).format(turns=sql.Identifier(settings.schema, "turns"))
    async with await psycopg.AsyncConnection.connect(settings.database_url) as conn:
        rows = await (await conn.execute(statement, (bank_id,))).fetchall()
    return {row[0]: set(row[1]) for row in rows}


async def test_concurrent_large_retains_all_succeed_and_index_their_own_stems(
    served: tuple[str, EpisodicSettings], often_switching_threads: None
) -> None:
    address, settings = served
    rng = random.Random(uuid.uuid4().int)
    bank = f"load-{uuid.uuid4().hex[:8]}"
    texts: dict[str, str] = {}
    requests = []
    for writer in range(WRITERS):
        for round_ in range(ROUNDS):
            batch = []
            for index in range(TURNS_PER_WRITE):
                turn_id = f"w{writer}-r{round_}-t{index}"
                texts[turn_id] = fresh_text(rng)
                batch.append(turn(turn_id, texts[turn_id], len(texts)))
            requests.append(episodic_pb2.RecordTurnsRequest(bank_id=bank, turns=batch))

    async with grpc.aio.insecure_channel(address) as channel:
        stub = episodic_pb2_grpc.EpisodicServiceStub(channel)
        failures: list[str] = []

        async def write(request: episodic_pb2.RecordTurnsRequest) -> int:
            try:
                reply = await stub.RecordTurns(request, timeout=60)
            except grpc.aio.AioRpcError as exc:
                failures.append(f"{exc.code().name}: {exc.details()}")
                return 0
            return int(reply.recorded_count)

        recorded = 0
        for start in range(0, len(requests), WRITERS):
            recorded += sum(await asyncio.gather(*(write(r) for r in requests[start : start + WRITERS])))
    assert failures == []
    assert recorded == len(texts)

    reference = snowballstemmer.stemmer("english")
    stored = await stored_lexemes(settings, bank)
    assert set(stored) == set(texts)
    wrong = [
        turn_id for turn_id, text in texts.items() if stored[turn_id] != expected_lexemes(text, reference)
    ]
    assert wrong == []
