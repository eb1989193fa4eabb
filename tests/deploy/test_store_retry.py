"""Start-up waits for a late store with back-off instead of crashing (depends_on alone is not readiness)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hindsight.runtime.embedded import EmbeddedServer, free_port, start_valkey
from hindsight.runtime.errors import FailedPrecondition, Unavailable
from hindsight.runtime.settings import SettingsError, load
from hindsight.runtime.startup import StoreWait, open_with_retry, retry_until_open
from hindsight.working.service import open_service
from hindsight.working.settings import WorkingSettings

QUICK = StoreWait(total_seconds=5.0, first_pause_seconds=0.01, max_pause_seconds=0.04)


class FlakyStore:
    """Refuses ``failures`` connection attempts, then opens; counts what is open."""

    def __init__(self, failures: int, error: BaseException | None = None) -> None:
        self.failures = failures
        self.error = error or Unavailable("store starting")
        self.attempts = 0
        self.open = 0

    async def connect(self) -> str:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise self.error
        return "connected"

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[str]:
        await self.connect()
        self.open += 1
        try:
            yield "session"
        finally:
            self.open -= 1


async def test_a_store_that_answers_on_the_fourth_attempt_is_opened_after_doubling_pauses() -> None:
    store = FlakyStore(failures=3)
    pauses: list[float] = []
    result = await retry_until_open(
        store.connect, what="test", wait=QUICK, on_retry=lambda n, exc, pause: pauses.append(pause)
    )
    assert result == "connected"
    assert store.attempts == 4
    assert pauses == [0.01, 0.02, 0.04]


async def test_start_up_gives_up_with_the_last_error_once_the_total_wait_is_spent() -> None:
    store = FlakyStore(failures=1_000)
    short = StoreWait(total_seconds=0.1, first_pause_seconds=0.01, max_pause_seconds=0.02)
    with pytest.raises(Unavailable, match="store starting"):
        await retry_until_open(store.connect, what="test", wait=short)
    assert 3 <= store.attempts < 20


async def test_an_error_that_is_not_transient_fails_at_once() -> None:
    store = FlakyStore(failures=5, error=FailedPrecondition("collection built by another model"))
    with pytest.raises(FailedPrecondition):
        await retry_until_open(store.connect, what="test", wait=QUICK)
    assert store.attempts == 1


async def test_a_context_opened_after_failures_is_entered_once_and_closed_on_exit() -> None:
    store = FlakyStore(failures=2)
    async with open_with_retry(store.session, what="test", wait=QUICK) as value:
        assert value == "session"
        assert store.open == 1
    assert store.open == 0
    assert store.attempts == 3


def test_the_total_wait_comes_from_one_shared_setting() -> None:
    assert load(StoreWait, {}).total_seconds == 60.0
    assert load(StoreWait, {"HINDSIGHT_STORE_WAIT_SECONDS": "7.5"}).total_seconds == 7.5
    with pytest.raises(SettingsError, match="HINDSIGHT_STORE_WAIT_SECONDS"):
        StoreWait(total_seconds=-1)


class _Signal(logging.Handler):
    """Sets an event when start-up logs a retry, so the test starts the store only after a refusal."""

    def __init__(self, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        super().__init__(logging.WARNING)
        self._loop = loop
        self._event = event

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "store", "") == "redis":
            self._loop.call_soon_threadsafe(self._event.set)


async def test_the_working_layer_starts_when_redis_comes_up_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_STORE_RETRY_FIRST_PAUSE_SECONDS", "0.05")
    monkeypatch.setenv("HINDSIGHT_STORE_RETRY_MAX_PAUSE_SECONDS", "0.5")
    monkeypatch.setenv("HINDSIGHT_STORE_WAIT_SECONDS", "20")
    port = free_port()
    data = tmp_path / "valkey"
    data.mkdir()
    (data / "password").write_text("late-store\n")
    settings = WorkingSettings(redis_url=f"redis://:late-store@127.0.0.1:{port}/0", prefix="hs:late")
    refused = asyncio.Event()
    handler = _Signal(asyncio.get_running_loop(), refused)
    startup_log = logging.getLogger("hindsight.runtime.startup")
    startup_log.addHandler(handler)
    servers: list[EmbeddedServer] = []

    async def start_after_a_refusal() -> None:
        await asyncio.wait_for(refused.wait(), timeout=10)
        servers.append(await asyncio.to_thread(start_valkey, data, port))

    starter = asyncio.create_task(start_after_a_refusal())
    try:
        async with asyncio.timeout(30), open_service(settings) as spec:
            await starter
            assert await spec.ready()
    finally:
        startup_log.removeHandler(handler)
        starter.cancel()
        for server in servers:
            server.stop()
