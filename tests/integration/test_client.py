"""The Python client library against the real edge over every in-process layer: every call round-trips on
dataclasses, a token reaches only its banks, idempotent calls are retried across an outage and the others
are sent once, and the blocking client works from plain code."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import psutil
import pytest

from hindsight.cli.credentials import ensure_credentials
from hindsight.cli.layers import EDGE
from hindsight.cli.mesh import MESH_FILE, MeshInfo
from hindsight.client import (
    AsyncMemoryClient,
    Backoff,
    Episode,
    InvalidArgument,
    Layer,
    MemoryClient,
    NotFound,
    PermissionDenied,
    RecordMeta,
    Role,
    Source,
    Turn,
    Unauthenticated,
    Unavailable,
)
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.mcp_edge.service import memory_service_spec
from hindsight.runtime.embedded import free_port
from hindsight.runtime.server import RunningServer, ServiceSpec
from hindsight.runtime.testing import serving
from tests.integration.mesh import LayerAddresses

TOKEN = "client-token"
ADMIN = "client-admin-secret"
TOKENS = f"{TOKEN}=client-bank:read+write+forget,client-retry:read+write+forget"
"""The client calls every method, forget and purge too."""
BANK = "client-bank"
TIMEOUT = 60.0
START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
DIALOGUE = [
    ("k1", "s1", "Caroline", "I live in Boston now, close to my grandma."),
    ("k2", "s1", "Melanie", "I signed up for a pottery class, it calms me down."),
    ("k3", "s1", "Caroline", "Big news: I moved to Denver last month."),
    ("k4", "s2", "Melanie", "My kids loved the dinosaur exhibit at the museum."),
]


def _dialogue() -> list[Turn]:
    return [
        Turn(
            id=turn_id,
            session_id=session,
            speaker=speaker,
            text=text,
            meta=RecordMeta(source=Source.USER, time=START + timedelta(days=index), tags=("diary",)),
        )
        for index, (turn_id, session, speaker, text) in enumerate(DIALOGUE)
    ]


@pytest.fixture(scope="module")
async def engine(mesh_layers: LayerAddresses) -> AsyncIterator[MemoryEngine]:
    async with open_engine(mesh_layers.edge_settings(admin_token=ADMIN)) as opened:
        yield opened


def _edge(
    engine: MemoryEngine,
    port: int = 0,
    interceptors: tuple[grpc.aio.ServerInterceptor, ...] = (),
    tokens: str = TOKENS,
) -> contextlib.AbstractAsyncContextManager[RunningServer]:
    @contextlib.asynccontextmanager
    async def spec() -> AsyncIterator[ServiceSpec]:
        yield memory_service_spec(engine)

    # the operator's token is the edge's own credential too: its admin methods check it in the interceptor
    return serving(spec, tokens=tokens, port=port, interceptors=interceptors, admin_token=ADMIN)


@pytest.fixture(scope="module")
async def edge(engine: MemoryEngine) -> AsyncIterator[RunningServer]:
    async with _edge(engine) as server:
        yield server


def _address(server: RunningServer) -> str:
    return f"127.0.0.1:{server.port}"


class _Attempts(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Counts the calls that reach the server, by method; with ``refuse`` answers each UNAVAILABLE."""

    def __init__(self, refuse: bool = False) -> None:
        self.counts: dict[str, int] = {}
        self._refuse = refuse

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Any]], details: grpc.HandlerCallDetails
    ) -> Any:
        name = details.method.rsplit("/", 1)[-1]
        self.counts[name] = self.counts.get(name, 0) + 1
        handler = await continuation(details)
        if not self._refuse:
            return handler

        async def unavailable(request: Any, context: grpc.aio.ServicerContext) -> None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the edge is restarting")

        return grpc.unary_unary_rpc_method_handler(
            unavailable,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


class _CountedBackoff(Backoff):
    """The real back-off, noting each wait (so a test knows a retry is under way)."""

    def __init__(self) -> None:
        super().__init__(initial=0.2, multiplier=1.5, maximum=1.0)
        object.__setattr__(self, "waits", [])

    def delay(self, retry: int) -> float:
        seconds = super().delay(retry)
        self.waits.append(seconds)  # type: ignore[attr-defined]
        return seconds


async def test_every_call_round_trips_on_dataclasses(edge: RunningServer) -> None:
    async with AsyncMemoryClient(_address(edge), token=TOKEN, admin_token=ADMIN, timeout=TIMEOUT) as client:
        stored = await client.retain(BANK, _dialogue())
        assert stored.turn_ids == ("k1", "k2", "k3", "k4") and stored.indexed and stored.duplicate_count == 0
        again = await client.retain(BANK, _dialogue()[0])
        assert again.duplicate_count == 1

        recalled = await client.recall(BANK, "Which city is Caroline living in now?", top_k=3)
        assert not recalled.partial and recalled.memories and recalled.context
        assert {m.id for m in recalled.memories} & {"k1", "k3"}
        assert all(isinstance(m.layer, Layer) for m in recalled.memories)
        assert {r.layer for r in recalled.layer_reports} == set(Layer) - {Layer.WORKING}  # it weighs 0
        only_episodic = await client.recall(BANK, "pottery class", layers=["episodic"], order="time_asc")
        assert only_episodic.memories[0].id == "k2"
        assert {r.layer for r in only_episodic.layer_reports} == {Layer.EPISODIC}

        recent = await client.list_recent(BANK, limit=2)
        assert [t.id for t in recent.turns] == ["k4", "k3"] and recent.next_page_token
        assert recent.turns[0].meta.time == START + timedelta(days=3) and recent.turns[0].role is Role.USER
        assert recent.turns[0].meta.source is Source.USER and "diary" in recent.turns[0].meta.tags

        entities = await client.list_entities(BANK)
        assert "Caroline" in {e.name for e in entities.entities}
        page = await client.entity_page(BANK, "caroline")
        assert page.entity.name == "Caroline" and {m.id for m in page.mentions} >= {"k1", "k3"}
        homes = [(f.value, bool(f.superseded_by)) for f in page.facts if f.attribute == "lives_in"]
        assert homes == [("Boston", True), ("Denver", False)]
        with pytest.raises(NotFound) as missing:
            await client.entity_page(BANK, "Zed")
        assert missing.value.message and missing.value.code == grpc.StatusCode.NOT_FOUND

        updated = await client.update(BANK, "k2", text="I signed up for a ceramics class, it calms me down.")
        assert updated.superseded_id == "k2" and updated.turn.id != "k2" and "ceramics" in updated.turn.text

        episode = await client.write_episode(
            BANK,
            Episode(
                situation="a flaky deploy", action="re-ran it three times", outcome="it failed", success=False
            ),
        )
        assert episode.id and episode.success is False and episode.recorded_at is not None
        reflected = await client.reflect(BANK)
        assert reflected.episodes_read >= 1 and reflected.lessons and reflected.lessons[0].lesson

        compressed = await client.compress(BANK, "s1")
        assert compressed.tokens_after <= compressed.tokens_before and compressed.summariser
        closed = await client.close_session(BANK, "s2")
        assert closed.closed and closed.turn_count == 1

        forgotten = await client.forget(BANK, ["k4"])
        assert forgotten.forgotten_count == 1
        listing = await client.debug_list(BANK)
        assert "k4" in {t.id for t in listing.turns} and episode.id in {e.id for e in listing.episodes}
        live = await client.list_recent(BANK)
        assert "k4" not in {t.id for t in live.turns}

        ended = await client.invalidate(BANK, [updated.turn.id], reason="the class ended")
        assert ended.invalidated_ids == (updated.turn.id,) and ended.unknown_ids == ()
        after = await client.recall(BANK, "ceramics class")
        assert all(m.outdated and m.valid_to for m in after.memories if m.id == updated.turn.id)
        moment = START + timedelta(days=1, hours=12)
        before = await client.recall(BANK, "pottery class", as_of=moment)
        assert all(m.meta.time and m.meta.time <= moment for m in before.memories)

        purged = await client.purge(BANK, ids=["k1"])
        assert purged.turn_count == 1
        with pytest.raises(InvalidArgument) as refused:
            await client.retain(BANK, Turn(id="k9", text=""))
        assert "text" in refused.value.message


async def test_a_token_reaches_only_its_banks(edge: RunningServer) -> None:
    async with AsyncMemoryClient(_address(edge), token=TOKEN, timeout=TIMEOUT) as client:
        with pytest.raises(PermissionDenied) as denied:
            await client.recall("someone-elses-bank", "anything")
        assert denied.value.message
        with pytest.raises(PermissionDenied):
            await client.retain("someone-elses-bank", Turn(id="x1", text="not mine"))
        with pytest.raises(PermissionDenied):
            await client.debug_list(BANK)  # no admin token given
    async with AsyncMemoryClient(_address(edge), token="", timeout=TIMEOUT) as anonymous:
        with pytest.raises(Unauthenticated):
            await anonymous.recall(BANK, "anything")


async def test_the_token_comes_from_the_environment(edge: RunningServer, monkeypatch) -> None:
    monkeypatch.setenv("HINDSIGHT_TOKEN", TOKEN)
    async with AsyncMemoryClient(_address(edge), timeout=TIMEOUT) as client:
        assert (await client.list_recent(BANK, limit=1)).turns


async def test_an_idempotent_call_is_retried_until_the_edge_comes_up(engine: MemoryEngine) -> None:
    port = free_port()
    backoff = _CountedBackoff()
    attempts = _Attempts()
    async with AsyncMemoryClient(
        f"127.0.0.1:{port}", token=TOKEN, timeout=TIMEOUT, retries=60, backoff=backoff
    ) as client:
        call = asyncio.create_task(
            client.retain("client-retry", Turn(id="r1", text="said while the edge was down"))
        )
        for _ in range(200):
            if backoff.waits:  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.05)
        assert backoff.waits and not call.done()  # type: ignore[attr-defined]  # the first attempt failed
        async with _edge(engine, port=port, interceptors=(attempts,)):
            stored = await call
            assert stored.turn_ids == ("r1",)
            assert attempts.counts["Retain"] == 1
            recent = await client.list_recent("client-retry")
            assert [t.id for t in recent.turns] == ["r1"]


