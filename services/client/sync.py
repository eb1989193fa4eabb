"""The blocking ``MemoryService`` client for code without an event loop (scripts, notebooks, threads).

It drives an :class:`AsyncMemoryClient` on a private event loop in a background thread, so it also works
from a thread whose own loop is running; every method blocks until the call (with its retries) ends.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from hindsight.client.aio import AsyncMemoryClient

T = TypeVar("T")
P = ParamSpec("P")


def _blocking(
    method: Callable[Concatenate[AsyncMemoryClient, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[MemoryClient, P], T]:
    """The blocking twin of an async client method, so that each call is written (signature, defaults,
    docstring) once: type checkers see the same parameters, ``help()`` the same text."""

    @functools.wraps(method)
    def blocking(self: MemoryClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(method(self._client, *args, **kwargs))

    blocking.__qualname__ = f"MemoryClient.{method.__name__}"
    return blocking


class MemoryClient:
    """The same calls as :class:`AsyncMemoryClient`, blocking; same arguments, same errors.

    Use it as ``with MemoryClient(...) as client:`` or call :meth:`close`.
    """

    def __init__(self, address: str, token: str | None = None, **options: Any) -> None:
        self._start(_open(address, token, options))

    @classmethod
    def from_home(cls, home: Path | str | None = None, **options: Any) -> MemoryClient:
        """A client of the mesh ``hindsight up`` runs on ``home``, as ``AsyncMemoryClient.from_home``."""
        client = cls.__new__(cls)
        client._start(_open_home(home, options))
        return client

    def _start(self, opening: Coroutine[Any, Any, AsyncMemoryClient]) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hindsight-client", daemon=True)
        self._thread.start()
        try:
            self._client = self._run(opening)
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(call, self._loop)
        return future.result()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def close(self) -> None:
        """Close the channel and stop the background loop; the client cannot be used afterwards."""
        if self._loop.is_closed():
            return
        self._run(self._client.close())
        self._stop_loop()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    @property
    def timeout(self) -> float:
        """Each attempt's default deadline, seconds."""
        return self._client.timeout

    # Each call: the async method's signature and docstring, blocking on the client's loop.
    retain = _blocking(AsyncMemoryClient.retain)
    recall = _blocking(AsyncMemoryClient.recall)
    write_episode = _blocking(AsyncMemoryClient.write_episode)
    reflect = _blocking(AsyncMemoryClient.reflect)
    invalidate = _blocking(AsyncMemoryClient.invalidate)
    forget = _blocking(AsyncMemoryClient.forget)
    compress = _blocking(AsyncMemoryClient.compress)
    close_session = _blocking(AsyncMemoryClient.close_session)
    list_recent = _blocking(AsyncMemoryClient.list_recent)
    update = _blocking(AsyncMemoryClient.update)
    purge = _blocking(AsyncMemoryClient.purge)
    share = _blocking(AsyncMemoryClient.share)
    debug_list = _blocking(AsyncMemoryClient.debug_list)
    list_entities = _blocking(AsyncMemoryClient.list_entities)
    entity_page = _blocking(AsyncMemoryClient.entity_page)


async def _open(address: str, token: str | None, options: dict[str, Any]) -> AsyncMemoryClient:
    """The async client, made on the loop that will run its calls (a channel belongs to one loop)."""
    return AsyncMemoryClient(address, token, **options)


async def _open_home(home: Path | str | None, options: dict[str, Any]) -> AsyncMemoryClient:
    return AsyncMemoryClient.from_home(home, **options)
