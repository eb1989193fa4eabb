"""Opening a store at start-up that may not answer yet: retry with exponential back-off, up to a total wait.

In docker compose and Kubernetes a layer's container often starts before its store accepts connections
(``depends_on: service_healthy`` is the store's own view of itself, not of the network path; a managed
server may be failing over). Each layer opens its store through :func:`open_with_retry`, so a late store
delays start-up (the process is alive but not yet serving) instead of crashing it into a restart loop;
past ``HINDSIGHT_STORE_WAIT_SECONDS`` the last error is raised and the orchestrator's restart policy takes
over. Only the errors the layer names as transient are retried: a wrong setting fails at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TypeVar

from hindsight.runtime.errors import Unavailable
from hindsight.runtime.settings import SettingsError, env, load

T = TypeVar("T")

log = logging.getLogger(__name__)

TRANSIENT: tuple[type[BaseException], ...] = (Unavailable, ConnectionError, TimeoutError)
"""Errors every store client may raise while its server is still starting; layers add their driver's."""


@dataclass(frozen=True)
class StoreWait:
    """How long and how often start-up retries a store that does not answer yet."""

    total_seconds: float = env(
        "HINDSIGHT_STORE_WAIT_SECONDS",
        60.0,
        "How long start-up keeps retrying a store that does not answer yet before the process fails.",
    )
    first_pause_seconds: float = env(
        "HINDSIGHT_STORE_RETRY_FIRST_PAUSE_SECONDS", 0.2, "Pause after the first failed attempt."
    )
    max_pause_seconds: float = env(
        "HINDSIGHT_STORE_RETRY_MAX_PAUSE_SECONDS", 5.0, "The pause doubles after each failure up to this."
    )

    def __post_init__(self) -> None:
        if self.total_seconds < 0:
            raise SettingsError("HINDSIGHT_STORE_WAIT_SECONDS must not be negative")
        if self.first_pause_seconds <= 0 or self.max_pause_seconds < self.first_pause_seconds:
            raise SettingsError("HINDSIGHT_STORE_RETRY_*_PAUSE_SECONDS must be positive, first <= max")

    @classmethod
    def from_env(cls) -> StoreWait:
        """The wait configured by the environment (shared by every layer)."""
        return load(cls)


RetryHook = Callable[[int, BaseException, float], None]
"""Called after failed attempt ``n`` with its error and the pause before the next one (logs, tests)."""


async def retry_until_open(
    attempt: Callable[[], Awaitable[T]],
    *,
    what: str,
    transient: tuple[type[BaseException], ...] = TRANSIENT,
    wait: StoreWait | None = None,
    on_retry: RetryHook | None = None,
) -> T:
    """Await ``attempt()`` until it succeeds, pausing (doubling, capped) after each transient failure.

    Raises the last error once another pause would pass ``wait.total_seconds``; any other error at once.
    """
    wait = wait or StoreWait.from_env()
    give_up = time.monotonic() + wait.total_seconds
    pause = wait.first_pause_seconds
    failures = 0
    while True:
        try:
            return await attempt()
        except transient as exc:
            failures += 1
            if time.monotonic() + pause > give_up:
                log.error("store did not answer in time", extra={"store": what, "attempts": failures})
                raise
            log.warning(
                "store not answering yet; retrying",
                extra={"store": what, "attempt": failures, "pause_seconds": pause, "error": str(exc)},
            )
            if on_retry is not None:
                on_retry(failures, exc, pause)
            await asyncio.sleep(pause)
            pause = min(pause * 2, wait.max_pause_seconds)


@contextlib.asynccontextmanager
async def open_with_retry(
    opener: Callable[[], AbstractAsyncContextManager[T]],
    *,
    what: str,
    transient: tuple[type[BaseException], ...] = TRANSIENT,
    wait: StoreWait | None = None,
    on_retry: RetryHook | None = None,
) -> AsyncIterator[T]:
    """Enter ``opener()`` with :func:`retry_until_open`; a failed attempt leaves nothing open behind."""
    async with contextlib.AsyncExitStack() as stack:
        value = await retry_until_open(
            lambda: stack.enter_async_context(opener()),
            what=what,
            transient=transient,
            wait=wait,
            on_retry=on_retry,
        )
        yield value