async def test_only_idempotent_calls_are_retried(engine: MemoryEngine) -> None:
    refusing = _Attempts(refuse=True)
    async with (
        _edge(engine, interceptors=(refusing,)) as server,
        AsyncMemoryClient(
            _address(server), token=TOKEN, timeout=TIMEOUT, retries=2, backoff=Backoff(0.01, 2.0, 0.05)
        ) as client,
    ):
        for call in (
            lambda: client.recall(BANK, "anything"),
            lambda: client.list_recent(BANK),
            lambda: client.retain(BANK, Turn(id="i1", text="has an id")),
        ):
            with pytest.raises(Unavailable) as failed:
                await call()
            assert failed.value.message == "the edge is restarting"
        assert refusing.counts == {"Recall": 3, "ListRecent": 3, "Retain": 3}
        for call in (
            lambda: client.retain(BANK, Turn(text="no id: a second attempt could store it twice")),
            lambda: client.forget(BANK, ["k1"]),
            lambda: client.purge(BANK, ids=["k1"]),
            lambda: client.update(BANK, "k3", text="new text"),
            lambda: client.write_episode(BANK, Episode(situation="s", action="a", outcome="o")),
        ):
            with pytest.raises(Unavailable):
                await call()
        assert refusing.counts == {
            "Recall": 3,
            "ListRecent": 3,
            "Retain": 4,
            "Forget": 1,
            "Purge": 1,
            "Update": 1,
            "WriteEpisode": 1,
        }


