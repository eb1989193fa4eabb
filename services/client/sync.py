"""The blocking ``MemoryService`` client for code without an event loop (scripts, notebooks, threads).

It drives an :class:`AsyncMemoryClient` on a private event loop in a background thread, so it also works
from a thread whose own loop is running; every method blocks until the call (with its retries) ends.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from hindsight.client import types as t
from hindsight.client.aio import AsyncMemoryClient

T = TypeVar("T")


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

    def retain(
        self, bank: str, turns: t.Turn | Sequence[t.Turn], *, timeout: float | None = None
    ) -> t.RetainResult:
        """See :meth:`AsyncMemoryClient.retain`."""
        return self._run(self._client.retain(bank, turns, timeout=timeout))

    def recall(
        self,
        bank: str | Sequence[str],
        query: str,
        *,
        top_k: int = 0,
        layers: Sequence[t.Layer | str] = (),
        time_range: t.TimeRange | None = None,
        session_id: str = "",
        min_score: float = 0.0,
        tags: Sequence[str] = (),
        token_budget: int = 0,
        order: str = "",
        reference_time: datetime | None = None,
        time_zone: str = "",
        as_of: datetime | None = None,
        bank_weights: Mapping[str, float] | None = None,
        group_by_bank: bool = False,
        agent: str = "",
        timeout: float | None = None,
    ) -> t.RecallResult:
        """See :meth:`AsyncMemoryClient.recall`."""
        return self._run(
            self._client.recall(
                bank,
                query,
                top_k=top_k,
                layers=layers,
                time_range=time_range,
                session_id=session_id,
                min_score=min_score,
                tags=tags,
                token_budget=token_budget,
                order=order,
                reference_time=reference_time,
                time_zone=time_zone,
                as_of=as_of,
                bank_weights=bank_weights,
                group_by_bank=group_by_bank,
                agent=agent,
                timeout=timeout,
            )
        )

    def write_episode(self, bank: str, episode: t.Episode, *, timeout: float | None = None) -> t.Episode:
        """See :meth:`AsyncMemoryClient.write_episode`."""
        return self._run(self._client.write_episode(bank, episode, timeout=timeout))

    def reflect(self, bank: str, session_id: str = "", *, timeout: float | None = None) -> t.ReflectResult:
        """See :meth:`AsyncMemoryClient.reflect`."""
        return self._run(self._client.reflect(bank, session_id, timeout=timeout))

    def invalidate(
        self,
        bank: str,
        ids: Sequence[str],
        *,
        reason: str = "",
        valid_to: datetime | None = None,
        timeout: float | None = None,
    ) -> t.InvalidateResult:
        """See :meth:`AsyncMemoryClient.invalidate`."""
        return self._run(
            self._client.invalidate(bank, ids, reason=reason, valid_to=valid_to, timeout=timeout)
        )

    def forget(
        self,
        bank: str,
        turn_ids: Sequence[str] = (),
        *,
        hard: bool = False,
        filter: t.TurnFilter | None = None,
        timeout: float | None = None,
    ) -> t.ForgetResult:
        """See :meth:`AsyncMemoryClient.forget`."""
        return self._run(self._client.forget(bank, turn_ids, hard=hard, filter=filter, timeout=timeout))

    def compress(self, bank: str, session_id: str, *, timeout: float | None = None) -> t.CompressResult:
        """See :meth:`AsyncMemoryClient.compress`."""
        return self._run(self._client.compress(bank, session_id, timeout=timeout))

    def close_session(
        self, bank: str, session_id: str, *, timeout: float | None = None
    ) -> t.CloseSessionResult:
        """See :meth:`AsyncMemoryClient.close_session`."""
        return self._run(self._client.close_session(bank, session_id, timeout=timeout))

    def list_recent(
        self,
        bank: str,
        *,
        limit: int = 0,
        session_id: str = "",
        tags: Sequence[str] = (),
        include_archived: bool = False,
        page_token: str = "",
        agent: str = "",
        timeout: float | None = None,
    ) -> t.TurnPage:
        """See :meth:`AsyncMemoryClient.list_recent`."""
        return self._run(
            self._client.list_recent(
                bank,
                limit=limit,
                session_id=session_id,
                tags=tags,
                include_archived=include_archived,
                page_token=page_token,
                agent=agent,
                timeout=timeout,
            )
        )

    def update(
        self,
        bank: str,
        turn_id: str,
        *,
        text: str = "",
        meta: t.RecordMeta | None = None,
        timeout: float | None = None,
    ) -> t.UpdateResult:
        """See :meth:`AsyncMemoryClient.update`."""
        return self._run(self._client.update(bank, turn_id, text=text, meta=meta, timeout=timeout))

    def purge(
        self,
        bank: str,
        *,
        ids: Sequence[str] = (),
        session_id: str = "",
        whole_bank: bool = False,
        timeout: float | None = None,
    ) -> t.PurgeResult:
        """See :meth:`AsyncMemoryClient.purge`."""
        return self._run(
            self._client.purge(bank, ids=ids, session_id=session_id, whole_bank=whole_bank, timeout=timeout)
        )

    def share(
        self, bank: str, target_bank: str, ids: Sequence[str], *, timeout: float | None = None
    ) -> t.ShareResult:
        """See :meth:`AsyncMemoryClient.share`."""
        return self._run(self._client.share(bank, target_bank, ids, timeout=timeout))

    def debug_list(
        self, bank: str, *, limit: int = 0, page_token: str = "", timeout: float | None = None
    ) -> t.DebugListing:
        """See :meth:`AsyncMemoryClient.debug_list`."""
        return self._run(self._client.debug_list(bank, limit=limit, page_token=page_token, timeout=timeout))

    def list_entities(
        self,
        bank: str,
        *,
        type: str = "",
        prefix: str = "",
        limit: int = 0,
        page_token: str = "",
        timeout: float | None = None,
    ) -> t.EntityList:
        """See :meth:`AsyncMemoryClient.list_entities`."""
        return self._run(
            self._client.list_entities(
                bank, type=type, prefix=prefix, limit=limit, page_token=page_token, timeout=timeout
            )
        )

    def entity_page(
        self,
        bank: str,
        entity: str,
        *,
        mention_limit: int = 0,
        page_token: str = "",
        timeout: float | None = None,
    ) -> t.EntityPage:
        """See :meth:`AsyncMemoryClient.entity_page`."""
        return self._run(
            self._client.entity_page(
                bank, entity, mention_limit=mention_limit, page_token=page_token, timeout=timeout
            )
        )


async def _open(address: str, token: str | None, options: dict[str, Any]) -> AsyncMemoryClient:
    """The async client, made on the loop that will run its calls (a channel belongs to one loop)."""
    return AsyncMemoryClient(address, token, **options)


async def _open_home(home: Path | str | None, options: dict[str, Any]) -> AsyncMemoryClient:
    return AsyncMemoryClient.from_home(home, **options)