def _plain_code(address: str) -> tuple[tuple[str, ...], list[str]]:
    """What a script without an event loop does."""
    with MemoryClient(address, token=TOKEN, timeout=TIMEOUT) as client:
        stored = client.retain(
            "client-retry", [Turn(id="p1", text="Grandma's lemon cake recipe uses thyme.")]
        )
        found = client.recall("client-retry", "lemon cake recipe", top_k=3)
        with pytest.raises(PermissionDenied):
            client.list_recent("someone-elses-bank")
    return stored.turn_ids, [m.id for m in found.memories]


async def test_the_blocking_client_works_from_plain_code(edge: RunningServer) -> None:
    # The edge serves on this test's loop, so the plain code runs in a thread of its own.
    turn_ids, recalled = await asyncio.to_thread(_plain_code, _address(edge))
    assert turn_ids == ("p1",) and recalled[0] == "p1"


async def test_from_home_finds_the_running_mesh_and_its_token(
    engine: MemoryEngine, tmp_path: Path, monkeypatch
) -> None:
    for variable in ("HINDSIGHT_TOKENS", "HINDSIGHT_ADMIN_TOKEN", "HINDSIGHT_TOKEN", "HINDSIGHT_HOME"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(Unavailable) as none_running:
        AsyncMemoryClient.from_home(tmp_path)
    assert "hindsight up" in none_running.value.message
    credentials, _ = ensure_credentials(tmp_path, environ={})
    async with _edge(engine, tokens=f"{credentials.agent}=home-bank") as server:
        me = psutil.Process()
        mesh = MeshInfo(
            pid=me.pid,
            pid_started=me.create_time(),
            home=str(tmp_path),
            addresses={EDGE: _address(server)},
            mcp_url="",
            database_url="",
            redis_url="",
            qdrant="",
        )
        (tmp_path / MESH_FILE).write_text(mesh.to_json())
        monkeypatch.setenv("HINDSIGHT_HOME", str(tmp_path))
        async with AsyncMemoryClient.from_home(timeout=TIMEOUT) as client:
            stored = await client.retain("home-bank", Turn(id="h1", text="found through the home"))
            assert stored.turn_ids == ("h1",)
            with pytest.raises(PermissionDenied):
                await client.list_recent(BANK)

        def blocking() -> list[str]:
            with MemoryClient.from_home(tmp_path, timeout=TIMEOUT) as client:
                return [t.id for t in client.list_recent("home-bank").turns]

        assert await asyncio.to_thread(blocking) == ["h1"]
